// GetRunHealth and the run-health gauges on the real server.
#include <grpcpp/grpcpp.h>

#include <atomic>
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
#include "service/server.h"
#include "tests/service/server_harness.h"
#include "tests/service/test_client.h"

namespace rlscore::service {
namespace {

using testing::ChannelTo;
using ::testing::HasSubstr;
using testing::SetDeadline;
using testing::StartOrDie;
using testing::TestOptions;

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
