#include "scorers/math/equivalence.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "scorers/math/evaluate.h"

namespace rlscore::scorers::math {
namespace {

// Numeric identity testing: points, and the relative tolerance two values must meet at each.
constexpr int kTrials = 6;
constexpr int kMinAgreeingPoints = 3;
constexpr long double kRelativeTolerance = 1e-12L;

bool IsScalar(Kind k) {
  switch (k) {
    case Kind::kNumber:
    case Kind::kSymbol:
    case Kind::kConstant:
    case Kind::kAdd:
    case Kind::kMul:
    case Kind::kNeg:
    case Kind::kDiv:
    case Kind::kPow:
    case Kind::kRoot:
    case Kind::kFactorial:
    case Kind::kFunction:
    case Kind::kPercent:
      return true;
    default:
      return false;
  }
}

// Deterministic, well-spread test values: irrational-looking, both signs, away from 0 and from
// the integers where functions have poles.
Complex TrialValue(int trial, size_t symbol) {
  static constexpr std::array<long double, 7> kBase = {0.7317L, 1.3861L, 2.1193L, 0.4127L,
                                                       1.7713L, 2.6459L, 0.9631L};
  const long double v = kBase[(static_cast<size_t>(trial) * 3 + symbol * 5) % kBase.size()] +
                        0.0113L * static_cast<long double>(symbol);
  return Complex(trial % 3 == 2 ? -v : v, 0);
}

bool Close(const Complex& a, const Complex& b) {
  const long double scale = std::max(std::abs(a), std::abs(b));
  if (scale == 0) return true;
  return std::abs(a - b) <= kRelativeTolerance * scale;
}

struct Operands {
  const Expr* e;
  uint32_t node;
};

class Comparer {
 public:
  explicit Comparer(Budget& budget) : budget_(budget) {}

  bool Eq(const Expr& a, uint32_t x, const Expr& b, uint32_t y) {
    if (!budget_.Spend(1)) return false;
    const Kind ka = a.node(x).kind, kb = b.node(y).kind;

    // A unit on one side only is ignored; on both sides it must be the same unit.
    if (ka == Kind::kWithUnit && kb == Kind::kWithUnit) {
      return a.text(x) == b.text(y) && Eq(a, a.kids(x)[0], b, b.kids(y)[0]);
    }
    if (ka == Kind::kWithUnit) return Eq(a, a.kids(x)[0], b, y);
    if (kb == Kind::kWithUnit) return Eq(a, x, b, b.kids(y)[0]);

    // A percentage matches its number and its decimal value.
    if (ka == Kind::kPercent && kb != Kind::kPercent) {
      return Eq(a, a.kids(x)[0], b, y) || (IsScalar(kb) && ScalarEq(a, x, b, y));
    }
    if (kb == Kind::kPercent && ka != Kind::kPercent) {
      return Eq(a, x, b, b.kids(y)[0]) || (IsScalar(ka) && ScalarEq(a, x, b, y));
    }

    // "x = 3" against "3", either way round.
    if (ka == Kind::kRelation && kb != Kind::kRelation) {
      const std::optional<uint32_t> value = AssignedValue(a, x);
      return value && Eq(a, *value, b, y);
    }
    if (kb == Kind::kRelation && ka != Kind::kRelation) {
      const std::optional<uint32_t> value = AssignedValue(b, y);
      return value && Eq(a, x, b, *value);
    }
    if (ka == Kind::kRelation) return RelationsEq(a, x, b, y);

    if (ka == Kind::kPlusMinus || kb == Kind::kPlusMinus) return PlusMinusEq(a, x, b, y);

    if (IsEmptySet(a, x) || IsEmptySet(b, y)) return IsEmptySet(a, x) && IsEmptySet(b, y);

    // The real line: "\\mathbb{R}", "all real numbers" and (-∞, ∞) are one answer.
    // A lone symbol R is only the real line against another form of it; otherwise a variable.
    if (const bool ra = IsRealLine(a, x), rb = IsRealLine(b, y); ra || rb) {
      if (ra && rb) return true;
      if ((ra && ka != Kind::kSymbol) || (rb && kb != Kind::kSymbol)) return false;
    }

    // Infinities (interval ends) are equal when their signs are.
    if (const int ia = InfinitySign(a, x), ib = InfinitySign(b, y); ia != 0 || ib != 0) {
      return ia == ib;
    }

    switch (ka) {
      case Kind::kSet:
        return kb == Kind::kSet && Unordered(a, x, b, y);
      case Kind::kUnion:
        return kb == Kind::kUnion && Unordered(a, x, b, y);
      case Kind::kTuple:
        if (kb == Kind::kInterval) return TupleAsOpenInterval(a, x, b, y);
        return kb == Kind::kTuple && Ordered(a, x, b, y);
      case Kind::kInterval:
        if (kb == Kind::kTuple) return TupleAsOpenInterval(b, y, a, x);
        return kb == Kind::kInterval && a.node(x).flags == b.node(y).flags && Ordered(a, x, b, y);
      case Kind::kMatrix:
        return kb == Kind::kMatrix && a.node(x).rows == b.node(y).rows &&
               a.node(x).cols == b.node(y).cols && Ordered(a, x, b, y);
      case Kind::kText:
        if (kb == Kind::kText) return a.text(x) == b.text(y);
        return IsScalar(kb) && TextAsNumberEq(a, x, b, y);
      case Kind::kChoice:
        return (kb == Kind::kChoice || kb == Kind::kSymbol || kb == Kind::kText) &&
               SameLetter(a.text(x), b.text(y));
      default:
        break;
    }
    if (kb == Kind::kChoice) {
      return (ka == Kind::kSymbol || ka == Kind::kText) && SameLetter(a.text(x), b.text(y));
    }
    if (kb == Kind::kText) return IsScalar(ka) && TextAsNumberEq(b, y, a, x);
    if (IsScalar(ka) && IsScalar(kb)) return ScalarEq(a, x, b, y);
    return false;
  }

  // ℝ written as \\mathbb{R} (a lone symbol R, which only counts against another form of the real
  // line), in words, or as the interval (-∞, ∞).
  static bool IsRealLine(const Expr& e, uint32_t x) {
    const Node& n = e.node(x);
    if (n.kind == Kind::kText) {
      const std::string_view t = e.text(x);
      return t == "all real numbers" || t == "all reals" || t == "the real numbers" ||
             t == "real numbers" || t == "all real values";
    }
    if (n.kind == Kind::kSymbol) return e.text(x) == "R";
    return n.kind == Kind::kInterval && n.flags == 0 && InfinitySign(e, e.kids(x)[0]) == -1 &&
           InfinitySign(e, e.kids(x)[1]) == 1;
  }

  // +1 for ∞, −1 for −∞, 0 for anything else.
  static int InfinitySign(const Expr& e, uint32_t x) {
    const Node& n = e.node(x);
    if (n.kind == Kind::kConstant && static_cast<Constant>(n.payload) == Constant::kInfinity) {
      return 1;
    }
    if (n.kind == Kind::kNeg) return -InfinitySign(e, e.kids(x)[0]);
    if (n.kind == Kind::kMul && n.num_children == 2 && e.node(e.kids(x)[0]).kind == Kind::kNumber &&
        e.number(e.kids(x)[0]) == BigRational(-1)) {
      return -InfinitySign(e, e.kids(x)[1]);
    }
    return 0;
  }

 private:
  static bool SameLetter(std::string_view a, std::string_view b) {
    return a.size() == 1 && b.size() == 1 && (a[0] | 0x20) == (b[0] | 0x20);
  }

  static bool IsEmptySet(const Expr& e, uint32_t x) {
    const Kind k = e.node(x).kind;
    if (k == Kind::kText) {
      const std::string_view t = e.text(x);
      return t == "no solution" || t == "no solutions" || t == "no real solutions" ||
             t == "no real solution" || t == "none" || t == "empty set" || t == "the empty set";
    }
    return k == Kind::kEmptySet || (k == Kind::kSet && e.node(x).num_children == 0);
  }

  // The value side of "x = v" or "v = x" (a lone symbol on the other side), or the last side of
  // a chain of equal constants ("\frac{6}{16} = \frac{3}{8}": the result is what was written
  // last).
  static std::optional<uint32_t> AssignedValue(const Expr& e, uint32_t x) {
    const std::string_view ops = e.text(x);
    const auto kids = e.kids(x);
    // "\frac{5}{12} \approx 0.4167": the exact value comes first, the approximation after.
    if (ops.find_first_not_of('~') == std::string_view::npos) {
      // ... but "x \approx 5.2" names the variable first.
      return e.node(kids.front()).kind == Kind::kSymbol ? kids.back() : kids.front();
    }
    if (ops.find_first_not_of('=') != std::string_view::npos) return std::nullopt;
    if (kids.size() == 2) {
      if (e.node(kids[0]).kind == Kind::kSymbol) return kids[1];
      if (e.node(kids[1]).kind == Kind::kSymbol) return kids[0];
    }
    for (uint32_t k : kids) {
      if (!FreeSymbols(e, k).empty()) return std::nullopt;
    }
    return kids.back();
  }

  bool Ordered(const Expr& a, uint32_t x, const Expr& b, uint32_t y) {
    const auto ka = a.kids(x), kb = b.kids(y);
    if (ka.size() != kb.size()) return false;
    for (size_t i = 0; i < ka.size(); ++i) {
      if (!Eq(a, ka[i], b, kb[i])) return false;
    }
    return true;
  }

  // Every element of each side matches some element of the other (sets ignore repeats).
  bool Unordered(const Expr& a, uint32_t x, const Expr& b, uint32_t y) {
    const auto ka = a.kids(x), kb = b.kids(y);
    auto covered = [&](std::span<const uint32_t> from, const Expr& fe, std::span<const uint32_t> to,
                       const Expr& te, bool from_is_a) {
      for (uint32_t f : from) {
        bool found = false;
        for (uint32_t t : to) {
          if (from_is_a ? Eq(fe, f, te, t) : Eq(te, t, fe, f)) {
            found = true;
            break;
          }
        }
        if (!found) return false;
      }
      return true;
    };
    return covered(ka, a, kb, b, true) && covered(kb, b, ka, a, false);
  }

  // "(a, b)" parses as a tuple; against an open interval it is that interval.
  bool TupleAsOpenInterval(const Expr& t, uint32_t x, const Expr& i, uint32_t y) {
    return t.node(x).num_children == 2 && i.node(y).flags == 0 && OrderedPair(t, x, i, y);
  }
  bool OrderedPair(const Expr& t, uint32_t x, const Expr& i, uint32_t y) {
    return Eq(t, t.kids(x)[0], i, i.kids(y)[0]) && Eq(t, t.kids(x)[1], i, i.kids(y)[1]);
  }

  // Number words: "seven" is 7.
  bool TextAsNumberEq(const Expr& t, uint32_t x, const Expr& n, uint32_t y) {
    static constexpr std::array<std::string_view, 21> kSmall = {
        "zero",     "one",     "two",     "three",     "four",     "five",     "six",
        "seven",    "eight",   "nine",    "ten",       "eleven",   "twelve",   "thirteen",
        "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"};
    const std::string_view word = t.text(x);
    for (size_t v = 0; v < kSmall.size(); ++v) {
      if (word == kSmall[v]) {
        const std::optional<BigRational> value = EvaluateExact(n, y, budget_);
        return value && *value == BigRational(static_cast<int64_t>(v));
      }
    }
    return false;
  }

  bool PlusMinusEq(const Expr& a, uint32_t x, const Expr& b, uint32_t y) {
    // a ± c is the pair {a + c, a − c}; compare the pairs numerically, in either order.
    std::vector<std::array<Complex, 2>> pa, pb;
    if (!Pair(a, x, &pa) || !Pair(b, y, &pb) || pa.size() != pb.size()) return false;
    bool same = true, swapped = true;
    for (size_t t = 0; t < pa.size(); ++t) {
      same = same && Close(pa[t][0], pb[t][0]) && Close(pa[t][1], pb[t][1]);
      swapped = swapped && Close(pa[t][0], pb[t][1]) && Close(pa[t][1], pb[t][0]);
    }
    return !pa.empty() && (same || swapped);
  }

  // The two values of a ± c, or of a 2-element set or tuple, at each trial point.
  bool Pair(const Expr& e, uint32_t x, std::vector<std::array<Complex, 2>>* out) {
    const Kind k = e.node(x).kind;
    const auto kids = e.kids(x);
    if (k != Kind::kPlusMinus && !((k == Kind::kSet || k == Kind::kTuple) && kids.size() == 2)) {
      return false;
    }
    Point point;
    point.names = FreeSymbols(e, x);
    for (int trial = 0; trial < kTrials; ++trial) {
      point.values.clear();
      for (size_t s = 0; s < point.names.size(); ++s) point.values.push_back(TrialValue(trial, s));
      std::array<Complex, 2> v;
      if (k == Kind::kPlusMinus) {
        const std::optional<Complex> c = EvaluateAt(e, kids.back(), point, budget_);
        std::optional<Complex> base = Complex(0, 0);
        if (kids.size() == 2) base = EvaluateAt(e, kids[0], point, budget_);
        if (!c || !base) return false;
        v = {*base + *c, *base - *c};
      } else {
        const std::optional<Complex> p = EvaluateAt(e, kids[0], point, budget_);
        const std::optional<Complex> q = EvaluateAt(e, kids[1], point, budget_);
        if (!p || !q) return false;
        v = {*p, *q};
      }
      out->push_back(v);
    }
    return true;
  }

  bool RelationsEq(const Expr& a, uint32_t x, const Expr& b, uint32_t y) {
    std::string ra(a.text(x)), rb(b.text(y));
    std::vector<uint32_t> oa(a.kids(x).begin(), a.kids(x).end());
    std::vector<uint32_t> ob(b.kids(y).begin(), b.kids(y).end());
    if (ra == "=" && rb == "=") return EquationsEq(a, oa, b, ob);
    Canonical(&ra, &oa);
    Canonical(&rb, &ob);
    if (ra != rb || oa.size() != ob.size()) return false;
    for (size_t i = 0; i < oa.size(); ++i) {
      if (!Eq(a, oa[i], b, ob[i])) return false;
    }
    return true;
  }

  // Chains written with > and ≥ are turned around: "5 > x" is "x < 5".
  static void Canonical(std::string* ops, std::vector<uint32_t>* operands) {
    const bool descending = !ops->empty() && std::all_of(ops->begin(), ops->end(), [](char c) {
      return c == '>' || c == 'g' || c == '=';
    }) && ops->find_first_of(">g") != std::string::npos;
    if (!descending) return;
    std::reverse(ops->begin(), ops->end());
    for (char& c : *ops) c = c == '>' ? '<' : c == 'g' ? 'l' : c;
    std::reverse(operands->begin(), operands->end());
  }

  // Two equations are equivalent when lhs − rhs of one is a non-zero multiple of the other's.
  bool EquationsEq(const Expr& a, const std::vector<uint32_t>& oa, const Expr& b,
                   const std::vector<uint32_t>& ob) {
    if (oa.size() != 2 || ob.size() != 2) return false;
    // Structurally the same assignment first ("x = 3" vs "x = 3.0"), exactly.
    if (a.node(oa[0]).kind == Kind::kSymbol && b.node(ob[0]).kind == Kind::kSymbol &&
        a.text(oa[0]) == b.text(ob[0]) && Eq(a, oa[1], b, ob[1])) {
      return true;
    }
    Point point;
    std::vector<std::string> names;
    for (uint32_t n : oa) {
      for (std::string& s : FreeSymbols(a, n)) names.push_back(std::move(s));
    }
    for (uint32_t n : ob) {
      for (std::string& s : FreeSymbols(b, n)) names.push_back(std::move(s));
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (names.empty()) return false;
    point.names = names;
    std::optional<Complex> ratio;
    int agreeing = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      point.values.clear();
      for (size_t s = 0; s < names.size(); ++s) point.values.push_back(TrialValue(trial, s));
      const auto la = EvaluateAt(a, oa[0], point, budget_),
                 ra = EvaluateAt(a, oa[1], point, budget_);
      const auto lb = EvaluateAt(b, ob[0], point, budget_),
                 rb = EvaluateAt(b, ob[1], point, budget_);
      if (!la || !ra || !lb || !rb) continue;
      const Complex fa = *la - *ra, fb = *lb - *rb;
      if (std::abs(fb) == 0 || std::abs(fa) == 0) {
        if (!Close(fa, fb)) return false;
        ++agreeing;
        continue;
      }
      if (!ratio) ratio = fa / fb;
      if (!Close(fa, *ratio * fb)) return false;
      ++agreeing;
    }
    return agreeing >= kMinAgreeingPoints;
  }

  // A number written with a decimal point ("1.41421356237", "-0.5").
  static bool IsDecimalLiteral(const Expr& e, uint32_t x) {
    const Node& n = e.node(x);
    if (n.kind == Kind::kNeg) return IsDecimalLiteral(e, e.kids(x)[0]);
    return n.kind == Kind::kNumber && n.flags > 0;
  }

  bool ScalarEq(const Expr& a, uint32_t x, const Expr& b, uint32_t y) {
    const std::optional<BigRational> ea = EvaluateExact(a, x, budget_);
    const std::optional<BigRational> eb = EvaluateExact(b, y, budget_);
    if (budget_.exceeded) return false;
    if (ea && eb) return *ea == *eb;
    // A decimal approximation of a closed form is not the closed form: 1.41421356237 is not √2
    // (the spirit of "0.333 is not 1/3"; an RL reward must not pay for rounding).
    if ((ea && IsDecimalLiteral(a, x) && !eb) || (eb && IsDecimalLiteral(b, y) && !ea)) {
      return false;
    }
    Point point;
    point.names = FreeSymbols(a, x);
    for (std::string& s : FreeSymbols(b, y)) point.names.push_back(std::move(s));
    std::sort(point.names.begin(), point.names.end());
    point.names.erase(std::unique(point.names.begin(), point.names.end()), point.names.end());
    int agreeing = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      point.values.clear();
      for (size_t s = 0; s < point.names.size(); ++s) {
        point.values.push_back(TrialValue(trial, s));
      }
      const std::optional<Complex> va = EvaluateAt(a, x, point, budget_);
      const std::optional<Complex> vb = EvaluateAt(b, y, point, budget_);
      if (budget_.exceeded) return false;
      if (!va || !vb) {
        if (va.has_value() != vb.has_value()) return false;  // defined on one side only
        continue;
      }
      // Both 0 at this point: a true zero or an underflow (e^{-20000}, sqrt(2)*10^{-6000}) - no
      // evidence either way, and never an absolute chop.
      if (std::abs(*va) == 0 && std::abs(*vb) == 0) continue;
      if (!Close(*va, *vb)) return false;
      ++agreeing;
      if (point.names.empty()) break;  // a constant: one point says it all
    }
    return point.names.empty() ? agreeing == 1 : agreeing >= kMinAgreeingPoints;
  }

  Budget& budget_;
};

}  // namespace

Equivalence Equivalent(const Expr& a, uint32_t a_node, const Expr& b, uint32_t b_node,
                       Budget& budget) {
  Comparer comparer(budget);
  const bool equal = comparer.Eq(a, a_node, b, b_node);
  if (budget.exceeded) return Equivalence::kBudgetExceeded;
  return equal ? Equivalence::kEqual : Equivalence::kNotEqual;
}

}  // namespace rlscore::scorers::math
