#include "cli/rollouts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace rlscore::cli {
namespace {

using ::testing::HasSubstr;

TEST(Rollouts, ReadsEveryField) {
  absl::StatusOr<Rollout> r = ParseRollout(
      R"({"id": {"n": 3}, "prompt_id": "gsm8k/17", "completion": "<think>x</think> 42",
          "reference": "42", "references": ["42.0"], "num_tokens": 812, "token_ids": [5, 6, 7],
          "finished": false, "task": "numeric", "external_accuracy": 0.5, "other": [1, 2]})",
      FieldNames{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->id_json, R"({"n":3})");
  const v1::ScoreItem& item = r->item;
  EXPECT_EQ(item.prompt_id(), "gsm8k/17");
  EXPECT_EQ(item.completion().text(), "<think>x</think> 42");
  EXPECT_THAT(item.references(), ::testing::ElementsAre("42", "42.0"));
  EXPECT_EQ(item.completion().num_tokens(), 812u);
  EXPECT_THAT(item.completion().token_ids(), ::testing::ElementsAre(5u, 6u, 7u));
  ASSERT_TRUE(item.completion().has_finished());
  EXPECT_FALSE(item.completion().finished());
  EXPECT_EQ(item.task(), v1::TASK_NUMERIC);
  EXPECT_DOUBLE_EQ(item.completion().external_accuracy(), 0.5);
}

TEST(Rollouts, OnlyTheCompletionIsRequired) {
  absl::StatusOr<Rollout> r = ParseRollout(R"({"completion": "7", "finished": null})", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->id_json.empty());
  EXPECT_EQ(r->item.references_size(), 0);
  EXPECT_FALSE(r->item.completion().has_num_tokens());
  EXPECT_FALSE(r->item.completion().has_finished());
  EXPECT_EQ(r->item.task(), v1::TASK_UNSPECIFIED);
}

TEST(Rollouts, ChatMessagesScoreTheLastAssistantMessage) {
  absl::StatusOr<Rollout> r = ParseRollout(
      R"({"completion": [{"role": "assistant", "content": "first"},
                         {"role": "user", "content": "again"},
                         {"role": "assistant", "content": "second"}]})",
      {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->item.completion().text(), "second");
}

TEST(Rollouts, ContentPartsAreJoined) {
  absl::StatusOr<Rollout> r = ParseRollout(
      R"({"completion": [{"role": "assistant", "content": "\\boxed{1}"},
                         {"role": "user", "content": "again"},
                         {"role": "assistant", "content": [{"type": "text", "text": "so "},
                                                           {"type": "image_url", "image_url": {}},
                                                           {"type": "text", "text": "\\boxed{2}"}]}]})",
      {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->item.completion().text(), "so \\boxed{2}");
}

TEST(Rollouts, DeepNestingJustUnderTheLimitIsRead) {
  const std::string id = std::string(31, '[') + "1" + std::string(31, ']');
  absl::StatusOr<Rollout> r = ParseRollout(R"({"completion": "x", "id": )" + id + "}", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->id_json, id);
}

TEST(Rollouts, RenamedFields) {
  FieldNames names;
  ASSERT_TRUE(RenameField("completion=response", &names).ok());
  ASSERT_TRUE(RenameField("reference=answer", &names).ok());
  absl::StatusOr<Rollout> r =
      ParseRollout(R"({"response": "<think>a</think> 3", "answer": ["3", "three"]})", names);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->item.completion().text(), "<think>a</think> 3");
  EXPECT_THAT(r->item.references(), ::testing::ElementsAre("3", "three"));

  EXPECT_THAT(std::string(RenameField("answer=x", &names).message()),
              HasSubstr("unknown field \"answer\"; the fields are id, prompt_id, completion"));
  EXPECT_THAT(std::string(RenameField("completion", &names).message()), HasSubstr("FIELD=KEY"));
}

TEST(Rollouts, TaskNames) {
  const std::pair<const char*, v1::Task> cases[] = {{"math", v1::TASK_MATH},
                                                    {"MULTIPLE_CHOICE", v1::TASK_MULTIPLE_CHOICE},
                                                    {"Exact", v1::TASK_EXACT},
                                                    {"TASK_NUMERIC", v1::TASK_NUMERIC},
                                                    {"external", v1::TASK_EXTERNAL}};
  for (const auto& [name, task] : cases) {
    SCOPED_TRACE(name);
    absl::StatusOr<v1::Task> parsed = ParseTask(name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, task);
  }
  EXPECT_FALSE(ParseTask("poetry").ok());
  EXPECT_FALSE(ParseTask("").ok());
}

TEST(Rollouts, MalformedLinesNameWhatIsWrong) {
  struct Case {
    const char* line;
    const char* message;
  } cases[] = {
      {R"({"completion": "x")", "invalid JSON at column"},
      {"not json", "invalid JSON at column 2"},
      {"[1, 2]", "expected a JSON object, got array"},
      {R"({"prompt_id": "p"})", "field \"completion\" is missing"},
      {R"({"completion": 5})", "field \"completion\": expected a string or a list of chat"},
      {R"({"completion": [{"role": "user", "content": "q"}]})", "without an assistant message"},
      {R"({"completion": [{"role": "assistant", "content": "a"}, {"role": "assistant",
          "content": null, "tool_calls": []}]})",
       "field \"completion\"[1]: the last assistant message has no text content"},
      {R"({"completion": "x", "external_accuracy": 1e400})", "invalid JSON: number overflow"},
      {R"({"completion": "x", "id": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]})",
       "nested deeper than 32 levels"},
      {R"({"completion": "x", "prompt_id": 3})",
       "field \"prompt_id\": expected a string, got number"},
      {R"({"completion": "x", "reference": {"a": 1}})",
       "field \"reference\": expected a string or"},
      {R"({"completion": "x", "references": ["a", 2]})",
       "field \"references\"[1]: expected a string"},
      {R"({"completion": "x", "num_tokens": -1})", "field \"num_tokens\": expected a non-negative"},
      {R"({"completion": "x", "num_tokens": 1.5})", "expected a non-negative integer, got 1.5"},
      {R"({"completion": "x", "num_tokens": 4294967296})", "does not fit in 32 bits"},
      {R"({"completion": "x", "token_ids": [1, "a"]})", "field \"token_ids\"[1]: expected"},
      {R"({"completion": "x", "token_ids": 3})", "field \"token_ids\": expected a list"},
      {R"({"completion": "x", "finished": "yes"})", "field \"finished\": expected true or false"},
      {R"({"completion": "x", "task": "poetry"})", "field \"task\": unknown task \"poetry\""},
      {R"({"completion": "x", "external_accuracy": "1"})", "field \"external_accuracy\""},
      {"{\"completion\": \"\xff\"}", "invalid JSON"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    absl::StatusOr<Rollout> r = ParseRollout(c.line, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message));
  }
}

TEST(Rollouts, FormatsAResult) {
  v1::ScoreItem item;
  item.set_prompt_id("p\"1");
  v1::CompletionResult result;
  result.mutable_components()->set_accuracy(1.0);
  result.mutable_components()->set_format(0.1);
  result.mutable_components()->set_repetition(-0.5);
  result.mutable_components()->set_length(-0.25);
  result.set_verdict(v1::VERDICT_CORRECT);
  result.set_extracted_answer("\\frac{1}{2}");
  result.set_num_tokens(812);
  result.mutable_anatomy()->set_well_formed(true);
  v1::RepetitionReport* rep = result.mutable_repetition();
  rep->set_detector(v1::REPETITION_DETECTOR_NGRAM);
  rep->set_char_offset(100);
  rep->set_token_offset(20);
  rep->set_first_char_offset(10);
  rep->set_occurrences(4);
  rep->set_detail("the same 8 tokens");
  EXPECT_EQ(FormatResult(7, R"("a")", item, result, 0.35),
            R"({"line":7,"id":"a","prompt_id":"p\"1","reward":0.35,"verdict":"CORRECT",)"
            R"("components":{"accuracy":1.0,"format":0.1,"repetition":-0.5,"length":-0.25},)"
            R"("extracted_answer":"\\frac{1}{2}","num_tokens":812,"tokens_estimated":false,)"
            R"("well_formed":true,"truncated":false,"format_gated":false,)"
            R"("repetition":{"detector":"NGRAM","char_offset":100,"token_offset":20,)"
            R"("first_char_offset":10,"occurrences":4,"detail":"the same 8 tokens"}})");
  result.clear_repetition();
  result.set_detail("budget");
  const std::string no_id = FormatResult(8, "", item, result, 0.35);
  EXPECT_THAT(no_id, ::testing::StartsWith(R"({"line":8,"prompt_id")"));
  EXPECT_THAT(no_id, ::testing::EndsWith(R"("format_gated":false,"detail":"budget"})"));
}

TEST(Rollouts, FormatsAnError) {
  EXPECT_EQ(FormatError(3, "field \"x\": bad"), R"({"line":3,"error":"field \"x\": bad"})");
  // Invalid UTF-8 in a message (e.g. quoted from the input) is replaced, not fatal.
  EXPECT_EQ(FormatError(4, "\xff"), "{\"line\":4,\"error\":\"\xEF\xBF\xBD\"}");
}

}  // namespace
}  // namespace rlscore::cli
