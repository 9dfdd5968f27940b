#include "scorers/math/verifier.h"

#include <map>
#include <mutex>
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

Expr TextExpr(std::string_view s) {
  Expr e;
  e.root = e.AddText(Kind::kText, NormalizedText(s));
  return e;
}

struct Parsed {
  Expr expr;
  bool over_budget = false;
  bool ok = false;
};

Parsed ParsePart(std::string_view text, const ParseLimits& limits, Budget& budget) {
  Parsed p;
  absl::StatusOr<Expr> e = ParseAnswer(text, limits, budget);
  if (e.ok()) {
    p.expr = *std::move(e);
    p.ok = true;
  } else if (e.status().code() == absl::StatusCode::kResourceExhausted) {
    p.over_budget = true;
  } else if (LooksLikeText(text)) {
    p.expr = TextExpr(text);
    p.ok = true;
  }
  return p;
}

// The parts of a multi-part reference: the elements of a top-level comma list.
std::vector<std::pair<const Expr*, uint32_t>> Parts(const Expr& e) {
  std::vector<std::pair<const Expr*, uint32_t>> parts;
  if (e.node(e.root).kind == Kind::kTuple) {
    for (uint32_t k : e.kids(e.root)) parts.emplace_back(&e, k);
  } else {
    parts.emplace_back(&e, e.root);
  }
  return parts;
}

class MathJudge final : public Judge {
 public:
  MathJudge(std::vector<Expr> references, std::string unparseable)
      : references_(std::move(references)), unparseable_(std::move(unparseable)) {}

  AccuracyResult Grade(std::string_view answer_section) const override {
    AccuracyResult result;
    if (references_.empty()) {
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
    Budget budget;
    std::vector<Expr> parts;
    for (const std::string& part : extracted.parts) {
      Parsed p = ParsePart(part, ParseLimits{}, budget);
      if (p.over_budget) {
        result->verdict = Verdict::kBudgetExceeded;
        result->detail = "the answer exceeds the parser's budget";
        return;
      }
      if (!p.ok) {
        result->verdict = Verdict::kWrong;
        result->detail = absl::StrCat("the answer \"", part.substr(0, 80), "\" does not parse");
        return;
      }
      parts.push_back(std::move(p.expr));
    }
    for (const Expr& reference : references_) {
      const Equivalence eq = Compare(parts, reference, budget);
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
    result->verdict = Verdict::kWrong;
  }

  // One answer part against the whole reference; several parts against the reference's parts, in
  // order (a multi-part reference needs every part).
  static Equivalence Compare(const std::vector<Expr>& parts, const Expr& reference,
                             Budget& budget) {
    if (parts.size() == 1) {
      return Equivalent(parts[0], parts[0].root, reference, reference.root, budget);
    }
    const std::vector<std::pair<const Expr*, uint32_t>> ref_parts = Parts(reference);
    if (ref_parts.size() != parts.size()) return Equivalence::kNotEqual;
    for (size_t i = 0; i < parts.size(); ++i) {
      const Equivalence eq =
          Equivalent(parts[i], parts[i].root, *ref_parts[i].first, ref_parts[i].second, budget);
      if (eq != Equivalence::kEqual) return eq;
    }
    return Equivalence::kEqual;
  }

  const std::vector<Expr> references_;
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
    std::vector<std::string> bad;  // the first few, quoted: `why` is copied to every completion
    size_t unparsed = 0;
    for (const std::string& reference : references) {
      Budget budget;
      budget.steps *= 8;
      Parsed p = ParsePart(reference, ReferenceLimits(), budget);
      if (p.ok) {
        parsed.push_back(std::move(p.expr));
      } else if (++unparsed <= 4) {
        bad.push_back(absl::StrCat("\"", reference.substr(0, 80), "\""));
      }
    }
    if (unparsed > bad.size()) bad.push_back(absl::StrCat("and ", unparsed - bad.size(), " more"));
    std::string why = references.empty()
                          ? "no reference"
                          : absl::StrCat("no reference parses: ", absl::StrJoin(bad, ", "));
    return std::make_unique<MathJudge>(std::move(parsed), std::move(why));
  }

 private:
  std::unique_ptr<AccuracyScorer> basic_ = NewBasicAccuracyScorer();
};

}  // namespace

std::unique_ptr<AccuracyScorer> NewMathAccuracyScorer() {
  return std::make_unique<MathAccuracyScorer>();
}

}  // namespace rlscore::scorers::math
