// Deadlines and cancellations mid-call on the real server: the work stops, the call is counted
// once, and the server keeps serving.
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
using testing::EventuallyShows;
using testing::FakeClock;
using testing::GatedAccuracy;
using testing::GatedBackend;
using ::testing::HasSubstr;
using testing::IncidentRequest;
using testing::ScrapeUntil;
using testing::SetDeadline;
using testing::StartOrDie;
using testing::TestOptions;

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
constexpr int kManyGroups = 64;

// Counted when gRPC reports the call cancelled, before its work stops.
constexpr char kScoreGroupsCancelled[] =
    "rlscore_requests_cancelled_total{method=\"ScoreGroups\"} 1";

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

// A server whose accuracy scorer is `accuracy`'s gate, with two pool threads: the calls stopped
// mid-scoring below.
std::unique_ptr<Server> StartGated(std::shared_ptr<GatedAccuracy> accuracy,
                                   const Clock* clock = nullptr) {
  ServerOptions options = TestOptions();
  options.scoring_threads = 2;
  return StartOrDie(options, {.backend = nullptr, .clock = clock, .accuracy = std::move(accuracy)});
}

// What must hold once a ScoreGroups call was stopped mid-scoring and the gate released: one of
// `codes` counted for it, no call in flight, no group started beyond the three being graded (two
// pool threads and the call's own), and the next call (its deadline `next_deadline_seconds`
// away) answered in full.
void ExpectStoppedAndServing(const Server& server, v1::ScoringService::Stub* stub,
                             const GatedAccuracy& accuracy,
                             std::initializer_list<std::string_view> codes,
                             int next_deadline_seconds = 30) {
  auto counted = [&](std::string_view metrics) {
    int found = 0;
    for (std::string_view code : codes) {
      found += metrics.find(absl::StrCat("rlscore_requests_total{code=\"", Sv(code),
                                         "\",method=\"ScoreGroups\"} 1")) != std::string::npos;
    }
    return found;
  };
  const std::string in_flight = "rlscore_requests_in_flight{method=\"ScoreGroups\"} 0";
  const std::string metrics = ScrapeUntil(server, [&](std::string_view m) {
    return counted(m) > 0 && m.find(in_flight) != std::string_view::npos;
  });
  EXPECT_EQ(counted(metrics), 1) << metrics;
  EXPECT_THAT(metrics, HasSubstr(in_flight));
  EXPECT_LE(accuracy.entered(), 3);
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
  // Once the server has seen the cancellation, the groups already being graded finish and no
  // other group starts.
  ASSERT_TRUE(EventuallyShows(*server, kScoreGroupsCancelled));
  accuracy->Release();
  ExpectStoppedAndServing(*server, stub.get(), *accuracy, {"CANCELLED"});
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
  ExpectStoppedAndServing(*server, stub.get(), *accuracy, {"DEADLINE_EXCEEDED"}, 4 * 3600);
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
  // Released once the server has seen the call end. Whether it reads DEADLINE_EXCEEDED (its own
  // copy of the deadline, the client's plus the request's delay, has passed) or CANCELLED (the
  // client's reset arrived first) is a race of microseconds; either way no further group starts.
  ASSERT_TRUE(EventuallyShows(*server, kScoreGroupsCancelled));
  accuracy->Release();
  ExpectStoppedAndServing(*server, stub.get(), *accuracy, {"DEADLINE_EXCEEDED", "CANCELLED"});
  server->Shutdown(absl::Seconds(30));
}

}  // namespace
}  // namespace rlscore::service
