// The real server on loopback port 0, called through the generated stub.
#include "service/server.h"

#include <grpcpp/grpcpp.h>
#include <prometheus/registry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
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
#include "tests/service/test_client.h"

namespace rlscore::service {
using engine::ApplyConfigText;
using engine::DefaultServerOptions;
using engine::Method;
using engine::ServerOptions;
}  // namespace rlscore::service

namespace rlscore::service {
namespace {

using ::testing::HasSubstr;

ServerOptions TestOptions() {
  ServerOptions options = DefaultServerOptions();
  options.listen_address = "127.0.0.1:0";
  options.metrics_address = "127.0.0.1:0";
  return options;
}

std::unique_ptr<Server> StartOrDie(const ServerOptions& options, ServerDependencies deps = {}) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options, std::move(deps));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

std::shared_ptr<grpc::Channel> ChannelTo(const Server& server) {
  return ChannelTo("127.0.0.1:" + std::to_string(server.port()));
}

void SetDeadline(grpc::ClientContext* context, int seconds = 30) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

// The incident's step 1,428: 16 groups of 8; 14 groups earn only the 0.1 format reward, two are
// mixed.
v1::ComputeAdvantagesRequest IncidentRequest() {
  v1::ComputeAdvantagesRequest request;
  for (int g = 0; g < 16; ++g) {
    request.add_group_sizes(8);
    for (int i = 0; i < 8; ++i) {
      const bool mixed = g >= 14;
      request.add_rewards(mixed && i % 3 == 0 ? 1.1 : 0.1);
    }
  }
  return request;
}

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

// Holds whoever enters until the test releases it, counting the entries, so a test can act while
// a call is provably in flight (and count the work that started).
class Gate {
 public:
  void Enter() const {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
  }
  void WaitUntilEntered(int entries) const {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= entries; });
  }
  int entered() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entered_;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int entered_ = 0;
  bool released_ = false;
};

// A CPU backend that holds each call at its gate.
class GatedBackend final : public advantage::Backend, public Gate {
 public:
  std::string_view Name() const override { return "gated-cpu"; }
  absl::StatusOr<std::string_view> Compute(const advantage::Batch& batch,
                                           const advantage::Options& options,
                                           std::span<double> advantages,
                                           std::span<advantage::GroupStats> groups,
                                           advantage::BatchSummary* summary) override {
    Enter();
    const absl::StatusOr<std::string_view> served =
        cpu_->Compute(batch, options, advantages, groups, summary);
    if (!served.ok()) return served.status();
    return Name();  // the response names the backend that served
  }

 private:
  std::unique_ptr<advantage::Backend> cpu_ = advantage::NewCpuBackend();
};

TEST(ServerShutdown, DrainsInFlightCallsAndRefusesNewOnes) {
  auto backend = std::make_shared<GatedBackend>();
  std::unique_ptr<Server> server =
      StartOrDie(TestOptions(), {.backend = backend, .clock = nullptr, .accuracy = nullptr});
  ASSERT_NE(server, nullptr);
  auto channel = ChannelTo(*server);
  auto stub = v1::ScoringService::NewStub(channel);

  grpc::Status in_flight_status;
  v1::ComputeAdvantagesResponse in_flight_response;
  std::thread caller([&] {
    grpc::ClientContext context;
    SetDeadline(&context);
    in_flight_status = stub->ComputeAdvantages(&context, IncidentRequest(), &in_flight_response);
  });
  backend->WaitUntilEntered(1);

  // Shutdown must not return while the call it drains is still held.
  std::atomic<bool> released{false};
  std::atomic<bool> returned_after_release{false};
  std::thread stopper([&] {
    server->Shutdown(absl::Seconds(60));
    returned_after_release = released.load();
  });
  // New calls are refused once shutdown has begun; the in-flight one is still held.
  // A probe that reaches the server before shutdown begins is accepted and held by the gate until
  // its short deadline; once shutdown has begun, probes are refused by the drain, UNAVAILABLE
  // with its message (gRPC's own shutdown, which would refuse them otherwise, waits for the held
  // answer). Never OK: the gate holds every accepted call.
  grpc::Status refused;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto fresh = v1::ScoringService::NewStub(ChannelTo(*server));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    v1::ComputeAdvantagesResponse response;
    refused = fresh->ComputeAdvantages(&context, v1::ComputeAdvantagesRequest(), &response);
    ASSERT_FALSE(refused.ok());
    if (refused.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) break;
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("the server is shutting down"));

  released = true;
  backend->Release();
  caller.join();
  stopper.join();
  EXPECT_TRUE(returned_after_release);
  ASSERT_TRUE(in_flight_status.ok()) << in_flight_status.error_message();
  EXPECT_EQ(in_flight_response.advantages_size(), 128);
  EXPECT_EQ(in_flight_response.backend(), "gated-cpu");
}

// Kubernetes gRPC probes dial the Pod IP: a health-only listener answers them while the API
// stays on loopback, and says NOT_SERVING while the server drains.
TEST(ServerListen, AHealthOnlyListenerAnswersProbesAndDrains) {
  auto backend = std::make_shared<GatedBackend>();
  ServerOptions options = TestOptions();
  options.health_address = "127.0.0.1:0";
  std::unique_ptr<Server> server =
      StartOrDie(options, {.backend = backend, .clock = nullptr, .accuracy = nullptr});
  ASSERT_NE(server, nullptr);
  ASSERT_GT(server->health_port(), 0);
  ASSERT_NE(server->health_port(), server->port());
  auto probe = ChannelTo("127.0.0.1:" + std::to_string(server->health_port()));
  EXPECT_EQ(testing::HealthStatus(probe, ""), 1);
  EXPECT_EQ(testing::HealthStatus(probe, "rlscore.v1.ScoringService"), 1);
  EXPECT_EQ(testing::HealthStatus(probe, std::string(kGpuHealthName)), 2);
  // Only health is served there.
  std::string ignored;
  EXPECT_EQ(testing::RawUnaryCall(probe, "/rlscore.v1.ScoringService/ComputeAdvantages",
                                  IncidentRequest().SerializeAsString(), &ignored)
                .error_code(),
            grpc::StatusCode::UNIMPLEMENTED);

  // A second server cannot take the same probe port.
  ServerOptions clash = TestOptions();
  clash.health_address = "127.0.0.1:" + std::to_string(server->health_port());
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Start(clash);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("cannot serve health checks on " + clash.health_address));

  // Drain with a call held: the probe port stays up and says NOT_SERVING.
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  std::thread caller([&] {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    EXPECT_TRUE(stub->ComputeAdvantages(&context, IncidentRequest(), &response).ok());
  });
  backend->WaitUntilEntered(1);
  std::thread stopper([&] { server->Shutdown(absl::Seconds(60)); });
  int status = 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (status == 1 && std::chrono::steady_clock::now() < deadline) {
    status = testing::HealthStatus(probe, "");
  }
  EXPECT_EQ(status, 2);  // NOT_SERVING
  backend->Release();
  caller.join();
  stopper.join();
}

TEST(ServerConcurrency, ALongCallDoesNotStarveHealthOrOtherCalls) {
  auto backend = std::make_shared<GatedBackend>();
  ServerOptions options = TestOptions();
  options.scoring_threads = 2;
  std::unique_ptr<Server> server =
      StartOrDie(options, {.backend = backend, .clock = nullptr, .accuracy = nullptr});
  ASSERT_NE(server, nullptr);
  auto channel = ChannelTo(*server);
  auto stub = v1::ScoringService::NewStub(channel);
  grpc::Status held_status;
  std::thread held([&] {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    held_status = stub->ComputeAdvantages(&context, IncidentRequest(), &response);
  });
  backend->WaitUntilEntered(1);
  // The held call occupies a call thread, not gRPC's: health and scoring still answer.
  EXPECT_EQ(testing::HealthStatus(channel, ""), 1);
  v1::ScoreRequest score;
  v1::ScoreItem* item = score.add_items();
  item->add_references("1");
  item->mutable_completion()->set_text("<think>x</think> \\boxed{1}");
  grpc::ClientContext context;
  SetDeadline(&context, 10);
  v1::ScoreResponse response;
  EXPECT_TRUE(stub->Score(&context, score, &response).ok());
  backend->Release();
  held.join();
  EXPECT_TRUE(held_status.ok());
}

TEST(ServerShutdown, GraceExpiryCancelsWhatIsLeft) {
  auto backend = std::make_shared<GatedBackend>();
  std::unique_ptr<Server> server =
      StartOrDie(TestOptions(), {.backend = backend, .clock = nullptr, .accuracy = nullptr});
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  grpc::Status status;
  std::thread caller([&] {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    status = stub->ComputeAdvantages(&context, IncidentRequest(), &response);
  });
  backend->WaitUntilEntered(1);
  std::thread stopper([&] { server->Shutdown(absl::ZeroDuration()); });
  // The client sees its call cancelled while the handler still runs; then the handler finishes.
  caller.join();
  EXPECT_FALSE(status.ok());
  backend->Release();
  stopper.join();
}

// A clock the test moves by hand.
class FakeClock final : public Clock {
 public:
  absl::Time Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }

 private:
  mutable std::mutex mu_;
  absl::Time now_ = absl::Now();
};

TEST(ServerDeadline, WorkThatOutlivesItsDeadlineIsAnsweredDeadlineExceeded) {
  auto backend = std::make_shared<GatedBackend>();
  FakeClock clock;
  std::unique_ptr<Server> server =
      StartOrDie(TestOptions(), {.backend = backend, .clock = &clock, .accuracy = nullptr});
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  grpc::Status status;
  std::thread caller([&] {
    grpc::ClientContext context;
    SetDeadline(&context, 600);
    v1::ComputeAdvantagesResponse response;
    status = stub->ComputeAdvantages(&context, IncidentRequest(), &response);
  });
  // The handler passed its first deadline check and is held computing; by the server's clock
  // the deadline passes meanwhile.
  backend->WaitUntilEntered(1);
  clock.Advance(absl::Hours(1));
  backend->Release();
  caller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("deadline passed while advantages were computed"));
}

TEST(ServerDeadline, AnExpiredDeadlineIsRefusedBeforeAnyWork) {
  auto backend = std::make_shared<GatedBackend>();
  backend->Release();
  FakeClock clock;
  clock.Advance(absl::Hours(1));  // every deadline under an hour has passed by the server's clock
  std::unique_ptr<Server> server =
      StartOrDie(TestOptions(), {.backend = backend, .clock = &clock, .accuracy = nullptr});
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  grpc::ClientContext context;
  SetDeadline(&context, 600);
  v1::ComputeAdvantagesResponse response;
  grpc::Status status = stub->ComputeAdvantages(&context, IncidentRequest(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("before ComputeAdvantages started"));
  server->Shutdown(absl::Seconds(30));
  EXPECT_EQ(backend->entered(), 0);
}

// Holds every group's grading at Prepare() at its gate, counting the groups that started: the
// work a call did after its client left or its deadline passed.
class GatedAccuracy final : public scorers::AccuracyScorer, public Gate {
 public:
  std::unique_ptr<scorers::Judge> Prepare(scorers::Task task,
                                          std::span<const std::string> references) const override {
    Enter();
    return math_->Prepare(task, references);
  }

 private:
  std::unique_ptr<scorers::AccuracyScorer> math_ = scorers::math::NewAccuracyScorer();
};

constexpr int kManyGroups = 64;

v1::ScoreGroupsRequest ManyGroups() {
  v1::ScoreGroupsRequest request;
  for (int g = 0; g < kManyGroups; ++g) {
    v1::Group* group = request.add_groups();
    group->add_references("42");
    for (int i = 0; i < 4; ++i) {
      group->add_completions()->set_text("<think>6 times 7</think> \\boxed{" +
                                         std::to_string(40 + i) + "}");
    }
  }
  return request;
}

// Polls the metrics page until it shows `series` (the server counts a call after its work
// returned, which may be just after the client saw the status).
bool EventuallyShows(const Server& server, const std::string& series) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (testing::HttpGet(server.metrics_port(), "/metrics").find(series) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

// A server whose accuracy scorer is `accuracy`'s gate, with two pool threads: the calls stopped
// mid-scoring below.
std::unique_ptr<Server> StartGated(std::shared_ptr<GatedAccuracy> accuracy,
                                   const Clock* clock = nullptr) {
  ServerOptions options = TestOptions();
  options.scoring_threads = 2;
  return StartOrDie(options, {.backend = nullptr, .clock = clock, .accuracy = std::move(accuracy)});
}

// What must hold once a ScoreGroups call was stopped mid-scoring and the gate released: `code`
// counted for it, no call in flight, no group started beyond the three being graded (two pool
// threads and the call's own), and the next call (its deadline `next_deadline_seconds` away)
// answered in full.
void ExpectStoppedAndServing(const Server& server, v1::ScoringService::Stub* stub,
                             const GatedAccuracy& accuracy, std::string_view code,
                             int next_deadline_seconds = 30) {
  ASSERT_TRUE(EventuallyShows(server, absl::StrCat("rlscore_requests_total{code=\"", Sv(code),
                                                   "\",method=\"ScoreGroups\"} 1")));
  EXPECT_LE(accuracy.entered(), 3);
  EXPECT_THAT(testing::HttpGet(server.metrics_port(), "/metrics"),
              HasSubstr("rlscore_requests_in_flight{method=\"ScoreGroups\"} 0"));
  grpc::ClientContext next;
  SetDeadline(&next, next_deadline_seconds);
  v1::ScoreGroupsResponse response;
  ASSERT_TRUE(stub->ScoreGroups(&next, ManyGroups(), &response).ok());
  EXPECT_EQ(response.rewards_size(), kManyGroups * 4);
}

TEST(ServerFaults, AClientThatCancelsMidCallStopsTheWork) {
  auto accuracy = std::make_shared<GatedAccuracy>();
  std::unique_ptr<Server> server = StartGated(accuracy);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  grpc::ClientContext context;
  SetDeadline(&context, 600);
  grpc::Status status;
  std::thread caller([&] {
    v1::ScoreGroupsResponse response;
    status = stub->ScoreGroups(&context, ManyGroups(), &response);
  });
  accuracy->WaitUntilEntered(1);
  context.TryCancel();
  caller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  // The cancellation reaches the server over loopback in well under a second; then the groups
  // already being graded finish and no other group starts.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  accuracy->Release();
  ExpectStoppedAndServing(*server, stub.get(), *accuracy, "CANCELLED");
  server->Shutdown(absl::Seconds(30));
}

TEST(ServerFaults, CallsPastTheConcurrencyLimitAreRefusedAtOnce) {
  auto backend = std::make_shared<GatedBackend>();
  ServerOptions options = TestOptions();
  options.limits.max_concurrent_calls = 1;
  std::unique_ptr<Server> server =
      StartOrDie(options, {.backend = backend, .clock = nullptr, .accuracy = nullptr});
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  grpc::Status held;
  std::thread caller([&] {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    held = stub->ComputeAdvantages(&context, IncidentRequest(), &response);
  });
  backend->WaitUntilEntered(1);
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ComputeAdvantagesResponse response;
    const grpc::Status busy = stub->ComputeAdvantages(&context, IncidentRequest(), &response);
    EXPECT_EQ(busy.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(busy.error_message(), HasSubstr("max_concurrent_calls"));
  }
  backend->Release();
  caller.join();
  EXPECT_TRUE(held.ok()) << held.error_message();
  EXPECT_EQ(backend->entered(), 1);  // the refused call never reached the backend
  server->Shutdown(absl::Seconds(30));
}

TEST(ServerFaults, ADeadlineThatPassesMidScoringStopsTheWork) {
  auto accuracy = std::make_shared<GatedAccuracy>();
  FakeClock clock;
  std::unique_ptr<Server> server = StartGated(accuracy, &clock);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  grpc::Status status;
  std::thread caller([&] {
    grpc::ClientContext context;
    SetDeadline(&context, 600);
    v1::ScoreGroupsResponse response;
    status = stub->ScoreGroups(&context, ManyGroups(), &response);
  });
  accuracy->WaitUntilEntered(1);
  clock.Advance(absl::Hours(1));  // by the server's clock the deadline passes mid-scoring
  accuracy->Release();
  caller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("while completions were scored"));
  // The next call's deadline must lie past the server's clock, an hour ahead.
  ExpectStoppedAndServing(*server, stub.get(), *accuracy, "DEADLINE_EXCEEDED", 4 * 3600);
  server->Shutdown(absl::Seconds(30));
}

TEST(ServerFaults, ARealDeadlineThatExpiresMidScoringStopsTheWork) {
  // The same with gRPC's own deadline on the real clock: the client gives up at its deadline
  // while the gate holds the first groups; released after it, no further group starts.
  auto accuracy = std::make_shared<GatedAccuracy>();
  std::unique_ptr<Server> server = StartGated(accuracy);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  grpc::Status status;
  std::thread caller([&] {
    grpc::ClientContext context;
    SetDeadline(&context, 5);
    v1::ScoreGroupsResponse response;
    status = stub->ScoreGroups(&context, ManyGroups(), &response);
  });
  caller.join();  // returns at the deadline, 5 s on: the gate holds the groups that entered
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  ASSERT_GE(accuracy->entered(), 1) << "the call was to be mid-scoring at its deadline";
  // Released a second later, when the server's copy of the deadline (the client's plus the delay
  // of the request) has passed too: the server then reads DEADLINE_EXCEEDED, not the CANCELLED
  // of the client's reset that arrives first.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  accuracy->Release();
  ExpectStoppedAndServing(*server, stub.get(), *accuracy, "DEADLINE_EXCEEDED");
  server->Shutdown(absl::Seconds(30));
}

}  // namespace
}  // namespace rlscore::service

namespace rlscore::service {
namespace {

TEST(ServerGpu, AutoWithoutTheModuleServesFromTheCpuAndSaysSo) {
  ServerOptions options = TestOptions();
  options.gpu.mode = "auto";
  options.gpu.module_path = "/nonexistent/librlscore_gpu.so";
  options.gpu.min_rewards = 1;  // every batch would go to a GPU if there were one
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->backend_name(), "cpu");
  auto channel = ChannelTo(*server);
  auto stub = v1::ScoringService::NewStub(channel);
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ComputeAdvantagesResponse response;
  ASSERT_TRUE(stub->ComputeAdvantages(&context, IncidentRequest(), &response).ok());
  EXPECT_EQ(response.backend(), "cpu");
  EXPECT_EQ(response.advantages_size(), 128);

  EXPECT_EQ(testing::HealthStatus(channel, std::string(kGpuHealthName)), 2);  // NOT_SERVING
  EXPECT_EQ(testing::HealthStatus(channel, ""), 1);  // the server itself is fine
  const std::string metrics = testing::HttpGet(server->metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("rlscore_gpu_fallbacks_total{reason=\"unavailable\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_gpu_fallbacks_total{reason=\"error\"} 0"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_advantage_batches_total{backend=\"cpu\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_advantage_batches_total{backend=\"cuda\"} 0"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_advantage_backend_info{backend=\"cpu\"} 1"));
}

TEST(ServerGpu, RequireWithoutAUsableGpuRefusesToStartNamingWhy) {
  ServerOptions options = TestOptions();
  options.gpu.mode = "require";
  options.gpu.module_path = "/nonexistent/librlscore_gpu.so";
  const absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("--gpu=require"));
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("/nonexistent/librlscore_gpu.so"));
}

TEST(ServerGpu, OffNeverLoadsTheModuleAndAnUnknownModeIsRefused) {
  ServerOptions options = TestOptions();
  options.gpu.mode = "off";
  options.gpu.module_path = "/nonexistent/librlscore_gpu.so";
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  const std::string metrics = testing::HttpGet(server->metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("rlscore_gpu_fallbacks_total{reason=\"unavailable\"} 0"));
  server.reset();

  options.gpu.mode = "sometimes";
  const absl::StatusOr<std::unique_ptr<Server>> refused = Server::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("gpu.mode"));
}

}  // namespace
}  // namespace rlscore::service

namespace rlscore::service {
namespace {

// One ScoreGroups batch of `run` at `step`: 4 groups of 4; in `hard` batches every completion is
// well formed and wrong (every group zero-variance), otherwise half are right.
v1::ScoreGroupsRequest RunBatch(const std::string& run, int64_t step, bool hard) {
  v1::ScoreGroupsRequest request;
  request.set_run_id(run);
  request.set_step(step);
  for (int g = 0; g < 4; ++g) {
    v1::Group* group = request.add_groups();
    group->add_references("42");
    for (int i = 0; i < 4; ++i) {
      v1::Completion* c = group->add_completions();
      const bool right = !hard && i % 2 == 0;
      c->set_text(absl::StrCat("<think>step ", step, " try ", i, "</think> \\boxed{",
                               right ? 42 : 30 + i, "}"));
      c->set_num_tokens(3000);
    }
  }
  return request;
}

TEST(ServerRunHealth, ReportsTrackedRunsWithSignalsGaugesAndReasons) {
  std::unique_ptr<Server> server = StartOrDie(TestOptions());
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  for (int64_t step = 1; step <= 12; ++step) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ScoreGroupsResponse response;
    ASSERT_TRUE(stub->ScoreGroups(&context, RunBatch("healthy", step, false), &response).ok());
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ScoreGroupsResponse response;
    ASSERT_TRUE(stub->ScoreGroups(&context, RunBatch("hard", 1, true), &response).ok());
  }

  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetRunHealthResponse all;
  ASSERT_TRUE(stub->GetRunHealth(&context, v1::GetRunHealthRequest(), &all).ok());
  ASSERT_EQ(all.runs_size(), 2);
  EXPECT_EQ(all.runs(0).run_id(), "hard");  // most recently recorded first
  // Its only batch has no learning signal at all: critical.
  EXPECT_EQ(all.runs(0).level(), v1::HEALTH_LEVEL_CRITICAL);
  EXPECT_THAT(all.runs(0).reasons(0), HasSubstr("zero_variance_fraction 1 over the last 1 batch"));
  const v1::RunHealth& healthy = all.runs(1);
  EXPECT_EQ(healthy.run_id(), "healthy");
  EXPECT_EQ(healthy.level(), v1::HEALTH_LEVEL_OK);
  EXPECT_EQ(healthy.last_step(), 12);
  EXPECT_EQ(healthy.batches(), 12u);
  bool saw_length = false;
  for (const v1::RunSignal& s : healthy.signals()) {
    if (s.name() != "mean_length_tokens") continue;
    saw_length = true;
    EXPECT_EQ(s.value(), 3000.0);
  }
  EXPECT_TRUE(saw_length);

  const std::string metrics = testing::HttpGet(server->metrics_port(), "/metrics");
  EXPECT_THAT(metrics, HasSubstr("rlscore_run_health_level{run=\"hard\"} 2"));
  EXPECT_THAT(metrics, HasSubstr("rlscore_run_health_level{run=\"healthy\"} 0"));
  EXPECT_THAT(metrics,
              HasSubstr("rlscore_run_signal{run=\"healthy\",signal=\"mean_length_tokens\"} 3000"));
}

TEST(ServerRunHealth, AnEvictedRunLeavesNoSeriesBehind) {
  std::unique_ptr<Server> server = StartOrDie(TestOptions());
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  // One more run than the server tracks (64): the first is evicted with its gauges.
  for (int run = 0; run <= 64; ++run) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ScoreGroupsResponse response;
    ASSERT_TRUE(
        stub->ScoreGroups(&context, RunBatch(absl::StrCat("run-", run), 1, false), &response).ok());
  }
  const std::string metrics = testing::HttpGet(server->metrics_port(), "/metrics");
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr("run=\"run-0\"")));
  EXPECT_THAT(metrics, HasSubstr("rlscore_run_health_level{run=\"run-64\"}"));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetRunHealthRequest request;
  request.set_run_id("run-0");
  v1::GetRunHealthResponse response;
  const grpc::Status status = stub->GetRunHealth(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("run-0"));
}

}  // namespace
}  // namespace rlscore::service

namespace rlscore::service {
namespace {

v1::MonitorGenerationRequest Start(uint32_t max_tokens = 0, const std::string& profile = "") {
  v1::MonitorGenerationRequest r;
  r.mutable_start()->set_max_tokens(max_tokens);
  r.mutable_start()->set_profile(profile);
  return r;
}

v1::MonitorGenerationRequest Text(const std::string& text) {
  v1::MonitorGenerationRequest r;
  r.mutable_text()->set_text(text);
  return r;
}

v1::MonitorGenerationRequest Tokens(uint32_t first, uint32_t count) {
  v1::MonitorGenerationRequest r;
  for (uint32_t i = 0; i < count; ++i) r.mutable_tokens()->add_token_ids(first + i);
  return r;
}

// One MonitorGeneration stream: sends `messages` in order until the server stops reading,
// half-closes, and returns the final status; the STOP, if one came, goes to `*stop`. Fails the
// test if more than one answer arrives.
grpc::Status Monitor(v1::ScoringService::Stub& stub,
                     const std::vector<v1::MonitorGenerationRequest>& messages,
                     std::optional<v1::MonitorGenerationResponse>* stop = nullptr) {
  grpc::ClientContext context;
  SetDeadline(&context, 300);  // generous: a quarter-million tokens under ThreadSanitizer
  auto stream = stub.MonitorGeneration(&context);
  for (const v1::MonitorGenerationRequest& m : messages) {
    if (!stream->Write(m)) break;  // the server has answered and ended the stream
  }
  stream->WritesDone();
  v1::MonitorGenerationResponse answer;
  if (stream->Read(&answer) && stop != nullptr) *stop = answer;
  EXPECT_FALSE(stream->Read(&answer)) << "a second answer";
  return stream->Finish();
}

// The server counts a stream in rlscore_requests_total when gRPC hands it back (OnDone), which
// can be just after the client has seen the stream end: scrape until `expected` shows, for up to
// 10 s, and return the last scrape.
std::string ScrapeUntil(const Server& server, const std::string& expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string metrics;
  for (;;) {
    metrics = testing::HttpGet(server.metrics_port(), "/metrics");
    if (metrics.find(expected) != std::string::npos ||
        std::chrono::steady_clock::now() > deadline) {
      return metrics;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// A reflection loop like the incident's, after an ordinary start.
std::string LoopingCompletion() {
  std::string text = "<think>We need the smallest prime factor of 2^20 - 1, so factor it first. ";
  for (int k = 0; k < 8; ++k) {
    text += "Wait, let me double check the previous step, but wait, consider another case. ";
  }
  return text + "</think> \\boxed{3}";
}

TEST(ServerMonitorGeneration, StopsWhereScoreGroupsReportsTheLoop) {
  std::unique_ptr<Server> server = StartOrDie(TestOptions());
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  const std::string text = LoopingCompletion();

  // The batch answer for the whole completion.
  v1::ScoreGroupsRequest batch;
  v1::Group* group = batch.add_groups();
  group->add_references("3");
  group->add_completions()->set_text(text);
  grpc::ClientContext batch_context;
  SetDeadline(&batch_context);
  v1::ScoreGroupsResponse scored;
  ASSERT_TRUE(stub->ScoreGroups(&batch_context, batch, &scored).ok());
  const v1::RepetitionReport& report = scored.results(0).repetition();
  ASSERT_EQ(report.detector(), v1::REPETITION_DETECTOR_NGRAM);

  // The same text streamed seven bytes at a time.
  std::vector<v1::MonitorGenerationRequest> messages = {Start()};
  for (size_t at = 0; at < text.size(); at += 7) messages.push_back(Text(text.substr(at, 7)));
  std::optional<v1::MonitorGenerationResponse> stop;
  const grpc::Status status = Monitor(*stub, messages, &stop);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(stop->reason(), v1::STOP_REASON_REPETITION_NGRAM);
  EXPECT_EQ(stop->char_offset(), report.char_offset());
  EXPECT_THAT(stop->detail(), HasSubstr("8-gram of words"));

  const std::string counted = "rlscore_requests_total{code=\"OK\",method=\"MonitorGeneration\"} 1";
  const std::string metrics = ScrapeUntil(*server, counted);
  EXPECT_THAT(metrics, HasSubstr("rlscore_generation_stops_total{reason=\"repetition_ngram\"} 1"));
  EXPECT_THAT(metrics, HasSubstr(counted));
}

TEST(ServerMonitorGeneration, TheTokenBudgetStopsAtMaxTokensAndIsCapped) {
  std::unique_ptr<Server> server = StartOrDie(TestOptions());
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  std::vector<v1::MonitorGenerationRequest> messages = {Start(/*max_tokens=*/50)};
  for (uint32_t i = 0; i < 20; ++i) messages.push_back(Tokens(i * 10, 10));
  std::optional<v1::MonitorGenerationResponse> stop;
  ASSERT_TRUE(Monitor(*stub, messages, &stop).ok());
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(stop->reason(), v1::STOP_REASON_TOKEN_BUDGET);
  EXPECT_EQ(stop->token_offset(), 50u);

  // A budget beyond what a stream may hold is held to 262,144 tokens (distinct ids: no loop).
  messages = {Start(/*max_tokens=*/4000000000u)};
  for (uint32_t i = 0; i < 5; ++i) messages.push_back(Tokens(i * 65536, 65536));
  stop.reset();
  ASSERT_TRUE(Monitor(*stub, messages, &stop).ok());
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(stop->reason(), v1::STOP_REASON_TOKEN_BUDGET);
  EXPECT_EQ(stop->token_offset(), 262144u);
}

TEST(ServerMonitorGeneration, CleanEndsAndBadStreams) {
  ServerOptions options = TestOptions();
  options.limits.max_completion_bytes = 1000;
  std::unique_ptr<Server> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));

  // A generation that ends before anything fires: no answer, OK.
  std::optional<v1::MonitorGenerationResponse> stop;
  EXPECT_TRUE(
      Monitor(*stub, {Start(), Text("<think>6 times 7 is 42.</think> \\boxed{42}")}, &stop).ok());
  EXPECT_FALSE(stop.has_value());

  const struct {
    std::vector<v1::MonitorGenerationRequest> messages;
    grpc::StatusCode code;
    const char* message;
  } bad[] = {
      {{Text("hello")}, grpc::StatusCode::INVALID_ARGUMENT, "first message must be start"},
      {{Start(0, "no-such-profile")}, grpc::StatusCode::NOT_FOUND, "no-such-profile"},
      {{Start(), Start()}, grpc::StatusCode::INVALID_ARGUMENT, "start: sent twice"},
      {{Start(), v1::MonitorGenerationRequest()},
       grpc::StatusCode::INVALID_ARGUMENT,
       "an empty message"},
      {{Start(), Tokens(1, 3), Text("abc")},
       grpc::StatusCode::INVALID_ARGUMENT,
       "token ids or as text, not both"},
      {{Start(), Text(std::string(600, 'a')), Text(std::string(600, 'b'))},
       grpc::StatusCode::RESOURCE_EXHAUSTED,
       "max_completion_bytes = 1000"},
  };
  for (const auto& c : bad) {
    SCOPED_TRACE(c.message);
    const grpc::Status status = Monitor(*stub, c.messages);
    EXPECT_EQ(status.error_code(), c.code);
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }

  {  // Past max_streams open streams a new one is refused at once; the open one is unaffected.
    ServerOptions one = TestOptions();
    one.limits.max_streams = 1;
    std::unique_ptr<Server> small = StartOrDie(one);
    ASSERT_NE(small, nullptr);
    auto small_stub = v1::ScoringService::NewStub(ChannelTo(*small));
    grpc::ClientContext context;
    SetDeadline(&context);
    auto open = small_stub->MonitorGeneration(&context);
    open->WaitForInitialMetadata();  // the server has admitted it: one stream is open
    ASSERT_TRUE(open->Write(Start()));
    const grpc::Status refused = Monitor(*small_stub, {Start(), Text("<think>hello")});
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(refused.error_message(), HasSubstr("max_streams"));
    ASSERT_TRUE(open->Write(Text("<think>still watched</think> 42")));
    open->WritesDone();
    EXPECT_TRUE(open->Finish().ok());
    small->Shutdown(absl::Seconds(30));
  }

  {  // A client that cancels mid-stream: the server ends the call and keeps serving.
    grpc::ClientContext context;
    SetDeadline(&context);
    auto stream = stub->MonitorGeneration(&context);
    ASSERT_TRUE(stream->Write(Start()));
    ASSERT_TRUE(stream->Write(Text("<think>Let me think about this")));
    context.TryCancel();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ComputeAdvantagesResponse response;
  EXPECT_TRUE(stub->ComputeAdvantages(&context, IncidentRequest(), &response).ok());
  const std::string cancelled =
      "rlscore_requests_total{code=\"CANCELLED\",method=\"MonitorGeneration\"} 1";
  EXPECT_THAT(ScrapeUntil(*server, cancelled), HasSubstr(cancelled));
}

}  // namespace
}  // namespace rlscore::service
