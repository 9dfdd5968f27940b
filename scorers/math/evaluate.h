// Values of expression trees: exact (a BigRational, when the tree is rational arithmetic) and
// numeric (complex long double at an assignment of the free symbols), both budgeted.
//
//   Budget budget;
//   std::optional<BigRational> v = EvaluateExact(e, e.root, budget);      // 1/2 for "\frac{2}{4}"
//   std::optional<Complex> z = EvaluateAt(e, e.root, point, budget);     // for "\sqrt{2}x"
#pragma once

#include <complex>
#include <optional>
#include <string>
#include <vector>

#include "scorers/math/big_rational.h"
#include "scorers/math/expr.h"

namespace rlscore::scorers::math {

using Complex = std::complex<long double>;

// The exact value of `node` when it is built from numbers with +, −, ×, ÷, integer powers
// (exponents up to 4096 in magnitude), factorials, binomials, percentages and perfect roots;
// nullopt otherwise (symbols, π, irrational roots, sets …) or when the budget runs out
// (budget.exceeded then tells the two apart).
std::optional<BigRational> EvaluateExact(const Expr& e, uint32_t node, Budget& budget);

// A value for each free symbol, by name.
struct Point {
  std::vector<std::string> names;
  std::vector<Complex> values;
  std::optional<Complex> Find(std::string_view name) const;
};

// The numeric value of `node` at `point` (symbols missing from it are an error: nullopt). Uses
// the principal branch; a real odd root of a negative real is real. nullopt for non-scalar
// nodes, undefined values (division by zero, NaN) and budget exhaustion.
std::optional<Complex> EvaluateAt(const Expr& e, uint32_t node, const Point& point, Budget& budget);

// The free symbols under `node`, sorted and unique.
std::vector<std::string> FreeSymbols(const Expr& e, uint32_t node);

// The free symbols in the bounds of the \sum and \prod under `node` ("n" of
// "\sum_{k=0}^{n-1}"), sorted and unique: integers by nature, so a numeric test gives them
// integer values, at which the sum can be expanded.
std::vector<std::string> SymbolsInBounds(const Expr& e, uint32_t node);

}  // namespace rlscore::scorers::math
