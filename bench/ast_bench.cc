// Cost of the AST repetition detector (docs/REPETITION.md): scoring one completion with the default
// profile with the AST rules on and off, for Markdown reasoning of 3k and 16k tokens, with and
// without fenced code; the detector alone when the tree-sitter parsers run; and the detector on
// completions built to be slow to parse, which its work budget must stop.
//
//   ./build-release/bench/ast_bench
//
// Goal: the AST detector at most doubles the cost of scoring a typical completion.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/score_one.h"
#include "scorers/ast/ast_repetition.h"
#include "scorers/math/verifier.h"
#include "scorers/reward.h"
#include "tests/scorers/ast/adversarial_text.h"

namespace rlscore {
namespace {

// Reasoning written as models write it: paragraphs of prose with inline math, display equations,
// bullet lists and step headings, none of which repeats; with `code`, a fenced Python or C++
// function (each different: random statements, loops and branches over random expressions) every
// ~2.5 KB.
class MarkdownWriter {
 public:
  explicit MarkdownWriter(uint64_t seed) : rng_(seed) {}

  std::string Completion(uint32_t tokens, bool code) {
    std::string text = "<think>\n";
    const size_t target = static_cast<size_t>(tokens) * 4;
    size_t next_code = 1500;
    int step = 1;
    while (text.size() < target) {
      const uint64_t kind = rng_() % 10;
      if (kind < 5) {
        Paragraph(&text);
      } else if (kind < 7) {
        text += "$$\n" + Expression() + " = " + Expression() + "\n$$\n\n";
      } else if (kind < 9) {
        const int items = 3 + static_cast<int>(rng_() % 3);
        for (int i = 0; i < items; ++i) text += "- " + Sentence() + "\n";
        text += "\n";
      } else {
        text += "## Step " + std::to_string(step++) + ": " + Sentence() + "\n\n";
      }
      if (code && text.size() > next_code) {
        text += rng_() % 2 == 0 ? PythonFunction() : CppFunction();
        next_code += 2500;
      }
    }
    text += "</think>\nTherefore the answer is $\\boxed{42}$.";
    return text;
  }

 private:
  std::string Pick(const std::vector<std::string>& words) { return words[rng_() % words.size()]; }
  std::string Number() { return std::to_string(rng_() % 1000); }
  std::string Name() {
    static const std::vector<std::string> kNames = {"total", "acc", "best", "count", "left",
                                                    "right", "mid", "res",  "cur",   "prev",
                                                    "step",  "lim", "val",  "idx",   "tmp"};
    return Pick(kNames) + std::to_string(rng_() % 10);
  }
  std::string Expression() {
    static const std::vector<std::string> kTerms = {
        "x^2", "\\frac{a}{b}", "\\sqrt{n}", "3k", "\\binom{n}{2}", "2^m", "y", "(x+1)"};
    static const std::vector<std::string> kOps = {" + ", " - ", " \\cdot "};
    std::string e = Pick(kTerms);
    const int terms = 1 + static_cast<int>(rng_() % 3);
    for (int i = 0; i < terms; ++i) e += Pick(kOps) + (rng_() % 2 ? Pick(kTerms) : Number());
    return e;
  }
  std::string Sentence() {
    static const std::vector<std::string> kWords = {
        "we",     "compute", "the",      "sum",     "of",        "terms",   "so",
        "that",   "each",    "factor",   "divides", "modulo",    "prime",   "hence",
        "thus",   "let",     "equation", "gives",   "solving",   "for",     "substituting",
        "back",   "check",   "case",     "when",    "is",        "even",    "odd",
        "then",   "square",  "root",     "integer", "bound",     "at",      "most",
        "least",  "value",   "sequence", "by",      "induction", "parity",  "residue",
        "since",  "both",    "sides",    "are",     "positive",  "a",       "an",
        "number", "which",   "must",     "be",      "greater",   "smaller", "than"};
    std::string s;
    const int words = 8 + static_cast<int>(rng_() % 12);
    for (int w = 0; w < words; ++w) {
      if (w > 0) s += ' ';
      const uint64_t r = rng_() % 9;
      if (r == 0) {
        s += Number();
      } else if (r == 1) {
        absl::StrAppend(&s, "$", Expression(), "$");
      } else {
        s += Pick(kWords);
      }
    }
    s[0] = static_cast<char>(s[0] >= 'a' && s[0] <= 'z' ? s[0] - 'a' + 'A' : s[0]);
    return s + ".";
  }
  void Paragraph(std::string* text) {
    const int sentences = 2 + static_cast<int>(rng_() % 4);
    for (int i = 0; i < sentences; ++i) *text += Sentence() + (i + 1 < sentences ? " " : "\n\n");
  }
  // A random expression: names, numbers, indexing, calls and binary operators, nested.
  std::string Expr(int depth) {
    static const std::vector<std::string> kOps = {" + ", " - ", " * ", " // ", " % ", " << "};
    const uint64_t r = depth <= 0 ? rng_() % 2 : rng_() % 6;
    switch (r) {
      case 0:
        return Name();
      case 1:
        return Number();
      case 2:
        return absl::StrCat(Name(), "[", Expr(depth - 1), "]");
      case 3:
        return Expr(depth - 1) + Pick(kOps) + Expr(depth - 1);
      case 4:
        return absl::StrCat(Name(), "(", Expr(depth - 1), ", ", Expr(depth - 1), ")");
      default:
        return absl::StrCat("(", Expr(depth - 1), ")");
    }
  }
  std::string Comparison() {
    static const std::vector<std::string> kCmp = {" < ", " > ", " == ", " != ", " <= "};
    return Expr(1) + Pick(kCmp) + Expr(1);
  }
  std::string PythonStatement(const std::string& indent, int depth) {
    switch (rng_() % (depth > 1 ? 2 : 4)) {
      case 0:
        return indent + Name() + " = " + Expr(2) + "\n";
      case 1:
        return indent + Name() + ".append(" + Expr(2) + ")\n";
      case 2:
        return indent + "for " + Name() + " in range(" + Expr(1) + "):\n" +
               PythonStatement(indent + "    ", depth + 1) +
               PythonStatement(indent + "    ", depth + 1);
      default:
        return indent + "if " + Comparison() + ":\n" + PythonStatement(indent + "    ", depth + 1) +
               indent + "else:\n" + PythonStatement(indent + "    ", depth + 1);
    }
  }
  std::string CppStatement(const std::string& indent, int depth) {
    switch (rng_() % (depth > 1 ? 2 : 4)) {
      case 0:
        return indent + "long " + Name() + " = " + Expr(2) + ";\n";
      case 1:
        return indent + Name() + " += " + Expr(2) + ";\n";
      case 2: {
        const std::string i = Name();
        return indent + "for (int " + i + " = 0; " + i + " < " + Expr(1) + "; ++" + i + ") {\n" +
               CppStatement(indent + "  ", depth + 1) + CppStatement(indent + "  ", depth + 1) +
               indent + "}\n";
      }
      default:
        return indent + "if (" + Comparison() + ") {\n" + CppStatement(indent + "  ", depth + 1) +
               indent + "} else {\n" + CppStatement(indent + "  ", depth + 1) + indent + "}\n";
    }
  }
  std::string PythonFunction() {
    std::string f = "```python\ndef " + Name() + "(" + Name() + ", " + Name() + "):\n";
    const int statements = 3 + static_cast<int>(rng_() % 5);
    for (int i = 0; i < statements; ++i) f += PythonStatement("    ", 0);
    return f + "    return " + Expr(1) + "\n```\n\n";
  }
  std::string CppFunction() {
    std::string f = "```cpp\nlong " + Name() + "(const std::vector<long>& " + Name() + ") {\n";
    const int statements = 3 + static_cast<int>(rng_() % 5);
    for (int i = 0; i < statements; ++i) f += CppStatement("  ", 0);
    return f + "  return " + Expr(1) + ";\n}\n```\n\n";
  }

  std::mt19937_64 rng_;
};

// Scores one completion with the default profile, the AST rules on (state.range(2) == 1) or off.
void BM_Score(benchmark::State& state) {
  const auto tokens = static_cast<uint32_t>(state.range(0));
  const bool code = state.range(1) != 0;
  const bool ast = state.range(2) != 0;
  const std::string text = MarkdownWriter(7).Completion(tokens, code);
  scorers::Profile profile;
  profile.repetition.ast.enabled = ast;
  const scorers::CompletionScore score =
      bench::ScoreOneEachIteration(state, text, tokens, /*finished=*/true, profile);
  if (score.repetition_finding.detector != scorers::RepetitionDetector::kNone) {
    state.SkipWithError("the benchmark completion fired a repetition rule");
  }
  state.counters["parsed"] = score.ast_parsed ? 1 : 0;
}
BENCHMARK(BM_Score)
    ->ArgNames({"tokens", "code", "ast"})
    ->ArgsProduct({{3000, 16000}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// The clean corpus of the tests (tests/scorers/ast/corpus/clean: 34 realistic solutions, 3.5-8 KB
// each, 20 of prose and LaTeX and 14 with code), every file scored once per iteration.
void BM_ScoreCleanCorpus(benchmark::State& state) {
  const bool code = state.range(0) != 0;
  const bool ast = state.range(1) != 0;
  std::vector<std::string> texts;
  for (const auto& e : std::filesystem::directory_iterator(RLSCORE_AST_CORPUS "/clean")) {
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    if ((s.str().find("```") != std::string::npos) == code) texts.push_back(s.str());
  }
  std::sort(texts.begin(), texts.end());
  scorers::Profile profile;
  profile.repetition.ast.enabled = ast;
  const std::vector<std::string> references = {"42"};
  auto accuracy = scorers::math::NewAccuracyScorer();
  auto judge = accuracy->Prepare(scorers::Task::kMath, references);
  std::vector<scorers::CompletionInput> inputs(texts.size());
  int64_t bytes = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    inputs[i].text = texts[i];
    bytes += static_cast<int64_t>(texts[i].size());
  }
  std::vector<scorers::CompletionScore> scores;
  for (auto _ : state) {
    absl::Status status =
        scorers::ScoreGroup(inputs, scorers::Task::kMath, judge.get(), profile, &scores);
    benchmark::DoNotOptimize(status);
  }
  state.counters["completions"] = static_cast<double>(texts.size());
  state.counters["us_per_completion"] = benchmark::Counter(
      static_cast<double>(texts.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_ScoreCleanCorpus)
    ->ArgNames({"code", "ast"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// The detector alone when the parsers run: a completion of `tokens` tokens that loops in a way
// only the AST rules catch — a derivation step that comes back with new numbers (block), or a
// function re-emitted with renamed identifiers (code clone) — near its end, so that the whole
// reasoning is parsed before the rule fires.
void BM_AstParsed(benchmark::State& state) {
  const auto tokens = static_cast<uint32_t>(state.range(0));
  const bool code = state.range(1) != 0;
  std::string text = MarkdownWriter(11).Completion(tokens, code);
  text.resize(text.find("</think>"));
  for (int k = 0; k < 4; ++k) {
    const std::string n = std::to_string(k);
    if (code) {
      text += "Rewriting it once more:\n\n```python\ndef solve" + n + "(xs" + n + ", m" + n +
              "):\n    best" + n + " = 0\n    for v" + n + " in xs" + n + ":\n        if v" + n +
              " % m" + n + " == " + n + ":\n            best" + n + " = max(best" + n + ", v" + n +
              " * " + n + ")\n    return best" + n + "\n```\n\n";
    } else {
      text += "Trying $q = " + std::to_string(7 * k + 3) +
              "$ gives $q^2 + q = " + std::to_string((7 * k + 3) * (7 * k + 4)) +
              "$, whose remainder modulo 11 is " + std::to_string((7 * k + 3) * (7 * k + 4) % 11) +
              ", so it fails.\n\n";
    }
  }
  const scorers::ast::AstOptions options;
  scorers::ast::AstReport report;
  for (auto _ : state) {
    report = scorers::ast::FindAstRepetition(text, 0, options);
    benchmark::DoNotOptimize(report.kind);
  }
  const auto want = code ? scorers::ast::AstKind::kCodeClone : scorers::ast::AstKind::kBlock;
  if (report.kind != want) state.SkipWithError("the planted loop did not fire its rule");
  state.counters["markdown_parsed"] = report.parsed_markdown ? 1 : 0;
  state.counters["code_blocks_parsed"] = report.code_blocks_parsed;
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_AstParsed)
    ->ArgNames({"tokens", "code"})
    ->ArgsProduct({{3000, 16000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// Where the fuzz campaigns keep ast_repetition_fuzz's corpus (scripts/fuzz.sh): outside the
// repository, $RLSCORE_FUZZ_CORPUS or ~/.cache/rlscore/fuzz-corpus.
std::string AstFuzzCorpus() {
  if (const char* dir = std::getenv("RLSCORE_FUZZ_CORPUS"); dir != nullptr && *dir != '\0') {
    return absl::StrCat(dir, "/ast_repetition_fuzz");
  }
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr ? home : "",
                      "/.cache/rlscore/fuzz-corpus/ast_repetition_fuzz");
}

// The detector alone, default options, on every input of ast_repetition_fuzz's campaign corpus
// (mutated completions, mostly broken code and prose in fences, the text whose parse is error
// recovery), all of them once per iteration. The fuzz target's first byte picks options; here it
// is dropped. Skipped where no campaign has run.
void BM_AstFuzzCorpus(benchmark::State& state) {
  std::vector<std::string> texts;
  int64_t bytes = 0;
  const std::string corpus = AstFuzzCorpus();
  std::error_code error;
  if (!std::filesystem::is_directory(corpus, error)) {
    state.SkipWithError(absl::StrCat("no fuzz corpus at ", corpus).c_str());
    return;
  }
  for (const auto& e : std::filesystem::directory_iterator(corpus)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    if (s.str().empty()) continue;
    texts.push_back(s.str().substr(1));
    bytes += static_cast<int64_t>(texts.back().size());
  }
  if (texts.empty()) {
    state.SkipWithError(absl::StrCat("an empty fuzz corpus at ", corpus).c_str());
    return;
  }
  const scorers::ast::AstOptions options;
  uint64_t parsed = 0;
  for (auto _ : state) {
    parsed = 0;
    for (const std::string& text : texts) {
      const scorers::ast::AstReport report = scorers::ast::FindAstRepetition(text, 0, options);
      parsed += report.code_blocks_parsed;
    }
    benchmark::DoNotOptimize(parsed);
  }
  state.counters["inputs"] = static_cast<double>(texts.size());
  state.counters["code_blocks_parsed"] = static_cast<double>(parsed);
  state.counters["us_per_input"] = benchmark::Counter(
      static_cast<double>(texts.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_AstFuzzCorpus)->Unit(benchmark::kMillisecond)->UseRealTime();

// The detector alone on prose in code fences (tests/scorers/ast/adversarial_text.h): `fences`
// JavaScript fences of `prose` bytes each, every one sent to the parser by a shared line of code,
// each parse slow (error recovery). budget:1 is the default work budget (max_parse_work for all of
// a completion's parses), which stops part of the way through the larger ones (counter ran_out);
// budget:0 an unbounded one, which lets every parse finish: what the completion would cost
// unbounded. Counter work: the units charged (scorers/ast/metered_parse.h).
void BM_AstAdversarial(benchmark::State& state) {
  const auto fences = static_cast<int>(state.range(0));
  const auto prose = static_cast<size_t>(state.range(1));
  const bool budget = state.range(2) != 0;
  const std::string text = scorers::ast::testing::ProseInCodeFences(fences, prose);
  scorers::ast::AstOptions options;
  if (!budget) {
    options.max_parse_work = uint64_t{1} << 50;
    options.parse_timeout_micros = 600'000'000;
  }
  scorers::ast::AstReport report;
  for (auto _ : state) {
    report = scorers::ast::FindAstRepetition(text, 0, options);
    benchmark::DoNotOptimize(report.kind);
  }
  // Every parse must finish without the budget; with it, the completion may fit or run out.
  if (!budget && report.skipped != scorers::ast::AstBudget::kNone) {
    state.SkipWithError(report.detail.c_str());
  }
  state.counters["ran_out"] = report.skipped == scorers::ast::AstBudget::kWork ? 1 : 0;
  state.counters["work"] = static_cast<double>(report.parse_work);
  state.counters["code_blocks_parsed"] = report.code_blocks_parsed;
  state.counters["KB"] = static_cast<double>(text.size()) / 1024;
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_AstAdversarial)
    ->ArgNames({"fences", "prose", "budget"})
    ->ArgsProduct({{100}, {600}, {0, 1}})
    ->ArgsProduct({{28}, {6000}, {0, 1}})
    ->ArgsProduct({{14}, {12000}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rlscore

BENCHMARK_MAIN();
