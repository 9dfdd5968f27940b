// The server's --gpu modes on a machine without a usable GPU module.
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

using engine::ServerOptions;
using testing::ChannelTo;
using ::testing::HasSubstr;
using testing::IncidentRequest;
using testing::SetDeadline;
using testing::StartOrDie;
using testing::TestOptions;

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
