#include "engine/scoring_engine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "engine/advantage_mapping.h"
#include "engine/run_health.h"
#include "engine/score_aggregate.h"
#include "engine/scoring_mapping.h"

namespace rlscore::engine {
namespace {

// Distinct k values a Score request may ask pass@k for.
constexpr int kMaxPassAtK = 64;
// Longest run_id: telemetry keeps it per run.
constexpr size_t kMaxRunIdBytes = 256;

// RESOURCE_EXHAUSTED when a completion's text is over the limit.
absl::Status CheckCompletion(const v1::Completion& c, const Limits& limits,
                             std::string_view where) {
  if (c.text().size() > limits.max_completion_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        Sv(where), ".text: ", c.text().size(),
        " bytes exceed the limit max_completion_bytes = ", limits.max_completion_bytes));
  }
  if (static_cast<uint64_t>(c.token_ids_size()) > limits.max_completion_tokens) {
    return absl::ResourceExhaustedError(absl::StrCat(
        Sv(where), ".token_ids: ", c.token_ids_size(),
        " tokens exceed the limit max_completion_tokens = ", limits.max_completion_tokens));
  }
  return absl::OkStatus();
}

// RESOURCE_EXHAUSTED when a group or item has too many references or one is too long.
absl::Status CheckReferences(const google::protobuf::RepeatedPtrField<std::string>& references,
                             const Limits& limits, std::string_view where) {
  if (static_cast<uint64_t>(references.size()) > limits.max_references) {
    return absl::ResourceExhaustedError(
        absl::StrCat(Sv(where), ".references: ", references.size(),
                     " references exceed the limit max_references = ", limits.max_references));
  }
  for (int i = 0; i < references.size(); ++i) {
    if (references[i].size() > limits.max_reference_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          Sv(where), ".references[", i, "]: ", references[i].size(),
          " bytes exceed the limit max_reference_bytes = ", limits.max_reference_bytes));
    }
  }
  return absl::OkStatus();
}

// INVALID_ARGUMENT naming the completion when TASK_EXTERNAL's accuracy is missing or outside
// [0, 1]: checked before any work, so a bad value in the last group wastes nothing.
absl::Status CheckExternalAccuracy(const v1::Completion& c, std::string_view where) {
  if (!c.has_external_accuracy()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(where), ".external_accuracy is required for TASK_EXTERNAL"));
  }
  const double a = c.external_accuracy();
  if (!(a >= 0.0 && a <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(where), ".external_accuracy is ", a, ": it must be in [0, 1]"));
  }
  return absl::OkStatus();
}

// The task of a group or item: its own, else the profile's.
absl::StatusOr<scorers::Task> ResolveTask(int task, const ServiceProfile& profile) {
  if (task == v1::TASK_UNSPECIFIED) return profile.reward.task;
  return TaskFromProto(task);
}

std::vector<std::string> References(const google::protobuf::RepeatedPtrField<std::string>& refs) {
  return std::vector<std::string>(refs.begin(), refs.end());
}

// Scores one group of completions (or one Score item as a group of one).
absl::Status ScoreOneGroup(const ScoringContext& context, const ServiceProfile& profile,
                           scorers::Task task, const std::vector<std::string>& references,
                           const v1::Completion* const* completions, size_t count,
                           std::vector<scorers::CompletionScore>* scores) {
  std::unique_ptr<scorers::Judge> judge;
  if (task != scorers::Task::kExternal) judge = context.accuracy->Prepare(task, references);
  std::vector<scorers::CompletionInput> inputs;
  inputs.reserve(count);
  for (size_t i = 0; i < count; ++i) inputs.push_back(CompletionInputFromProto(*completions[i]));
  return scorers::ScoreGroup(inputs, task, judge.get(), profile.reward, scores, context.clock);
}

// The caller's verdict on going on (deadline passed, client gone), checked before each group so a
// large batch stops within one group's work.
absl::Status ShouldStop(const ScoringContext& context) {
  return context.keep_going ? context.keep_going() : absl::OkStatus();
}

advantage::Outcome OutcomeOf(const scorers::CompletionScore& s) {
  if (s.unscorable()) return advantage::Outcome::kUnscorable;
  if (s.truncated) return advantage::Outcome::kTruncated;
  return s.accuracy > 0.0 ? advantage::Outcome::kCorrect : advantage::Outcome::kWrong;
}

BatchTelemetry Telemetry(int64_t step,
                         const std::vector<std::vector<scorers::CompletionScore>>& scores,
                         const advantage::BatchSummary& summary) {
  BatchTelemetry t;
  t.step = step;
  t.groups = summary.groups;
  t.zero_variance_groups = summary.zero_variance_groups;
  t.reward_mean = summary.reward_mean;
  t.reward_std = summary.reward_std;
  double length_sum = 0.0;
  for (const auto& group : scores) {
    for (const scorers::CompletionScore& s : group) {
      ++t.completions;
      length_sum += s.num_tokens;
      t.max_length_tokens = std::max(t.max_length_tokens, s.num_tokens);
      t.truncated += s.truncated;
      t.repetition_fired += s.repetition_finding.detector != scorers::RepetitionDetector::kNone;
      // Well-formed but wrong, whether the gate withheld the format reward or an ungated profile
      // paid it: the incident's Mechanism 2 either way.
      t.format_without_accuracy += s.format_gated || s.format_paid_ungated;
    }
  }
  t.mean_length_tokens = t.completions == 0 ? 0.0 : length_sum / static_cast<double>(t.completions);
  return t;
}

}  // namespace

absl::Status RunScoreGroups(const ScoringContext& context, const v1::ScoreGroupsRequest& request,
                            v1::ScoreGroupsResponse* response) {
  const Limits& limits = *context.limits;
  if (static_cast<uint64_t>(request.groups_size()) > limits.max_groups_per_request) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "groups: ", request.groups_size(),
        " groups exceed the limit max_groups_per_request = ", limits.max_groups_per_request));
  }
  if (request.run_id().size() > kMaxRunIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("run_id: ", request.run_id().size(), " bytes; at most ", kMaxRunIdBytes));
  }
  uint64_t completions = 0;
  for (const v1::Group& group : request.groups()) completions += group.completions_size();
  if (completions > limits.max_completions_per_request) {
    return absl::ResourceExhaustedError(
        absl::StrCat("groups: ", completions, " completions exceed the limit ",
                     "max_completions_per_request = ", limits.max_completions_per_request));
  }
  RLSCORE_ASSIGN_OR_RETURN(const ServiceProfile* profile,
                           context.profiles->Find(request.profile()));
  advantage::Options options = profile->advantage;
  if (request.has_advantage()) {
    absl::Status status = ApplyAdvantageOptions(request.advantage(), &options);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("advantage.", status.message()));
    }
  }

  // Check every limit and the tasks before any work, so a bad request costs nothing.
  const int num_groups = request.groups_size();
  std::vector<scorers::Task> tasks(num_groups);
  std::vector<uint32_t> group_sizes(num_groups);
  for (int g = 0; g < num_groups; ++g) {
    const v1::Group& group = request.groups(g);
    const std::string where = absl::StrCat("groups[", g, "]");
    if (group.completions_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has no completions"));
    }
    if (static_cast<uint64_t>(group.completions_size()) > limits.max_group_size) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where, ": ", group.completions_size(),
                       " completions exceed the limit max_group_size = ", limits.max_group_size));
    }
    RLSCORE_RETURN_IF_ERROR(CheckReferences(group.references(), limits, where));
    for (int i = 0; i < group.completions_size(); ++i) {
      RLSCORE_RETURN_IF_ERROR(CheckCompletion(group.completions(i), limits,
                                              absl::StrCat(where, ".completions[", i, "]")));
    }
    absl::StatusOr<scorers::Task> task = ResolveTask(group.task(), *profile);
    if (!task.ok())
      return absl::InvalidArgumentError(absl::StrCat(where, ".", task.status().message()));
    tasks[g] = *task;
    if (*task == scorers::Task::kExternal) {
      for (int i = 0; i < group.completions_size(); ++i) {
        RLSCORE_RETURN_IF_ERROR(CheckExternalAccuracy(
            group.completions(i), absl::StrCat(where, ".completions[", i, "]")));
      }
    }
    group_sizes[g] = static_cast<uint32_t>(group.completions_size());
  }

  std::vector<std::vector<scorers::CompletionScore>> scores(num_groups);
  std::vector<absl::Status> statuses(num_groups);
  context.pool->ParallelFor(num_groups, [&](size_t g) {
    if (absl::Status stop = ShouldStop(context); !stop.ok()) {
      statuses[g] = std::move(stop);
      return;
    }
    const v1::Group& group = request.groups(static_cast<int>(g));
    statuses[g] = ScoreOneGroup(context, *profile, tasks[g], References(group.references()),
                                group.completions().data(), group.completions_size(), &scores[g]);
  });
  for (int g = 0; g < num_groups; ++g) {
    if (!statuses[g].ok()) {
      return absl::Status(statuses[g].code(),
                          absl::StrCat("groups[", g, "]: ", statuses[g].message()));
    }
  }

  // Rewards and outcomes, flat in request order; then the advantage engine.
  // GDPO reads the four reward components before weighting, with the profile's weights (their
  // weighted sum is the total); the keep band reads the accuracy components.
  const bool gdpo = options.estimator == advantage::Estimator::kGdpo;
  std::vector<double> rewards;
  std::vector<advantage::Outcome> outcomes;
  std::vector<double> components;
  std::vector<double> accuracy;
  for (const auto& group : scores) {
    for (const scorers::CompletionScore& s : group) {
      rewards.push_back(s.total);
      outcomes.push_back(OutcomeOf(s));
      if (gdpo) components.insert(components.end(), {s.accuracy, s.format, s.repetition, s.length});
      if (options.keep_band.enabled) accuracy.push_back(s.accuracy);
    }
  }
  const scorers::Weights& w = profile->reward.weights;
  const std::vector<double> weights = {w.accuracy, w.format, w.repetition, w.length};
  advantage::Batch batch{
      .rewards = rewards, .group_sizes = group_sizes, .outcomes = outcomes, .accuracy = accuracy};
  if (gdpo) {
    batch.components = components;
    batch.num_components = static_cast<uint32_t>(weights.size());
    batch.component_weights = weights;
  }
  std::vector<advantage::GroupStats> stats(num_groups);
  advantage::BatchSummary summary;
  const absl::StatusOr<std::string_view> served = context.backend->Compute(
      batch, options, PrepareAdvantages(rewards.size(), response->mutable_advantages()), stats,
      &summary);
  if (!served.ok()) return served.status();

  response->mutable_rewards()->Add(rewards.begin(), rewards.end());
  response->mutable_results()->Reserve(static_cast<int>(rewards.size()));
  for (const auto& group : scores) {
    for (const scorers::CompletionScore& s : group) {
      FillCompletionResult(s, response->add_results());
      if (context.metrics != nullptr) context.metrics->RecordCompletion(s);
    }
  }
  FillGroupStatistics(stats, response->mutable_groups());
  FillBatchSummary(summary, response->mutable_summary());
  response->set_profile_hash(profile->hash);
  response->set_backend(std::string(*served));
  if (context.telemetry != nullptr && !request.run_id().empty()) {
    const std::optional<std::string> evicted =
        context.telemetry->Record(request.run_id(), Telemetry(request.step(), scores, summary));
    if (context.metrics != nullptr && context.health != nullptr) {
      if (evicted.has_value()) context.metrics->RemoveRun(*evicted);
      const std::vector<BatchTelemetry> window = context.telemetry->Window(request.run_id());
      context.metrics->SetRunHealth(EvaluateRunHealth(request.run_id(), window, *context.health));
    }
  }
  if (context.metrics != nullptr) {
    context.metrics->RecordAdvantageBatch(summary);
    context.metrics->RecordAdvantageBackend(*served);
  }
  return absl::OkStatus();
}

absl::Status RunScore(const ScoringContext& context, const v1::ScoreRequest& request,
                      v1::ScoreResponse* response) {
  const Limits& limits = *context.limits;
  if (static_cast<uint64_t>(request.items_size()) > limits.max_completions_per_request) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "items: ", request.items_size(), " items exceed the limit max_completions_per_request = ",
        limits.max_completions_per_request));
  }
  RLSCORE_ASSIGN_OR_RETURN(const ServiceProfile* profile,
                           context.profiles->Find(request.profile()));
  const int n = request.items_size();
  std::vector<scorers::Task> tasks(n);
  for (int i = 0; i < n; ++i) {
    const std::string where = absl::StrCat("items[", i, "]");
    RLSCORE_RETURN_IF_ERROR(
        CheckCompletion(request.items(i).completion(), limits, absl::StrCat(where, ".completion")));
    RLSCORE_RETURN_IF_ERROR(CheckReferences(request.items(i).references(), limits, where));
    absl::StatusOr<scorers::Task> task = ResolveTask(request.items(i).task(), *profile);
    if (!task.ok())
      return absl::InvalidArgumentError(absl::StrCat(where, ".", task.status().message()));
    tasks[i] = *task;
  }
  if (request.pass_at_k_size() > kMaxPassAtK) {
    return absl::InvalidArgumentError(
        absl::StrCat("pass_at_k: ", request.pass_at_k_size(), " values; at most ", kMaxPassAtK));
  }
  for (uint32_t k : request.pass_at_k()) {
    if (k == 0) return absl::InvalidArgumentError("pass_at_k: k must be at least 1");
  }

  std::vector<std::vector<scorers::CompletionScore>> scores(n);
  std::vector<absl::Status> statuses(n);
  context.pool->ParallelFor(n, [&](size_t i) {
    if (absl::Status stop = ShouldStop(context); !stop.ok()) {
      statuses[i] = std::move(stop);
      return;
    }
    const v1::ScoreItem& item = request.items(static_cast<int>(i));
    const v1::Completion* completion = &item.completion();
    statuses[i] = ScoreOneGroup(context, *profile, tasks[i], References(item.references()),
                                &completion, 1, &scores[i]);
  });
  for (int i = 0; i < n; ++i) {
    if (!statuses[i].ok()) {
      // The scorers name "completion 0" of the item's group of one; the item index says more.
      return absl::Status(statuses[i].code(),
                          absl::StrCat("items[", i, "]: ", statuses[i].message()));
    }
  }

  ScoreAggregator aggregator;
  for (int i = 0; i < n; ++i) {
    const scorers::CompletionScore& s = scores[i][0];
    response->add_rewards(s.total);
    v1::CompletionResult* result = response->add_results();
    FillCompletionResult(s, result);
    if (context.metrics != nullptr) context.metrics->RecordCompletion(s);
    aggregator.Add(request.items(i).prompt_id(), *result);
  }
  *response->mutable_aggregate() = aggregator.Finish(
      std::span<const uint32_t>(request.pass_at_k().data(), request.pass_at_k().size()));
  response->set_profile_hash(profile->hash);
  return absl::OkStatus();
}

}  // namespace rlscore::engine
