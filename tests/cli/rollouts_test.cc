#include "cli/rollouts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json_input.h"

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

// Datasets often number their prompts: an integer prompt id is its decimal text, the same prompt
// as the string of those digits.
TEST(Rollouts, AnIntegerPromptIdIsItsDecimalText) {
  const std::pair<const char*, const char*> cases[] = {
      {"17", "17"},
      {"-3", "-3"},
      {"-0", "0"},
      {"18446744073709551615", "18446744073709551615"},
      {"-9223372036854775808", "-9223372036854775808"},
  };
  for (const auto& [json, text] : cases) {
    SCOPED_TRACE(json);
    absl::StatusOr<Rollout> r =
        ParseRollout(absl::StrCat(R"({"prompt_id": )", json, R"(, "completion": "x"})"), {});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->item.prompt_id(), text);
  }
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

// A numeric id that nlohmann holds as a double, a list or an object comes back as written (less
// its spaces): integers past 64 bits would otherwise round, so that distinct ids came out the
// same, and an object's keys would be sorted. Both readers give it.
TEST(Rollouts, AnIdIsEchoedAsWritten) {
  const std::pair<const char*, const char*> cases[] = {
      {"123456789012345678901234567890", "123456789012345678901234567890"},
      {"123456789012345678901234567891", "123456789012345678901234567891"},
      {"-18446744073709551617", "-18446744073709551617"},
      {"1.50", "1.50"},
      {"1e2", "1e2"},
      {"17", "17"},  // integers of 64 bits are their decimal text, as before
      {"-0", "0"},
      {R"("r\u0031")", R"("r1")"},  // strings as nlohmann writes them, as before
      {R"([100000000000000000000, 100000000000000000001])",
       "[100000000000000000000,100000000000000000001]"},
      {R"({"step": 3, "sample": [1.50, "a  b"], "prompt": {}})",
       R"({"step":3,"sample":[1.50,"a  b"],"prompt":{}})"},
  };
  RolloutReader reader({});
  for (const auto& [json, text] : cases) {
    SCOPED_TRACE(json);
    const std::string line = absl::StrCat(R"({"completion": "x", "id": )", json, "}");
    absl::StatusOr<Rollout> r = ParseRollout(line, {});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->id_json, text);
    absl::StatusOr<Rollout> fast = reader.Read(line);
    ASSERT_TRUE(fast.ok()) << fast.status();
    EXPECT_EQ(fast->id_json, text);
  }
}

// Counts and prompt ids as pandas writes an integer column that has a missing value: whole
// numbers as floats. Fractions, negatives and values past 32 bits (prompt ids: past 2^53, where
// a double no longer holds every integer) are still refused.
TEST(Rollouts, WholeNumbersWrittenAsFloatsAreIntegers) {
  absl::StatusOr<Rollout> r = ParseRollout(
      R"({"completion": "x", "num_tokens": 812.0, "token_ids": [1.0, 2, 3e0, -0.0, 4294967295.0],)"
      R"( "prompt_id": 17.0})",
      {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->item.completion().num_tokens(), 812u);
  EXPECT_THAT(r->item.completion().token_ids(), ::testing::ElementsAre(1, 2, 3, 0, 4294967295u));
  EXPECT_EQ(r->item.prompt_id(), "17");
  const std::pair<const char*, const char*> refused[] = {
      {R"({"completion": "x", "num_tokens": 812.5})",
       "field \"num_tokens\": expected a non-negative integer, got 812.5"},
      {R"({"completion": "x", "num_tokens": -1.0})",
       "field \"num_tokens\": expected a non-negative integer, got -1.0"},
      {R"({"completion": "x", "token_ids": [4294967296.0]})",
       "field \"token_ids\"[0]: 4294967296.0 does not fit in 32 bits"},
      {R"({"completion": "x", "prompt_id": 9007199254740992.0})",
       "field \"prompt_id\": expected a string or an integer, got number"},
      {R"({"completion": "x", "prompt_id": 0.5})",
       "field \"prompt_id\": expected a string or an integer, got number"},
  };
  for (const auto& [line, message] : refused) {
    SCOPED_TRACE(line);
    absl::StatusOr<Rollout> bad = ParseRollout(line, {});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().message(), message);
  }
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
  const std::pair<const char*, v1::Task> cases[] = {
      {"math", v1::TASK_MATH},
      {"MULTIPLE_CHOICE", v1::TASK_MULTIPLE_CHOICE},
      {"Exact", v1::TASK_EXACT},
      {"TASK_NUMERIC", v1::TASK_NUMERIC},
      {"external", v1::TASK_EXTERNAL},
      {"if", v1::TASK_INSTRUCTION_FOLLOWING},
      {"IFEval", v1::TASK_INSTRUCTION_FOLLOWING},
      {"instruction_following", v1::TASK_INSTRUCTION_FOLLOWING}};
  for (const auto& [name, task] : cases) {
    SCOPED_TRACE(name);
    absl::StatusOr<v1::Task> parsed = ParseTask(name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, task);
  }
  EXPECT_FALSE(ParseTask("poetry").ok());
  EXPECT_FALSE(ParseTask("").ok());
  // An unknown name is echoed clipped: a megabyte of it costs an error of a few hundred bytes.
  const std::string message(ParseTask(std::string(1 << 20, 'x')).status().message());
  EXPECT_THAT(message, HasSubstr("x... (1048576 bytes)\"; expected math"));
  EXPECT_LT(message.size(), 300u);
}

TEST(Rollouts, AnInstructionListIsAReference) {
  // As a JSON object in "reference": kept as its JSON text.
  absl::StatusOr<Rollout> r = ParseRollout(
      R"({"completion": "x", "task": "if",
          "reference": {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}})",
      FieldNames{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->item.task(), v1::TASK_INSTRUCTION_FOLLOWING);
  EXPECT_THAT(r->item.references(),
              ::testing::ElementsAre(R"({"instruction_id_list":["punctuation:no_comma"],)"
                                     R"("kwargs":[{}]})"));
  // An IFEval row: its own keys are the reference, and the task is IF.
  absl::StatusOr<Rollout> row = ParseRollout(
      R"({"key": 1001, "prompt": "Write...", "response": "x",
          "instruction_id_list": ["detectable_format:title"], "kwargs": [{}]})",
      [] {
        FieldNames names;
        names.completion = "response";
        return names;
      }());
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->item.task(), v1::TASK_INSTRUCTION_FOLLOWING);
  EXPECT_THAT(row->item.references(),
              ::testing::ElementsAre(
                  R"({"instruction_id_list":["detectable_format:title"],"kwargs":[{}]})"));
  // The fast reader leaves such a row to the reference reader and answers the same.
  RolloutReader reader([] {
    FieldNames names;
    names.completion = "response";
    return names;
  }());
  absl::StatusOr<Rollout> fast = reader.Read(
      R"({"key": 1001, "prompt": "Write...", "response": "x",
          "instruction_id_list": ["detectable_format:title"], "kwargs": [{}]})");
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_EQ(fast->item.SerializeAsString(), row->item.SerializeAsString());
  // A line that names its reference keeps it, and a task it names wins.
  absl::StatusOr<Rollout> named = ParseRollout(
      R"({"completion": "x", "reference": "42", "task": "math", "instruction_id_list": ["a"]})",
      FieldNames{});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->item.task(), v1::TASK_MATH);
  EXPECT_THAT(named->item.references(), ::testing::ElementsAre("42"));
}

TEST(Rollouts, FormatsInstructionResults) {
  v1::ScoreItem item;
  v1::CompletionResult result;
  result.set_verdict(v1::VERDICT_WRONG);
  v1::InstructionResult* a = result.add_instructions();
  a->set_id("punctuation:no_comma");
  a->set_strict(false);
  a->set_loose(true);
  v1::InstructionResult* b = result.add_instructions();
  b->set_id("detectable_format:title");
  b->set_strict(true);
  b->set_loose(true);
  std::string line;
  AppendResult(&line, 1, "", item, result, 0.0);
  EXPECT_THAT(line,
              ::testing::EndsWith(
                  R"("instructions":[{"id":"punctuation:no_comma","strict":false,"loose":true},)"
                  R"({"id":"detectable_format:title","strict":true,"loose":true}]})"
                  "\n"));
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
      {R"({"completion": "x", "external_accuracy": 1e400})",
       "invalid JSON at column 42: number overflow"},
      {R"({"completion": "x", "id": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]})",
       "nested deeper than 32 levels"},
      {R"({"completion": "x", "prompt_id": 3.5})",
       "field \"prompt_id\": expected a string or an integer, got number"},
      {R"({"completion": "x", "prompt_id": 18446744073709551616})",
       "field \"prompt_id\": expected a string or an integer, got number"},
      {R"({"completion": "x", "prompt_id": ["p"]})",
       "field \"prompt_id\": expected a string or an integer, got array"},
      {R"({"completion": "x", "reference": {"a": 1}})",
       "field \"reference\": expected a string, a number, a boolean, an instruction list object "
       "or a list of them, got object"},
      {R"({"completion": "x", "references": ["a", 2, null]})",
       "field \"references\"[2]: expected a string, a number or a boolean, got null"},
      {R"({"completion": "x", "references": [["a"]]})",
       "field \"references\"[0]: expected a string, a number or a boolean, got array"},
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
  std::string line;
  AppendResult(&line, 7, R"("a")", item, result, 0.35);
  EXPECT_EQ(line, R"({"line":7,"id":"a","prompt_id":"p\"1","reward":0.35,"verdict":"CORRECT",)"
                  R"("components":{"accuracy":1.0,"format":0.1,"repetition":-0.5,"length":-0.25},)"
                  R"("extracted_answer":"\\frac{1}{2}","num_tokens":812,"tokens_estimated":false,)"
                  R"("well_formed":true,"truncated":false,"format_gated":false,)"
                  R"("repetition":{"detector":"NGRAM","char_offset":100,"token_offset":20,)"
                  R"("first_char_offset":10,"occurrences":4,"detail":"the same 8 tokens"}})"
                  "\n");
  result.clear_repetition();
  result.set_detail("budget");
  std::string no_id;
  AppendResult(&no_id, 8, "", item, result, 0.35);
  EXPECT_THAT(no_id, ::testing::StartsWith(R"({"line":8,"prompt_id")"));
  EXPECT_THAT(no_id, ::testing::EndsWith(R"("format_gated":false,"detail":"budget"})"
                                         "\n"));
}

TEST(Rollouts, FormatsAnError) {
  std::string out;
  AppendError(&out, 3, "field \"x\": bad");
  EXPECT_EQ(out, "{\"line\":3,\"error\":\"field \\\"x\\\": bad\"}\n");
  // Invalid UTF-8 in a message (e.g. quoted from the input) is replaced, not fatal.
  out.clear();
  AppendError(&out, 4, "\xff");
  EXPECT_EQ(out, "{\"line\":4,\"error\":\"\xEF\xBF\xBD\"}\n");
}

// RolloutReader answers what ParseRollout answers, for every line: the same item and id, or the
// same error.
void ExpectSameAsReference(std::string_view line, const FieldNames& names = {}) {
  SCOPED_TRACE(line);
  RolloutReader reader(names);
  const absl::StatusOr<Rollout> fast = reader.Read(line);
  const absl::StatusOr<Rollout> reference = ParseRollout(line, names);
  ASSERT_EQ(fast.ok(), reference.ok()) << (fast.ok() ? reference.status() : fast.status());
  if (!fast.ok()) {
    EXPECT_EQ(fast.status(), reference.status());
    return;
  }
  EXPECT_EQ(fast->id_json, reference->id_json);
  EXPECT_EQ(fast->item.SerializeAsString(), reference->item.SerializeAsString())
      << fast->item.ShortDebugString() << "\n"
      << reference->item.ShortDebugString();
}

// References come as datasets ship them: an answer column is often numeric, and a number is its
// text as the line writes it (1.50 stays 1.50, an integer past 64 bits keeps every digit); a
// boolean is true or false. Both readers agree, and the fast one reads such lines itself.
TEST(Rollouts, NumbersAndBooleansAreReferencesAsWritten) {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {R"({"completion": "x", "reference": 204})", {"204"}},
      {R"({"completion": "x", "reference": 1.50})", {"1.50"}},
      {R"({"completion": "x", "reference": -2.5E-3 })", {"-2.5E-3"}},
      {R"({"completion": "x", "reference": 123456789012345678901234567890})",
       {"123456789012345678901234567890"}},
      {R"({"completion": "x", "reference": false})", {"false"}},
      {R"({"completion": "x", "references": [ 3 , "3.0", 0.50, true ]})",
       {"3", "3.0", "0.50", "true"}},
      {R"({"completion": "x", "reference": 7, "references": [8e0]})", {"7", "8e0"}},
  };
  RolloutReader reader({});
  for (const auto& [line, references] : cases) {
    SCOPED_TRACE(line);
    absl::StatusOr<Rollout> r = ParseRollout(line, {});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_THAT(r->item.references(), ::testing::ElementsAreArray(references));
    ExpectSameAsReference(line);
    ASSERT_TRUE(reader.Read(line).ok());
  }
  EXPECT_EQ(reader.deferred(), 0u);
}

// Lines the fast path reads itself: checked against the reference, and that they were not
// simply handed to it.
TEST(RolloutReader, ReadsCommonLinesItselfWithTheReferenceAnswer) {
  const char* lines[] = {
      R"({"completion": "x"})",
      (R"({"id": 7, "prompt_id": "gsm8k/17", "completion": "<think>a</think> \\boxed{42}",)"
       R"( "reference": "42", "num_tokens": 812, "finished": true, "task": "math"})"),
      R"({"id": "r-1", "completion": "tab\there \"quoted\" \u00e9\ud83d\ude00 \/", "references": ["1", "1.0"]})",
      R"({"id": -9223372036854775808, "completion": "x", "token_ids": [0, 4294967295, 17]})",
      R"({"id": 18446744073709551615, "completion": "x", "external_accuracy": 0.25, "task": "EXTERNAL"})",
      R"({"id": null, "completion": "x", "prompt_id": null, "reference": null, "num_tokens": null})",
      R"({"id": true, "completion": "x", "finished": false, "external_accuracy": 1})",
      R"({"id": false, "completion": "", "token_ids": [], "references": []})",
      R"({"references": ["b"], "completion": "x", "reference": "a"})",  // reference first
      R"({"completion": "x", "extra": {"deep": [1, 2.5e3, -0.0, "s", null, true, {"k": []}]}})",
      R"({"completion": "x", "": 1, "\u0063ompletion_": 2})",
      R"(  {"completion" : "x" , "id" : "spaces"}  )",
      R"({"prompt_id": "\u4e2d\u6587", "completion": "\ud834\udd1e 𝄞"})",
      R"({"prompt_id": 17, "completion": "x"})",
      R"({"prompt_id": -0, "completion": "x"})",
      R"({"completion": "x", "prompt_id": 18446744073709551615})",
      R"({"completion": "x", "num_tokens": 0, "external_accuracy": -1e308})",
      R"({"completion": "x", "token_ids": [ 1 ,20 , 300,4000000000 ], "num_tokens": 9})",
      // chat messages: the last assistant message's text
      R"({"completion": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})",
      R"({"completion": [{"role": "assistant", "content": [{"type": "text", "text": "a"}]}]})",
      (R"({"completion": [{"role": "assistant", "content": [{"type": "text", "text": "a\n"},)"
       R"( {"type": "image_url", "image_url": {"url": "u"}}, {"text": "b", "type": "text"},)"
       R"( {"type": 5, "text": null}, {"type": "text", "text": ""}]}]})"),
      (R"({"completion": [{"content": "first", "role": "assistant"}, {"role": "user",)"
       R"( "content": 5}, {"role": "assistant", "content": "se\u0063ond", "name": "bot"},)"
       R"( {"role": "tool", "content": [1, {"a": [null]}]}], "prompt_id": "p"})"),
      (R"({"completion": ["not a message", 7, {"role": 1, "content": "x"}, {"role": "assistant",)"
       R"( "content": "y"}, {"role": "assistant", "content": []}, {"role": "assistant",)"
       R"( "content": [{"type": "text", "text": "z"}]}]})"),
  };
  RolloutReader reader(FieldNames{});
  for (const char* line : lines) {
    ExpectSameAsReference(line);
    ASSERT_TRUE(reader.Read(line).ok()) << line;
  }
  EXPECT_EQ(reader.deferred(), 0u);
}

// A line whose JSON tree would hold more than the limit is refused by either reader: a tab before
// it sends it to the reference reader, and the answer is the same. Lines too short to reach the
// limit are not counted.
TEST(RolloutReader, RefusesALineWhoseTreeWouldHoldMoreThanTheLimit) {
  RolloutReader reader(FieldNames{}, {.bytes = 100000, .name = "memory_budget_bytes"});
  std::string line = R"({"completion": "<think>a</think> 1", "junk": [)";
  for (int i = 0; i < 600; ++i) line += i == 0 ? "{}" : ",{}";
  line += "]}";
  ASSERT_GT(JsonTreeBytes(line, CountJsonShape(line)), 100000u);
  for (const std::string& form : {line, "\t" + line}) {
    const absl::StatusOr<Rollout> read = reader.Read(form);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(read.status().message(),
              absl::StrCat("the line would take about ", JsonTreeBytes(form, CountJsonShape(form)),
                           " bytes to hold as JSON; at most 100000 (memory_budget_bytes)"));
  }
  // A third as many objects are under it; and without a limit nothing is refused.
  std::string smaller = R"({"completion": "<think>a</think> 1", "junk": [)";
  for (int i = 0; i < 200; ++i) smaller += i == 0 ? "{}" : ",{}";
  smaller += "]}";
  EXPECT_TRUE(reader.Read(smaller).ok());
  EXPECT_TRUE(reader.Read("\t" + smaller).ok());
  EXPECT_TRUE(RolloutReader(FieldNames{}).Read(line).ok());
}

// One reader over lines longer and longer, past the length where its buffers stop doubling, then
// short ones again: each read by the fast path, as the reference reads it.
TEST(RolloutReader, ReadsLinesOfEveryLengthWithTheSameBuffers) {
  RolloutReader reader(FieldNames{});
  for (const size_t length : {1, 100, 101, 5000, 70000, 70001, 3000000, 9000000, 200, 1}) {
    SCOPED_TRACE(length);
    std::string completion(length, 'a');
    for (size_t i = 7; i < length; i += 64) completion[i] = ' ';
    const std::string line =
        R"({"id": "r", "completion": ")" + completion + R"(", "num_tokens": 3})";
    const absl::StatusOr<Rollout> fast = reader.Read(line);
    const absl::StatusOr<Rollout> reference = ParseRollout(line, FieldNames{});
    ASSERT_TRUE(fast.ok()) << fast.status();
    ASSERT_TRUE(reference.ok()) << reference.status();
    EXPECT_EQ(fast->item.SerializeAsString(), reference->item.SerializeAsString());
    EXPECT_EQ(fast->item.completion().text().size(), length);
  }
  EXPECT_EQ(reader.deferred(), 0u);
}

// Each scored text given back, lines longer and shorter in turn: every completion reads as the
// reference reads it, with nothing left of the longer text that lent its buffer, and a text that
// fits the buffer lent to it is read into that buffer.
TEST(RolloutReader, ReadsIntoTextsGivenBackWithNothingLeftOfThem) {
  RolloutReader reader(FieldNames{});
  const char* lent = nullptr;
  size_t lent_capacity = 0;
  for (const size_t length : {70000, 10, 5000, 0, 69999, 1, 200000, 3}) {
    SCOPED_TRACE(length);
    std::string completion(length, 'b');
    for (size_t i = 5; i < length; i += 50) completion[i] = '\n';
    std::string escaped;
    for (const char c : completion) escaped += c == '\n' ? std::string("\\n") : std::string(1, c);
    const std::string line = R"({"completion": ")" + escaped + R"(", "prompt_id": "p"})";
    absl::StatusOr<Rollout> fast = reader.Read(line);
    const absl::StatusOr<Rollout> reference = ParseRollout(line, FieldNames{});
    ASSERT_TRUE(fast.ok()) << fast.status();
    ASSERT_TRUE(reference.ok()) << reference.status();
    EXPECT_EQ(fast->item.SerializeAsString(), reference->item.SerializeAsString());
    EXPECT_EQ(fast->item.completion().text(), completion);
    // ReadString asks for room for the escaped text and 63 bytes more.
    if (lent != nullptr && escaped.size() + 63 <= lent_capacity) {
      EXPECT_EQ(fast->item.completion().text().data(), lent);
    }
    std::string* text = fast->item.mutable_completion()->mutable_text();
    lent = text->data();
    lent_capacity = text->capacity();
    reader.Recycle(text);
    EXPECT_TRUE(text->empty());
  }
  // A chat's text, read into a text given back, is the assistant's message alone.
  const std::string chat =
      R"({"completion": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})";
  const absl::StatusOr<Rollout> fast = reader.Read(chat);
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_EQ(fast->item.completion().text(), "a");
  EXPECT_EQ(fast->item.SerializeAsString(),
            ParseRollout(chat, FieldNames{})->item.SerializeAsString());
}

// What the reader keeps of the texts given back is bounded: a text whose buffer would pass
// kSpareTextBytes is left to its owner, and so is any past kSpareTexts.
TEST(RolloutReader, KeepsABoundedNumberOfTextsGivenBack) {
  RolloutReader reader(FieldNames{});
  std::string huge(RolloutReader::kSpareTextBytes + 1, 'x');
  reader.Recycle(&huge);
  EXPECT_EQ(huge.size(), RolloutReader::kSpareTextBytes + 1);
  std::vector<std::string> texts(RolloutReader::kSpareTexts + 3, std::string(100, 'y'));
  size_t taken = 0;
  for (std::string& text : texts) {
    reader.Recycle(&text);
    taken += text.empty() ? 1 : 0;
  }
  EXPECT_EQ(taken, RolloutReader::kSpareTexts);
}

// Lines it leaves to the reference: errors of every kind, and the forms whose answer is the
// reference's to give (a key twice, ids that nlohmann reformats, chat messages, control bytes).
// `levels` arrays, each inside the one before.
std::string Nest(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(RolloutReader, LeavesTheRestToTheReferenceWithItsAnswer) {
  using std::string_literals::operator""s;
  const std::string deep = std::string(32, '[') + std::string(32, ']');
  const std::string just_under = std::string(31, '[') + std::string(31, ']');
  const std::string lines[] = {
      // errors
      R"({"completion": "x")",
      "not json",
      "[1, 2]",
      "",
      "   ",
      R"({"prompt_id": "p"})",
      R"({"completion": 5})",
      R"({"completion": null})",
      R"({"completion": "x", "external_accuracy": 1e400})",
      R"({"completion": "x", "other": 1e400})",
      R"({"completion": "x", "other": -1e400})",
      R"({"completion": "x", "other": tru})",
      R"({"completion": "x", "other": nul})",
      R"({"completion": "x", "other": 01})",
      R"({"completion": "x", "other": 1.})",
      R"({"completion": "x", "other": "\ud800"})",
      R"({"completion": "\udc00x"})",
      R"({"completion": "x", "other": "\x"})",
      "{\"completion\": \"x\", \"other\": " + deep + "}",
      "{\"completion\": \"x\", \"other\": " + just_under + "}",
      "{\"completion\": \"x\", \"id\": " + just_under + "}",
      R"({"completion": "x", "prompt_id": 3.0})",
      R"({"completion": "x", "prompt_id": 1e2})",
      R"({"completion": "x", "prompt_id": 18446744073709551616})",
      R"({"completion": "x", "prompt_id": true})",
      R"({"completion": "x", "reference": {"a": 1}})",
      R"({"completion": "x", "references": ["a", 2]})",
      R"({"completion": "x", "num_tokens": -1})",
      R"({"completion": "x", "num_tokens": 1.5})",
      R"({"completion": "x", "num_tokens": 1e2})",
      R"({"completion": "x", "num_tokens": 4294967296})",
      R"({"completion": "x", "token_ids": [1, "a"]})",
      R"({"completion": "x", "token_ids": 3})",
      R"({"completion": "x", "token_ids": [1.0]})",
      R"({"completion": "x", "token_ids": [2, 1e2]})",
      R"({"completion": "x", "token_ids": [3, -1]})",
      R"({"completion": "x", "token_ids": [4294967296]})",
      R"({"completion": "x", "token_ids": [18446744073709551616]})",
      R"({"completion": "x", "token_ids": [01]})",
      R"({"completion": "x", "token_ids": [[1]]})",
      R"({"completion": "x", "finished": "yes"})",
      R"({"completion": "x", "task": "poetry"})",
      R"({"completion": "x", "task": 1})",
      R"({"completion": "x", "external_accuracy": "1"})",
      "{\"completion\": \"\xff\"}",
      "{\"completion\": \"x\"} trailing",
      R"({"completion": "x"} {"completion": "y"})",
      R"({"completion": "x",})",
      R"({"completion": "x" "id": 1})",
      // a key twice: nlohmann keeps the last
      R"({"completion": "x", "completion": "y"})",
      R"({"id": 1, "completion": "x", "id": 2})",
      // ids nlohmann reformats
      R"({"completion": "x", "id": 1.50})",
      R"({"completion": "x", "id": 1e2})",
      R"({"completion": "x", "id": -0})",
      // counts and ids that nlohmann takes and simdjson does not read as unsigned integers
      R"({"completion": "x", "num_tokens": -0, "token_ids": [-0, 5]})",
      R"({"completion": "x", "num_tokens": 7.0})",
      R"({"completion": "x", "id": 123456789012345678901234567890})",
      R"({"completion": "x", "id": [1, {"b": 2, "a": 1}]})",
      R"({"completion": "x", "id": {}})",
      // chat messages without an assistant text to score, or with a key twice
      R"({"completion": []})",
      R"({"completion": [{"role": "user", "content": "q"}]})",
      R"({"completion": [{"role": "assistant", "content": 5}]})",
      R"({"completion": [{"role": "assistant"}]})",
      R"({"completion": [{"role": "assistant", "content": null}]})",
      R"({"completion": [{"role": "assistant", "content": [{"type": "image"}]}]})",
      R"({"completion": [{"role": "assistant", "content": [{"type": "text", "text": 5}]}]})",
      R"({"completion": [{"role": "assistant", "content": [{"type": "text"}]}]})",
      R"({"completion": [{"role": "assistant", "content": ["a"]}]})",
      R"({"completion": [{"role": "assistant", "content": [{"type": "text", "text": "a"}, 5]}]})",
      R"({"completion": [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text"}]}]})",
      R"({"completion": [{"role": "assistant", "content": "a"}, {"role": "assistant"}]})",
      R"({"completion": [{"role": "assistant", "content": "a", "content": "b"}]})",
      R"({"completion": [{"role": "user", "role": "assistant", "content": "a"}]})",
      R"({"completion": [{"role": "assistant", "content": [{"type": "text", "text": "a", "text": "b"}]}]})",
      R"({"completion": [{"role": "assistant", "content": "a"}, 1e400]})",
      R"({"completion": [{"role": "assistant", "content": "a", "x": 1e400}]})",
      R"({"completion": [{"role": "assistant", "content": [{"type": "text", "text": "a", "x": 1e400}]}]})",
      R"({"completion": [{"role": "assistant", "content": "a"}] "id": 1})",
      // nesting at the limit inside a message (its members are at depth 3) and inside a part (5)
      "{\"completion\": [{\"role\": \"assistant\", \"content\": \"a\", \"x\": " + Nest(29) + "}]}",
      "{\"completion\": [{\"role\": \"assistant\", \"content\": \"a\", \"x\": " + Nest(30) + "}]}",
      ("{\"completion\": [{\"role\": \"assistant\", \"content\": [{\"type\": \"text\", "
       "\"text\": \"a\", \"x\": " +
       Nest(27) + "}]}]}"),
      ("{\"completion\": [{\"role\": \"assistant\", \"content\": [{\"type\": \"text\", "
       "\"text\": \"a\", \"x\": " +
       Nest(28) + "}]}]}"),
      // control bytes: a raw tab inside a string is an error, outside one it is whitespace
      "{\"completion\": \"a\tb\"}",
      "{\"completion\":\t\"ab\"}",
      "{\"completion\": \"a\x01\"}",
      // a byte-order mark, which nlohmann skips
      "\xEF\xBB\xBF{\"completion\": \"x\"}",
      // NUL bytes, anywhere (nlohmann's reader alone would end the line at one)
      "{\"completion\": \"x\"}\0{"s,
      "{\"completion\": \"x\"} \0"s,
      "{\"completion\": \"x\0y\"}"s,
      "{\"completion\":\0\"x\"}"s,
      "{\"other\": \"\0\", \"completion\": \"x\"}"s,
      "\0"s,
  };
  for (const std::string& line : lines) ExpectSameAsReference(line);
  for (const std::string& line : lines) {
    if (line.find('\0') == std::string::npos) continue;
    EXPECT_THAT(std::string(ParseRollout(line, FieldNames{}).status().message()),
                HasSubstr("a NUL byte"));
  }
}

TEST(RolloutReader, RenamedAndSharedKeys) {
  FieldNames renamed;
  ASSERT_TRUE(RenameField("completion=response", &renamed).ok());
  ASSERT_TRUE(RenameField("id=uid", &renamed).ok());
  ExpectSameAsReference(R"({"uid": "u", "response": "r", "completion": "ignored"})", renamed);
  // Two fields read from one key: the reference reads it twice.
  FieldNames shared;
  ASSERT_TRUE(RenameField("references=reference", &shared).ok());
  ExpectSameAsReference(R"({"completion": "x", "reference": ["a", "b"]})", shared);
}

// A line read in place from a larger buffer, with only the padding after it.
TEST(RolloutReader, ReadsInPlaceWithOnlyThePaddingAfterTheLine) {
  const std::string first = R"({"completion": "one", "id": 1})";
  std::string buffer = first + "\n" + R"({"completion": "two")";
  buffer.append(kRolloutLinePadding, '}');
  RolloutReader reader(FieldNames{});
  absl::StatusOr<Rollout> one = reader.ReadPadded(std::string_view(buffer).substr(0, first.size()));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->item.completion().text(), "one");
  // The second line is cut off before its brace: what follows in the buffer must not complete it.
  absl::StatusOr<Rollout> two =
      reader.ReadPadded(std::string_view(buffer).substr(first.size() + 1, 20));
  EXPECT_FALSE(two.ok());
}

}  // namespace
}  // namespace rlscore::cli
