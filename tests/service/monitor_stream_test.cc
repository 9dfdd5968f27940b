// MonitorGeneration over gRPC on the real server.
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
#include "tests/engine/monitor_requests.h"
#include "tests/service/server_harness.h"
#include "tests/service/test_client.h"

namespace rlscore::service {
namespace {

using engine::ServerOptions;
using ::rlscore::testing::LoopingCompletion;
using ::rlscore::testing::Start;
using ::rlscore::testing::Text;
using ::rlscore::testing::Tokens;
using testing::ChannelTo;
using ::testing::HasSubstr;
using testing::IncidentRequest;
using testing::ScrapeUntil;
using testing::SetDeadline;
using testing::StartOrDie;
using testing::TestOptions;

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

// The rules on the raw text stop a stream too, and each reason has its counter.
TEST(ServerMonitorGeneration, TextRulesStopTheStreamAndAreCounted) {
  std::unique_ptr<Server> server = StartOrDie(TestOptions());
  ASSERT_NE(server, nullptr);
  auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
  const std::string reentering =
      "<think>7.</think>7.<think>Wait.</ think>7.<THINK>But wait, consider another case.";
  const std::string symbols = "<think>So the sum is" + std::string(3000, '!');
  const struct {
    std::string text;
    v1::StopReason reason;
    size_t char_offset;
  } cases[] = {
      {reentering, v1::STOP_REASON_REPETITION_TAG_LOOP, reentering.find("<THINK>")},
      {symbols, v1::STOP_REASON_REPETITION_UNBROKEN_RUN, symbols.find('!') + 2048},
  };
  for (const auto& c : cases) {
    std::vector<v1::MonitorGenerationRequest> messages = {Start()};
    for (size_t at = 0; at < c.text.size(); at += 5) {
      messages.push_back(Text(c.text.substr(at, 5)));
    }
    std::optional<v1::MonitorGenerationResponse> stop;
    const grpc::Status status = Monitor(*stub, messages, &stop);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_TRUE(stop.has_value());
    EXPECT_EQ(stop->reason(), c.reason);
    EXPECT_EQ(stop->char_offset(), c.char_offset);
  }
  const std::string counted = "rlscore_requests_total{code=\"OK\",method=\"MonitorGeneration\"} 2";
  const std::string metrics = ScrapeUntil(*server, counted);
  EXPECT_THAT(metrics,
              HasSubstr("rlscore_generation_stops_total{reason=\"repetition_tag_loop\"} 1"));
  EXPECT_THAT(metrics,
              HasSubstr("rlscore_generation_stops_total{reason=\"repetition_unbroken_run\"} 1"));
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
