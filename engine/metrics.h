// What the engine and the transports report as they work, behind an interface: the engine knows
// no metrics library. The server exports these as Prometheus series (service/prometheus_metrics.h,
// which lists every series); tests record them in a fake.
//
//   metrics->CallStarted(Method::kComputeAdvantages);
//   ...
//   metrics->CallFinished(Method::kComputeAdvantages, absl::StatusCode::kOk, elapsed);
//   metrics->RecordAdvantageBatch(summary);
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "advantage/advantage.h"
#include "engine/run_health.h"
#include "scorers/generation_monitor.h"
#include "scorers/reward.h"

namespace rlscore::engine {

// The calls a client can make, as metric label values: the RPCs of rlscore.v1.ScoringService and
// the HTTP endpoints of http/listener.h (labelled by their path).
enum class Method {
  kScoreGroups,
  kComputeAdvantages,
  kScore,
  kMonitorGeneration,
  kGetRunHealth,
  kHttpGetReward,
  kHttpReward,
  kHttpVerify
};
inline constexpr int kNumMethods = 8;
std::string_view MethodName(Method method);

// Implementations are thread-safe: every member may be called concurrently, from any thread.
class Metrics {
 public:
  virtual ~Metrics() = default;

  virtual void CallStarted(Method method) = 0;
  virtual void CallFinished(Method method, absl::StatusCode code, absl::Duration elapsed) = 0;
  // The transport reported the call cancelled (the client gave up or its deadline passed) while
  // it was being handled: the work stops at its next check, and CallFinished follows.
  virtual void CallCancelled(Method method) = 0;
  virtual void RecordAdvantageBatch(const advantage::BatchSummary& summary) = 0;
  // The preferred backend, set once at start: "cpu" or "cuda".
  virtual void SetBackend(std::string_view backend) = 0;
  // `backend` computed a batch: "cpu" or "cuda".
  virtual void RecordAdvantageBackend(std::string_view backend) = 0;
  // The CPU stood in for the GPU: "unavailable" (at start, --gpu=auto) or "error" (per batch).
  virtual void RecordGpuFallback(std::string_view reason) = 0;
  virtual void RecordCompletion(const scorers::CompletionScore& score) = 0;
  virtual void RecordGenerationStop(scorers::StopReason reason) = 0;
  // Memory admission (admission.h): the budget, what the calls being handled are charged now,
  // and a call refused.
  virtual void SetMemoryBudget(uint64_t bytes) = 0;
  virtual void SetMemoryInUse(uint64_t bytes) = 0;
  virtual void RecordAdmissionRefusal(bool retryable) = 0;
  // OpenRLHF queries in which the HTTP listener did not find the sample's prompt, so the whole
  // query was scored (http/rewards.h).
  virtual void RecordPromptNotFound(uint64_t count) = 0;
  // Sets the run's health gauges (creating them for a new run).
  virtual void SetRunHealth(const RunHealthReport& report) = 0;
  // Drops every series of the run (it was evicted from the telemetry).
  virtual void RemoveRun(std::string_view run_id) = 0;
};

}  // namespace rlscore::engine
