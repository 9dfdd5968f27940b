#include "scorers/math/verifier.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "scorers/instructions/judge.h"
#include "scorers/math/equivalence.h"
#include "scorers/math/evaluate.h"
#include "scorers/math/extract.h"
#include "scorers/math/parser.h"

namespace rlscore::scorers::math {
namespace {

// Verdicts remembered per group: rollouts of one prompt often reach the same answer.
constexpr size_t kMaxCachedVerdicts = 256;

// The longest final answer graded. A longer one is a runaway generation (a loop inside a box, a
// list that never ends), graded WRONG: it must not escape the wrong-answer signal by being
// unscorable. The bound accuracy.h states for every task.
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

// "2516_8" → "2516": a numeral with its base written and the same digits without it are one
// answer when the question names the base (the lexer reads "2516_8" as its value, 1358). The
// text with every valid base subscript dropped, or nullopt when there is none.
std::optional<std::string> BaseSubscriptsDropped(std::string_view s) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string out;
  bool dropped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    out.push_back(s[i]);
    if (!digit(s[i]) || i + 1 >= s.size() || s[i + 1] != '_') continue;
    size_t start = i;
    while (start > 0 && digit(s[start - 1])) --start;
    size_t j = i + 2;
    const bool braced = j < s.size() && s[j] == '{';
    if (braced) ++j;
    size_t base = 0;
    const size_t base_begin = j;
    while (j < s.size() && digit(s[j]) && j - base_begin < 3) base = base * 10 + (s[j++] - '0');
    if (j == base_begin || base < 2 || base > 10 || (braced && (j >= s.size() || s[j] != '}'))) {
      continue;
    }
    if (braced) ++j;
    bool valid = true;
    for (size_t k = start; k <= i; ++k) valid = valid && static_cast<size_t>(s[k] - '0') < base;
    if (!valid) continue;
    dropped = true;
    i = j - 1;
  }
  if (!dropped) return std::nullopt;
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
// one-part answer with a decimal comma, or a numeral with its base, adds another reading.
Parsed ParseParts(const std::vector<std::string>& parts, const ParseLimits& limits,
                  Budget& budget) {
  Parsed p;
  std::vector<Expr> exprs;
  std::vector<Expr> alternatives;
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
      for (const std::optional<std::string>& other :
           {DecimalCommaReading(part), BaseSubscriptsDropped(part)}) {
        if (!other) continue;
        absl::StatusOr<Expr> reading = ParseAnswer(*other, limits, budget);
        if (reading.ok()) alternatives.push_back(*std::move(reading));
      }
    }
  }
  if (!exprs.empty()) p.readings.push_back(Combine(exprs));
  for (Expr& e : alternatives) {
    std::vector<Expr> one;
    one.push_back(std::move(e));
    p.readings.push_back(Combine(one));
  }
  return p;
}

bool HasBox(std::string_view s) {
  return s.find("\\boxed") != std::string_view::npos || s.find("\\fbox") != std::string_view::npos;
}

// Every completion-side step the tasks share: extraction (with the task's fallback), the
// answer size budget, and a per-group cache of verdicts by extracted answer. Subclasses compare.
class ExtractingJudge : public Judge {
 public:
  explicit ExtractingJudge(Fallback fallback) : fallback_(fallback) {}

  AccuracyResult Grade(std::string_view answer_section) const final {
    AccuracyResult result;
    ExtractedAnswer extracted = ExtractAnswer(answer_section, Source::kCompletion, fallback_);
    if (extracted.parts.empty()) {
      // With no usable reference the completion is unscorable, answer or not.
      result.verdict = Unscorable() ? Verdict::kUnparseableReference : Verdict::kNoAnswer;
      result.detail = Unscorable() ? UnscorableDetail() : extracted.detail;
      return result;
    }
    result.extracted = absl::StrJoin(extracted.parts, ", ");
    if (result.extracted.size() > kMaxAnswerBytes) {
      result.verdict = Verdict::kWrong;
      result.detail = absl::StrCat("the final answer is ", result.extracted.size(),
                                   " bytes, longer than any answer (", kMaxAnswerBytes, " bytes)");
      size_t keep = kMaxAnswerBytes;  // never split a UTF-8 sequence
      while (keep > 0 && (static_cast<unsigned char>(result.extracted[keep]) & 0xC0) == 0x80) {
        --keep;
      }
      result.extracted.resize(keep);
      return result;
    }
    {
      MutexLock lock(&mu_);
      auto it = cache_.find(result.extracted);
      if (it != cache_.end()) return it->second;
    }
    Compare(extracted, &result);
    result.accuracy = result.verdict == Verdict::kCorrect ? 1.0 : 0.0;
    MutexLock lock(&mu_);
    if (cache_.size() < kMaxCachedVerdicts) cache_.emplace(result.extracted, result);
    return result;
  }

 protected:
  // Sets result->verdict (and detail) for the extracted answer; result->extracted is set.
  virtual void Compare(const ExtractedAnswer& extracted, AccuracyResult* result) const = 0;
  // True when no reference could be parsed (an answer may still match one by its spelling).
  virtual bool Unscorable() const { return false; }
  virtual std::string UnscorableDetail() const { return ""; }

 private:
  const Fallback fallback_;
  mutable Mutex mu_;
  mutable std::map<std::string, AccuracyResult, std::less<>> cache_ ABSL_GUARDED_BY(mu_);
};

class UnparseableJudge final : public Judge {
 public:
  explicit UnparseableJudge(std::string detail) : detail_(std::move(detail)) {}

  AccuracyResult Grade(std::string_view /*answer_section*/) const override {
    AccuracyResult r;
    r.verdict = Verdict::kUnparseableReference;
    r.detail = detail_;
    return r;
  }

 private:
  const std::string detail_;
};

// A number, a fraction, a percentage or a quantity with a unit whose value is an exact rational:
// what NUMERIC accepts on either side ("2+3" is 5; "\sqrt{2}" and "x" are not numbers).
// An equation ("x = 5", "6 \cdot 7 = 42") counts when one of its sides does.
bool IsNumber(const Expr& e, Budget& budget) {
  uint32_t x = e.root;
  if (e.node(x).kind == Kind::kRelation) {
    const std::string_view ops = e.text(x);
    if (ops.find_first_not_of('=') != std::string_view::npos) return false;
    for (uint32_t side : e.kids(x)) {
      if (FreeSymbols(e, side).empty() && EvaluateExact(e, side, budget).has_value()) return true;
    }
    return false;
  }
  for (int peel = 0; peel < 2; ++peel) {
    const Kind k = e.node(x).kind;
    if (k == Kind::kWithUnit || k == Kind::kPercent) x = e.kids(x)[0];
  }
  return EvaluateExact(e, x, budget).has_value();
}

// MATH, and NUMERIC (the same, with both sides exact numbers).
class MathJudge final : public ExtractingJudge {
 public:
  // `references`: every reading of every reference that parsed. `spellings`: how each
  // reference's answer is written, parsed or not.
  MathJudge(std::vector<Expr> references, std::vector<std::string> spellings,
            std::string unparseable, bool numeric)
      : ExtractingJudge(Fallback::kExpression),
        references_(std::move(references)),
        spellings_(std::move(spellings)),
        unparseable_(std::move(unparseable)),
        numeric_(numeric) {}

 private:
  void Compare(const ExtractedAnswer& extracted, AccuracyResult* result) const override {
    const std::string spelling = Spelling(result->extracted);
    for (const std::string& s : spellings_) {
      if (!s.empty() && s == spelling) {
        result->verdict = Verdict::kCorrect;
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
    if (numeric_) {
      std::erase_if(parsed.readings, [&](const Expr& e) { return !IsNumber(e, budget); });
    }
    result->verdict = Verdict::kWrong;
    if (!parsed.ok()) {
      result->detail = absl::StrCat("the answer \"", result->extracted.substr(0, 80),
                                    numeric_ ? "\" is not a number" : "\" does not parse");
      return;
    }
    for (const Expr& answer : parsed.readings) {
      for (const Expr& reference : references_) {
        const Equivalence eq = Equivalent(answer, answer.root, reference, reference.root, budget);
        if (eq == Equivalence::kEqual) {
          result->verdict = Verdict::kCorrect;
          return;
        }
        if (eq == Equivalence::kBudgetExceeded) {
          result->verdict = Verdict::kBudgetExceeded;
          result->detail = "comparison exceeded its budget";
          return;
        }
      }
    }
  }

  bool Unscorable() const override { return references_.empty(); }
  std::string UnscorableDetail() const override { return unparseable_; }

  const std::vector<Expr> references_;
  const std::vector<std::string> spellings_;
  const std::string unparseable_;
  const bool numeric_;
};

// "C", "c", "(C)", "(c)" once unwrapped; nothing else.
std::optional<char> ExactChoice(std::string_view t) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto upper = [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; };
  if (t.size() == 1 && alpha(t[0])) return upper(t[0]);
  if (t.size() == 3 && t[0] == '(' && alpha(t[1]) && t[2] == ')') return upper(t[1]);
  return std::nullopt;
}

// The letter an extracted answer chooses: "B", "(B) 7", "B. 7", "\text{(B)}", "**B**", "option
// (B)". A leading lower-case letter counts only alone or in parentheses ("a bit" is not A).
std::optional<char> ChoiceFromText(std::string_view text) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  const std::string_view t = StripWrappers(text);
  if (std::optional<char> c = ExactChoice(t)) return c;
  if (t.size() >= 3 && t[0] == '(' && ExactChoice(t.substr(0, 3)))
    return ExactChoice(t.substr(0, 3));
  if (!t.empty() && upper(t[0]) && (t.size() == 1 || !alnum(t[1]))) return t[0];
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i] == '(' && upper(t[i + 1]) && t[i + 2] == ')' && (i == 0 || !alnum(t[i - 1]))) {
      return t[i + 1];
    }
  }
  return std::nullopt;
}

class ChoiceJudge final : public ExtractingJudge {
 public:
  explicit ChoiceJudge(std::string letters)
      : ExtractingJudge(Fallback::kChoiceLetter), letters_(std::move(letters)) {}

 private:
  void Compare(const ExtractedAnswer& extracted, AccuracyResult* result) const override {
    result->verdict = Verdict::kWrong;
    if (extracted.parts.size() > 1) {  // "\boxed{A}, \boxed{C}": a hedge is no choice
      result->detail = "several choices in the answer";
      return;
    }
    const std::optional<char> choice = ChoiceFromText(extracted.parts[0]);
    if (!choice) {
      result->detail = "no choice letter in the answer";
      return;
    }
    if (letters_.find(*choice) != std::string::npos) result->verdict = Verdict::kCorrect;
  }

  const std::string letters_;  // upper case
};

// Unwrapped, spaces folded, ASCII lower-cased.
std::string NormalizeExact(std::string_view text) {
  const std::string_view t = StripWrappers(text);
  std::string out;
  bool pending_space = false;
  for (const char c : t) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

class ExactJudge final : public ExtractingJudge {
 public:
  explicit ExactJudge(std::vector<std::string> references)
      : ExtractingJudge(Fallback::kWholeText), references_(std::move(references)) {}

 private:
  void Compare(const ExtractedAnswer& /*extracted*/, AccuracyResult* result) const override {
    const std::string normalized = NormalizeExact(result->extracted);
    result->verdict = Verdict::kWrong;
    for (const std::string& reference : references_) {
      if (normalized == reference) result->verdict = Verdict::kCorrect;
    }
  }

  const std::vector<std::string> references_;  // normalised
};

// Every reference was rejected, each for the reason in `problems`.
std::unique_ptr<Judge> Unparseable(const std::vector<std::string>& problems) {
  std::string detail = problems.size() == 1 ? "reference " : "no usable reference: ";
  for (size_t i = 0; i < problems.size() && i < 4; ++i) {
    absl::StrAppend(&detail, i == 0 ? "" : "; ", problems[i]);
  }
  if (problems.size() > 4) absl::StrAppend(&detail, "; ...");
  return std::make_unique<UnparseableJudge>(std::move(detail));
}

std::string Quoted(std::string_view s) {
  return absl::StrCat("\"", Sv(s.substr(0, 80)), s.size() > 80 ? "..." : "", "\"");
}

class AccuracyScorerImpl final : public AccuracyScorer {
 public:
  std::unique_ptr<Judge> Prepare(Task task,
                                 std::span<const std::string> references) const override {
    if (references.empty()) return std::make_unique<UnparseableJudge>("no reference");
    switch (task) {
      case Task::kMath:
      case Task::kNumeric:
        return PrepareMath(references, task == Task::kNumeric);
      case Task::kMultipleChoice: {
        std::string letters;
        std::vector<std::string> problems;
        for (const std::string& reference : references) {
          if (const std::optional<char> c = ExactChoice(StripWrappers(reference))) {
            letters += *c;
          } else {
            problems.push_back(absl::StrCat(Quoted(reference), " is not a single choice letter"));
          }
        }
        if (letters.empty()) return Unparseable(problems);
        return std::make_unique<ChoiceJudge>(std::move(letters));
      }
      case Task::kExact: {
        std::vector<std::string> normalized;
        std::vector<std::string> problems;
        for (const std::string& reference : references) {
          std::string n = NormalizeExact(reference);
          if (n.empty()) {
            problems.push_back(absl::StrCat(Quoted(reference), " is empty"));
          } else {
            normalized.push_back(std::move(n));
          }
        }
        if (normalized.empty()) return Unparseable(problems);
        return std::make_unique<ExactJudge>(std::move(normalized));
      }
      case Task::kInstructionFollowing:
        return instructions::NewJudge(references);
      case Task::kExternal:
        break;
    }
    return std::make_unique<UnparseableJudge>(
        "EXTERNAL accuracy is supplied by the caller, not graded");
  }

 private:
  static std::unique_ptr<Judge> PrepareMath(std::span<const std::string> references, bool numeric) {
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
      if (numeric) {
        Budget check;
        std::erase_if(p.readings, [&](const Expr& e) { return !IsNumber(e, check); });
      }
      // NUMERIC takes numbers only; MATH also an answer written exactly as the reference.
      if (!numeric) spellings.push_back(Spelling(absl::StrJoin(parts, ", ")));
      if (p.ok()) {
        for (Expr& e : p.readings) parsed.push_back(std::move(e));
      } else if (++unparsed <= 4) {
        bad.push_back(Quoted(reference));
      }
    }
    if (unparsed > bad.size()) bad.push_back(absl::StrCat("and ", unparsed - bad.size(), " more"));
    std::string why = absl::StrCat(numeric ? "no reference is a number: " : "no reference parses: ",
                                   absl::StrJoin(bad, ", "));
    return std::make_unique<MathJudge>(std::move(parsed), std::move(spellings), std::move(why),
                                       numeric);
  }
};

}  // namespace

std::unique_ptr<AccuracyScorer> NewAccuracyScorer() {
  return std::make_unique<AccuracyScorerImpl>();
}

}  // namespace rlscore::scorers::math
