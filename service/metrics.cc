#include "service/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

#include "absl/status/status.h"

namespace rlscore::service {

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kScoreGroups:
      return "ScoreGroups";
    case Method::kComputeAdvantages:
      return "ComputeAdvantages";
    case Method::kScore:
      return "Score";
    case Method::kMonitorGeneration:
      return "MonitorGeneration";
    case Method::kGetRunHealth:
      return "GetRunHealth";
    case Method::kHttpGetReward:
      return "POST /get_reward";
    case Method::kHttpReward:
      return "POST /reward";
  }
  return "unknown";
}

namespace {

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

// absl::StatusCodeToString gives "INVALID_ARGUMENT" etc.; gRPC's names are the same.
std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  requests_ = &prometheus::BuildCounter()
                   .Name("rlscore_requests_total")
                   .Help("RPCs answered, by method and gRPC status code")
                   .Register(*registry_);
  auto& durations = prometheus::BuildHistogram()
                        .Name("rlscore_request_duration_seconds")
                        .Help("Time to handle an RPC, from its arrival to its answer")
                        .Register(*registry_);
  auto& in_flight = prometheus::BuildGauge()
                        .Name("rlscore_requests_in_flight")
                        .Help("RPCs being handled now")
                        .Register(*registry_);
  for (int m = 0; m < kNumMethods; ++m) {
    const std::string name(MethodName(static_cast<Method>(m)));
    durations_[m] = &durations.Add({{"method", name}}, LatencyBuckets());
    in_flight_[m] = &in_flight.Add({{"method", name}});
  }
  batch_rewards_ = &prometheus::BuildHistogram()
                        .Name("rlscore_advantage_batch_rewards")
                        .Help("Rewards per batch given to the advantage engine")
                        .Register(*registry_)
                        .Add({}, BatchBuckets());
  rewards_ = &prometheus::BuildCounter()
                  .Name("rlscore_advantage_rewards_total")
                  .Help("Rewards that went through the advantage engine")
                  .Register(*registry_)
                  .Add({});
  unscorable_ = &prometheus::BuildCounter()
                     .Name("rlscore_advantage_unscorable_total")
                     .Help("Rewards left out of their group's statistics as unscorable")
                     .Register(*registry_)
                     .Add({});
  groups_ = &prometheus::BuildCounter()
                 .Name("rlscore_advantage_groups_total")
                 .Help("Groups that went through the advantage engine")
                 .Register(*registry_)
                 .Add({});
  auto& zero_variance = prometheus::BuildCounter()
                            .Name("rlscore_advantage_zero_variance_groups_total")
                            .Help("Groups clamped to zero advantage, by cause")
                            .Register(*registry_);
  for (int c = 1; c < advantage::kNumZeroVarianceCauses; ++c) {
    zero_variance_groups_[c] = &zero_variance.Add(
        {{"cause",
          std::string(advantage::CauseName(static_cast<advantage::ZeroVarianceCause>(c)))}});
  }
  zero_variance_fraction_ = &prometheus::BuildGauge()
                                 .Name("rlscore_advantage_zero_variance_fraction")
                                 .Help("Fraction of zero-variance groups in the last batch")
                                 .Register(*registry_)
                                 .Add({});
  backend_info_ = &prometheus::BuildGauge()
                       .Name("rlscore_advantage_backend_info")
                       .Help("1 for the backend that computes advantages")
                       .Register(*registry_);
  auto& by_backend = prometheus::BuildCounter()
                         .Name("rlscore_advantage_batches_total")
                         .Help("Advantage batches computed, by the backend that computed them")
                         .Register(*registry_);
  batches_by_backend_ = {&by_backend.Add({{"backend", "cpu"}}),
                         &by_backend.Add({{"backend", "cuda"}})};
  auto& fallbacks = prometheus::BuildCounter()
                        .Name("rlscore_gpu_fallbacks_total")
                        .Help(
                            "Times the CPU stood in for the GPU: unavailable at start (--gpu=auto)"
                            " or an error on a batch")
                        .Register(*registry_);
  gpu_fallbacks_ = {&fallbacks.Add({{"reason", "unavailable"}}),
                    &fallbacks.Add({{"reason", "error"}})};
  memory_budget_ = &prometheus::BuildGauge()
                        .Name("rlscore_memory_budget_bytes")
                        .Help("The memory admission budget (limits.memory_budget_bytes)")
                        .Register(*registry_)
                        .Add({});
  memory_in_use_ = &prometheus::BuildGauge()
                        .Name("rlscore_memory_in_use_bytes")
                        .Help("Memory charged to the calls being handled, of the budget")
                        .Register(*registry_)
                        .Add({});
  auto& refusals = prometheus::BuildCounter()
                       .Name("rlscore_admission_refusals_total")
                       .Help(
                           "Calls refused by memory admission: retryable (the budget was held by "
                           "other calls) or not (the call alone is larger than the budget)")
                       .Register(*registry_);
  admission_refusals_ = {&refusals.Add({{"retryable", "false"}}),
                         &refusals.Add({{"retryable", "true"}})};
  prompt_not_found_ =
      &prometheus::BuildCounter()
           .Name("rlscore_http_prompt_not_found_total")
           .Help("OpenRLHF queries that did not contain their prompt: the whole query was scored")
           .Register(*registry_)
           .Add({});
  auto& stops = prometheus::BuildCounter()
                    .Name("rlscore_generation_stops_total")
                    .Help("Generations MonitorGeneration told to stop, by reason")
                    .Register(*registry_);
  generation_stops_ = {&stops.Add({{"reason", "repetition_ngram"}}),
                       &stops.Add({{"reason", "token_budget"}})};
  run_level_ = &prometheus::BuildGauge()
                    .Name("rlscore_run_health_level")
                    .Help("Health of a tracked training run: 0 OK, 1 WARN, 2 CRITICAL")
                    .Register(*registry_);
  run_signal_ = &prometheus::BuildGauge()
                     .Name("rlscore_run_signal")
                     .Help("A tracked run's health signal over its recent batches (GetRunHealth)")
                     .Register(*registry_);
  auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(*registry_).Add({});
  };
  completions_ = counter("rlscore_completions_total", "Completions scored");
  auto& components = prometheus::BuildHistogram()
                         .Name("rlscore_reward_component")
                         .Help("Reward components of scored completions, before weighting")
                         .Register(*registry_);
  const char* component_names[] = {"accuracy", "format", "repetition", "length", "total"};
  for (size_t i = 0; i < components_.size(); ++i) {
    components_[i] = &components.Add({{"component", component_names[i]}}, RewardBuckets());
  }
  auto& verdicts = prometheus::BuildCounter()
                       .Name("rlscore_verdicts_total")
                       .Help("Completions by typed verdict")
                       .Register(*registry_);
  const char* verdict_names[] = {"correct", "wrong", "no_answer", "unparseable_reference",
                                 "budget_exceeded"};
  for (size_t i = 0; i < verdicts_.size(); ++i) {
    verdicts_[i] = &verdicts.Add({{"verdict", verdict_names[i]}});
  }
  auto& fired = prometheus::BuildCounter()
                    .Name("rlscore_repetition_fired_total")
                    .Help("Completions whose repetition rule fired, by detector")
                    .Register(*registry_);
  repetition_fired_[static_cast<size_t>(scorers::RepetitionDetector::kNgram)] =
      &fired.Add({{"detector", "ngram"}});
  repetition_fired_[static_cast<size_t>(scorers::RepetitionDetector::kAstBlock)] =
      &fired.Add({{"detector", "ast_block"}});
  repetition_fired_[static_cast<size_t>(scorers::RepetitionDetector::kAstCodeClone)] =
      &fired.Add({{"detector", "ast_code_clone"}});
  // tree-sitter parses 2-4 MB/s here: 1 KB takes about 0.3 ms, the 256 KiB budget about 100 ms.
  ast_parse_seconds_ =
      &prometheus::BuildHistogram()
           .Name("rlscore_ast_parse_seconds")
           .Help(
               "Time the AST repetition detector spent parsing one completion "
               "(only completions its screens did not rule out)")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3,
                                                            1e-2, 3e-2, 0.1, 0.3, 1.0});
  ast_parsed_ = counter("rlscore_ast_parsed_total",
                        "Completions the AST repetition detector parsed with tree-sitter");
  auto& skips = prometheus::BuildCounter()
                    .Name("rlscore_ast_budget_skips_total")
                    .Help(
                        "Completions whose AST repetition check stopped on a budget: bytes, "
                        "work or nodes (the n-gram rule still applied), or time, the wall-clock "
                        "safety net (the completion is then BUDGET_EXCEEDED)")
                    .Register(*registry_);
  for (auto budget : {scorers::ast::AstBudget::kBytes, scorers::ast::AstBudget::kWork,
                      scorers::ast::AstBudget::kNodes, scorers::ast::AstBudget::kTime}) {
    ast_budget_skips_[static_cast<size_t>(budget)] =
        &skips.Add({{"budget", std::string(scorers::ast::AstBudgetName(budget))}});
  }
  truncated_ = counter("rlscore_truncated_total", "Completions truncated (no EOS or >= L_max)");
  tokens_estimated_ =
      counter("rlscore_tokens_estimated_total", "Completions whose token count was estimated");
  format_gated_ = counter("rlscore_format_gated_total",
                          "Well-formed completions whose format reward was withheld because the "
                          "answer was wrong");
  format_ungated_ = counter("rlscore_format_ungated_total",
                            "Format rewards paid to wrong answers because a profile opted out of "
                            "the accuracy gate");
  prometheus::BuildGauge()
      .Name("rlscore_build_info")
      .Help("1, labelled with the version of this build")
      .Register(*registry_)
      .Add({{"version", RLSCORE_VERSION}})
      .Set(1);
}

Metrics::~Metrics() = default;

void Metrics::CallStarted(Method method) { in_flight_[static_cast<int>(method)]->Increment(); }

void Metrics::CallFinished(Method method, absl::StatusCode code, absl::Duration elapsed) {
  const int m = static_cast<int>(method);
  in_flight_[m]->Decrement();
  durations_[m]->Observe(absl::ToDoubleSeconds(elapsed));
  requests_->Add({{"method", std::string(MethodName(method))}, {"code", CodeName(code)}})
      .Increment();
}

void Metrics::RecordAdvantageBatch(const advantage::BatchSummary& summary) {
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

void Metrics::RecordCompletion(const scorers::CompletionScore& s) {
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

void Metrics::RecordAdvantageBackend(std::string_view backend) {
  batches_by_backend_[backend == "cuda" ? 1 : 0]->Increment();
}

void Metrics::RecordGpuFallback(std::string_view reason) {
  gpu_fallbacks_[reason == "error" ? 1 : 0]->Increment();
}

void Metrics::SetMemoryBudget(uint64_t bytes) { memory_budget_->Set(static_cast<double>(bytes)); }

void Metrics::SetMemoryInUse(uint64_t bytes) { memory_in_use_->Set(static_cast<double>(bytes)); }

void Metrics::RecordAdmissionRefusal(bool retryable) {
  admission_refusals_[retryable ? 1 : 0]->Increment();
}

void Metrics::RecordPromptNotFound(uint64_t count) {
  prompt_not_found_->Increment(static_cast<double>(count));
}

void Metrics::RecordGenerationStop(scorers::StopReason reason) {
  generation_stops_[static_cast<size_t>(reason)]->Increment();
}

void Metrics::SetRunHealth(const RunHealthReport& report) {
  std::lock_guard<std::mutex> lock(runs_mu_);
  std::vector<prometheus::Gauge*>& gauges = run_gauges_[report.run_id];
  // Gauges are created once per run and signal; Add returns the existing one after that.
  gauges.clear();
  prometheus::Gauge& level = run_level_->Add({{"run", report.run_id}});
  level.Set(static_cast<double>(report.level));
  gauges.push_back(&level);
  for (const HealthSignal& signal : report.signals) {
    prometheus::Gauge& g = run_signal_->Add({{"run", report.run_id}, {"signal", signal.name}});
    g.Set(signal.value);
    gauges.push_back(&g);
  }
}

void Metrics::RemoveRun(std::string_view run_id) {
  std::lock_guard<std::mutex> lock(runs_mu_);
  auto it = run_gauges_.find(run_id);
  if (it == run_gauges_.end()) return;
  run_level_->Remove(it->second.front());
  for (size_t i = 1; i < it->second.size(); ++i) run_signal_->Remove(it->second[i]);
  run_gauges_.erase(it);
}

void Metrics::SetBackend(std::string_view backend) {
  backend_info_->Add({{"backend", std::string(backend)}}).Set(1);
}

}  // namespace rlscore::service
