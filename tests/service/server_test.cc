// The real server on loopback port 0, called through the generated stub: the unary RPCs, health,
// reflection, metrics, limits and listeners.
#include "service/server.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rlscore/v1/scoring_service.grpc.pb.h"
#include "scorers/math/verifier.h"
#include "tests/service/server_harness.h"
#include "tests/service/test_client.h"

namespace rlscore::service {
namespace {

using engine::ApplyConfigText;
using engine::ServerOptions;
using testing::ChannelTo;
using ::testing::HasSubstr;
using testing::IncidentRequest;
using testing::SetDeadline;
using testing::StartOrDie;
using testing::TestOptions;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartOrDie(TestOptions());
    ASSERT_NE(server_, nullptr);
    channel_ = ChannelTo(*server_);
    stub_ = v1::ScoringService::NewStub(channel_);
  }

  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ScoringService::Stub> stub_;
};

TEST_F(ServerTest, ComputeAdvantagesClampsTheIncidentBatch) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ComputeAdvantagesResponse response;
  grpc::Status status = stub_->ComputeAdvantages(&context, IncidentRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  ASSERT_EQ(response.advantages_size(), 128);
  for (int i = 0; i < 112; ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(response.advantages(i)), 0u) << "index " << i;
  }
  ASSERT_EQ(response.groups().cause_size(), 16);
  for (int g = 0; g < 14; ++g) {
    EXPECT_EQ(response.groups().cause(g), v1::ZERO_VARIANCE_CAUSE_IDENTICAL_REWARDS);
    EXPECT_FALSE(response.groups().keep(g));
  }
  // Mixed groups: 1.1 at positions 0, 3, 6 and 0.1 elsewhere: mean 0.475, sample std.
  const double mean = (3 * 1.1 + 5 * 0.1) / 8;
  const double sd =
      std::sqrt((3 * (1.1 - mean) * (1.1 - mean) + 5 * (0.1 - mean) * (0.1 - mean)) / 7);
  for (int g = 14; g < 16; ++g) {
    EXPECT_EQ(response.groups().cause(g), v1::ZERO_VARIANCE_CAUSE_NONE);
    EXPECT_TRUE(response.groups().keep(g));
    EXPECT_NEAR(response.groups().mean(g), mean, 1e-15);
    EXPECT_NEAR(response.groups().std(g), sd, 1e-15);
    for (int i = 0; i < 8; ++i) {
      const double r = i % 3 == 0 ? 1.1 : 0.1;
      EXPECT_NEAR(response.advantages(g * 8 + i), (r - mean) / sd, 1e-12);
    }
  }
  EXPECT_EQ(response.summary().groups(), 16u);
  EXPECT_EQ(response.summary().completions(), 128u);
  EXPECT_EQ(response.summary().zero_variance_groups(), 14u);
  EXPECT_DOUBLE_EQ(response.summary().zero_variance_fraction(), 14.0 / 16.0);
  ASSERT_EQ(response.summary().groups_by_cause_size(), v1::ZeroVarianceCause_ARRAYSIZE);
  EXPECT_EQ(response.summary().groups_by_cause(v1::ZERO_VARIANCE_CAUSE_IDENTICAL_REWARDS), 14u);
  EXPECT_EQ(response.backend(), "cpu");
}

TEST_F(ServerTest, ComputeAdvantagesHonoursOptionsAndOutcomes) {
  v1::ComputeAdvantagesRequest request;
  for (double r : {1.0, 0.0, 0.0, 0.0, 1.0, 1.0}) request.add_rewards(r);
  request.add_group_sizes(4);
  request.add_group_sizes(2);
  for (auto o : {v1::OUTCOME_CORRECT, v1::OUTCOME_WRONG, v1::OUTCOME_WRONG, v1::OUTCOME_UNSCORABLE,
                 v1::OUTCOME_CORRECT, v1::OUTCOME_CORRECT}) {
    request.add_outcomes(o);
  }
  request.mutable_options()->set_estimator(v1::ESTIMATOR_RLOO);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ComputeAdvantagesResponse response;
  ASSERT_TRUE(stub_->ComputeAdvantages(&context, request, &response).ok());
  // RLOO over the three scorable entries {1, 0, 0}: r minus the mean of the other two.
  EXPECT_DOUBLE_EQ(response.advantages(0), 1.0);
  EXPECT_DOUBLE_EQ(response.advantages(1), -0.5);
  EXPECT_DOUBLE_EQ(response.advantages(2), -0.5);
  EXPECT_EQ(std::bit_cast<uint64_t>(response.advantages(3)), 0u);
  EXPECT_EQ(response.groups().scorable(0), 3u);
  EXPECT_EQ(response.groups().cause(1), v1::ZERO_VARIANCE_CAUSE_ALL_CORRECT);
  EXPECT_EQ(response.summary().unscorable(), 1u);
}

TEST_F(ServerTest, NanRewardIsInvalidArgumentNamingGroupAndPosition) {
  v1::ComputeAdvantagesRequest request;
  for (double r : {0.0, 1.0, 0.5, 0.5, std::nan("")}) request.add_rewards(r);
  request.add_group_sizes(2);
  request.add_group_sizes(3);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ComputeAdvantagesResponse response;
  grpc::Status status = stub_->ComputeAdvantages(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("group 1, position 2"));
  EXPECT_THAT(status.error_message(), HasSubstr("NaN"));
}

TEST_F(ServerTest, BadShapeAndOptionsAreInvalidArgument) {
  struct Case {
    const char* name;
    std::function<void(v1::ComputeAdvantagesRequest*)> edit;
    const char* message;
  };
  const Case cases[] = {
      {"sizes do not add up", [](auto* r) { r->add_group_sizes(1); }, "group_sizes sum to 3"},
      {"empty group",
       [](auto* r) {
         r->set_group_sizes(0, 0);
         r->add_group_sizes(2);
       },
       "group_sizes[0] is 0"},
      {"outcomes length", [](auto* r) { r->add_outcomes(v1::OUTCOME_CORRECT); }, "outcomes has 1"},
      {"unknown outcome",
       [](auto* r) {
         for (int i = 0; i < 2; ++i) r->add_outcomes(v1::OUTCOME_CORRECT);
         r->set_outcomes(1, static_cast<v1::Outcome>(42));
       },
       "outcomes[1]: unknown value 42"},
      {"unknown estimator",
       [](auto* r) { r->mutable_options()->set_estimator(static_cast<v1::Estimator>(9)); },
       "options.estimator: unknown value 9"},
      {"negative tau", [](auto* r) { r->mutable_options()->set_zero_variance_threshold(-1); },
       "zero_variance_threshold must be finite"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    v1::ComputeAdvantagesRequest request;
    request.add_rewards(0.0);
    request.add_rewards(1.0);
    request.add_group_sizes(2);
    c.edit(&request);
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    grpc::Status status = stub_->ComputeAdvantages(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
}

TEST_F(ServerTest, HealthIsServing) {
  EXPECT_EQ(testing::HealthStatus(channel_, ""), 1);
  EXPECT_EQ(testing::HealthStatus(channel_, "rlscore.v1.ScoringService"), 1);
}

TEST_F(ServerTest, ReflectionListsTheService) {
  const std::string services = testing::ReflectionListServices(channel_);
  EXPECT_THAT(services, HasSubstr("rlscore.v1.ScoringService"));
  EXPECT_THAT(services, HasSubstr("grpc.health.v1.Health"));
}

TEST_F(ServerTest, MetricsShowRequestsLatencyAndZeroVarianceGroups) {
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    ASSERT_TRUE(stub_->ComputeAdvantages(&context, IncidentRequest(), &response).ok());
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::GetRunHealthRequest request;
    request.set_run_id("never-seen");
    v1::GetRunHealthResponse response;
    stub_->GetRunHealth(&context, request, &response);
  }
  ASSERT_GT(server_->metrics_port(), 0);
  const std::string metrics = testing::HttpGet(server_->metrics_port(), "/metrics");
  EXPECT_THAT(metrics,
              HasSubstr("rlscore_requests_total{code=\"OK\",method=\"ComputeAdvantages\"} 1"));
  EXPECT_THAT(metrics,
              HasSubstr("rlscore_requests_total{code=\"NOT_FOUND\",method=\"GetRunHealth\"} 1"));
  EXPECT_THAT(metrics,
              HasSubstr("rlscore_request_duration_seconds_count{method=\"ComputeAdvantages\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_requests_in_flight{method=\"ComputeAdvantages\"} 0"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_advantage_groups_total 16"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_advantage_rewards_total 128"));
  EXPECT_THAT(
      metrics,
      HasSubstr("rlscore_advantage_zero_variance_groups_total{cause=\"identical_rewards\"} 14"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_advantage_zero_variance_fraction 0.875"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_advantage_batch_rewards_count 1"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_advantage_backend_info{backend=\"cpu\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_build_info{version="));
}

TEST_F(ServerTest, ScoreGroupsAndScoreThroughTheStub) {
  v1::ScoreGroupsRequest request;
  v1::Group* group = request.add_groups();
  group->add_references("42");
  for (const char* answer : {"42", "41", "42", "40"}) {
    v1::Completion* c = group->add_completions();
    c->set_text(std::string("<think>6 times 7</think> \\boxed{") + answer + "}");
    c->set_num_tokens(1000);
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ScoreGroupsResponse response;
  grpc::Status status = stub_->ScoreGroups(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.rewards_size(), 4);
  EXPECT_DOUBLE_EQ(response.rewards(0), 1.1);
  EXPECT_DOUBLE_EQ(response.rewards(1), 0.0);
  EXPECT_TRUE(response.results(1).format_gated());
  EXPECT_GT(response.advantages(0), 0.0);
  EXPECT_LT(response.advantages(1), 0.0);
  EXPECT_EQ(response.profile_hash().size(), 16u);

  v1::ScoreRequest score;
  v1::ScoreItem* item = score.add_items();
  item->add_references("42");
  item->mutable_completion()->set_text("<think>x</think> \\boxed{42}");
  grpc::ClientContext score_context;
  SetDeadline(&score_context);
  v1::ScoreResponse score_response;
  ASSERT_TRUE(stub_->Score(&score_context, score, &score_response).ok());
  EXPECT_EQ(score_response.results(0).verdict(), v1::VERDICT_CORRECT);
  EXPECT_TRUE(score_response.results(0).tokens_estimated());
  EXPECT_EQ(score_response.profile_hash(), response.profile_hash());

  const std::string metrics = testing::HttpGet(server_->metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("rlscore_completions_total 5"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_format_gated_total 2"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_verdicts_total{verdict=\"correct\"} 3"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_reward_component_count{component=\"total\"} 5"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_tokens_estimated_total 1"));
}

// The AST repetition rules (docs/REPETITION.md) over the wire: which AST rule fired, where, the
// budget skip, and their metrics.
TEST(ServerAst, RepetitionReportsAndMetrics) {
  ServerOptions options = TestOptions();
  ASSERT_TRUE(ApplyConfigText(R"pb(profiles {
                                     name: "tight"
                                     repetition { ast { max_parse_bytes: 16 } }
                                   })pb",
                              "test.textproto", &options)
                  .ok());
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));

  std::string clones = "<think>";
  std::string steps = "<think>";
  for (int k = 0; k < 4; ++k) {
    const std::string n = std::to_string(k);
    clones += "Version " + n + ":\n\n```js\nfunction f" + n + "(xs" + n + ") {\n  let s" + n +
              " = 0;\n  for (const v" + n + " of xs" + n + ") { if (v" + n + " > " + n + ") { s" +
              n + " += v" + n + " * 2; } else { s" + n + " -= 1; } }\n  return s" + n +
              ";\n}\n```\n\n";
    steps += "Check $m = " + std::to_string(3 * k + 2) + "$: the sum of its digits is " +
             std::to_string(k + 7) + " and the product is " + std::to_string(k * 5 + 1) +
             ", hence no.\n\n";
  }
  v1::ScoreGroupsRequest request;
  v1::Group* group = request.add_groups();
  group->add_references("42");
  for (const std::string& text : {clones, steps}) {
    v1::Completion* c = group->add_completions();
    c->set_text(text + "</think> \\boxed{42}");
    c->set_num_tokens(1000);
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ScoreGroupsResponse response;
  ASSERT_TRUE(stub->ScoreGroups(&context, request, &response).ok());
  ASSERT_EQ(response.results_size(), 2);
  const v1::RepetitionReport& code = response.results(0).repetition();
  EXPECT_EQ(code.detector(), v1::REPETITION_DETECTOR_AST_CODE_CLONE) << code.detail();
  EXPECT_EQ(code.char_offset(), clones.find("function f3"));
  EXPECT_EQ(code.first_char_offset(), clones.find("function f0"));
  EXPECT_EQ(code.occurrences(), 4u);
  EXPECT_EQ(response.results(0).components().repetition(), -0.5);
  const v1::RepetitionReport& block = response.results(1).repetition();
  EXPECT_EQ(block.detector(), v1::REPETITION_DETECTOR_AST_BLOCK) << block.detail();
  EXPECT_EQ(block.first_char_offset(), steps.find("Check"));

  // The same completions under a profile whose byte budget is too small: skipped, said so.
  request.set_profile("tight");
  grpc::ClientContext tight_context;
  SetDeadline(&tight_context);
  v1::ScoreGroupsResponse tight;
  ASSERT_TRUE(stub->ScoreGroups(&tight_context, request, &tight).ok());
  EXPECT_EQ(tight.results(0).repetition().detector(), v1::REPETITION_DETECTOR_NONE);
  EXPECT_THAT(tight.results(0).repetition().detail(), HasSubstr("skipped: budget (bytes"));
  EXPECT_EQ(tight.results(0).components().repetition(), 0.0);

  const std::string metrics = testing::HttpGet(server->metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("rlscore_repetition_fired_total{detector=\"ast_code_clone\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_repetition_fired_total{detector=\"ast_block\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_repetition_fired_total{detector=\"ngram\"} 0"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_ast_parsed_total 2"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_ast_parse_seconds_count 2"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_ast_budget_skips_total{budget=\"bytes\"} 2"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_ast_budget_skips_total{budget=\"time\"} 0"));
}

TEST(ServerLimits, OversizedMessageIsResourceExhaustedAndTheNextCallSucceeds) {
  ServerOptions options = TestOptions();
  options.limits.max_message_bytes = 64 << 10;
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));

  v1::ComputeAdvantagesRequest big;
  for (int i = 0; i < 10000; ++i) big.add_rewards(i % 2);  // 80 kB of packed doubles
  big.add_group_sizes(10000);
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    grpc::Status status = stub->ComputeAdvantages(&context, big, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(), HasSubstr(std::to_string(64 << 10)));
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ComputeAdvantagesResponse response;
  EXPECT_TRUE(stub->ComputeAdvantages(&context, IncidentRequest(), &response).ok());
  EXPECT_EQ(response.advantages_size(), 128);
}

TEST(ServerLimits, GroupLimitsAreResourceExhaustedNamingTheLimit) {
  ServerOptions options = TestOptions();
  options.limits.max_group_size = 8;
  options.limits.max_groups_per_request = 16;
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));

  v1::ComputeAdvantagesRequest too_large_group;
  for (int i = 0; i < 9; ++i) too_large_group.add_rewards(i);
  too_large_group.add_group_sizes(9);
  v1::ComputeAdvantagesRequest too_many_groups;
  for (int i = 0; i < 17; ++i) {
    too_many_groups.add_rewards(i);
    too_many_groups.add_group_sizes(1);
  }
  const std::pair<v1::ComputeAdvantagesRequest*, const char*> cases[] = {
      {&too_large_group, "group_sizes[0] = 9 exceeds the limit max_group_size = 8"},
      {&too_many_groups, "17 groups exceed the limit max_groups_per_request = 16"},
  };
  for (const auto& [request, message] : cases) {
    SCOPED_TRACE(message);
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    grpc::Status status = stub->ComputeAdvantages(&context, *request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(), HasSubstr(message));
  }
}

TEST(ServerLimits, AnOversizedCompletionIsNamedAndTheServerKeepsServing) {
  ServerOptions options = TestOptions();
  options.limits.max_completion_bytes = 1 << 10;
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  v1::ScoreGroupsRequest request;
  v1::Group* group = request.add_groups();
  group->add_references("1");
  group->add_completions()->set_text("<think>a</think> 1");
  group->add_completions()->set_text(std::string(2048, 'x'));
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ScoreGroupsResponse response;
    grpc::Status status = stub->ScoreGroups(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(), HasSubstr("groups[0].completions[1].text: 2048 bytes"));
  }
  group->mutable_completions(1)->set_text("<think>b</think> 2");
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ScoreGroupsResponse response;
  ASSERT_TRUE(stub->ScoreGroups(&context, request, &response).ok());
  EXPECT_EQ(response.results(0).verdict(), v1::VERDICT_CORRECT);
}

TEST(ServerLimits, AResponseOverTheMessageLimitIsRefusedNamingIt) {
  ServerOptions options = TestOptions();
  options.limits.max_message_bytes = 16 << 10;
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  // 400 empty completions: a small request, a response of ~100 bytes each.
  v1::ScoreGroupsRequest request;
  v1::Group* group = request.add_groups();
  group->add_references("1");
  for (int i = 0; i < 400; ++i) group->add_completions();
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ScoreGroupsResponse response;
  grpc::Status status = stub->ScoreGroups(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("over the limit max_message_bytes = 16384"));
}

TEST(ServerListen, ServesOnAUnixSocket) {
  ServerOptions options = TestOptions();
  const std::string path =
      ::testing::TempDir() + "rlscore-test-" + std::to_string(::getpid()) + ".sock";
  options.listen_address = "unix:" + path;
  options.metrics_address = "";
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->port(), 0);
  EXPECT_EQ(server->metrics_port(), 0);
  // Group members may connect (a trainer sharing the pod's fsGroup), others may not.
  struct stat socket_stat {};
  ASSERT_EQ(::stat(path.c_str(), &socket_stat), 0);
  EXPECT_EQ(socket_stat.st_mode & 0777, 0660u);
  auto stub = v1::ScoringService::NewStub(ChannelTo("unix:" + path));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ComputeAdvantagesResponse response;
  EXPECT_TRUE(stub->ComputeAdvantages(&context, IncidentRequest(), &response).ok());
  server->Shutdown(absl::ZeroDuration());
  std::remove(path.c_str());
}

TEST(ServerListen, AnAddressInUseIsUnavailableNamingIt) {
  std::unique_ptr<Server> first = StartOrDie(TestOptions());
  ASSERT_NE(first, nullptr);
  ServerOptions options = TestOptions();
  options.listen_address = "127.0.0.1:" + std::to_string(first->port());
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr(options.listen_address));
}

}  // namespace
}  // namespace rlscore::service
