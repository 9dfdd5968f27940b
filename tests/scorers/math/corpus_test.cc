// The verdict corpus of the math verifier (docs/VERIFIER.md): hand-written cases in corpus.txt,
// each a reference (or several), a completion as a reasoning model writes it, and the verdict the
// verifier must return. Every case goes through the real pipeline:
//
//   Anatomy a = ParseAnatomy(completion, TagPolicy{});
//   judge = NewAccuracyScorer()->Prepare(Task::kMath, references);
//   judge->Grade(a.answer(completion)).verdict == expected
//
// The file format is described at the top of corpus.txt. The parser fails loudly on malformed
// blocks, duplicate ids, too few cases and categories without both a CORRECT and a WRONG case, so
// the corpus cannot rot silently. A per-category pass table is printed at the end so that partial
// progress of the verifier is visible.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "gtest/gtest.h"
#include "scorers/accuracy.h"
#include "scorers/anatomy.h"
#include "scorers/math/verifier.h"

#ifndef RLSCORE_CORPUS
#error "RLSCORE_CORPUS must name corpus.txt (set by tests/scorers/math/CMakeLists.txt)"
#endif

namespace rlscore::scorers {

// Readable verdicts in failure messages (found by argument-dependent lookup).
void PrintTo(Verdict v, std::ostream* os) { *os << VerdictName(v); }

namespace {

using std::string_view;

// The corpus must hold at least this many cases: every category needs room for true and false.
constexpr size_t kMinCases = 400;

struct CorpusCase {
  std::string id;
  std::string category;
  Verdict expected = Verdict::kNoAnswer;
  std::vector<std::string> references;
  std::string completion;
  size_t line = 0;  // 1-based line of the "###" header
};

bool IsBlank(string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
  });
}

string_view Trim(string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool StartsWith(string_view s, string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool IsHeader(string_view line) { return StartsWith(line, "###"); }
bool IsComment(string_view line) { return StartsWith(line, "#") && !IsHeader(line); }
bool IsRef(string_view line) { return StartsWith(line, "ref:"); }

// Ids and categories: letters, digits, '-', '_' and '.'.
bool IsName(string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

absl::Status LineError(size_t line, string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("corpus line ", line, ": ", Sv(what)));
}

// "### <id> | <category> | <EXPECTED>".
absl::Status ParseHeader(string_view line, size_t line_no, CorpusCase& c) {
  string_view rest = line.substr(3);
  std::vector<string_view> fields;
  while (true) {
    const size_t bar = rest.find('|');
    fields.push_back(Trim(rest.substr(0, bar)));
    if (bar == string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  if (fields.size() != 3) {
    return LineError(line_no, absl::StrCat("header needs \"### id | category | VERDICT\", got \"",
                                           Sv(line), "\""));
  }
  if (!IsName(fields[0])) return LineError(line_no, absl::StrCat("bad id \"", Sv(fields[0]), "\""));
  if (!IsName(fields[1])) {
    return LineError(line_no, absl::StrCat("bad category \"", Sv(fields[1]), "\""));
  }
  if (fields[2] == "CORRECT") {
    c.expected = Verdict::kCorrect;
  } else if (fields[2] == "WRONG") {
    c.expected = Verdict::kWrong;
  } else if (fields[2] == "NO_ANSWER") {
    c.expected = Verdict::kNoAnswer;
  } else {
    return LineError(line_no, absl::StrCat("verdict must be CORRECT, WRONG or NO_ANSWER, got \"",
                                           Sv(fields[2]), "\""));
  }
  c.id = std::string(fields[0]);
  c.category = std::string(fields[1]);
  c.line = line_no;
  return absl::OkStatus();
}

// Parses the corpus format (see corpus.txt). Comment lines ("#" but not "###") are dropped
// anywhere; blank lines around a completion are trimmed; a completion keeps its inner lines
// verbatim, joined with '\n' (a trailing '\r' is dropped). Fails on the first malformed block.
absl::StatusOr<std::vector<CorpusCase>> ParseCorpus(string_view text) {
  std::vector<string_view> lines;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == string_view::npos) break;
    text.remove_prefix(nl + 1);
  }

  std::vector<CorpusCase> cases;
  std::set<std::string> ids;
  size_t i = 0;
  // Before the first block: only comments and blank lines.
  for (; i < lines.size() && !IsHeader(lines[i]); ++i) {
    if (!IsComment(lines[i]) && !IsBlank(lines[i])) {
      return LineError(i + 1, "text outside a block (comments start with a single '#')");
    }
  }
  while (i < lines.size()) {
    CorpusCase c;
    if (absl::Status s = ParseHeader(lines[i], i + 1, c); !s.ok()) return s;
    if (!ids.insert(c.id).second) return LineError(i + 1, absl::StrCat("duplicate id ", c.id));
    ++i;
    for (; i < lines.size() && (IsRef(lines[i]) || IsComment(lines[i])); ++i) {
      if (IsComment(lines[i])) continue;
      const string_view ref = Trim(lines[i].substr(4));
      if (ref.empty()) return LineError(i + 1, absl::StrCat(c.id, ": empty reference"));
      c.references.emplace_back(ref);
    }
    if (c.references.empty()) {
      return LineError(c.line, absl::StrCat(c.id, ": no \"ref:\" line after the header"));
    }
    std::vector<string_view> body;
    for (; i < lines.size() && !IsHeader(lines[i]); ++i) {
      if (!IsComment(lines[i])) body.push_back(lines[i]);
    }
    size_t begin = 0;
    size_t end = body.size();
    while (begin < end && IsBlank(body[begin])) ++begin;
    while (end > begin && IsBlank(body[end - 1])) --end;
    if (begin == end) return LineError(c.line, absl::StrCat(c.id, ": empty completion"));
    for (size_t k = begin; k < end; ++k) {
      if (k > begin) c.completion += '\n';
      c.completion.append(body[k]);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// The corpus-level rules: enough cases, and every category with both a true and a
// false case.
absl::Status ValidateCorpus(const std::vector<CorpusCase>& cases, size_t min_cases) {
  if (cases.size() < min_cases) {
    return absl::FailedPreconditionError(
        absl::StrCat("corpus has ", cases.size(), " cases, needs at least ", min_cases));
  }
  std::map<std::string, std::pair<size_t, size_t>> per_category;  // CORRECT, WRONG
  for (const CorpusCase& c : cases) {
    auto& [correct, wrong] = per_category[c.category];
    if (c.expected == Verdict::kCorrect) ++correct;
    if (c.expected == Verdict::kWrong) ++wrong;
  }
  for (const auto& [category, counts] : per_category) {
    if (counts.first == 0 || counts.second == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("category \"", category, "\" needs both a CORRECT and a WRONG case (has ",
                       counts.first, " CORRECT, ", counts.second, " WRONG)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

absl::StatusOr<std::vector<CorpusCase>> LoadCorpus() {
  absl::StatusOr<std::string> text = ReadFile(RLSCORE_CORPUS);
  if (!text.ok()) return text.status();
  return ParseCorpus(*text);
}

std::string Excerpt(string_view s, size_t n = 160) {
  return s.size() <= n ? std::string(s) : absl::StrCat(Sv(s.substr(0, n)), "...");
}

// ---------------------------------------------------------------------------------------------
// The parser on inline text.

TEST(CorpusParser, ParsesBlocksReferencesCommentsAndBlankLines) {
  constexpr string_view kText =
      "# a comment before the first block\n"
      "\n"
      "### a-001 | alpha | CORRECT\n"
      "ref: \\frac{1}{2}\n"
      "ref:   0.5  \n"
      "\n"
      "<think>\n"
      "half\n"
      "# a comment inside a block is dropped\n"
      "</think>\n"
      "\n"
      "The answer is $\\boxed{0.5}$.\n"
      "\n"
      "\n"
      "### a-002|beta|WRONG\r\n"
      "ref: 7\r\n"
      "<think>x</think> 8\r\n"
      "### a-003 | beta | NO_ANSWER\n"
      "ref: 7\n"
      "<think>only thinking";
  absl::StatusOr<std::vector<CorpusCase>> cases = ParseCorpus(kText);
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 3u);

  const CorpusCase& a = (*cases)[0];
  EXPECT_EQ(a.id, "a-001");
  EXPECT_EQ(a.category, "alpha");
  EXPECT_EQ(a.expected, Verdict::kCorrect);
  EXPECT_EQ(a.references, (std::vector<std::string>{"\\frac{1}{2}", "0.5"}));
  EXPECT_EQ(a.completion, "<think>\nhalf\n</think>\n\nThe answer is $\\boxed{0.5}$.");
  EXPECT_EQ(a.line, 3u);

  const CorpusCase& b = (*cases)[1];
  EXPECT_EQ(b.id, "a-002");
  EXPECT_EQ(b.category, "beta");
  EXPECT_EQ(b.expected, Verdict::kWrong);
  EXPECT_EQ(b.references, (std::vector<std::string>{"7"}));
  EXPECT_EQ(b.completion, "<think>x</think> 8");

  const CorpusCase& c = (*cases)[2];
  EXPECT_EQ(c.expected, Verdict::kNoAnswer);
  EXPECT_EQ(c.completion, "<think>only thinking");

  // The parsed completion goes through the real anatomy: the answer section is after </think>.
  EXPECT_EQ(ParseAnatomy(a.completion, TagPolicy{}).answer(a.completion),
            "\n\nThe answer is $\\boxed{0.5}$.");
  EXPECT_EQ(ParseAnatomy(c.completion, TagPolicy{}).answer(c.completion), "");
}

TEST(CorpusParser, RejectsMalformedBlocks) {
  struct Bad {
    string_view text;
    string_view error;  // a substring of the message
  };
  const Bad kBad[] = {
      {"stray text\n### a | x | CORRECT\nref: 1\n1\n", "line 1: text outside a block"},
      {"### a | x\nref: 1\n1\n", "header needs"},
      {"### a | x | CORRECT | extra\nref: 1\n1\n", "header needs"},
      {"### a b | x | CORRECT\nref: 1\n1\n", "bad id"},
      {"### a | | CORRECT\nref: 1\n1\n", "bad category"},
      {"### a | x | RIGHT\nref: 1\n1\n", "verdict must be"},
      {"### a | x | correct\nref: 1\n1\n", "verdict must be"},
      {"### a | x | CORRECT\n<think>1</think>1\n", "no \"ref:\" line"},
      {"### a | x | CORRECT\nref:   \n1\n", "empty reference"},
      {"### a | x | CORRECT\nref: 1\n\n   \n### b | x | WRONG\nref: 1\n2\n", "a: empty completion"},
      {"### a | x | CORRECT\nref: 1\n1\n### a | x | WRONG\nref: 1\n2\n", "line 4: duplicate id a"},
      {"### a | x | CORRECT\nref: 1\n1\n###bad\n", "line 4: header needs"},
  };
  for (const Bad& bad : kBad) {
    SCOPED_TRACE(bad.text);
    absl::StatusOr<std::vector<CorpusCase>> cases = ParseCorpus(bad.text);
    ASSERT_FALSE(cases.ok());
    EXPECT_EQ(cases.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(cases.status().message()).find(bad.error), std::string::npos)
        << cases.status();
  }
}

TEST(CorpusParser, ValidationNeedsEnoughCasesAndBothVerdictsPerCategory) {
  absl::StatusOr<std::vector<CorpusCase>> cases = ParseCorpus(
      "### a-1 | x | CORRECT\nref: 1\n<think></think>1\n"
      "### a-2 | x | WRONG\nref: 1\n<think></think>2\n"
      "### b-1 | y | CORRECT\nref: 1\n<think></think>1\n"
      "### b-2 | y | NO_ANSWER\nref: 1\n<think>1\n");
  ASSERT_TRUE(cases.ok()) << cases.status();
  const absl::Status missing = ValidateCorpus(*cases, 1);
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(missing.message()).find("category \"y\""), std::string::npos) << missing;

  cases->pop_back();
  cases->pop_back();  // only category x, with both verdicts
  EXPECT_TRUE(ValidateCorpus(*cases, 2).ok());
  const absl::Status few = ValidateCorpus(*cases, 3);
  EXPECT_EQ(few.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(few.message()).find("needs at least 3"), std::string::npos) << few;
}

// ---------------------------------------------------------------------------------------------
// The corpus itself.

TEST(MathCorpus, FileIsWellFormed) {
  absl::StatusOr<std::vector<CorpusCase>> cases = LoadCorpus();
  ASSERT_TRUE(cases.ok()) << cases.status();
  EXPECT_TRUE(ValidateCorpus(*cases, kMinCases).ok()) << ValidateCorpus(*cases, kMinCases);
}

struct Tally {
  size_t total[3] = {0, 0, 0};  // by expected verdict: CORRECT, WRONG, NO_ANSWER
  size_t passed[3] = {0, 0, 0};
  std::vector<std::string> failed;
};

size_t VerdictIndex(Verdict v) {
  switch (v) {
    case Verdict::kCorrect:
      return 0;
    case Verdict::kWrong:
      return 1;
    default:
      return 2;
  }
}

void PrintTable(const std::map<std::string, Tally>& tallies) {
  constexpr size_t kMaxListed = 8;
  std::printf("\n%-10s %9s %11s %11s %11s   %s\n", "category", "passed", "CORRECT", "WRONG",
              "NO_ANSWER", "failed ids");
  Tally all;
  for (const auto& [category, t] : tallies) {
    size_t passed = 0;
    size_t total = 0;
    std::string cells[3];
    for (size_t k = 0; k < 3; ++k) {
      passed += t.passed[k];
      total += t.total[k];
      all.passed[k] += t.passed[k];
      all.total[k] += t.total[k];
      cells[k] = t.total[k] == 0 ? "-" : absl::StrCat(t.passed[k], "/", t.total[k]);
    }
    std::string listed;
    for (size_t k = 0; k < t.failed.size() && k < kMaxListed; ++k) {
      absl::StrAppend(&listed, k == 0 ? "" : " ", t.failed[k]);
    }
    if (t.failed.size() > kMaxListed) {
      absl::StrAppend(&listed, " (+", t.failed.size() - kMaxListed, ")");
    }
    std::printf("%-10s %9s %11s %11s %11s   %s\n", category.c_str(),
                absl::StrCat(passed, "/", total).c_str(), cells[0].c_str(), cells[1].c_str(),
                cells[2].c_str(), listed.c_str());
  }
  const size_t passed = all.passed[0] + all.passed[1] + all.passed[2];
  const size_t total = all.total[0] + all.total[1] + all.total[2];
  std::printf("%-10s %9s %11s %11s %11s\n\n", "all", absl::StrCat(passed, "/", total).c_str(),
              absl::StrCat(all.passed[0], "/", all.total[0]).c_str(),
              absl::StrCat(all.passed[1], "/", all.total[1]).c_str(),
              absl::StrCat(all.passed[2], "/", all.total[2]).c_str());
  std::fflush(stdout);
}

TEST(MathCorpus, EveryCaseGetsItsVerdict) {
  absl::StatusOr<std::vector<CorpusCase>> cases = LoadCorpus();
  ASSERT_TRUE(cases.ok()) << cases.status();
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  ASSERT_NE(scorer, nullptr);

  std::map<std::string, Tally> tallies;
  for (const CorpusCase& c : *cases) {
    SCOPED_TRACE(absl::StrCat(c.id, " (corpus.txt:", c.line, ")"));
    const Anatomy anatomy = ParseAnatomy(c.completion, TagPolicy{});
    const std::unique_ptr<Judge> judge = scorer->Prepare(Task::kMath, c.references);
    ASSERT_NE(judge, nullptr);
    const AccuracyResult result = judge->Grade(anatomy.answer(c.completion));

    Tally& t = tallies[c.category];
    const size_t k = VerdictIndex(c.expected);
    ++t.total[k];
    if (result.verdict == c.expected) {
      ++t.passed[k];
    } else {
      t.failed.push_back(c.id);
    }
    std::string refs;
    for (const std::string& r : c.references) absl::StrAppend(&refs, refs.empty() ? "" : " | ", r);
    EXPECT_EQ(result.verdict, c.expected)
        << "  references: " << refs << "\n  extracted:  \"" << Excerpt(result.extracted)
        << "\"\n  detail:     " << result.detail << "\n  answer:     \""
        << Excerpt(anatomy.answer(c.completion)) << "\"";
  }
  PrintTable(tallies);
}

}  // namespace
}  // namespace rlscore::scorers
