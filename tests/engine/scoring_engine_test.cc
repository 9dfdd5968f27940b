// ScoreGroups and Score end to end below gRPC: request messages in, response messages out.
#include "engine/scoring_engine.h"

#include <atomic>
#include <bit>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rlscore/config/v1/server_config.pb.h"
#include "scorers/math/verifier.h"

namespace rlscore::engine {
namespace {

using ::testing::HasSubstr;

// Counts what the engine reports; the rest of the interface is ignored here.
class CountingMetrics final : public Metrics {
 public:
  void CallStarted(Method) override {}
  void CallFinished(Method, absl::StatusCode, absl::Duration) override {}
  void CallCancelled(Method) override {}
  void RecordAdvantageBatch(const advantage::BatchSummary&) override { ++batches; }
  void SetBackend(std::string_view) override {}
  void RecordAdvantageBackend(std::string_view) override {}
  void RecordGpuFallback(std::string_view) override {}
  void RecordCompletion(const scorers::CompletionScore& score) override {
    ++completions;
    if (score.format_paid_ungated) ++format_ungated;
  }
  void RecordGenerationStop(scorers::StopReason) override {}
  void SetMemoryBudget(uint64_t) override {}
  void SetMemoryInUse(uint64_t) override {}
  void RecordAdmissionRefusal(bool) override {}
  void RecordPromptNotFound(uint64_t) override {}
  void SetRunHealth(const RunHealthReport&) override {}
  void RemoveRun(std::string_view) override {}

  std::atomic<int> batches = 0;
  std::atomic<int> completions = 0;
  std::atomic<int> format_ungated = 0;
};

// A whole server's worth of collaborators, without the server.
struct Engine {
  explicit Engine(unsigned threads = 2) : pool(threads) {}

  ScoringContext context() {
    return {.limits = &limits,
            .profiles = &profiles,
            .accuracy = accuracy.get(),
            .backend = backend.get(),
            .pool = &pool,
            .metrics = &metrics,
            .telemetry = &telemetry,
            .keep_going = nullptr};
  }

  Limits limits;
  ProfileSet profiles = DefaultProfiles(advantage::Options{});
  std::unique_ptr<scorers::AccuracyScorer> accuracy = scorers::math::NewAccuracyScorer();
  std::unique_ptr<advantage::Backend> backend = advantage::NewCpuBackend();
  WorkerPool pool;
  CountingMetrics metrics;
  RunTelemetry telemetry{8, 16};
};

void AddCompletion(v1::Group* group, const std::string& text, uint32_t tokens,
                   bool finished = true) {
  v1::Completion* c = group->add_completions();
  c->set_text(text);
  c->set_num_tokens(tokens);
  c->set_finished(finished);
}

constexpr char kLoop[] = "Wait, let me double check... but wait... ";

// The incident's step 1,428 as ScoreGroups sees it: 14 groups where every rollout has perfect
// tags and a wrong answer, one group with a looping rollout truncated at the 16,384-token
// ceiling, and one mixed group.
v1::ScoreGroupsRequest IncidentRequest() {
  v1::ScoreGroupsRequest request;
  request.set_run_id("run-32b");
  request.set_step(1428);
  for (int g = 0; g < 14; ++g) {
    v1::Group* group = request.add_groups();
    group->add_references("42");
    for (int i = 0; i < 8; ++i) {
      AddCompletion(group,
                    "<think>Let me compute it step by step.</think> The answer is \\boxed{" +
                        std::to_string(7 + i) + "}.",
                    2780);
    }
  }
  v1::Group* looping = request.add_groups();
  looping->add_references("42");
  std::string loop = "<think>";
  for (int i = 0; i < 40; ++i) loop += kLoop;
  AddCompletion(looping, loop, 16384, /*finished=*/false);
  for (int i = 1; i < 8; ++i) {
    AddCompletion(looping,
                  "<think>6 times 7.</think> \\boxed{" + std::to_string(i % 2 ? 42 : 41) + "}",
                  3000);
  }
  v1::Group* mixed = request.add_groups();
  mixed->add_references("42");
  for (int i = 0; i < 8; ++i) {
    AddCompletion(
        mixed, "<think>6 times 7.</think> \\boxed{" + std::to_string(i < 3 ? 42 : 40) + "}", 2000);
  }
  return request;
}

TEST(ScoreGroups, TheIncidentBatch) {
  Engine engine;
  v1::ScoreGroupsResponse response;
  const absl::Status status = RunScoreGroups(engine.context(), IncidentRequest(), &response);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(response.results_size(), 128);
  ASSERT_EQ(response.advantages_size(), 128);

  // Wrong answers with perfect tags: well-formed, no format reward (the gate), total 0.
  for (int i = 0; i < 112; ++i) {
    SCOPED_TRACE(i);
    const v1::CompletionResult& r = response.results(i);
    EXPECT_EQ(r.verdict(), v1::VERDICT_WRONG);
    EXPECT_TRUE(r.anatomy().well_formed());
    EXPECT_TRUE(r.format_gated());
    EXPECT_EQ(r.components().format(), 0.0);
    EXPECT_EQ(response.rewards(i), 0.0);
    EXPECT_EQ(std::bit_cast<uint64_t>(response.advantages(i)), 0u);
  }
  for (int g = 0; g < 14; ++g) {
    EXPECT_EQ(response.groups().cause(g), v1::ZERO_VARIANCE_CAUSE_ALL_WRONG);
    EXPECT_FALSE(response.groups().keep(g));
  }

  // The looping rollout: the n-gram rule fires at the 4th occurrence of the loop, the length
  // penalty is -0.5 at the ceiling, and it earns no format reward.
  const v1::CompletionResult& loop = response.results(112);
  EXPECT_EQ(loop.repetition().detector(), v1::REPETITION_DETECTOR_NGRAM);
  const uint64_t loop_len = std::string(kLoop).size();
  EXPECT_EQ(loop.repetition().char_offset(), 7 + 3 * loop_len);
  EXPECT_EQ(loop.repetition().first_char_offset(), 7u);
  EXPECT_EQ(loop.repetition().occurrences(), 4u);
  EXPECT_EQ(loop.components().repetition(), -0.5);
  EXPECT_EQ(loop.components().length(), -0.5);
  EXPECT_EQ(loop.components().format(), 0.0);
  EXPECT_TRUE(loop.anatomy().truncated());
  EXPECT_EQ(loop.verdict(), v1::VERDICT_NO_ANSWER);
  EXPECT_EQ(response.rewards(112), -1.0);
  EXPECT_EQ(response.groups().cause(14), v1::ZERO_VARIANCE_CAUSE_NONE);
  EXPECT_LT(response.advantages(112), 0.0);

  // The mixed group: correct answers (1 + 0.1 format) above wrong ones (0).
  for (int i = 0; i < 8; ++i) {
    const double want = i < 3 ? 1.1 : 0.0;
    EXPECT_DOUBLE_EQ(response.rewards(120 + i), want) << i;
    EXPECT_EQ(response.advantages(120 + i) > 0, i < 3) << i;
  }
  EXPECT_EQ(response.summary().zero_variance_groups(), 14u);
  EXPECT_EQ(response.profile_hash().size(), 16u);
  EXPECT_EQ(response.backend(), "cpu");

  // The run's telemetry for step 1,428: the signals of the incident.
  const std::vector<BatchTelemetry> window = engine.telemetry.Window("run-32b");
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].step, 1428);
  EXPECT_EQ(window[0].groups, 16u);
  EXPECT_EQ(window[0].zero_variance_groups, 14u);
  EXPECT_EQ(window[0].completions, 128u);
  EXPECT_EQ(window[0].max_length_tokens, 16384u);
  EXPECT_EQ(window[0].truncated, 1u);
  EXPECT_EQ(window[0].repetition_fired, 1u);
  EXPECT_EQ(window[0].format_without_accuracy, 112u + 3u + 5u);
}

// A runaway generation is never neutral: a loop after </think> (or, for a model that does not
// think, anywhere) and a final answer longer than any answer are WRONG, stay in the group's
// statistics, and both pay the repetition penalty.
TEST(ScoreGroups, RunawayAnswersAreWrongAndStayInTheStatistics) {
  Engine engine;
  config::v1::Profile plain;
  plain.set_name("plain");
  plain.mutable_tags()->set_expects_reasoning(false);
  ASSERT_TRUE(engine.profiles.Add(plain, advantage::Options{}).ok());

  constexpr char kAnswerLoop[] = "I think the answer might be 41, but let me check it again. ";
  std::string looping_answer = "<think>6 times 7.</think> ";
  std::string untagged_loop;
  for (int i = 0; i < 60; ++i) {
    looping_answer += kAnswerLoop;
    untagged_loop += kAnswerLoop;
  }
  // A 17 kB list as the final answer: the integers to 3,500, in the final sentence.
  std::string counting = "<think>Count them.</think> The numbers are";
  for (int i = 1; i <= 3500; ++i) absl::StrAppend(&counting, " ", i, i < 3500 ? "," : "");
  ASSERT_GT(counting.size(), 17000u);

  for (const char* profile : {"default", "plain"}) {
    SCOPED_TRACE(profile);
    const bool thinks = std::string(profile) == "default";
    v1::ScoreGroupsRequest request;
    request.set_profile(profile);
    v1::Group* group = request.add_groups();
    group->add_references("42");
    AddCompletion(group, thinks ? "<think>6 times 7.</think> \\boxed{42}" : "\\boxed{42}", 20);
    AddCompletion(group, thinks ? looping_answer : untagged_loop, 900);
    AddCompletion(group, thinks ? counting : counting.substr(counting.find("The")), 9000);
    v1::ScoreGroupsResponse response;
    ASSERT_TRUE(RunScoreGroups(engine.context(), request, &response).ok());
    ASSERT_EQ(response.results_size(), 3);
    EXPECT_EQ(response.results(0).verdict(), v1::VERDICT_CORRECT);

    const v1::CompletionResult& loop = response.results(1);
    EXPECT_EQ(loop.verdict(), v1::VERDICT_WRONG);
    EXPECT_EQ(loop.repetition().detector(), v1::REPETITION_DETECTOR_NGRAM);
    EXPECT_EQ(loop.components().repetition(), -0.5);

    const v1::CompletionResult& list = response.results(2);
    EXPECT_EQ(list.verdict(), v1::VERDICT_WRONG);
    EXPECT_THAT(list.detail(), HasSubstr("longer than any answer"));
    // Counting repeats no 8-gram, but more than 512 numbers in a row fire the loop rule: the
    // 513th number, 513, where a stop hook would have halted the list.
    EXPECT_EQ(list.repetition().detector(), v1::REPETITION_DETECTOR_NGRAM);
    EXPECT_THAT(list.repetition().detail(), HasSubstr("513 number words in a row"));
    const std::string& list_text = thinks ? counting : counting.substr(counting.find("The"));
    EXPECT_EQ(list_text.substr(list.repetition().char_offset(), 4), "513,");
    EXPECT_EQ(list.components().repetition(), -0.5);

    // Scorable, so in the statistics: below the correct answer's advantage, and negative.
    EXPECT_TRUE(response.groups().keep(0));
    EXPECT_GT(response.advantages(0), 0.0);
    EXPECT_LT(response.advantages(1), 0.0);
    EXPECT_LT(response.advantages(2), 0.0);
  }
}

TEST(ScoreGroups, AnUngatedProfileIsExplicitAndCounted) {
  Engine engine;
  config::v1::Profile lenient;
  lenient.set_name("lenient");
  lenient.mutable_format()->set_ungated(true);
  ASSERT_TRUE(engine.profiles.Add(lenient, advantage::Options{}).ok());
  v1::ScoreGroupsRequest request;
  request.set_profile("lenient");
  request.set_run_id("lenient-run");
  v1::Group* group = request.add_groups();
  group->add_references("42");
  AddCompletion(group, "<think>x</think> \\boxed{41}", 10);
  AddCompletion(group, "<think>x</think> \\boxed{42}", 10);
  v1::ScoreGroupsResponse response;
  ASSERT_TRUE(RunScoreGroups(engine.context(), request, &response).ok());
  EXPECT_DOUBLE_EQ(response.rewards(0), 0.1);  // paid to a wrong answer: the profile opted out
  EXPECT_FALSE(response.results(0).format_gated());
  EXPECT_NE(response.profile_hash(), engine.profiles.Find("default").value()->hash);
  EXPECT_EQ(engine.metrics.completions, 2);
  EXPECT_EQ(engine.metrics.format_ungated, 1);
  EXPECT_EQ(engine.metrics.batches, 1);
  // Telemetry counts the format paid without accuracy: the incident's pattern, ungated.
  const std::vector<BatchTelemetry> window = engine.telemetry.Window("lenient-run");
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].format_without_accuracy, 1u);
}

TEST(Score, PassAtKValuesAreBoundedAndDeduplicated) {
  Engine engine;
  v1::ScoreRequest request;
  v1::ScoreItem* item = request.add_items();
  item->add_references("1");
  item->mutable_completion()->set_text("<think>x</think> \\boxed{1}");
  for (int i = 0; i < 3; ++i) request.add_pass_at_k(1);
  v1::ScoreResponse response;
  ASSERT_TRUE(RunScore(engine.context(), request, &response).ok());
  EXPECT_EQ(response.aggregate().pass_at_k_size(), 1);
  for (int i = 0; i < 100; ++i) request.add_pass_at_k(2);
  const absl::Status status = RunScore(engine.context(), request, &response);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("at most 64"));
}

TEST(ScoreGroups, ResultsDoNotDependOnTheThreadCount) {
  std::string first;
  for (unsigned threads : {1u, 2u, 7u}) {
    SCOPED_TRACE(threads);
    Engine engine(threads);
    v1::ScoreGroupsResponse response;
    ASSERT_TRUE(RunScoreGroups(engine.context(), IncidentRequest(), &response).ok());
    std::string bytes;
    ASSERT_TRUE(response.SerializeToString(&bytes));
    if (first.empty()) first = bytes;
    EXPECT_EQ(bytes, first);
  }
}

TEST(ScoreGroups, BadInputGetsATypedVerdictOrAStatusNamingTheCompletion) {
  Engine engine;
  engine.limits.max_completion_bytes = 8 << 20;
  v1::ScoreGroupsRequest request;
  v1::Group* group = request.add_groups();
  group->add_references("42");
  AddCompletion(group, "", 0);                                           // empty
  AddCompletion(group, "<think>\xff\xfe</think> \\boxed{42} \xc3", 10);  // invalid UTF-8
  AddCompletion(group, "<think>" + std::string(4 << 20, 'x') + "</think> \\boxed{42}", 1 << 20);
  v1::Group* no_reference = request.add_groups();
  AddCompletion(no_reference, "<think>a</think> \\boxed{1}", 5);
  AddCompletion(no_reference, "<think>b</think> \\boxed{2}", 5);

  v1::ScoreGroupsResponse response;
  const absl::Status status = RunScoreGroups(engine.context(), request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.results(0).verdict(), v1::VERDICT_NO_ANSWER);
  EXPECT_EQ(response.results(1).verdict(), v1::VERDICT_CORRECT);
  EXPECT_EQ(response.results(2).verdict(), v1::VERDICT_CORRECT);
  for (int i = 3; i < 5; ++i) {
    EXPECT_EQ(response.results(i).verdict(), v1::VERDICT_UNPARSEABLE_REFERENCE);
    EXPECT_EQ(std::bit_cast<uint64_t>(response.advantages(i)), 0u);
  }
  EXPECT_EQ(response.groups().cause(1), v1::ZERO_VARIANCE_CAUSE_ALL_UNSCORABLE);
  std::string bytes;
  ASSERT_TRUE(response.SerializeToString(&bytes));
  v1::ScoreGroupsResponse parsed;
  EXPECT_TRUE(parsed.ParseFromString(bytes)) << "every string field must be valid UTF-8";

  // Over the limit: a status naming the completion, and nothing else is scored.
  engine.limits.max_completion_bytes = 1 << 20;
  v1::ScoreGroupsResponse over;
  const absl::Status limited = RunScoreGroups(engine.context(), request, &over);
  EXPECT_EQ(limited.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(limited.message()), HasSubstr("groups[0].completions[2].text"));
  EXPECT_THAT(std::string(limited.message()), HasSubstr("max_completion_bytes"));
}

TEST(ScoreGroups, RequestErrorsNameWhatIsWrong) {
  struct Case {
    const char* name;
    void (*edit)(v1::ScoreGroupsRequest*);
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"unknown profile", [](v1::ScoreGroupsRequest* r) { r->set_profile("nope"); },
       absl::StatusCode::kNotFound, "profile \"nope\" is not configured (known: default)"},
      {"empty group", [](v1::ScoreGroupsRequest* r) { r->add_groups(); },
       absl::StatusCode::kInvalidArgument, "groups[1] has no completions"},
      {"external without accuracy",
       [](v1::ScoreGroupsRequest* r) { r->mutable_groups(0)->set_task(v1::TASK_EXTERNAL); },
       absl::StatusCode::kInvalidArgument,
       "groups[0].completions[0].external_accuracy is required for TASK_EXTERNAL"},
      {"external accuracy out of range",
       [](v1::ScoreGroupsRequest* r) {
         r->mutable_groups(0)->set_task(v1::TASK_EXTERNAL);
         r->mutable_groups(0)->mutable_completions(0)->set_external_accuracy(1.5);
       },
       absl::StatusCode::kInvalidArgument,
       "groups[0].completions[0].external_accuracy is 1.5: it must be in [0, 1]"},
      {"unknown task",
       [](v1::ScoreGroupsRequest* r) { r->mutable_groups(0)->set_task(static_cast<v1::Task>(77)); },
       absl::StatusCode::kInvalidArgument, "groups[0].task: unknown value 77"},
      {"too many completions",
       [](v1::ScoreGroupsRequest* r) {
         for (int i = 0; i < 4; ++i) r->mutable_groups(0)->add_completions()->set_text("x");
       },
       absl::StatusCode::kResourceExhausted,
       "5 completions exceed the limit max_completions_per_request = 4"},
      {"run_id too long", [](v1::ScoreGroupsRequest* r) { r->set_run_id(std::string(300, 'r')); },
       absl::StatusCode::kInvalidArgument, "run_id: 300 bytes; at most 256"},
      {"bad advantage options",
       [](v1::ScoreGroupsRequest* r) { r->mutable_advantage()->set_zero_variance_threshold(-1); },
       absl::StatusCode::kInvalidArgument, "advantage.zero_variance_threshold"},
      {"too many token ids",
       [](v1::ScoreGroupsRequest* r) {
         for (uint32_t i = 0; i < 9; ++i) {
           r->mutable_groups(0)->mutable_completions(0)->add_token_ids(i);
         }
       },
       absl::StatusCode::kResourceExhausted,
       "groups[0].completions[0].token_ids: 9 tokens exceed the limit max_completion_tokens = 8"},
      {"too many references",
       [](v1::ScoreGroupsRequest* r) {
         for (int i = 0; i < 3; ++i) r->mutable_groups(0)->add_references("2");
       },
       absl::StatusCode::kResourceExhausted,
       "groups[0].references: 4 references exceed the limit max_references = 3"},
      {"a reference too long",
       [](v1::ScoreGroupsRequest* r) { r->mutable_groups(0)->add_references("123456789"); },
       absl::StatusCode::kResourceExhausted,
       "groups[0].references[1]: 9 bytes exceed the limit max_reference_bytes = 8"},
      {"a long profile name is clipped in the error",
       [](v1::ScoreGroupsRequest* r) { r->set_profile(std::string(100000, 'p')); },
       absl::StatusCode::kNotFound, "... (100000 bytes)\" is not configured"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Engine engine;
    engine.limits.max_completions_per_request = 4;
    engine.limits.max_completion_tokens = 8;
    engine.limits.max_references = 3;
    engine.limits.max_reference_bytes = 8;
    v1::ScoreGroupsRequest request;
    v1::Group* group = request.add_groups();
    group->add_references("1");
    AddCompletion(group, "<think>x</think> 1", 3);
    c.edit(&request);
    v1::ScoreGroupsResponse response;
    const absl::Status status = RunScoreGroups(engine.context(), request, &response);
    EXPECT_EQ(status.code(), c.code);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(ScoreGroups, ExternalAccuracyAndTheRequestsEstimator) {
  Engine engine;
  v1::ScoreGroupsRequest request;
  request.mutable_advantage()->set_estimator(v1::ESTIMATOR_DR_GRPO);
  v1::Group* group = request.add_groups();
  group->set_task(v1::TASK_EXTERNAL);
  for (double a : {1.0, 0.0, 0.5}) {
    v1::Completion* c = group->add_completions();
    c->set_text("<think>code</think> def f(): pass");
    c->set_num_tokens(100);
    c->set_external_accuracy(a);
  }
  v1::ScoreGroupsResponse response;
  ASSERT_TRUE(RunScoreGroups(engine.context(), request, &response).ok());
  EXPECT_DOUBLE_EQ(response.rewards(0), 1.1);
  EXPECT_DOUBLE_EQ(response.rewards(1), 0.0);
  EXPECT_DOUBLE_EQ(response.rewards(2), 0.6);
  const double mean = (1.1 + 0.0 + 0.6) / 3;
  EXPECT_DOUBLE_EQ(response.advantages(0), 1.1 - mean);  // Dr. GRPO: not divided by σ
}

// Four TASK_EXTERNAL groups, each completion an (accuracy, tokens) pair:
//   0: accuracy and length vary, mean accuracy 0.5
//   1: all correct and well-formed (accuracy and format constant), length varies; mean 1
//   2: everything equal: zero-variance
//   3: one correct of four, same length; mean 0.25
v1::ScoreGroupsRequest ComponentsRequest() {
  const std::vector<std::vector<std::pair<double, uint32_t>>> groups = {
      {{1, 100}, {0, 100}, {1, 5000}, {0, 8000}},
      {{1, 100}, {1, 5000}, {1, 8000}, {1, 12000}},
      {{0.5, 100}, {0.5, 100}},
      {{1, 100}, {0, 100}, {0, 100}, {0, 100}},
  };
  v1::ScoreGroupsRequest request;
  for (const auto& completions : groups) {
    v1::Group* group = request.add_groups();
    group->set_task(v1::TASK_EXTERNAL);
    for (const auto& [accuracy, tokens] : completions) {
      v1::Completion* c = group->add_completions();
      c->set_text("<think>code</think> def f(): pass");
      c->set_num_tokens(tokens);
      c->set_finished(true);
      c->set_external_accuracy(accuracy);
    }
  }
  return request;
}

TEST(ScoreGroups, GdpoNormalisesTheFourComponentsWithTheProfilesWeights) {
  Engine engine;
  config::v1::Profile gdpo;
  gdpo.set_name("gdpo");
  gdpo.mutable_weights()->set_format(2.0);
  gdpo.mutable_weights()->set_length(0.5);
  gdpo.mutable_advantage()->set_estimator(v1::ESTIMATOR_GDPO);
  ASSERT_TRUE(engine.profiles.Add(gdpo, advantage::Options{}).ok());
  v1::ScoreGroupsRequest request = ComponentsRequest();
  request.set_profile("gdpo");
  v1::ScoreGroupsResponse response;
  ASSERT_TRUE(RunScoreGroups(engine.context(), request, &response).ok());

  // The same computation from the components the response reports.
  std::vector<double> components;
  std::vector<advantage::Outcome> outcomes;
  for (const v1::CompletionResult& r : response.results()) {
    const v1::RewardComponents& c = r.components();
    components.insert(components.end(), {c.accuracy(), c.format(), c.repetition(), c.length()});
    outcomes.push_back(c.accuracy() > 0 ? advantage::Outcome::kCorrect
                                        : advantage::Outcome::kWrong);
  }
  const std::vector<double> rewards(response.rewards().begin(), response.rewards().end());
  const std::vector<uint32_t> sizes = {4, 4, 2, 4};
  const std::vector<double> weights = {1.0, 2.0, 1.0, 0.5};
  advantage::Options options;
  options.estimator = advantage::Estimator::kGdpo;
  const absl::StatusOr<advantage::Result> want = advantage::Compute({.rewards = rewards,
                                                                     .group_sizes = sizes,
                                                                     .outcomes = outcomes,
                                                                     .components = components,
                                                                     .num_components = 4,
                                                                     .component_weights = weights},
                                                                    options);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(response.advantages_size(), 14);
  for (int i = 0; i < 14; ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(response.advantages(i)),
              std::bit_cast<uint64_t>(want->advantages[i]))
        << i;
  }
  // Group 1 learns from length alone, shorter first; group 2 has nothing to learn from.
  EXPECT_EQ(response.groups().cause(1), v1::ZERO_VARIANCE_CAUSE_NONE);
  EXPECT_GT(response.advantages(4), response.advantages(5));
  EXPECT_GT(response.advantages(6), response.advantages(7));
  EXPECT_EQ(response.groups().cause(2), v1::ZERO_VARIANCE_CAUSE_ALL_CORRECT);
  EXPECT_EQ(std::bit_cast<uint64_t>(response.advantages(8)), 0u);
  EXPECT_EQ(response.summary().zero_variance_groups(), 1u);
}

TEST(ScoreGroups, TheKeepBandReadsTheMeanAccuracyComponent) {
  Engine engine;
  for (v1::Estimator estimator : {v1::ESTIMATOR_GRPO, v1::ESTIMATOR_GDPO}) {
    SCOPED_TRACE(v1::Estimator_Name(estimator));
    v1::ScoreGroupsRequest request = ComponentsRequest();
    request.mutable_advantage()->set_estimator(estimator);
    v1::ScoreGroupsResponse unbanded;
    ASSERT_TRUE(RunScoreGroups(engine.context(), request, &unbanded).ok());
    request.mutable_advantage()->mutable_keep_band()->set_lo(0.25);
    request.mutable_advantage()->mutable_keep_band()->set_hi(0.75);
    v1::ScoreGroupsResponse response;
    ASSERT_TRUE(RunScoreGroups(engine.context(), request, &response).ok());
    // Mean accuracy 0.5 in, 1.0 out, zero-variance out, 0.25 in (inclusive).
    ASSERT_EQ(response.groups().keep_size(), 4);
    EXPECT_TRUE(response.groups().keep(0));
    EXPECT_FALSE(response.groups().keep(1));
    EXPECT_FALSE(response.groups().keep(2));
    EXPECT_TRUE(response.groups().keep(3));
    EXPECT_TRUE(unbanded.groups().keep(1));
    for (int i = 0; i < response.advantages_size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint64_t>(response.advantages(i)),
                std::bit_cast<uint64_t>(unbanded.advantages(i)))
          << i;
    }
    // Just above 0.25 leaves group 3 out.
    request.mutable_advantage()->mutable_keep_band()->set_lo(std::nextafter(0.25, 1.0));
    v1::ScoreGroupsResponse narrower;
    ASSERT_TRUE(RunScoreGroups(engine.context(), request, &narrower).ok());
    EXPECT_TRUE(narrower.groups().keep(0));
    EXPECT_FALSE(narrower.groups().keep(3));
    // A band upside down is the request's error.
    request.mutable_advantage()->mutable_keep_band()->set_lo(0.9);
    v1::ScoreGroupsResponse refused;
    const absl::Status status = RunScoreGroups(engine.context(), request, &refused);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr("advantage.keep_band"));
  }
}

TEST(ScoreGroups, StopsWhenTheCallerSaysSo) {
  Engine engine(1);
  ScoringContext context = engine.context();
  std::atomic<int> asked{0};
  // The deadline passes after three groups have been scored.
  context.keep_going = [&asked]() -> absl::Status {
    return ++asked > 3
               ? absl::DeadlineExceededError("deadline passed while completions were scored")
               : absl::OkStatus();
  };
  v1::ScoreGroupsResponse response;
  const absl::Status status = RunScoreGroups(context, IncidentRequest(), &response);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(status.message()), HasSubstr("groups[3]: deadline passed"));
  EXPECT_EQ(asked.load(), 16);  // asked once per group, no group scored after the answer changed
  EXPECT_EQ(response.results_size(), 0);
}

TEST(Score, AggregateOverItemsThatSharePrompts) {
  Engine engine;
  v1::ScoreRequest request;
  request.add_pass_at_k(1);
  request.add_pass_at_k(2);
  const struct {
    const char* prompt;
    const char* text;
    uint32_t tokens;
    bool finished;
  } items[] = {
      {"p1", "<think>ok</think> \\boxed{3}", 100, true},
      {"p1", "<think>ok</think> \\boxed{4}", 300, true},
      {"p2", "<think>ok</think> \\boxed{3}", 200, true},
      {"p2", "<think>no end", 16384, false},
  };
  for (const auto& it : items) {
    v1::ScoreItem* item = request.add_items();
    item->set_prompt_id(it.prompt);
    item->add_references("3");
    item->mutable_completion()->set_text(it.text);
    item->mutable_completion()->set_num_tokens(it.tokens);
    item->mutable_completion()->set_finished(it.finished);
  }
  v1::ScoreResponse response;
  ASSERT_TRUE(RunScore(engine.context(), request, &response).ok());
  const v1::ScoreAggregate& agg = response.aggregate();
  EXPECT_EQ(agg.items(), 4u);
  EXPECT_DOUBLE_EQ(agg.accuracy(), 0.5);
  EXPECT_DOUBLE_EQ(agg.format_rate(), 0.75);
  EXPECT_DOUBLE_EQ(agg.truncation_rate(), 0.25);
  EXPECT_EQ(agg.length_tokens().p50(), 200);
  EXPECT_EQ(agg.length_tokens().max(), 16384);
  EXPECT_EQ(agg.verdicts(v1::VERDICT_CORRECT), 2u);
  EXPECT_EQ(agg.verdicts(v1::VERDICT_WRONG), 1u);
  EXPECT_EQ(agg.verdicts(v1::VERDICT_NO_ANSWER), 1u);
  ASSERT_EQ(agg.pass_at_k_size(), 2);
  EXPECT_DOUBLE_EQ(agg.pass_at_k(0).value(), 0.5);  // each prompt 1 of 2
  EXPECT_EQ(agg.pass_at_k(0).prompts(), 2u);
  EXPECT_DOUBLE_EQ(agg.pass_at_k(1).value(), 1.0);
  EXPECT_EQ(response.profile_hash(), engine.profiles.Find("default").value()->hash);
}

}  // namespace
}  // namespace rlscore::engine
