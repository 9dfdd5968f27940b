// engine::Metrics as Prometheus series: `rlscore_` prefix, base units, `_total` counters.
// Every family is registered from one table, MetricFamilies(), which is also what the README's
// metric table is checked against (tests/service/prometheus_metrics_test.cc), so they cannot
// drift.
//
//   PrometheusMetrics metrics;
//   metrics.CallStarted(engine::Method::kScore);
//   prometheus::Exposer exposer("127.0.0.1:9464");
//   exposer.RegisterCollectable(metrics.registry());
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/types/span.h"
#include "common/mutex.h"
#include "engine/metrics.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace rlscore::service {

enum class MetricType { kCounter, kGauge, kHistogram };
std::string_view MetricTypeName(MetricType type);  // "counter", "gauge", "histogram"

// One family of series: its name, type, label names (comma-separated, in order; empty for none)
// and help text.
struct MetricFamilySpec {
  std::string_view name;
  MetricType type;
  std::string_view labels;
  std::string_view help;
};

// Every family the server exports, in registration order.
absl::Span<const MetricFamilySpec> MetricFamilies();

// Thread-safe: every member may be called concurrently.
class PrometheusMetrics final : public engine::Metrics {
 public:
  PrometheusMetrics();
  ~PrometheusMetrics() override;
  PrometheusMetrics(const PrometheusMetrics&) = delete;
  PrometheusMetrics& operator=(const PrometheusMetrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void CallStarted(engine::Method method) override;
  void CallFinished(engine::Method method, absl::StatusCode code, absl::Duration elapsed) override;
  void CallCancelled(engine::Method method) override;
  void RecordAdvantageBatch(const advantage::BatchSummary& summary) override;
  void SetBackend(std::string_view backend) override;
  void RecordAdvantageBackend(std::string_view backend) override;
  void RecordGpuFallback(std::string_view reason) override;
  void RecordCompletion(const scorers::CompletionScore& score) override;
  void RecordGenerationStop(scorers::StopReason reason) override;
  void SetMemoryBudget(uint64_t bytes) override;
  void SetMemoryInUse(uint64_t bytes) override;
  void RecordAdmissionRefusal(bool retryable) override;
  void RecordPromptNotFound(uint64_t count) override;
  void SetRunHealth(const engine::RunHealthReport& report) override;
  void RemoveRun(std::string_view run_id) override;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_;
  std::array<prometheus::Histogram*, engine::kNumMethods> durations_;
  std::array<prometheus::Gauge*, engine::kNumMethods> in_flight_;
  std::array<prometheus::Counter*, engine::kNumMethods> cancelled_;
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
  std::array<prometheus::Counter*, 6> repetition_fired_{};  // by scorers::RepetitionDetector
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
  std::array<prometheus::Counter*, 4> generation_stops_{};  // by scorers::StopReason
  prometheus::Family<prometheus::Gauge>* run_level_;
  prometheus::Family<prometheus::Gauge>* run_signal_;
  Mutex runs_mu_;
  std::map<std::string, std::vector<prometheus::Gauge*>, std::less<>> run_gauges_
      ABSL_GUARDED_BY(runs_mu_);
};

}  // namespace rlscore::service
