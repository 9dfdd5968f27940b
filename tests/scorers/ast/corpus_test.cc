// The repetition corpora (docs/REPETITION.md "Corpora"), scored through the whole reward (every
// repetition rule, with the default profile):
//   corpus/clean/    realistic long solutions — prose, LaTeX, lists, tables, code in the parsed
//                    languages and others — that must fire nothing;
//   corpus/looping/  degenerate completions of collapsing models, each of which must fire, and
//                    fire the rule EXPECTED.txt names first (ngram, tag_loop, unbroken_run,
//                    block or code_clone).
// A table of what each file cost (parsed or screened out) is printed for the reader.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scorers/accuracy.h"
#include "scorers/math/verifier.h"
#include "scorers/reward.h"
#include "tests/scorers/ast/adversarial_text.h"

#ifndef RLSCORE_AST_CORPUS
#error "RLSCORE_AST_CORPUS must name tests/scorers/ast/corpus (set by its CMakeLists.txt)"
#endif

namespace rlscore::scorers {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The corpus files of one folder, sorted, with their text.
std::vector<std::pair<std::string, std::string>> Files(const std::string& folder) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const fs::directory_entry& e :
       fs::directory_iterator(fs::path(RLSCORE_AST_CORPUS) / folder)) {
    if (e.path().extension() != ".md") continue;
    files.emplace_back(e.path().filename().string(), Read(e.path()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Scores under the default profile but with a wall-clock safety net no loaded sanitizer build
// reaches: what is checked is which rule fires, not how fast (the budgets have their own tests in
// ast_repetition_test.cc).
CompletionScore ScoreText(const std::string& text,
                          uint64_t timeout_micros = ast::testing::kUnhurriedParseMicros) {
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  const std::vector<std::string> references = {"42"};
  const std::unique_ptr<Judge> judge = scorer->Prepare(Task::kExact, references);
  CompletionInput in;
  in.text = text;
  Profile profile;
  profile.repetition.ast.parse_timeout_micros = timeout_micros;
  std::vector<CompletionScore> scores;
  EXPECT_TRUE(ScoreGroup({&in, 1}, Task::kExact, judge.get(), profile, &scores).ok());
  return scores.empty() ? CompletionScore{} : scores[0];
}

std::string_view RuleName(RepetitionDetector d) {
  switch (d) {
    case RepetitionDetector::kNone:
      return "none";
    case RepetitionDetector::kNgram:
      return "ngram";
    case RepetitionDetector::kAstBlock:
      return "block";
    case RepetitionDetector::kAstCodeClone:
      return "code_clone";
    case RepetitionDetector::kTagLoop:
      return "tag_loop";
    case RepetitionDetector::kUnbrokenRun:
      return "unbroken_run";
  }
  return "?";
}

TEST(AstCorpus, CleanSolutionsFireNothing) {
  const auto files = Files("clean");
  ASSERT_GE(files.size(), 30u) << "the clean corpus holds at least 30 false-positive cases";
  int parsed = 0;
  for (const auto& [name, text] : files) {
    SCOPED_TRACE(name);
    ASSERT_GE(text.size(), 2000u) << "a corpus solution should be long";
    const CompletionScore s = ScoreText(text);
    EXPECT_EQ(s.repetition_finding.detector, RepetitionDetector::kNone)
        << s.repetition_finding.detail;
    EXPECT_EQ(s.repetition, 0.0);
    EXPECT_EQ(s.ast_skipped, ast::AstBudget::kNone) << s.repetition_finding.detail;
    parsed += s.ast_parsed;
    std::printf("  clean   %-42s %6zu bytes  %s\n", name.c_str(), text.size(),
                s.ast_parsed ? "parsed" : "screened out");
  }
  std::printf("  %d of %zu clean solutions were parsed; the rest were screened out\n", parsed,
              files.size());
}

TEST(AstCorpus, LoopingCompletionsFireTheExpectedRule) {
  const auto files = Files("looping");
  ASSERT_GE(files.size(), 10u);
  std::map<std::string, std::string> expected;
  std::istringstream lines(Read(fs::path(RLSCORE_AST_CORPUS) / "looping" / "EXPECTED.txt"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string file, rule;
    if (fields >> file >> rule) expected[file] = rule;
  }
  std::map<std::string, int> by_rule;
  for (const auto& [name, text] : files) {
    SCOPED_TRACE(name);
    ASSERT_EQ(expected.count(name), 1u) << "EXPECTED.txt has no line for it";
    const CompletionScore s = ScoreText(text);
    EXPECT_EQ(RuleName(s.repetition_finding.detector), expected[name])
        << s.repetition_finding.detail;
    EXPECT_EQ(s.repetition, -0.5);
    ++by_rule[std::string(RuleName(s.repetition_finding.detector))];
    std::printf("  looping %-42s %6zu bytes  %-10s at %llu\n", name.c_str(), text.size(),
                std::string(RuleName(s.repetition_finding.detector)).c_str(),
                static_cast<unsigned long long>(s.repetition_finding.char_offset));
  }
  // Each rule is exercised by the corpus.
  EXPECT_GE(by_rule["ngram"], 3);
  EXPECT_GE(by_rule["block"], 3);
  EXPECT_GE(by_rule["code_clone"], 3);
  EXPECT_GE(by_rule["tag_loop"], 3);
}

TEST(AstCorpus, TheSafetyNetMakesACompletionUnscorable) {
  // A safety net of one microsecond fires on every completion the AST detector parses: the
  // completion must then be BUDGET_EXCEEDED with no reward, not scored as if nothing looped.
  int parsed = 0;
  for (const auto& [name, text] : Files("looping")) {
    SCOPED_TRACE(name);
    const CompletionScore s = ScoreText(text + "\n</think>\nThe answer is 42.", 1);
    if (!s.ast_parsed) continue;  // the n-gram rule fired first: nothing was parsed
    ++parsed;
    EXPECT_EQ(s.verdict, Verdict::kBudgetExceeded);
    EXPECT_TRUE(s.unscorable());
    EXPECT_EQ(s.total, 0.0);
    EXPECT_FALSE(s.format_gated);
    EXPECT_EQ(s.ast_skipped, ast::AstBudget::kTime);
    EXPECT_NE(s.detail.find("wall-clock safety net"), std::string::npos) << s.detail;
  }
  EXPECT_EQ(parsed, 10) << "files 01-10 loop in ways only the AST rules catch";
}

}  // namespace
}  // namespace rlscore::scorers
