// Graceful shutdown, the health-only listener and a long call beside short ones, on the real
// server with a backend held at a gate.
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
using testing::GatedBackend;
using ::testing::HasSubstr;
using testing::IncidentRequest;
using testing::SetDeadline;
using testing::StartOrDie;
using testing::TestOptions;

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

}  // namespace
}  // namespace rlscore::service
