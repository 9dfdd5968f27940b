#include "engine/monitor_session.h"

#include <string>

#include "engine/local_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/monitor_requests.h"

namespace rlscore::engine {
namespace {

using ::rlscore::testing::LoopingCompletion;
using ::rlscore::testing::Start;
using ::rlscore::testing::Text;
using ::rlscore::testing::Tokens;
using ::testing::HasSubstr;

TEST(MonitorSession, StopsWhereTheBatchScorerReportsTheLoop) {
  const ServerOptions options = DefaultServerOptions();
  // A verbatim loop (the n-gram rule), and reworded reflections that keep re-entering the
  // reasoning (the tag-loop rule: a third reasoning section).
  std::string reentering = "<think>The sum is 7.</think>So 7.";
  for (int i = 0; i < 3; ++i) {
    reentering += "\n< think>Wait, let me rethink step " + std::to_string(i) +
                  " once more, it may be wrong.</ think>Still 7.";
  }
  const struct {
    std::string text;
    v1::RepetitionDetector detector;
    v1::StopReason reason;
  } cases[] = {
      {LoopingCompletion(), v1::REPETITION_DETECTOR_NGRAM, v1::STOP_REASON_REPETITION_NGRAM},
      {reentering, v1::REPETITION_DETECTOR_TAG_LOOP, v1::STOP_REASON_REPETITION_TAG_LOOP},
  };
  for (const auto& c : cases) {
    const std::string& text = c.text;
    SCOPED_TRACE(text);
    const LocalEngine engine(options);
    v1::ScoreGroupsRequest batch;
    v1::Group* group = batch.add_groups();
    group->add_references("3");
    group->add_completions()->set_text(text);
    v1::ScoreGroupsResponse scored;
    ASSERT_TRUE(RunScoreGroups(engine.context(), batch, &scored).ok());
    const v1::RepetitionReport& report = scored.results(0).repetition();
    ASSERT_EQ(report.detector(), c.detector);
    // Every delta size, from one byte to the whole text at once, stops at the same offset.
    for (size_t step : {size_t{1}, size_t{7}, size_t{64}, text.size()}) {
      SCOPED_TRACE(step);
      MonitorSession session(options);
      ASSERT_FALSE(session.Handle(Start()).value().has_value());
      std::optional<scorers::StopVerdict> stop;
      for (size_t at = 0; at < text.size() && !stop.has_value(); at += step) {
        absl::StatusOr<std::optional<scorers::StopVerdict>> v =
            session.Handle(Text(text.substr(at, step)));
        ASSERT_TRUE(v.ok()) << v.status();
        stop = *v;
      }
      ASSERT_TRUE(stop.has_value());
      EXPECT_EQ(ToProto(stop->reason), c.reason);
      EXPECT_EQ(stop->char_offset, report.char_offset());
    }
  }
}

TEST(MonitorSession, StopsAtTheStreamsTokenBudget) {
  const ServerOptions options = DefaultServerOptions();
  MonitorSession session(options);
  ASSERT_FALSE(session.Handle(Start(/*max_tokens=*/10)).value().has_value());
  EXPECT_FALSE(session.Handle(Tokens(1, 9)).value().has_value());
  absl::StatusOr<std::optional<scorers::StopVerdict>> v = session.Handle(Tokens(100, 5));
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_TRUE(v->has_value());
  EXPECT_EQ(ToProto((*v)->reason), v1::STOP_REASON_TOKEN_BUDGET);
  EXPECT_EQ((*v)->token_offset, 10u);
}

TEST(MonitorSession, RefusesAStreamOutOfOrderWithTheReason) {
  const ServerOptions options = DefaultServerOptions();
  struct Case {
    std::vector<v1::MonitorGenerationRequest> messages;
    absl::StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {{Text("hello")}, absl::StatusCode::kInvalidArgument, "the first message must be start"},
      {{Tokens(0, 3)}, absl::StatusCode::kInvalidArgument, "the first message must be start"},
      {{Start(), Start()}, absl::StatusCode::kInvalidArgument, "sent twice"},
      {{v1::MonitorGenerationRequest()}, absl::StatusCode::kInvalidArgument, "an empty message"},
      {{Start(0, "no-such-profile")}, absl::StatusCode::kNotFound, "no-such-profile"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    MonitorSession session(options);
    absl::Status last;
    for (const v1::MonitorGenerationRequest& m : c.messages) last = session.Handle(m).status();
    EXPECT_EQ(last.code(), c.code);
    EXPECT_THAT(std::string(last.message()), HasSubstr(c.message));
  }
}

TEST(MonitorSession, RefusesDeltasBeyondTheLimits) {
  ServerOptions options = DefaultServerOptions();
  options.limits.max_completion_tokens = 100;
  {
    MonitorSession session(options);
    ASSERT_TRUE(session.Handle(Start()).ok());
    const absl::Status s = session.Handle(Tokens(0, 101)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(std::string(s.message()), HasSubstr("max_completion_tokens = 100"));
  }
  options = DefaultServerOptions();
  options.limits.max_completion_bytes = 1000;
  {
    MonitorSession session(options);
    ASSERT_TRUE(session.Handle(Start()).ok());
    ASSERT_FALSE(session.Handle(Text(std::string(600, 'a'))).value().has_value());
    const absl::Status s = session.Handle(Text(std::string(600, 'b'))).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(std::string(s.message()), HasSubstr("max_completion_bytes = 1000"));
  }
}

}  // namespace
}  // namespace rlscore::engine
