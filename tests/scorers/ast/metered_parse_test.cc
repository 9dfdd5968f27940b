#include "scorers/ast/metered_parse.h"

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/scorers/ast/adversarial_text.h"
#include "tree_sitter/api.h"

namespace rlscore::scorers::ast {
namespace {

constexpr uint64_t kPlenty = uint64_t{1} << 50;

// The tree as an S-expression, with the byte range of every node, so that two parses compare
// equal only when they agree on every node and every offset.
std::string Describe(TSNode node) {
  std::string out = absl::StrCat("(", ts_node_type(node), " ", ts_node_start_byte(node), "-",
                                 ts_node_end_byte(node));
  if (ts_node_is_missing(node)) out += " MISSING";
  for (uint32_t i = 0; i < ts_node_child_count(node); ++i) {
    absl::StrAppend(&out, " ", Describe(ts_node_child(node, i)));
  }
  out += ")";
  return out;
}

std::string ParseWhole(Grammar grammar, const std::string& text) {
  TSParser* parser = ts_parser_new();
  ts_parser_set_language(parser, LanguageOf(grammar));
  TSTree* tree =
      ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size()));
  std::string out = Describe(ts_tree_root_node(tree));
  ts_tree_delete(tree);
  ts_parser_delete(parser);
  return out;
}

TEST(MeteredParse, ReadingACharacterAtATimeParsesAsTheWholeString) {
  // Multi-byte characters, invalid bytes, a lone continuation byte and a sequence cut by the end
  // of the text: the lexer must see the same characters it sees in one string.
  const std::string texts[] = {
      "# Title\n\nSome *text* with `code`.\n\n- item 1\n- item 2\n",
      "def f(x):\n    return [y * 2 for y in x if y]\n",
      "int main() { std::vector<int> v{1, 2}; return v[0]; }\n",
      "Le café coûte 3 €, 中文 ✓ 🙂 and a\xff byte, \x80 alone\n",
      "const s = \"naïve\";\n// \xc3\x28 \xe2\x82 cut \xf0\x9f\x99",
      testing::ProseInCodeFences(3, 300),
  };
  for (Grammar grammar :
       {Grammar::kMarkdown, Grammar::kPython, Grammar::kCpp, Grammar::kC, Grammar::kJavaScript}) {
    for (const std::string& text : texts) {
      SCOPED_TRACE(std::string(GrammarName(grammar)) + ": " + text.substr(0, 40));
      ParseAllowance allowance{.work = kPlenty, .micros = 60'000'000};
      const MeteredParse parse = ParseMetered(grammar, text, &allowance);
      ASSERT_EQ(parse.outcome, ParseOutcome::kParsed);
      ASSERT_NE(parse.tree.get(), nullptr);
      EXPECT_EQ(Describe(ts_tree_root_node(parse.tree.get())), ParseWhole(grammar, text));
    }
  }
}

TEST(MeteredParse, TheChargeIsAFunctionOfTheText) {
  // Every character read costs kLexerReadWork, so the charge is at least that per byte; it is the
  // same every time, on every thread, whatever the thread parsed before.
  const std::string text = testing::ProseInCodeFences(4, 500);
  ParseAllowance first{.work = kPlenty, .micros = 60'000'000};
  const uint64_t work = ParseMetered(Grammar::kCpp, text, &first).work;
  EXPECT_GE(work, kLexerReadWork * text.size());
  EXPECT_EQ(first.work, kPlenty - work);
  std::vector<uint64_t> seen(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&, t] {
      ParseAllowance other{.work = kPlenty, .micros = 60'000'000};
      ParseMetered(t % 2 == 0 ? Grammar::kMarkdown : Grammar::kPython, text, &other);
      ParseAllowance again{.work = kPlenty, .micros = 60'000'000};
      seen[t] = ParseMetered(Grammar::kCpp, text, &again).work;
    });
  }
  for (std::thread& t : threads) t.join();
  for (uint64_t w : seen) EXPECT_EQ(w, work);
}

TEST(MeteredParse, RunningOutOfWorkIsReportedAndTakesTheRest) {
  const std::string text = testing::ProseInCodeFences(4, 500);
  ParseAllowance allowance{.work = 1000, .micros = 60'000'000};
  const MeteredParse parse = ParseMetered(Grammar::kJavaScript, text, &allowance);
  EXPECT_EQ(parse.outcome, ParseOutcome::kOutOfWork);
  EXPECT_EQ(parse.tree.get(), nullptr);
  EXPECT_GT(parse.work, 1000u);
  // It stopped soon after the budget ran out: a full parse costs far more.
  ParseAllowance full{.work = kPlenty, .micros = 60'000'000};
  EXPECT_LT(parse.work * 10, ParseMetered(Grammar::kJavaScript, text, &full).work);
  EXPECT_EQ(allowance.work, 0u);
}

TEST(MeteredParse, EveryWorkBudgetEndsCleanlyOnInvalidUtf8) {
  // tree-sitter reads a character again after a decoding error; a budget that runs out on that
  // read once made the text seem to end there, and tree-sitter read through a null chunk
  // (found by ast_repetition_fuzz). Every budget up to the whole parse's work must end cleanly.
  const std::string text = "int f() { return \xe2\x28\xa1 + \xc3 x; } // \xf0\x9f\x99 \xff\n";
  ParseAllowance full{.work = kPlenty, .micros = 60'000'000};
  const uint64_t work = ParseMetered(Grammar::kCpp, text, &full).work;
  for (uint64_t budget = 1; budget <= work; ++budget) {
    ParseAllowance allowance{.work = budget, .micros = 60'000'000};
    const MeteredParse parse = ParseMetered(Grammar::kCpp, text, &allowance);
    ASSERT_EQ(parse.outcome, budget == work ? ParseOutcome::kParsed : ParseOutcome::kOutOfWork)
        << budget;
  }
}

TEST(MeteredParse, NoTimeLeftStartsNothing) {
  ParseAllowance allowance{.work = kPlenty, .micros = 0};
  const MeteredParse parse = ParseMetered(Grammar::kMarkdown, "# x\n", &allowance);
  EXPECT_EQ(parse.outcome, ParseOutcome::kOutOfTime);
  EXPECT_EQ(parse.work, 0u);
  EXPECT_EQ(allowance.work, kPlenty);
}

TEST(MeteredParse, TheSafetyNetStopsALongParse) {
  std::string text;
  while (text.size() < (1 << 20)) text += testing::ProseInCodeFences(1, 4000);
  ParseAllowance allowance{.work = kPlenty, .micros = 1};
  const MeteredParse parse = ParseMetered(Grammar::kCpp, text, &allowance);
  EXPECT_EQ(parse.outcome, ParseOutcome::kOutOfTime);
  EXPECT_EQ(parse.tree.get(), nullptr);
  EXPECT_EQ(allowance.micros, 0u);
}

}  // namespace
}  // namespace rlscore::scorers::ast
