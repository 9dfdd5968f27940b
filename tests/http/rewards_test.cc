#include "http/rewards.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/json_input.h"

namespace rlscore::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OpenRlhf, QueriesBecomeGroupsOfTheirPrompt) {
  absl::StatusOr<v1::ScoreGroupsRequest> request = OpenRlhfToRequest(R"({
      "query": ["<|user|>2+2?<think>4</think> 4<|im_end|>", "<|user|>2+2?<think>5</think> 5",
                "<|user|>3+3?<think>6</think> 6</s>\n", "no prompt given"],
      "prompts": ["<|user|>2+2?", "<|user|>2+2?", "<|user|>3+3?", null],
      "labels": ["4", "4", ["6", "six"], null]})");
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->groups_size(), 3);
  const v1::Group& first = request->groups(0);
  EXPECT_THAT(first.references(), ElementsAre("4"));
  ASSERT_EQ(first.completions_size(), 2);
  EXPECT_EQ(first.completions(0).text(), "<think>4</think> 4");
  EXPECT_TRUE(first.completions(0).finished());  // it ended with an end-of-sequence marker
  EXPECT_EQ(first.completions(1).text(), "<think>5</think> 5");
  EXPECT_FALSE(first.completions(1).has_finished());
  EXPECT_THAT(request->groups(1).references(), ElementsAre("6", "six"));
  EXPECT_EQ(request->groups(1).completions(0).text(), "<think>6</think> 6");
  EXPECT_EQ(request->groups(2).references_size(), 0);
  EXPECT_EQ(request->groups(2).completions(0).text(), "no prompt given");
}

TEST(OpenRlhf, APromptNotAtTheStartIsFoundInTheQuery) {
  uint64_t not_found = 0;
  absl::StatusOr<v1::ScoreGroupsRequest> request = OpenRlhfToRequest(
      R"({"query": ["<s>[INST] q [/INST] answer 3", "re-tokenised q answer 4"],
          "prompts": ["[INST] q [/INST]", "[INST] q [/INST]"]})",
      &not_found);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->groups(0).completions(0).text(), " answer 3");
  // Not found: the whole query is scored, and counted.
  EXPECT_EQ(request->groups(0).completions(1).text(), "re-tokenised q answer 4");
  EXPECT_EQ(not_found, 1u);
}

// The search is linear (Knuth-Morris-Pratt): self-overlapping prompts are found at their first
// occurrence, and a 200 KB query of "a" against a prompt of 100 KB of "a" then "b" (quadratic for a
// naive search) is answered as not found.
TEST(OpenRlhf, ThePromptSearchHandlesSelfOverlapAndPathologicalInput) {
  absl::StatusOr<v1::ScoreGroupsRequest> request = OpenRlhfToRequest(
      R"({"query": ["xaabaabaaabaabaaab!", "abababc done"], "prompts": ["aabaaab", "ababc"]})");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->groups(0).completions(0).text(), "aabaaab!");
  EXPECT_EQ(request->groups(1).completions(0).text(), " done");

  const std::string body = R"({"query": [")" + std::string(200000, 'a') + R"("], "prompts": [")" +
                           std::string(100000, 'a') + R"(b"]})";
  uint64_t not_found = 0;
  request = OpenRlhfToRequest(body, &not_found);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(not_found, 1u);
}

TEST(OpenRlhf, SamePromptWithAnotherLabelStartsAGroup) {
  absl::StatusOr<v1::ScoreGroupsRequest> request = OpenRlhfToRequest(
      R"({"query": ["p a", "p b", "p c"], "prompts": ["p", "p", "p"], "labels": [1, 1, 2]})");
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->groups_size(), 2);
  EXPECT_EQ(request->groups(0).completions_size(), 2);
  EXPECT_THAT(request->groups(0).references(), ElementsAre("1"));
  EXPECT_THAT(request->groups(1).references(), ElementsAre("2"));
}

TEST(OpenRlhf, MalformedBodiesNameWhatIsWrong) {
  struct Case {
    const char* body;
    const char* message;
  } cases[] = {
      {R"({"query": ["a")", "invalid JSON at byte"},
      {"", "invalid JSON at byte 1: syntax error while parsing value - unexpected end"},
      {"[]", "expected a JSON object, got array"},
      {R"({"prompts": []})", "\"query\" is missing"},
      {R"({"query": "a"})", "\"query\": expected a list, got string"},
      {R"({"query": ["a", 1]})", "\"query\"[1]: expected a string, got number"},
      {R"({"query": ["a"], "prompts": ["a", "b"]})",
       "\"prompts\" has 2 entries but \"query\" has 1"},
      {R"({"query": ["a"], "labels": []})", "\"labels\" has 0 entries"},
      {R"({"query": ["a"], "prompts": [3]})", "\"prompts\"[0]: expected a string"},
      {R"({"query": ["a"], "labels": [{"x": 1}]})", "\"labels\"[0]: expected a string, a number"},
      {R"({"query": ["a"], "labels": [["1", ["2"]]]})", "\"labels\"[0][1]: expected a string"},
      {R"({"query": ["a"], "labels": [1e400]})", "invalid JSON at byte 29: number overflow"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    absl::StatusOr<v1::ScoreGroupsRequest> request = OpenRlhfToRequest(c.body);
    ASSERT_FALSE(request.ok());
    EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(request.status().message()), HasSubstr(c.message));
  }
}

// OpenRlhfToRequest and SlimeToRequest answer what the nlohmann references answer, for bodies
// they read themselves and for those they leave to the references.
void ExpectSameAsReference(const std::string& body, bool read_fast) {
  SCOPED_TRACE(body);
  const uint64_t before = ReferenceReadsOnThisThread();
  uint64_t fast_not_found = 0, reference_not_found = 0;
  const absl::StatusOr<v1::ScoreGroupsRequest> fast = OpenRlhfToRequest(body, &fast_not_found);
  const absl::StatusOr<v1::ScoreGroupsRequest> reference =
      OpenRlhfReference(body, &reference_not_found);
  ASSERT_EQ(fast.ok(), reference.ok()) << (fast.ok() ? reference.status() : fast.status());
  if (fast.ok()) {
    EXPECT_EQ(fast->SerializeAsString(), reference->SerializeAsString())
        << fast->ShortDebugString() << "\n"
        << reference->ShortDebugString();
    EXPECT_EQ(fast_not_found, reference_not_found);
  } else {
    EXPECT_EQ(fast.status(), reference.status());
  }
  EXPECT_EQ(ReferenceReadsOnThisThread() - before, read_fast ? 0u : 1u);
}

TEST(OpenRlhf, TheFastReadingAnswersAsTheReference) {
  const std::string fast[] = {
      R"({"query": ["p a", "p b", "q c"], "prompts": ["p", "p", "q"], "labels": ["1", "1", "2"]})",
      R"({"query": ["p a", "p b", "p c"], "prompts": ["p", "p", "p"], "labels": [1, 1, 2]})",
      R"({"query": ["p a", "p b"], "prompts": ["p", "p"], "labels": [1, "1"]})",
      R"({"query": ["p a", "p b"], "prompts": ["p", "p"], "labels": [true, true]})",
      R"({"query": ["p a", "p b"], "prompts": ["p", "p"], "labels": [["1", 2], ["1", 2]]})",
      R"({"query": ["p a", "p b"], "prompts": ["p", "p"], "labels": [["1"], "1"]})",
      R"({"query": ["p a", "p b"], "prompts": [null, null], "labels": [null, null]})",
      R"({"query": ["p a", "p b"], "prompts": ["p", null], "labels": null})",
      R"({"query": ["a\n<|im_end|>", "x p y"], "prompts": null})",
      R"({"query": ["no prompt here"], "prompts": ["absent"], "extra": {"k": [1, 2.5, null]}})",
      R"({"query": []})",
      R"({"labels": [-9223372036854775808], "query": ["\u00e9 \ud83d\ude00"], "prompts": [""]})",
      R"({"query": ["a"], "labels": [18446744073709551615]})",
  };
  for (const std::string& body : fast) ExpectSameAsReference(body, /*read_fast=*/true);
  const std::string deep = std::string(32, '[') + std::string(32, ']');
  const std::string referred[] = {
      R"({"query": ["a")",
      "",
      "[]",
      R"({"prompts": []})",
      R"({"query": "a"})",
      R"({"query": ["a", 1]})",
      R"({"query": ["a"], "prompts": ["a", "b"]})",
      R"({"query": ["a"], "labels": []})",
      R"({"query": ["a"], "prompts": [3]})",
      R"({"query": ["a"], "labels": [{"x": 1}]})",
      R"({"query": ["a"], "labels": [["1", ["2"]]]})",
      R"({"query": ["a"], "labels": [1e400]})",
      R"({"query": ["a"], "other": 1e400})",
      R"({"query": null})",
      R"({"query": ["a"], "query": ["b"]})",
      R"({"query": ["a", "b"], "prompts": ["p", "p"], "labels": [1, 1.0]})",
      R"({"query": ["a"], "labels": [1.5]})",
      "{\"query\": [\"a\tb\"]}",
      R"({"query": ["a"]} x)",
      "{\"query\": [\"a\"], \"x\": " + deep + "}",
      // NUL bytes: after the object, inside a string, between tokens
      std::string(R"({"query": ["a"]})") + '\0',
      std::string(R"({"query": ["a)") + '\0' + R"("]})",
      std::string(R"({"query":)") + '\0' + R"(["a"]})",
  };
  for (const std::string& body : referred) ExpectSameAsReference(body, /*read_fast=*/false);
}

TEST(Slime, TheFastReadingAnswersAsTheReference) {
  const std::pair<std::string, bool> cases[] = {
      {R"({"prompt": [{"role": "user", "content": "q"}], "response": "a<|im_end|>", "label": "4"})",
       true},
      {R"({"response": "x", "label": [true, 2, "b"]})", true},
      {R"({"response": "x", "label": null})", true},
      {R"({"response": "x"})", true},
      {R"({"response": "x", "label": [true, 2.5, "b"]})", false},
      {R"({"prompt": "q"})", false},
      {R"({"response": 3})", false},
      {R"({"response": "x", "response": "y"})", false},
      {std::string(R"({"response": "x"})") + '\0', false},
  };
  for (const auto& [body, read_fast] : cases) {
    SCOPED_TRACE(body);
    const uint64_t before = ReferenceReadsOnThisThread();
    const absl::StatusOr<v1::ScoreGroupsRequest> fast = SlimeToRequest(body);
    const absl::StatusOr<v1::ScoreGroupsRequest> reference = SlimeReference(body);
    ASSERT_EQ(fast.ok(), reference.ok());
    if (fast.ok()) {
      EXPECT_EQ(fast->SerializeAsString(), reference->SerializeAsString());
    } else {
      EXPECT_EQ(fast.status(), reference.status());
    }
    EXPECT_EQ(ReferenceReadsOnThisThread() - before, read_fast ? 0u : 1u);
  }
}

// A number nlohmann holds as a double is the reference as the body writes it: its dump would
// round an integer past 64 bits, so that a right answer came out WRONG, and respell 1.50.
TEST(OpenRlhf, NumbersAreReferencesAsTheBodyWritesThem) {
  uint64_t not_found = 0;
  absl::StatusOr<v1::ScoreGroupsRequest> request = OpenRlhfToRequest(
      R"({"query": ["p a", "p b", "q c", "r d"], "prompts": ["p", "p", "q", "r"],)"
      R"( "labels" : [ 123456789012345678901234567890, 123456789012345678901234567890,)"
      R"( [ 1.50 , "x", 2e0, 7 ], 9 ]})",
      &not_found);
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->groups_size(), 3);
  EXPECT_THAT(request->groups(0).references(), ElementsAre("123456789012345678901234567890"));
  EXPECT_THAT(request->groups(1).references(), ElementsAre("1.50", "x", "2e0", "7"));
  EXPECT_THAT(request->groups(2).references(), ElementsAre("9"));

  absl::StatusOr<v1::ScoreGroupsRequest> slime =
      SlimeToRequest(R"({"response": "x", "label": [true, 2.50, 18446744073709551616]})");
  ASSERT_TRUE(slime.ok()) << slime.status();
  EXPECT_THAT(slime->groups(0).references(), ElementsAre("true", "2.50", "18446744073709551616"));
  slime = SlimeToRequest(R"({"label": 0.10, "response": "x"})");
  ASSERT_TRUE(slime.ok()) << slime.status();
  EXPECT_THAT(slime->groups(0).references(), ElementsAre("0.10"));
}

TEST(OpenRlhf, ReplyHasRewardsScoresAndExtraLogs) {
  v1::ScoreGroupsResponse response;
  for (double reward : {1.1, -0.5}) {
    response.add_rewards(reward);
    v1::CompletionResult* r = response.add_results();
    r->mutable_components()->set_accuracy(reward > 0 ? 1.0 : 0.0);
    r->mutable_components()->set_format(reward > 0 ? 0.1 : 0.0);
    r->mutable_components()->set_repetition(reward > 0 ? 0.0 : -0.5);
    r->mutable_anatomy()->set_truncated(reward < 0);
    r->set_num_tokens(reward > 0 ? 12 : 16384);
  }
  EXPECT_EQ(OpenRlhfReply(response),
            R"({"rewards":[1.1,-0.5],"scores":[1.0,0.0],"extra_logs":{)"
            R"("rlscore_accuracy":[1.0,0.0],"rlscore_format":[0.1,0.0],)"
            R"("rlscore_repetition":[0.0,-0.5],"rlscore_length":[0.0,0.0],)"
            R"("rlscore_truncated":[0.0,1.0],"rlscore_num_tokens":[12,16384]}})");
}

TEST(Slime, OneSampleIsAGroupOfOne) {
  absl::StatusOr<v1::ScoreGroupsRequest> request = SlimeToRequest(
      R"({"prompt": [{"role": "user", "content": "q"}], "response": "<think>a</think> 42<|im_end|>",
          "label": 42, "metadata": {"x": 1}})");
  ASSERT_TRUE(request.ok()) << request.status();
  ASSERT_EQ(request->groups_size(), 1);
  EXPECT_THAT(request->groups(0).references(), ElementsAre("42"));
  EXPECT_EQ(request->groups(0).completions(0).text(), "<think>a</think> 42");
  EXPECT_TRUE(request->groups(0).completions(0).finished());

  absl::StatusOr<v1::ScoreGroupsRequest> boolean =
      SlimeToRequest(R"({"response": "x", "label": [true, 2.5, "b"]})");
  ASSERT_TRUE(boolean.ok()) << boolean.status();
  EXPECT_THAT(boolean->groups(0).references(), ElementsAre("true", "2.5", "b"));

  EXPECT_THAT(std::string(SlimeToRequest(R"({"prompt": "q"})").status().message()),
              HasSubstr("\"response\" is missing"));
  EXPECT_THAT(std::string(SlimeToRequest(R"({"response": 3})").status().message()),
              HasSubstr("\"response\": expected a string, got number"));
  EXPECT_THAT(std::string(SlimeToRequest("{").status().message()), HasSubstr("invalid JSON"));

  v1::ScoreGroupsResponse response;
  response.add_rewards(1.1);
  EXPECT_EQ(SlimeReply(response), "1.1");
}

TEST(JsonInput, RefusesWhatWouldCrashOrExhaust) {
  const std::string deep = std::string(40, '[') + std::string(40, ']');
  const struct {
    std::string text;
    const char* message;
  } cases[] = {
      {R"({"a": 1e400})", "invalid JSON at byte 7: number overflow parsing '1e400'"},
      {R"({"a": -1e400})", "number overflow"},
      {R"({"a": )" + deep + "}", "invalid JSON at byte 38: nested deeper than 32 levels"},
      {"{\"a\": \"\xc3\"}", "invalid JSON at byte"},  // truncated UTF-8
      {R"({"a": 1} x)", "invalid JSON at byte 10"},
      {"3", "expected a JSON object, got number"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<nlohmann::json> parsed = ParseJsonObject(c.text, "byte");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.message));
  }
  const std::string ok_deep = "{\"a\": " + std::string(31, '[') + std::string(31, ']') + "}";
  EXPECT_TRUE(ParseJsonObject(ok_deep, "byte").ok());
}

TEST(HttpRewards, EndOfSequenceMarkersAreStripped) {
  const struct {
    const char* in;
    const char* out;
    bool stripped;
  } cases[] = {
      {"answer<|im_end|>", "answer", true},
      {"answer <|eot_id|>\n<|end_of_text|>  ", "answer", true},
      {"answer</s></s>", "answer", true},
      {"answer \n", "answer", false},
      {"</s> in the middle is kept", "</s> in the middle is kept", false},
      {"", "", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    std::string text = c.in;
    EXPECT_EQ(StripEndOfSequence(&text), c.stripped);
    EXPECT_EQ(text, c.out);
  }
  EXPECT_EQ(ErrorReply("bad \"x\""), R"({"error":"bad \"x\""})");
}

}  // namespace
}  // namespace rlscore::http
