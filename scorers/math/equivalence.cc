#include "scorers/math/equivalence.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <optional>
#include <span>
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

// The value of a symbol that bounds a \sum or \prod at a trial: a small positive integer, so that
// the sum has a definite number of terms (3 to 9).
Complex IntegerTrialValue(int trial, size_t symbol) {
  return Complex(static_cast<long double>(3 + (static_cast<size_t>(trial) * 3 + symbol * 5) % 7),
                 0);
}

// The symbols of `names` that bound a sum or product in either expression.
std::vector<std::string> IntegerSymbols(const Expr& a, std::span<const uint32_t> as, const Expr& b,
                                        std::span<const uint32_t> bs) {
  std::vector<std::string> out;
  for (uint32_t n : as) {
    for (std::string& s : SymbolsInBounds(a, n)) out.push_back(std::move(s));
  }
  for (uint32_t n : bs) {
    for (std::string& s : SymbolsInBounds(b, n)) out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Trial values for `point.names`: integers for the symbols of `integers` (sorted), the usual
// irrational-looking reals for the others.
void FillTrial(int trial, const std::vector<std::string>& integers, Point* point) {
  point->values.clear();
  for (size_t s = 0; s < point->names.size(); ++s) {
    const bool integer = std::binary_search(integers.begin(), integers.end(), point->names[s]);
    point->values.push_back(integer ? IntegerTrialValue(trial, s) : TrialValue(trial, s));
  }
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

    // A labelled value against its value: "(p, q) = (3, 2)", "f(x) = 1", "|AB| = 1", a chain
    // "x = 5 + 6 = 11" by its last side. Two labelled values need the same label.
    if (ka == Kind::kRelation || kb == Kind::kRelation) {
      const std::optional<uint32_t> va = LabelledValue(a, x), vb = LabelledValue(b, y);
      if (va && vb) {
        if (SameTree(a, a.kids(x)[0], b, b.kids(y)[0]) && Eq(a, *va, b, *vb)) return true;
      } else if (va && kb != Kind::kRelation) {
        return Eq(a, *va, b, y);
      } else if (vb && ka != Kind::kRelation) {
        return Eq(a, x, b, *vb);
      }
    }

    // An inequality in one variable is the set it describes: "x \ge 3" is [3, ∞).
    if (IsInequality(a, x) || IsInequality(b, y)) {
      std::vector<Interval> ia, ib;
      const Expr* var_a = nullptr;
      const Expr* var_b = nullptr;
      uint32_t na = 0, nb = 0;
      if (Intervals(a, x, &ia, &var_a, &na) && Intervals(b, y, &ib, &var_b, &nb)) {
        if (var_a != nullptr && var_b != nullptr && !SameTree(*var_a, na, *var_b, nb)) return false;
        return SameIntervals(ia, ib);
      }
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

    // Matrix arithmetic written out ("A + B", "AB", "2A") is the matrix it evaluates to.
    if ((ka == Kind::kMatrix) != (kb == Kind::kMatrix)) {
      if (ka == Kind::kMatrix) {
        if (const std::optional<uint32_t> m = MatrixValue(b, y)) {
          return Eq(a, x, scratch_.back(), *m);
        }
      } else if (const std::optional<uint32_t> m = MatrixValue(a, x)) {
        return Eq(scratch_.back(), *m, b, y);
      }
    }

    // A set of one value is that value, as a bare list is its values: "{5}" ≡ "5". Only for a
    // scalar: a set is never a tuple or an interval.
    if (ka == Kind::kSet && a.node(x).num_children == 1 && IsScalar(kb)) {
      return Eq(a, a.kids(x)[0], b, y);
    }
    if (kb == Kind::kSet && b.node(y).num_children == 1 && IsScalar(ka)) {
      return Eq(a, x, b, b.kids(y)[0]);
    }

    switch (ka) {
      case Kind::kSet:
        return (kb == Kind::kSet || IsBareList(b, y)) && Unordered(a, x, b, y);
      case Kind::kUnion:
        return kb == Kind::kUnion && Unordered(a, x, b, y);
      case Kind::kTuple:
        // A bare list is unordered against a set or another bare list, and is the tuple it
        // spells against a bracketed one: "2, -3" ≡ "-3, 2" ≡ {-3, 2}, but (1, 2) ≠ "2, 1".
        if (IsBareList(a, x)) {
          if (kb == Kind::kSet) return Unordered(a, x, b, y);
          if (IsBareList(b, y)) {
            // Labels fix the order of values listed without them: "x = 2, y = 3" against
            // "3, 2" is x = 3.
            if (AllLabelled(a, x) != AllLabelled(b, y)) return Ordered(a, x, b, y);
            return Matching(a, x, b, y);
          }
          return kb == Kind::kTuple && Ordered(a, x, b, y);
        }
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

  static bool IsBareList(const Expr& e, uint32_t x) {
    return e.node(x).kind == Kind::kTuple && (e.node(x).flags & kBareList) != 0;
  }

  // A name that stands for a value: symbols, products and ratios of them, a function of them
  // ("f(x)" reads as f·x), |AB|, a bracketed tuple of names. Never a number, a constant or a
  // sum: "x + y = 5" is an equation, not a labelled 5.
  static bool IsLabel(const Expr& e, uint32_t x) {
    const Node& n = e.node(x);
    switch (n.kind) {
      case Kind::kSymbol:
        return true;
      case Kind::kMul:
      case Kind::kDiv:
      case Kind::kTuple:
        if (n.kind == Kind::kTuple && (n.flags & kBareList) != 0) return false;
        for (uint32_t k : e.kids(x)) {
          if (!IsLabel(e, k)) return false;
        }
        return true;
      case Kind::kFunction:
        return e.text(x) == "abs" && n.num_children == 1 && IsLabel(e, e.kids(x)[0]);
      default:
        return false;
    }
  }

  // The value of "label = v", and of a chain that starts with a label: its last side, or with
  // "\approx" the side written just before it ("x = 1/3 \approx 0.33" is 1/3).
  static std::optional<uint32_t> LabelledValue(const Expr& e, uint32_t x) {
    if (e.node(x).kind != Kind::kRelation) return std::nullopt;
    const std::string_view ops = e.text(x);
    const auto kids = e.kids(x);
    if (ops.empty() || ops[0] != '=' || ops.find_first_not_of("=~") != std::string_view::npos ||
        !IsLabel(e, kids[0])) {
      return std::nullopt;
    }
    const size_t approx = ops.find('~');
    return approx == std::string_view::npos ? kids.back() : kids[approx];
  }

  // Structural identity (labels, variables): same kinds, names, numbers and shape.
  static bool SameTree(const Expr& a, uint32_t x, const Expr& b, uint32_t y) {
    const Node& na = a.node(x);
    const Node& nb = b.node(y);
    if (na.kind != nb.kind || na.num_children != nb.num_children || na.flags != nb.flags) {
      return false;
    }
    switch (na.kind) {
      case Kind::kNumber:
        if (!(a.number(x) == b.number(y))) return false;
        break;
      case Kind::kConstant:
        if (na.payload != nb.payload) return false;
        break;
      case Kind::kSymbol:
      case Kind::kText:
      case Kind::kChoice:
      case Kind::kFunction:
      case Kind::kRelation:
      case Kind::kWithUnit:
        if (a.text(x) != b.text(y)) return false;
        break;
      default:
        break;
    }
    for (size_t i = 0; i < na.num_children; ++i) {
      if (!SameTree(a, a.kids(x)[i], b, b.kids(y)[i])) return false;
    }
    return true;
  }

  // ---- matrix arithmetic ----
  // The matrix that sums, products, negations and scalar multiples of matrices at `x` make, as
  // a new kMatrix of expression cells in scratch_.back(); nullopt when `x` is no such arithmetic.
  std::optional<uint32_t> MatrixValue(const Expr& e, uint32_t x) {
    const Kind k = e.node(x).kind;
    if (k != Kind::kAdd && k != Kind::kMul && k != Kind::kNeg) return std::nullopt;
    Expr& out = scratch_.emplace_back();
    std::optional<uint32_t> m = FoldMatrix(e, x, out);
    if (!m || out.node(*m).kind != Kind::kMatrix) {
      scratch_.pop_back();
      return std::nullopt;
    }
    out.root = *m;
    return m;
  }
  uint32_t MakeMatrix(Expr& out, const std::vector<uint32_t>& cells, uint16_t rows, uint16_t cols) {
    const uint32_t m = out.Add(Kind::kMatrix, cells);
    out.nodes[m].rows = rows;
    out.nodes[m].cols = cols;
    return m;
  }
  std::vector<uint32_t> Cells(const Expr& out, uint32_t m) {
    return std::vector<uint32_t>(out.kids(m).begin(), out.kids(m).end());
  }
  // In `out`: a matrix node, or a scalar node (a factor of a product).
  std::optional<uint32_t> FoldMatrix(const Expr& e, uint32_t x, Expr& out) {
    const Node& n = e.node(x);
    if (!budget_.Spend(1 + n.num_children)) return std::nullopt;
    if (n.kind == Kind::kMatrix) return out.Graft(e, x);
    if (n.kind != Kind::kAdd && n.kind != Kind::kMul && n.kind != Kind::kNeg) {
      // A scalar factor is grafted as it is; anything else (a set, "{}") makes no matrix.
      if (!IsScalar(n.kind)) return std::nullopt;
      return out.Graft(e, x);
    }
    if (n.num_children == 0) return std::nullopt;
    std::vector<uint32_t> values;
    for (uint32_t k : e.kids(x)) {
      std::optional<uint32_t> v = FoldMatrix(e, k, out);
      if (!v) return std::nullopt;
      values.push_back(*v);
    }
    auto is_matrix = [&](uint32_t v) { return out.node(v).kind == Kind::kMatrix; };
    if (n.kind == Kind::kNeg) {
      if (!is_matrix(values[0])) return out.Add(Kind::kNeg, {values[0]});
      std::vector<uint32_t> cells = Cells(out, values[0]);
      for (uint32_t& c : cells) c = out.Add(Kind::kNeg, {c});
      return MakeMatrix(out, cells, out.node(values[0]).rows, out.node(values[0]).cols);
    }
    if (n.kind == Kind::kAdd) {
      if (std::none_of(values.begin(), values.end(), is_matrix)) return out.Add(Kind::kAdd, values);
      if (!std::all_of(values.begin(), values.end(), is_matrix)) return std::nullopt;
      const Node first = out.node(values[0]);
      std::vector<uint32_t> sum = Cells(out, values[0]);
      for (size_t i = 1; i < values.size(); ++i) {
        if (out.node(values[i]).rows != first.rows || out.node(values[i]).cols != first.cols) {
          return std::nullopt;
        }
        const std::vector<uint32_t> cells = Cells(out, values[i]);
        for (size_t c = 0; c < sum.size(); ++c) sum[c] = out.Add(Kind::kAdd, {sum[c], cells[c]});
      }
      return MakeMatrix(out, sum, first.rows, first.cols);
    }
    // A product, left to right.
    uint32_t acc = values[0];
    for (size_t i = 1; i < values.size(); ++i) {
      const uint32_t v = values[i];
      if (!is_matrix(acc) && !is_matrix(v)) {
        acc = out.Add(Kind::kMul, {acc, v});
      } else if (!is_matrix(acc) || !is_matrix(v)) {
        const uint32_t scalar = is_matrix(acc) ? v : acc;
        const uint32_t matrix = is_matrix(acc) ? acc : v;
        std::vector<uint32_t> cells = Cells(out, matrix);
        for (uint32_t& c : cells) c = out.Add(Kind::kMul, {scalar, c});
        acc = MakeMatrix(out, cells, out.node(matrix).rows, out.node(matrix).cols);
      } else {
        const Node l = out.node(acc), r = out.node(v);
        if (l.cols != r.rows) return std::nullopt;
        if (!budget_.Spend(static_cast<uint64_t>(l.rows) * r.cols * l.cols)) return std::nullopt;
        const std::vector<uint32_t> lc = Cells(out, acc), rc = Cells(out, v);
        std::vector<uint32_t> cells;
        for (uint16_t row = 0; row < l.rows; ++row) {
          for (uint16_t col = 0; col < r.cols; ++col) {
            std::vector<uint32_t> terms;
            for (uint16_t k = 0; k < l.cols; ++k) {
              terms.push_back(out.Add(Kind::kMul, {lc[row * l.cols + k], rc[k * r.cols + col]}));
            }
            cells.push_back(terms.size() == 1 ? terms[0] : out.Add(Kind::kAdd, terms));
          }
        }
        acc = MakeMatrix(out, cells, l.rows, r.cols);
      }
    }
    return acc;
  }

  // ---- inequalities as sets ----
  struct End {
    const Expr* e = nullptr;  // nullptr: infinite, with `sign`
    uint32_t node = 0;
    int sign = 0;
  };
  struct Interval {
    End lo, hi;
    bool lo_closed = false, hi_closed = false;
  };

  static bool IsInequality(const Expr& e, uint32_t x) {
    if (e.node(x).kind != Kind::kRelation) return false;
    const std::string_view ops = e.text(x);
    return !ops.empty() && ops.find_first_not_of("<l>g") == std::string_view::npos;
  }

  End Finite(const Expr& e, uint32_t node) {
    if (const int s = InfinitySign(e, node); s != 0) return End{nullptr, 0, s};
    return End{&e, node, 0};
  }
  End Exact(BigRational v) {
    Expr& s = scratch_.emplace_back();
    s.root = s.AddNumber(std::move(v));
    return End{&s, s.root, 0};
  }

  // `node` as k·var + c with exact rationals k ≠ 0 and c, where var is a label.
  static bool Linear(const Expr& e, uint32_t node, uint32_t* var, BigRational* k, BigRational* c,
                     Budget& budget) {
    const Node& n = e.node(node);
    if (IsLabel(e, node) &&
        !(n.kind == Kind::kMul && e.node(e.kids(node)[0]).kind == Kind::kNumber)) {
      *var = node;
      *k = BigRational(1);
      *c = BigRational(0);
      return true;
    }
    if (n.kind == Kind::kNeg) {
      if (!Linear(e, e.kids(node)[0], var, k, c, budget)) return false;
      *k = BigRational::Sub(BigRational(0), *k, budget).value_or(BigRational(0));
      *c = BigRational::Sub(BigRational(0), *c, budget).value_or(BigRational(0));
      return k->sign() != 0;
    }
    if (n.kind == Kind::kMul && n.num_children == 2 &&
        e.node(e.kids(node)[0]).kind == Kind::kNumber && IsLabel(e, e.kids(node)[1])) {
      *var = e.kids(node)[1];
      *k = e.number(e.kids(node)[0]);
      *c = BigRational(0);
      return k->sign() != 0;
    }
    if (n.kind == Kind::kAdd) {
      bool found = false;
      BigRational offset(0);
      for (uint32_t t : e.kids(node)) {
        if (e.node(t).kind == Kind::kNumber) {
          offset = BigRational::Add(offset, e.number(t), budget).value_or(BigRational(0));
        } else if (!found && Linear(e, t, var, k, c, budget) && c->sign() == 0) {
          found = true;
        } else {
          return false;
        }
      }
      *c = offset;
      return found;
    }
    return false;
  }

  // The intervals of an interval, a union of intervals, an open pair against an inequality, or
  // an inequality (chain) in one variable, whose label is returned in `var`.
  bool Intervals(const Expr& e, uint32_t x, std::vector<Interval>* out, const Expr** var_expr,
                 uint32_t* var) {
    const Node& n = e.node(x);
    if (n.kind == Kind::kInterval ||
        (n.kind == Kind::kTuple && n.num_children == 2 && (n.flags & kBareList) == 0)) {
      out->push_back(Interval{Finite(e, e.kids(x)[0]), Finite(e, e.kids(x)[1]),
                              n.kind == Kind::kInterval && (n.flags & 1) != 0,
                              n.kind == Kind::kInterval && (n.flags & 2) != 0});
      return true;
    }
    if (n.kind == Kind::kUnion) {
      for (uint32_t k : e.kids(x)) {
        if (!Intervals(e, k, out, var_expr, var)) return false;
      }
      return true;
    }
    if (!IsInequality(e, x)) return false;
    std::string ops(e.text(x));
    std::vector<uint32_t> operands(e.kids(x).begin(), e.kids(x).end());
    Canonical(&ops, &operands);
    if (ops.find_first_not_of("<l") != std::string::npos || operands.size() > 3) return false;
    // Which operand holds the variable: the middle of three, else the one with free symbols.
    size_t vi = 1;
    if (operands.size() == 2) {
      const bool left = !FreeSymbols(e, operands[0]).empty();
      const bool right = !FreeSymbols(e, operands[1]).empty();
      if (left == right) return false;
      vi = left ? 0 : 1;
    }
    for (size_t i = 0; i < operands.size(); ++i) {
      if (i != vi && !FreeSymbols(e, operands[i]).empty()) return false;
    }
    uint32_t v = 0;
    BigRational k(1), c(0);
    if (!Linear(e, operands[vi], &v, &k, &c, budget_)) return false;
    Interval iv;
    iv.lo = vi == 0 ? End{nullptr, 0, -1} : Finite(e, operands[vi - 1]);
    iv.hi = vi + 1 == operands.size() ? End{nullptr, 0, 1} : Finite(e, operands[vi + 1]);
    iv.lo_closed = vi > 0 && ops[vi - 1] == 'l';
    iv.hi_closed = vi + 1 < operands.size() && ops[vi] == 'l';
    if (!(k == BigRational(1)) || c.sign() != 0) {
      // k·v + c between the ends: v between (end − c)/k, turned around when k < 0.
      for (End* end : {&iv.lo, &iv.hi}) {
        if (end->e == nullptr) {
          if (k.sign() < 0) end->sign = -end->sign;
          continue;
        }
        const std::optional<BigRational> value = EvaluateExact(*end->e, end->node, budget_);
        if (!value) return false;
        const std::optional<BigRational> shifted = BigRational::Sub(*value, c, budget_);
        if (!shifted) return false;
        const std::optional<BigRational> scaled = BigRational::Div(*shifted, k, budget_);
        if (!scaled) return false;
        *end = Exact(*scaled);
      }
      if (k.sign() < 0) {
        std::swap(iv.lo, iv.hi);
        std::swap(iv.lo_closed, iv.hi_closed);
      }
    }
    // |v| between a ≥ 0 and b is v in [−b, −a] ∪ [a, b].
    if (e.node(v).kind == Kind::kFunction && e.text(v) == "abs" && iv.lo.e != nullptr) {
      const std::optional<BigRational> lo = EvaluateExact(*iv.lo.e, iv.lo.node, budget_);
      if (lo && lo->sign() >= 0 && iv.hi.e != nullptr) {
        const std::optional<BigRational> hi = EvaluateExact(*iv.hi.e, iv.hi.node, budget_);
        if (!hi) return false;
        const BigRational zero(0);
        const std::optional<BigRational> neg_lo = BigRational::Sub(zero, *lo, budget_);
        const std::optional<BigRational> neg_hi = BigRational::Sub(zero, *hi, budget_);
        if (!neg_lo || !neg_hi) return false;
        out->push_back(Interval{Exact(*neg_hi), Exact(*neg_lo), iv.hi_closed, iv.lo_closed});
        out->push_back(iv);
        *var_expr = &e;
        *var = e.kids(v)[0];
        return true;
      }
    }
    out->push_back(iv);
    *var_expr = &e;
    *var = v;
    return true;
  }

  bool EndEq(const End& a, const End& b) {
    if (a.e == nullptr || b.e == nullptr)
      return a.e == nullptr && b.e == nullptr && a.sign == b.sign;
    return Eq(*a.e, a.node, *b.e, b.node);
  }
  bool SameIntervals(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    auto covered = [&](const std::vector<Interval>& from, const std::vector<Interval>& to) {
      for (const Interval& f : from) {
        bool found = false;
        for (const Interval& t : to) {
          if (f.lo_closed == t.lo_closed && f.hi_closed == t.hi_closed && EndEq(f.lo, t.lo) &&
              EndEq(f.hi, t.hi)) {
            found = true;
            break;
          }
        }
        if (!found) return false;
      }
      return true;
    };
    return covered(a, b) && covered(b, a);
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

  static bool AllLabelled(const Expr& e, uint32_t x) {
    for (uint32_t k : e.kids(x)) {
      if (!LabelledValue(e, k)) return false;
    }
    return true;
  }

  // Two bare lists, `a` the answer's and `b` the reference's: each element of the reference is
  // paired with an element of the answer of its own (a repeat in the reference is a multiplicity:
  // "1, 1, 2, 3, 5" is not "1, 2, 3, 5"), and every element of the answer matches one of the
  // reference (a solution listed twice is still that solution).
  bool Matching(const Expr& a, uint32_t x, const Expr& b, uint32_t y) {
    const auto ka = a.kids(x), kb = b.kids(y);
    std::vector<bool> used(ka.size(), false);
    for (uint32_t r : kb) {
      bool found = false;
      for (size_t t = 0; t < ka.size() && !found; ++t) {
        if (!used[t] && Eq(a, ka[t], b, r)) used[t] = found = true;
      }
      if (!found) return false;
    }
    for (size_t t = 0; t < ka.size(); ++t) {
      if (used[t]) continue;
      bool found = false;
      for (uint32_t r : kb) {
        if (Eq(a, ka[t], b, r)) {
          found = true;
          break;
        }
      }
      if (!found) return false;
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
    const std::vector<std::string> integers = IntegerSymbols(a, oa, b, ob);
    std::optional<Complex> ratio;
    int agreeing = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      FillTrial(trial, integers, &point);
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
    const uint32_t ax[] = {x}, by[] = {y};
    const std::vector<std::string> integers = IntegerSymbols(a, ax, b, by);
    int agreeing = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      FillTrial(trial, integers, &point);
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
  std::deque<Expr> scratch_;  // computed interval ends
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
