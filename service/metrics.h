// The service's Prometheus metrics (README, "Metrics"): `rlscore_` prefix, base units, `_total`
// counters.
//
//   Metrics metrics;
//   metrics.CallStarted(Method::kComputeAdvantages);
//   ...
//   metrics.CallFinished(Method::kComputeAdvantages, absl::StatusCode::kOk, elapsed);
//   metrics.RecordAdvantageBatch(summary);
//   prometheus::Exposer exposer("127.0.0.1:9464");
//   exposer.RegisterCollectable(metrics.registry());
//
// Series:
//   rlscore_requests_total{method,code}            calls answered, by gRPC status code name
//   rlscore_request_duration_seconds{method}       histogram of handling time
//   rlscore_requests_in_flight{method}             calls being handled now
//   rlscore_advantage_batch_rewards                histogram of rewards per batch
//   rlscore_advantage_rewards_total                rewards that went through the advantage engine
//   rlscore_advantage_unscorable_total             of which unscorable
//   rlscore_advantage_groups_total                 groups
//   rlscore_advantage_zero_variance_groups_total{cause}   clamped groups by cause
//   rlscore_advantage_zero_variance_fraction       of the last batch
//   rlscore_advantage_backend_info{backend}        1 for the preferred backend ("cuda" when a GPU
//                                                  was opened, else "cpu")
//   rlscore_advantage_batches_total{backend}       batches computed, by the backend that did
//   rlscore_gpu_fallbacks_total{reason}            the CPU stood in for the GPU: "unavailable"
//                                                  (at start, --gpu=auto) or "error" (per batch)
//   rlscore_build_info{version}                    1
//   rlscore_generation_stops_total{reason}         MonitorGeneration STOPs: repetition_ngram,
//                                                  token_budget
//   rlscore_run_health_level{run}                  0 OK, 1 WARN, 2 CRITICAL, per tracked run
//   rlscore_run_signal{run,signal}                 each health signal's value (run_health.h); a
//                                                  run's series go when the run is evicted, so
//                                                  the label sets stay bounded by the tracked runs
//   rlscore_completions_total                      completions scored (ScoreGroups and Score)
//   rlscore_reward_component{component}            histogram of accuracy, format, repetition,
//                                                  length and total
//   rlscore_verdicts_total{verdict}                by typed verdict
//   rlscore_repetition_fired_total{detector}       repetition rule fired: ngram, ast_block,
//                                                  ast_code_clone
//   rlscore_ast_parse_seconds                      histogram of the AST detector's parse time per
//                                                  completion it parsed (most are screened out)
//   rlscore_ast_parsed_total                       completions the AST detector parsed
//   rlscore_ast_budget_skips_total{budget}         AST detector gave up: bytes, work, nodes, time
//   rlscore_truncated_total                        completions truncated
//   rlscore_tokens_estimated_total                 completions whose length was estimated
//   rlscore_format_gated_total                     well-formed but wrong: format reward withheld
//                                                  (the pattern the incident exploited)
//   rlscore_format_ungated_total                   format reward paid to a wrong answer because a
//                                                  profile opted out of the gate
//   rlscore_memory_budget_bytes                    the memory admission budget
//   rlscore_memory_in_use_bytes                    what the calls being handled are charged now
//   rlscore_admission_refusals_total{retryable}    calls refused by memory admission
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "advantage/advantage.h"
#include "scorers/generation_monitor.h"
#include "scorers/reward.h"
#include "service/run_health.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace rlscore::service {

// The RPCs of rlscore.v1.ScoringService, as metric label values.
// The gRPC methods, and the HTTP endpoints of service/http_listener.h (labelled by their path).
enum class Method {
  kScoreGroups,
  kComputeAdvantages,
  kScore,
  kMonitorGeneration,
  kGetRunHealth,
  kHttpGetReward,
  kHttpReward
};
inline constexpr int kNumMethods = 7;
std::string_view MethodName(Method method);

// Thread-safe: every member may be called concurrently.
class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void CallStarted(Method method);
  void CallFinished(Method method, absl::StatusCode code, absl::Duration elapsed);
  void RecordAdvantageBatch(const advantage::BatchSummary& summary);
  void SetBackend(std::string_view backend);
  // `backend` computed a batch: "cpu" or "cuda".
  void RecordAdvantageBackend(std::string_view backend);
  // "unavailable" or "error", see above.
  void RecordGpuFallback(std::string_view reason);
  void RecordCompletion(const scorers::CompletionScore& score);
  void RecordGenerationStop(scorers::StopReason reason);
  // Memory admission (admission.h): the budget, what the calls being handled are charged now,
  // and a call refused.
  void SetMemoryBudget(uint64_t bytes);
  void SetMemoryInUse(uint64_t bytes);
  void RecordAdmissionRefusal(bool retryable);
  // OpenRLHF queries in which the HTTP listener did not find the sample's prompt, so the whole
  // query was scored (service/http_rewards.h).
  void RecordPromptNotFound(uint64_t count);
  // Sets the run's health gauges (creating them for a new run).
  void SetRunHealth(const RunHealthReport& report);
  // Drops every series of the run (it was evicted from the telemetry).
  void RemoveRun(std::string_view run_id);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  std::array<prometheus::Histogram*, kNumMethods> durations_;
  std::array<prometheus::Gauge*, kNumMethods> in_flight_;
  prometheus::Histogram* batch_rewards_;
  prometheus::Counter* rewards_;
  prometheus::Counter* unscorable_;
  prometheus::Counter* groups_;
  std::array<prometheus::Counter*, advantage::kNumZeroVarianceCauses> zero_variance_groups_{};
  prometheus::Gauge* zero_variance_fraction_;
  prometheus::Family<prometheus::Gauge>* backend_info_;
  std::array<prometheus::Counter*, 2> batches_by_backend_{};  // cpu, cuda
  std::array<prometheus::Counter*, 2> gpu_fallbacks_{};       // unavailable, error
  prometheus::Counter* completions_;
  std::array<prometheus::Histogram*, 5> components_;  // accuracy, format, repetition, length, total
  std::array<prometheus::Counter*, 5> verdicts_;      // indexed by scorers::Verdict
  std::array<prometheus::Counter*, 4> repetition_fired_{};  // by scorers::RepetitionDetector
  prometheus::Histogram* ast_parse_seconds_;
  prometheus::Counter* ast_parsed_;
  std::array<prometheus::Counter*, 5> ast_budget_skips_{};  // by scorers::ast::AstBudget
  prometheus::Counter* truncated_;
  prometheus::Counter* tokens_estimated_;
  prometheus::Counter* format_gated_;
  prometheus::Counter* format_ungated_;
  prometheus::Gauge* memory_budget_;
  prometheus::Gauge* memory_in_use_;
  std::array<prometheus::Counter*, 2> admission_refusals_{};  // not retryable, retryable
  prometheus::Counter* prompt_not_found_;
  std::array<prometheus::Counter*, 2> generation_stops_{};  // by scorers::StopReason
  prometheus::Family<prometheus::Gauge>* run_level_;
  prometheus::Family<prometheus::Gauge>* run_signal_;
  std::mutex runs_mu_;
  std::map<std::string, std::vector<prometheus::Gauge*>, std::less<>> run_gauges_;
};

}  // namespace rlscore::service
