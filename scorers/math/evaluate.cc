#include "scorers/math/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace rlscore::scorers::math {
namespace {

constexpr int64_t kMaxExactExponent = 4096;

std::optional<int64_t> SmallInteger(const BigRational& r) {
  if (!r.is_integer()) return std::nullopt;
  return r.num().ToInt64();
}

// The exact k-th root of a non-negative integer, when there is one.
std::optional<BigInt> ExactRoot(const BigInt& x, int64_t k, Budget& budget) {
  if (x.negative() || k < 1) return std::nullopt;
  if (x.is_zero()) return BigInt(0);
  // Floating estimate, then check the neighbours exactly.
  const long double estimate = std::pow(static_cast<long double>(x.ToDouble()), 1.0L / k);
  if (!std::isfinite(estimate) || estimate > 9.0e18L) return std::nullopt;
  const int64_t guess = static_cast<int64_t>(std::llround(estimate));
  for (int64_t c = std::max<int64_t>(0, guess - 1); c <= guess + 1; ++c) {
    const std::optional<BigInt> p = BigInt::Pow(BigInt(c), static_cast<uint64_t>(k), budget);
    if (!p) return std::nullopt;
    if (*p == x) return BigInt(c);
  }
  return std::nullopt;
}

}  // namespace

std::optional<Complex> Point::Find(std::string_view name) const {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return values[i];
  }
  return std::nullopt;
}

std::optional<BigRational> EvaluateExact(const Expr& e, uint32_t node, Budget& budget) {
  if (!budget.Spend(1)) return std::nullopt;
  const Node& n = e.node(node);
  const std::span<const uint32_t> kids = e.kids(node);
  auto kid = [&](size_t i) { return EvaluateExact(e, kids[i], budget); };
  switch (n.kind) {
    case Kind::kNumber:
      return e.number(node);
    case Kind::kNeg: {
      std::optional<BigRational> a = kid(0);
      if (!a) return std::nullopt;
      return BigRational::Sub(BigRational(0), *a, budget);
    }
    case Kind::kAdd:
    case Kind::kMul: {
      std::optional<BigRational> acc = BigRational(n.kind == Kind::kAdd ? 0 : 1);
      for (size_t i = 0; i < kids.size() && acc; ++i) {
        std::optional<BigRational> v = kid(i);
        if (!v) return std::nullopt;
        acc = n.kind == Kind::kAdd ? BigRational::Add(*acc, *v, budget)
                                   : BigRational::Mul(*acc, *v, budget);
      }
      return acc;
    }
    case Kind::kDiv: {
      std::optional<BigRational> a = kid(0), b = kid(1);
      if (!a || !b) return std::nullopt;
      return BigRational::Div(*a, *b, budget);
    }
    case Kind::kPercent: {
      std::optional<BigRational> a = kid(0);
      if (!a) return std::nullopt;
      return BigRational::Div(*a, BigRational(100), budget);
    }
    case Kind::kPow: {
      std::optional<BigRational> base = kid(0), exponent = kid(1);
      if (!base || !exponent) return std::nullopt;
      if (const std::optional<int64_t> k = SmallInteger(*exponent)) {
        if (*k > kMaxExactExponent || *k < -kMaxExactExponent) {
          budget.exceeded = budget.exceeded || base->num().bits() > 1;
          return std::nullopt;
        }
        return BigRational::Pow(*base, *k, budget);
      }
      // A rational exponent p/q of a perfect q-th power: (a/b)^(p/q).
      const std::optional<int64_t> q = exponent->den().ToInt64();
      const std::optional<int64_t> p = exponent->num().ToInt64();
      if (!q || !p || *q > 64 || base->sign() < 0) return std::nullopt;
      const std::optional<BigInt> rn = ExactRoot(base->num(), *q, budget);
      const std::optional<BigInt> rd = ExactRoot(base->den(), *q, budget);
      if (!rn || !rd) return std::nullopt;
      std::optional<BigRational> root = BigRational::Make(*rn, *rd, budget);
      if (!root || *p > kMaxExactExponent || *p < -kMaxExactExponent) return std::nullopt;
      return BigRational::Pow(*root, *p, budget);
    }
    case Kind::kRoot: {
      std::optional<BigRational> x = kid(0);
      int64_t k = 2;
      if (kids.size() == 2) {
        const std::optional<BigRational> index = kid(1);
        if (!index || !index->is_integer()) return std::nullopt;
        const std::optional<int64_t> small = index->num().ToInt64();
        if (!small.has_value() || *small < 1 || *small > 64) return std::nullopt;
        k = *small;
      }
      if (!x) return std::nullopt;
      BigInt num = x->num();
      bool negate = false;
      if (num.negative() && k % 2 == 1) {
        num = -num;
        negate = true;
      }
      const std::optional<BigInt> rn = ExactRoot(num, k, budget);
      const std::optional<BigInt> rd = ExactRoot(x->den(), k, budget);
      if (!rn || !rd) return std::nullopt;
      return BigRational::Make(negate ? -*rn : *rn, *rd, budget);
    }
    case Kind::kFactorial: {
      const std::optional<BigRational> a = kid(0);
      if (!a || !a->is_integer()) return std::nullopt;
      const std::optional<int64_t> k = a->num().ToInt64();
      if (!k.has_value() || *k < 0) return std::nullopt;
      std::optional<BigInt> f = BigInt::Factorial(static_cast<uint64_t>(*k), budget);
      if (!f) return std::nullopt;
      return BigRational(*f);
    }
    case Kind::kFunction: {
      if (e.text(node) == "mod" && kids.size() == 2) {
        const std::optional<BigRational> a = kid(0), m = kid(1);
        if (!a || !m || !a->is_integer() || !m->is_integer() || m->sign() == 0) return std::nullopt;
        const std::optional<int64_t> av = a->num().ToInt64(), mv = m->num().ToInt64();
        if (!av || !mv || *mv == INT64_MIN) return std::nullopt;
        const int64_t mod = *mv < 0 ? -*mv : *mv;
        int64_t r = *av % mod;
        if (r < 0) r += mod;
        return BigRational(r);
      }
      if (e.text(node) != "binom" || kids.size() != 2) return std::nullopt;
      const std::optional<BigRational> a = kid(0);
      const std::optional<BigRational> b = kid(1);
      if (!a || !b || !a->is_integer() || !b->is_integer()) return std::nullopt;
      const std::optional<int64_t> nn = a->num().ToInt64();
      const std::optional<int64_t> kk = b->num().ToInt64();
      if (!nn.has_value() || !kk.has_value() || *nn < 0 || *kk < 0) return std::nullopt;
      if (*kk > *nn) return BigRational(0);
      // C(n, k) = Π (n - k + i) / i, exact at every step.
      std::optional<BigRational> c = BigRational(1);
      const int64_t k = std::min(*kk, *nn - *kk);
      for (int64_t i = 1; i <= k && c; ++i) {
        c = BigRational::Mul(*c, BigRational(*nn - k + i, i), budget);
      }
      return c;
    }
    default:
      return std::nullopt;
  }
}

// The most terms a \sum or \prod is expanded to.
constexpr long double kMaxBigOperatorTerms = 10000;

// (sum body k lo hi) / (prod body k lo hi) at `point`: integer bounds, the index bound to each
// integer in turn, one budget step per term on top of the body's.
static std::optional<Complex> BigOperatorAt(const Expr& e, uint32_t node, const Point& point,
                                            Budget& budget) {
  const auto kids = e.kids(node);
  if (kids.size() != 4) return std::nullopt;
  const std::optional<Complex> lo = EvaluateAt(e, kids[2], point, budget);
  const std::optional<Complex> hi = EvaluateAt(e, kids[3], point, budget);
  if (!lo || !hi || lo->imag() != 0 || hi->imag() != 0) return std::nullopt;
  const long double a = std::round(lo->real()), b = std::round(hi->real());
  if (std::abs(a - lo->real()) > 1e-9L || std::abs(b - hi->real()) > 1e-9L ||
      b - a > kMaxBigOperatorTerms) {
    return std::nullopt;
  }
  const bool sum = e.text(node) == "sum";
  Point inner;
  inner.names.emplace_back(e.text(kids[1]));
  inner.values.emplace_back(0, 0);
  inner.names.insert(inner.names.end(), point.names.begin(), point.names.end());
  inner.values.insert(inner.values.end(), point.values.begin(), point.values.end());
  Complex acc = sum ? Complex(0, 0) : Complex(1, 0);
  for (long double k = a; k <= b; k += 1) {
    if (!budget.Spend(1)) return std::nullopt;
    inner.values[0] = Complex(k, 0);
    const std::optional<Complex> v = EvaluateAt(e, kids[0], inner, budget);
    if (!v) return std::nullopt;
    acc = sum ? acc + *v : acc * *v;
  }
  if (!std::isfinite(acc.real()) || !std::isfinite(acc.imag())) return std::nullopt;
  return acc;
}

std::optional<Complex> EvaluateAt(const Expr& e, uint32_t node, const Point& point,
                                  Budget& budget) {
  if (!budget.Spend(1)) return std::nullopt;
  const Node& n = e.node(node);
  const std::span<const uint32_t> kids = e.kids(node);
  auto kid = [&](size_t i) { return EvaluateAt(e, kids[i], point, budget); };
  auto finite = [](const Complex& z) -> std::optional<Complex> {
    if (!std::isfinite(z.real()) || !std::isfinite(z.imag())) return std::nullopt;
    return z;
  };
  switch (n.kind) {
    case Kind::kNumber:
      return Complex(static_cast<long double>(e.number(node).ToDouble()), 0);
    case Kind::kSymbol:
      return point.Find(e.text(node));
    case Kind::kConstant:
      switch (static_cast<Constant>(n.payload)) {
        case Constant::kPi:
          return Complex(std::numbers::pi_v<long double>, 0);
        case Constant::kE:
          return Complex(std::numbers::e_v<long double>, 0);
        case Constant::kI:
          return Complex(0, 1);
        case Constant::kInfinity:
          return std::nullopt;
      }
      return std::nullopt;
    case Kind::kNeg: {
      std::optional<Complex> a = kid(0);
      if (!a) return std::nullopt;
      return -*a;
    }
    case Kind::kAdd:
    case Kind::kMul: {
      Complex acc = n.kind == Kind::kAdd ? Complex(0, 0) : Complex(1, 0);
      for (size_t i = 0; i < kids.size(); ++i) {
        std::optional<Complex> v = kid(i);
        if (!v) return std::nullopt;
        acc = n.kind == Kind::kAdd ? acc + *v : acc * *v;
      }
      return finite(acc);
    }
    case Kind::kDiv: {
      std::optional<Complex> a = kid(0), b = kid(1);
      if (!a || !b || std::abs(*b) == 0) return std::nullopt;
      return finite(*a / *b);
    }
    case Kind::kPercent: {
      std::optional<Complex> a = kid(0);
      if (!a) return std::nullopt;
      return *a / 100.0L;
    }
    case Kind::kPow: {
      std::optional<Complex> a = kid(0), b = kid(1);
      if (!a || !b) return std::nullopt;
      if (b->imag() == 0 && b->real() == std::round(b->real()) && std::abs(b->real()) <= 64) {
        // Integer powers by repeated multiplication: exact signs for negative bases.
        const int64_t k = static_cast<int64_t>(b->real());
        Complex r(1, 0);
        for (int64_t i = 0; i < std::abs(k); ++i) r *= *a;
        if (k < 0) {
          if (std::abs(r) == 0) return std::nullopt;
          r = Complex(1, 0) / r;
        }
        return finite(r);
      }
      // A negative real to a rational power p/q with q odd is real, as an odd root is:
      // x^{2/3} is (∛x)², so it agrees with "\sqrt[3]{x}^2" for every real x.
      if (a->imag() == 0 && a->real() < 0 && b->imag() == 0) {
        for (int q = 3; q <= 15; q += 2) {
          const long double pq = b->real() * q;
          const long double p = std::round(pq);
          if (std::abs(pq - p) <= 1e-12L * std::max(1.0L, std::abs(pq))) {
            const long double magnitude = std::pow(-a->real(), b->real());
            const bool odd = std::fmod(std::abs(p), 2.0L) == 1.0L;
            return finite(Complex(odd ? -magnitude : magnitude, 0));
          }
        }
      }
      return finite(std::pow(*a, *b));
    }
    case Kind::kRoot: {
      std::optional<Complex> x = kid(0);
      long double k = 2;
      if (kids.size() == 2) {
        std::optional<Complex> index = kid(1);
        if (!index || index->imag() != 0 || index->real() == 0) return std::nullopt;
        k = index->real();
      }
      if (!x) return std::nullopt;
      if (x->imag() == 0 && x->real() < 0 && std::fmod(k, 2.0L) == 1.0L) {
        return Complex(-std::pow(-x->real(), 1.0L / k), 0);  // real odd root
      }
      return finite(std::pow(*x, Complex(1.0L / k, 0)));
    }
    case Kind::kFactorial: {
      std::optional<Complex> a = kid(0);
      if (!a || a->imag() != 0) return std::nullopt;
      return finite(Complex(std::tgamma(a->real() + 1), 0));
    }
    case Kind::kFunction: {
      const std::string_view name = e.text(node);
      if (name == "sum" || name == "prod") return BigOperatorAt(e, node, point, budget);
      if (name == "lim") return std::nullopt;  // limits are not evaluated
      std::vector<Complex> args;
      for (size_t i = 0; i < kids.size(); ++i) {
        std::optional<Complex> v = kid(i);
        if (!v) return std::nullopt;
        args.push_back(*v);
      }
      if (args.empty()) return std::nullopt;
      const Complex x = args[0];
      Complex r;
      if (name == "sin") {
        r = std::sin(x);
      } else if (name == "cos") {
        r = std::cos(x);
      } else if (name == "tan") {
        r = std::tan(x);
      } else if (name == "sec") {
        r = Complex(1, 0) / std::cos(x);
      } else if (name == "csc") {
        r = Complex(1, 0) / std::sin(x);
      } else if (name == "cot") {
        r = Complex(1, 0) / std::tan(x);
      } else if (name == "arcsin") {
        r = std::asin(x);
      } else if (name == "arccos") {
        r = std::acos(x);
      } else if (name == "arctan") {
        r = std::atan(x);
      } else if (name == "ln") {
        r = std::log(x);
      } else if (name == "log") {
        // log x is base 10 unless a base is given (log_b x).
        r = args.size() == 2 ? std::log(x) / std::log(args[1]) : std::log10(x);
      } else if (name == "exp") {
        r = std::exp(x);
      } else if (name == "sinh") {
        r = std::sinh(x);
      } else if (name == "cosh") {
        r = std::cosh(x);
      } else if (name == "tanh") {
        r = std::tanh(x);
      } else if (name == "coth") {
        r = Complex(1, 0) / std::tanh(x);
      } else if (name == "arccot") {
        r = std::atan(Complex(1, 0) / x);
      } else if (name == "lg") {
        r = std::log10(x);
      } else if (name == "mod" && args.size() == 2 && x.imag() == 0 && args[1].imag() == 0 &&
                 args[1].real() != 0) {
        const long double m = std::abs(args[1].real());
        long double v = std::fmod(x.real(), m);
        if (v < 0) v += m;
        r = Complex(v, 0);
      } else if (name == "abs") {
        r = Complex(std::abs(x), 0);
      } else if (name == "binom" && args.size() == 2 && x.imag() == 0 && args[1].imag() == 0) {
        const long double nn = x.real(), kk = args[1].real();
        r = Complex(std::tgamma(nn + 1) / (std::tgamma(kk + 1) * std::tgamma(nn - kk + 1)), 0);
      } else {
        return std::nullopt;
      }
      return finite(r);
    }
    default:
      return std::nullopt;
  }
}

namespace {

// The index of a \sum, \prod or \lim is bound in its body (kid 0) and named by kid 1.
bool BindsIndex(const Expr& e, uint32_t i) {
  if (e.node(i).kind != Kind::kFunction || e.node(i).num_children < 3) return false;
  const std::string_view name = e.text(i);
  return name == "sum" || name == "prod" || name == "lim";
}

// Recursion follows the tree's height, which the parser bounds.
void CollectSymbols(const Expr& e, uint32_t i, std::vector<std::string_view>& bound,
                    std::vector<std::string>& out) {
  if (e.node(i).kind == Kind::kSymbol) {
    if (std::find(bound.begin(), bound.end(), e.text(i)) == bound.end()) {
      out.emplace_back(e.text(i));
    }
    return;
  }
  const auto kids = e.kids(i);
  if (BindsIndex(e, i)) {
    bound.push_back(e.text(kids[1]));
    CollectSymbols(e, kids[0], bound, out);
    bound.pop_back();
    for (size_t k = 2; k < kids.size(); ++k) CollectSymbols(e, kids[k], bound, out);
    return;
  }
  for (uint32_t k : kids) CollectSymbols(e, k, bound, out);
}

// Free symbols of the bounds (kids 2 and 3) of every \sum and \prod under `i`.
void CollectBoundSymbols(const Expr& e, uint32_t i, std::vector<std::string_view>& bound,
                         std::vector<std::string>& out) {
  const auto kids = e.kids(i);
  if (BindsIndex(e, i)) {
    const std::string_view name = e.text(i);
    if (kids.size() == 4 && (name == "sum" || name == "prod")) {
      CollectSymbols(e, kids[2], bound, out);
      CollectSymbols(e, kids[3], bound, out);
    }
    bound.push_back(e.text(kids[1]));
    CollectBoundSymbols(e, kids[0], bound, out);
    bound.pop_back();
    return;
  }
  for (uint32_t k : kids) CollectBoundSymbols(e, k, bound, out);
}

}  // namespace

std::vector<std::string> SymbolsInBounds(const Expr& e, uint32_t node) {
  std::vector<std::string> out;
  std::vector<std::string_view> bound;
  CollectBoundSymbols(e, node, bound, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> FreeSymbols(const Expr& e, uint32_t node) {
  std::vector<std::string> out;
  std::vector<std::string_view> bound;
  CollectSymbols(e, node, bound, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace rlscore::scorers::math
