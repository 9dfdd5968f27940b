#include "service/prometheus_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

#include "absl/status/status.h"

namespace rlscore::service {

namespace {

using engine::Method;

// The families, in the order of kFamilies below.
enum class F {
  kRequests,
  kRequestDuration,
  kRequestsInFlight,
  kRequestsCancelled,
  kBatchRewards,
  kRewards,
  kUnscorable,
  kGroups,
  kZeroVarianceGroups,
  kZeroVarianceFraction,
  kBackendInfo,
  kBatchesByBackend,
  kGpuFallbacks,
  kMemoryBudget,
  kMemoryInUse,
  kAdmissionRefusals,
  kPromptNotFound,
  kGenerationStops,
  kRunHealthLevel,
  kRunSignal,
  kCompletions,
  kRewardComponent,
  kVerdicts,
  kRepetitionFired,
  kAstParseSeconds,
  kAstParsed,
  kAstBudgetSkips,
  kTruncated,
  kTokensEstimated,
  kFormatGated,
  kFormatUngated,
  kBuildInfo,
  kCount
};

constexpr MetricType kCounter = MetricType::kCounter;
constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kHistogram = MetricType::kHistogram;

constexpr MetricFamilySpec kFamilies[] = {
    {"rlscore_requests_total", kCounter, "method,code",
     "RPCs answered, by method and gRPC status code"},
    {"rlscore_request_duration_seconds", kHistogram, "method",
     "Time to handle an RPC, from its arrival to its answer"},
    {"rlscore_requests_in_flight", kGauge, "method", "RPCs being handled now"},
    {"rlscore_requests_cancelled_total", kCounter, "method",
     "Calls cancelled while being handled (the client gave up or its deadline passed), counted "
     "when the transport reports it"},
    {"rlscore_advantage_batch_rewards", kHistogram, "",
     "Rewards per batch given to the advantage engine"},
    {"rlscore_advantage_rewards_total", kCounter, "",
     "Rewards that went through the advantage engine"},
    {"rlscore_advantage_unscorable_total", kCounter, "",
     "Rewards left out of their group's statistics as unscorable"},
    {"rlscore_advantage_groups_total", kCounter, "",
     "Groups that went through the advantage engine"},
    {"rlscore_advantage_zero_variance_groups_total", kCounter, "cause",
     "Groups clamped to zero advantage, by cause"},
    {"rlscore_advantage_zero_variance_fraction", kGauge, "",
     "Fraction of zero-variance groups in the last batch"},
    {"rlscore_advantage_backend_info", kGauge, "backend",
     "1 for the backend that computes advantages"},
    {"rlscore_advantage_batches_total", kCounter, "backend",
     "Advantage batches computed, by the backend that computed them"},
    {"rlscore_gpu_fallbacks_total", kCounter, "reason",
     "Times the CPU stood in for the GPU: unavailable at start (--gpu=auto) or an error on a "
     "batch"},
    {"rlscore_memory_budget_bytes", kGauge, "",
     "The memory admission budget (limits.memory_budget_bytes)"},
    {"rlscore_memory_in_use_bytes", kGauge, "",
     "Memory charged to the calls being handled, of the budget"},
    {"rlscore_admission_refusals_total", kCounter, "retryable",
     "Calls refused by memory admission: retryable (the budget was held by other calls) or not "
     "(the call alone is larger than the budget)"},
    {"rlscore_http_prompt_not_found_total", kCounter, "",
     "OpenRLHF queries that did not contain their prompt: the whole query was scored"},
    {"rlscore_generation_stops_total", kCounter, "reason",
     "Generations MonitorGeneration told to stop, by reason"},
    {"rlscore_run_health_level", kGauge, "run",
     "Health of a tracked training run: 0 OK, 1 WARN, 2 CRITICAL"},
    {"rlscore_run_signal", kGauge, "run,signal",
     "A tracked run's health signal over its recent batches (GetRunHealth)"},
    {"rlscore_completions_total", kCounter, "", "Completions scored"},
    {"rlscore_reward_component", kHistogram, "component",
     "Reward components of scored completions, before weighting"},
    {"rlscore_verdicts_total", kCounter, "verdict", "Completions by typed verdict"},
    {"rlscore_repetition_fired_total", kCounter, "detector",
     "Completions whose repetition rule fired, by detector"},
    {"rlscore_ast_parse_seconds", kHistogram, "",
     "Time the AST repetition detector spent parsing one completion (only completions its "
     "screens did not rule out)"},
    {"rlscore_ast_parsed_total", kCounter, "",
     "Completions the AST repetition detector parsed with tree-sitter"},
    {"rlscore_ast_budget_skips_total", kCounter, "budget",
     "Completions whose AST repetition check stopped on a budget: bytes, work or nodes (the "
     "n-gram rule still applied), or time, the wall-clock safety net (the completion is then "
     "BUDGET_EXCEEDED)"},
    {"rlscore_truncated_total", kCounter, "", "Completions truncated (no EOS or >= L_max)"},
    {"rlscore_tokens_estimated_total", kCounter, "", "Completions whose token count was estimated"},
    {"rlscore_format_gated_total", kCounter, "",
     "Well-formed completions whose format reward was withheld because the answer was wrong"},
    {"rlscore_format_ungated_total", kCounter, "",
     "Format rewards paid to wrong answers because a profile opted out of the accuracy gate"},
    {"rlscore_build_info", kGauge, "version", "1, labelled with the version of this build"},
};
static_assert(std::size(kFamilies) == static_cast<size_t>(F::kCount),
              "kFamilies must list every family of F, in order");

// Handling time from 50 µs (a small ComputeAdvantages) to 30 s (a bulk Score).
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
          5e-2, 0.1,  0.25,   0.5,  1,    2.5,    5,    10,   30};
}

// Powers of ten from one reward to 10^8 (a whole evaluation sweep).
prometheus::Histogram::BucketBoundaries BatchBuckets() {
  return {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
}

// Reward components live in about [-2, 2].
prometheus::Histogram::BucketBoundaries RewardBuckets() {
  return {-1.5, -1, -0.75, -0.5, -0.25, -0.1, -1e-9, 1e-9, 0.1, 0.25, 0.5, 0.75, 1, 1.1, 1.5};
}

// tree-sitter parses 2-4 MB/s here: 1 KB takes about 0.3 ms, the 256 KiB budget about 100 ms.
prometheus::Histogram::BucketBoundaries ParseBuckets() {
  return {1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0};
}

// absl::StatusCodeToString gives "INVALID_ARGUMENT" etc.; gRPC's names are the same.
std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

// Every family of the table, registered once, by type.
class Families {
 public:
  explicit Families(prometheus::Registry& registry) {
    for (size_t i = 0; i < std::size(kFamilies); ++i) {
      const MetricFamilySpec& spec = kFamilies[i];
      const std::string name(spec.name), help(spec.help);
      switch (spec.type) {
        case MetricType::kCounter:
          counters_[i] = &prometheus::BuildCounter().Name(name).Help(help).Register(registry);
          break;
        case MetricType::kGauge:
          gauges_[i] = &prometheus::BuildGauge().Name(name).Help(help).Register(registry);
          break;
        case MetricType::kHistogram:
          histograms_[i] = &prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
          break;
      }
    }
  }
  // REQUIRES: `f` has the type asked for (a null dereference otherwise, on the first start).
  prometheus::Family<prometheus::Counter>& Counter(F f) { return *counters_[Index(f)]; }
  prometheus::Family<prometheus::Gauge>& Gauge(F f) { return *gauges_[Index(f)]; }
  prometheus::Family<prometheus::Histogram>& Histogram(F f) { return *histograms_[Index(f)]; }

 private:
  static size_t Index(F f) { return static_cast<size_t>(f); }
  std::array<prometheus::Family<prometheus::Counter>*, std::size(kFamilies)> counters_{};
  std::array<prometheus::Family<prometheus::Gauge>*, std::size(kFamilies)> gauges_{};
  std::array<prometheus::Family<prometheus::Histogram>*, std::size(kFamilies)> histograms_{};
};

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "unknown";
}

absl::Span<const MetricFamilySpec> MetricFamilies() { return kFamilies; }

PrometheusMetrics::PrometheusMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  Families f(*registry_);
  requests_ = &f.Counter(F::kRequests);
  for (int m = 0; m < engine::kNumMethods; ++m) {
    const std::string name(engine::MethodName(static_cast<Method>(m)));
    durations_[m] = &f.Histogram(F::kRequestDuration).Add({{"method", name}}, LatencyBuckets());
    in_flight_[m] = &f.Gauge(F::kRequestsInFlight).Add({{"method", name}});
    cancelled_[m] = &f.Counter(F::kRequestsCancelled).Add({{"method", name}});
  }
  batch_rewards_ = &f.Histogram(F::kBatchRewards).Add({}, BatchBuckets());
  rewards_ = &f.Counter(F::kRewards).Add({});
  unscorable_ = &f.Counter(F::kUnscorable).Add({});
  groups_ = &f.Counter(F::kGroups).Add({});
  for (int c = 1; c < advantage::kNumZeroVarianceCauses; ++c) {
    zero_variance_groups_[c] =
        &f.Counter(F::kZeroVarianceGroups)
             .Add({{"cause", std::string(advantage::CauseName(
                                 static_cast<advantage::ZeroVarianceCause>(c)))}});
  }
  zero_variance_fraction_ = &f.Gauge(F::kZeroVarianceFraction).Add({});
  backend_info_ = &f.Gauge(F::kBackendInfo);
  batches_by_backend_ = {&f.Counter(F::kBatchesByBackend).Add({{"backend", "cpu"}}),
                         &f.Counter(F::kBatchesByBackend).Add({{"backend", "cuda"}})};
  gpu_fallbacks_ = {&f.Counter(F::kGpuFallbacks).Add({{"reason", "unavailable"}}),
                    &f.Counter(F::kGpuFallbacks).Add({{"reason", "error"}})};
  memory_budget_ = &f.Gauge(F::kMemoryBudget).Add({});
  memory_in_use_ = &f.Gauge(F::kMemoryInUse).Add({});
  admission_refusals_ = {&f.Counter(F::kAdmissionRefusals).Add({{"retryable", "false"}}),
                         &f.Counter(F::kAdmissionRefusals).Add({{"retryable", "true"}})};
  prompt_not_found_ = &f.Counter(F::kPromptNotFound).Add({});
  auto& stops = f.Counter(F::kGenerationStops);
  generation_stops_[static_cast<size_t>(scorers::StopReason::kRepetitionNgram)] =
      &stops.Add({{"reason", "repetition_ngram"}});
  generation_stops_[static_cast<size_t>(scorers::StopReason::kTokenBudget)] =
      &stops.Add({{"reason", "token_budget"}});
  generation_stops_[static_cast<size_t>(scorers::StopReason::kRepetitionTagLoop)] =
      &stops.Add({{"reason", "repetition_tag_loop"}});
  generation_stops_[static_cast<size_t>(scorers::StopReason::kRepetitionUnbrokenRun)] =
      &stops.Add({{"reason", "repetition_unbroken_run"}});
  run_level_ = &f.Gauge(F::kRunHealthLevel);
  run_signal_ = &f.Gauge(F::kRunSignal);
  completions_ = &f.Counter(F::kCompletions).Add({});
  const char* component_names[] = {"accuracy", "format", "repetition", "length", "total"};
  for (size_t i = 0; i < components_.size(); ++i) {
    components_[i] =
        &f.Histogram(F::kRewardComponent).Add({{"component", component_names[i]}}, RewardBuckets());
  }
  const char* verdict_names[] = {"correct", "wrong", "no_answer", "unparseable_reference",
                                 "budget_exceeded"};
  for (size_t i = 0; i < verdicts_.size(); ++i) {
    verdicts_[i] = &f.Counter(F::kVerdicts).Add({{"verdict", verdict_names[i]}});
  }
  auto& fired = f.Counter(F::kRepetitionFired);
  repetition_fired_[static_cast<size_t>(scorers::RepetitionDetector::kNgram)] =
      &fired.Add({{"detector", "ngram"}});
  repetition_fired_[static_cast<size_t>(scorers::RepetitionDetector::kAstBlock)] =
      &fired.Add({{"detector", "ast_block"}});
  repetition_fired_[static_cast<size_t>(scorers::RepetitionDetector::kAstCodeClone)] =
      &fired.Add({{"detector", "ast_code_clone"}});
  repetition_fired_[static_cast<size_t>(scorers::RepetitionDetector::kTagLoop)] =
      &fired.Add({{"detector", "tag_loop"}});
  repetition_fired_[static_cast<size_t>(scorers::RepetitionDetector::kUnbrokenRun)] =
      &fired.Add({{"detector", "unbroken_run"}});
  ast_parse_seconds_ = &f.Histogram(F::kAstParseSeconds).Add({}, ParseBuckets());
  ast_parsed_ = &f.Counter(F::kAstParsed).Add({});
  for (auto budget : {scorers::ast::AstBudget::kBytes, scorers::ast::AstBudget::kWork,
                      scorers::ast::AstBudget::kNodes, scorers::ast::AstBudget::kTime}) {
    ast_budget_skips_[static_cast<size_t>(budget)] =
        &f.Counter(F::kAstBudgetSkips)
             .Add({{"budget", std::string(scorers::ast::AstBudgetName(budget))}});
  }
  truncated_ = &f.Counter(F::kTruncated).Add({});
  tokens_estimated_ = &f.Counter(F::kTokensEstimated).Add({});
  format_gated_ = &f.Counter(F::kFormatGated).Add({});
  format_ungated_ = &f.Counter(F::kFormatUngated).Add({});
  f.Gauge(F::kBuildInfo).Add({{"version", RLSCORE_VERSION}}).Set(1);
}

PrometheusMetrics::~PrometheusMetrics() = default;

void PrometheusMetrics::CallStarted(Method method) {
  in_flight_[static_cast<int>(method)]->Increment();
}

void PrometheusMetrics::CallCancelled(Method method) {
  cancelled_[static_cast<int>(method)]->Increment();
}

void PrometheusMetrics::CallFinished(Method method, absl::StatusCode code, absl::Duration elapsed) {
  const int m = static_cast<int>(method);
  in_flight_[m]->Decrement();
  durations_[m]->Observe(absl::ToDoubleSeconds(elapsed));
  requests_->Add({{"method", std::string(engine::MethodName(method))}, {"code", CodeName(code)}})
      .Increment();
}

void PrometheusMetrics::RecordAdvantageBatch(const advantage::BatchSummary& summary) {
  batch_rewards_->Observe(static_cast<double>(summary.rewards));
  rewards_->Increment(static_cast<double>(summary.rewards));
  unscorable_->Increment(static_cast<double>(summary.unscorable));
  groups_->Increment(static_cast<double>(summary.groups));
  for (int c = 1; c < advantage::kNumZeroVarianceCauses; ++c) {
    if (summary.groups_by_cause[c] > 0) {
      zero_variance_groups_[c]->Increment(static_cast<double>(summary.groups_by_cause[c]));
    }
  }
  if (summary.groups > 0) zero_variance_fraction_->Set(summary.zero_variance_fraction);
}

void PrometheusMetrics::RecordCompletion(const scorers::CompletionScore& s) {
  completions_->Increment();
  const double values[] = {s.accuracy, s.format, s.repetition, s.length, s.total};
  for (size_t i = 0; i < components_.size(); ++i) components_[i]->Observe(values[i]);
  verdicts_[static_cast<size_t>(s.verdict)]->Increment();
  if (s.repetition_finding.detector != scorers::RepetitionDetector::kNone) {
    repetition_fired_[static_cast<size_t>(s.repetition_finding.detector)]->Increment();
  }
  if (s.ast_parsed) {
    ast_parsed_->Increment();
    ast_parse_seconds_->Observe(s.ast_parse_seconds);
  }
  if (s.ast_skipped != scorers::ast::AstBudget::kNone) {
    ast_budget_skips_[static_cast<size_t>(s.ast_skipped)]->Increment();
  }
  if (s.truncated) truncated_->Increment();
  if (s.tokens_estimated) tokens_estimated_->Increment();
  if (s.format_gated) format_gated_->Increment();
  if (s.format_paid_ungated) format_ungated_->Increment();
}

void PrometheusMetrics::RecordAdvantageBackend(std::string_view backend) {
  batches_by_backend_[backend == "cuda" ? 1 : 0]->Increment();
}

void PrometheusMetrics::RecordGpuFallback(std::string_view reason) {
  gpu_fallbacks_[reason == "error" ? 1 : 0]->Increment();
}

void PrometheusMetrics::SetMemoryBudget(uint64_t bytes) {
  memory_budget_->Set(static_cast<double>(bytes));
}

void PrometheusMetrics::SetMemoryInUse(uint64_t bytes) {
  memory_in_use_->Set(static_cast<double>(bytes));
}

void PrometheusMetrics::RecordAdmissionRefusal(bool retryable) {
  admission_refusals_[retryable ? 1 : 0]->Increment();
}

void PrometheusMetrics::RecordPromptNotFound(uint64_t count) {
  prompt_not_found_->Increment(static_cast<double>(count));
}

void PrometheusMetrics::RecordGenerationStop(scorers::StopReason reason) {
  generation_stops_[static_cast<size_t>(reason)]->Increment();
}

void PrometheusMetrics::SetRunHealth(const engine::RunHealthReport& report) {
  MutexLock lock(&runs_mu_);
  std::vector<prometheus::Gauge*>& gauges = run_gauges_[report.run_id];
  // Gauges are created once per run and signal; Add returns the existing one after that.
  gauges.clear();
  prometheus::Gauge& level = run_level_->Add({{"run", report.run_id}});
  level.Set(static_cast<double>(report.level));
  gauges.push_back(&level);
  for (const engine::HealthSignal& signal : report.signals) {
    prometheus::Gauge& g = run_signal_->Add({{"run", report.run_id}, {"signal", signal.name}});
    g.Set(signal.value);
    gauges.push_back(&g);
  }
}

void PrometheusMetrics::RemoveRun(std::string_view run_id) {
  MutexLock lock(&runs_mu_);
  auto it = run_gauges_.find(run_id);
  if (it == run_gauges_.end()) return;
  run_level_->Remove(it->second.front());
  for (size_t i = 1; i < it->second.size(); ++i) run_signal_->Remove(it->second[i]);
  run_gauges_.erase(it);
}

void PrometheusMetrics::SetBackend(std::string_view backend) {
  backend_info_->Add({{"backend", std::string(backend)}}).Set(1);
}

}  // namespace rlscore::service
