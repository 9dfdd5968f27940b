#include "scorers/math/verifier.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scorers/math/equivalence.h"
#include "scorers/math/extract.h"
#include "scorers/math/parser.h"

namespace rlscore::scorers::math {
namespace {

// Verdicts remembered per group: rollouts of one prompt often reach the same answer.
constexpr size_t kMaxCachedVerdicts = 256;

// The longest final answer graded. A longer one is a runaway generation (a loop inside a box, a
// list that never ends), graded WRONG: it must not escape the wrong-answer signal by being
// unscorable. The same bound as the basic rules of accuracy.h.
constexpr size_t kMaxAnswerBytes = 1024;

// References are trusted data: give their parse more room than a completion's.
ParseLimits ReferenceLimits() {
  return ParseLimits{.max_bytes = 16384, .max_depth = 128, .max_nodes = 16384};
}

// A text that could not be parsed as math still counts as a text answer when it looks like
// words, not like broken LaTeX.
bool LooksLikeText(std::string_view s) {
  for (char c : s) {
    if (c == '\\' || c == '{' || c == '}' || c == '^' || c == '_') return false;
  }
  return !s.empty();
}

std::string NormalizedText(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  while (!out.empty() && (out.back() == '.' || out.back() == '!')) out.pop_back();
  return out;
}

// An answer as written, for "written the same way": spaces and '$' dropped. Two answers written
// identically are equal even where the grammar reads neither ("12:00").
std::string Spelling(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '$') out.push_back(c);
  }
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

// "2,74", "1000,99", "0,111": a comma between digits, outside brackets, that cannot separate
// thousands (not followed by exactly three digits, or after a lone 0) may be a decimal comma. The
// text with '.' in its place, or nullopt. Only one such comma: "1,5,2" is a list.
std::optional<std::string> DecimalCommaReading(std::string_view s) {
  size_t comma = std::string_view::npos;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c != ',') continue;
    if (comma != std::string_view::npos || depth != 0) return std::nullopt;
    comma = i;
  }
  if (comma == std::string_view::npos || comma == 0 || comma + 1 >= s.size()) return std::nullopt;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t before = comma;
  while (before > 0 && digit(s[before - 1])) --before;
  size_t after = comma + 1;
  while (after < s.size() && digit(s[after])) ++after;
  const size_t lead = comma - before, tail = after - comma - 1;
  if (lead == 0 || tail == 0) return std::nullopt;
  if (tail == 3 && !(lead == 1 && s[before] == '0')) return std::nullopt;  // "1,000"
  std::string out(s);
  out[comma] = '.';
  return out;
}

Expr TextExpr(std::string_view s) {
  Expr e;
  e.root = e.AddText(Kind::kText, NormalizedText(s));
  return e;
}

bool ContainsPlusMinus(const Expr& e, uint32_t x) {
  if (e.node(x).kind == Kind::kPlusMinus) return true;
  for (uint32_t k : e.kids(x)) {
    if (ContainsPlusMinus(e, k)) return true;
  }
  return false;
}

// The parts of an answer as one expression: one part as it is, several (boxes) as a bare list,
// and every item that holds a ± as its two values: "x = \frac{1 \pm \sqrt{13}}{4}" is the two
// equations, so it matches the same roots listed or in a set.
Expr Combine(std::vector<Expr>& parts) {
  bool plus_minus = false;
  for (const Expr& p : parts) plus_minus = plus_minus || ContainsPlusMinus(p, p.root);
  if (parts.size() == 1 && !plus_minus) return std::move(parts[0]);
  Expr out;
  std::vector<uint32_t> items;
  auto add = [&](const Expr& e, uint32_t x) {
    if (ContainsPlusMinus(e, x)) {
      items.push_back(out.Graft(e, x, +1));
      items.push_back(out.Graft(e, x, -1));
    } else {
      items.push_back(out.Graft(e, x));
    }
  };
  for (const Expr& p : parts) {
    const Node& root = p.node(p.root);
    if (root.kind == Kind::kTuple && (root.flags & kBareList) != 0) {
      for (uint32_t k : p.kids(p.root)) add(p, k);
    } else {
      add(p, p.root);
    }
  }
  out.root = items.size() == 1 ? items[0] : out.Add(Kind::kTuple, items, 0, kBareList);
  return out;
}

struct Parsed {
  std::vector<Expr> readings;  // the answer, and another reading of an ambiguous one
  bool over_budget = false;
  bool ok() const { return !readings.empty(); }
};

// Each part of an answer parsed, and combined; text answers where the grammar reads no math. A
// part with a decimal comma adds a second reading.
Parsed ParseParts(const std::vector<std::string>& parts, const ParseLimits& limits,
                  Budget& budget) {
  Parsed p;
  std::vector<Expr> exprs;
  std::optional<Expr> alternative;
  for (const std::string& part : parts) {
    absl::StatusOr<Expr> e = ParseAnswer(part, limits, budget);
    if (!e.ok() && e.status().code() == absl::StatusCode::kResourceExhausted) {
      p.over_budget = true;
      return p;
    }
    if (e.ok()) {
      exprs.push_back(*std::move(e));
    } else if (parts.size() == 1 && LooksLikeText(part)) {
      exprs.push_back(TextExpr(part));
    } else if (parts.size() > 1) {
      return p;
    }
    if (parts.size() == 1) {
      if (std::optional<std::string> decimal = DecimalCommaReading(part)) {
        absl::StatusOr<Expr> d = ParseAnswer(*decimal, limits, budget);
        if (d.ok()) alternative = *std::move(d);
      }
    }
  }
  if (!exprs.empty()) p.readings.push_back(Combine(exprs));
  if (alternative) {
    std::vector<Expr> one;
    one.push_back(*std::move(alternative));
    p.readings.push_back(Combine(one));
  }
  return p;
}

bool HasBox(std::string_view s) {
  return s.find("\\boxed") != std::string_view::npos || s.find("\\fbox") != std::string_view::npos;
}

class MathJudge final : public Judge {
 public:
  // `references`: every reading of every reference that parsed. `spellings`: how each
  // reference's answer is written, parsed or not.
  MathJudge(std::vector<Expr> references, std::vector<std::string> spellings,
            std::string unparseable)
      : references_(std::move(references)),
        spellings_(std::move(spellings)),
        unparseable_(std::move(unparseable)) {}

  AccuracyResult Grade(std::string_view answer_section) const override {
    AccuracyResult result;
    if (references_.empty() && spellings_.empty()) {
      result.verdict = Verdict::kUnparseableReference;
      result.detail = unparseable_;
      return result;
    }
    ExtractedAnswer extracted = ExtractAnswer(answer_section);
    if (extracted.parts.empty()) {
      result.verdict = Verdict::kNoAnswer;
      result.detail = extracted.detail;
      return result;
    }
    result.extracted = absl::StrJoin(extracted.parts, ", ");
    if (result.extracted.size() > kMaxAnswerBytes) {
      result.verdict = Verdict::kWrong;
      result.detail = absl::StrCat("the final answer is ", result.extracted.size(),
                                   " bytes, longer than any answer (", kMaxAnswerBytes, ")");
      result.extracted.resize(80);
      return result;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(result.extracted);
      if (it != cache_.end()) return it->second;
    }
    Judge(extracted, &result);
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_.size() < kMaxCachedVerdicts) cache_.emplace(result.extracted, result);
    return result;
  }

 private:
  void Judge(const ExtractedAnswer& extracted, AccuracyResult* result) const {
    const std::string spelling = Spelling(result->extracted);
    for (const std::string& s : spellings_) {
      if (!s.empty() && s == spelling) {
        result->verdict = Verdict::kCorrect;
        result->accuracy = 1.0;
        return;
      }
    }
    if (references_.empty()) {
      result->verdict = Verdict::kUnparseableReference;
      result->detail = unparseable_;
      return;
    }
    Budget budget;
    Parsed parsed = ParseParts(extracted.parts, ParseLimits{}, budget);
    if (parsed.over_budget) {
      result->verdict = Verdict::kBudgetExceeded;
      result->detail = "the answer exceeds the parser's budget";
      return;
    }
    if (!parsed.ok()) {
      result->verdict = Verdict::kWrong;
      result->detail =
          absl::StrCat("the answer \"", result->extracted.substr(0, 80), "\" does not parse");
      return;
    }
    for (const Expr& answer : parsed.readings) {
      for (const Expr& reference : references_) {
        const Equivalence eq = Equivalent(answer, answer.root, reference, reference.root, budget);
        if (eq == Equivalence::kEqual) {
          result->verdict = Verdict::kCorrect;
          result->accuracy = 1.0;
          return;
        }
        if (eq == Equivalence::kBudgetExceeded) {
          result->verdict = Verdict::kBudgetExceeded;
          result->detail = "comparison exceeded its budget";
          return;
        }
      }
    }
    result->verdict = Verdict::kWrong;
  }

  const std::vector<Expr> references_;
  const std::vector<std::string> spellings_;
  const std::string unparseable_;
  mutable std::mutex mu_;
  mutable std::map<std::string, AccuracyResult, std::less<>> cache_;
};

class MathAccuracyScorer final : public AccuracyScorer {
 public:
  std::unique_ptr<Judge> Prepare(Task task,
                                 std::span<const std::string> references) const override {
    if (task != Task::kMath) return basic_->Prepare(task, references);
    std::vector<Expr> parsed;
    std::vector<std::string> spellings;
    std::vector<std::string> bad;  // the first few, quoted: `why` is copied to every completion
    size_t unparsed = 0;
    for (const std::string& reference : references) {
      // A reference is an answer ("\frac{1}{2}") or, as datasets ship them, a worked solution or
      // a sentence: then its final answer is extracted as a completion's would be.
      std::vector<std::string> parts{reference};
      Budget budget;
      budget.steps *= 8;
      Parsed p;
      if (!HasBox(reference)) p = ParseParts(parts, ReferenceLimits(), budget);
      // Words around a number ("so the answer is 10000") are a sentence, not a text answer.
      const bool sentence = p.ok() && p.readings[0].node(p.readings[0].root).kind == Kind::kText &&
                            std::any_of(reference.begin(), reference.end(),
                                        [](char c) { return c >= '0' && c <= '9'; });
      if (!p.ok() || sentence) {
        ExtractedAnswer extracted = ExtractAnswer(reference, Source::kReference);
        if (!extracted.parts.empty()) {
          Budget again;
          again.steps *= 8;
          Parsed q = ParseParts(extracted.parts, ReferenceLimits(), again);
          if (q.ok() || !p.ok()) {
            parts = std::move(extracted.parts);
            p = std::move(q);
          }
        }
      }
      spellings.push_back(Spelling(absl::StrJoin(parts, ", ")));
      if (p.ok()) {
        for (Expr& e : p.readings) parsed.push_back(std::move(e));
      } else if (++unparsed <= 4) {
        bad.push_back(absl::StrCat("\"", reference.substr(0, 80), "\""));
      }
    }
    if (unparsed > bad.size()) bad.push_back(absl::StrCat("and ", unparsed - bad.size(), " more"));
    std::string why = references.empty()
                          ? "no reference"
                          : absl::StrCat("no reference parses: ", absl::StrJoin(bad, ", "));
    return std::make_unique<MathJudge>(std::move(parsed), std::move(spellings), std::move(why));
  }

 private:
  std::unique_ptr<AccuracyScorer> basic_ = NewBasicAccuracyScorer();
};

}  // namespace

std::unique_ptr<AccuracyScorer> NewMathAccuracyScorer() {
  return std::make_unique<MathAccuracyScorer>();
}

}  // namespace rlscore::scorers::math
