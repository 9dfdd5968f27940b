// Is an answer equivalent to a reference (docs/DESIGN.md §2)?
//
//   Equivalence r = Equivalent(answer, answer.root, reference, reference.root, budget);
//
// Scalars: exact rationals when both sides evaluate to one (no tolerance: 0.333 is not 1/3, and
// 1/2004! is not 1/2006!); otherwise randomised numeric identity testing at several points with
// a relative tolerance. Sets unordered; tuples, intervals (with openness) and matrices (with
// shape) ordered; equations equivalent when lhs − rhs are proportional; inequalities compared
// with flipped sides normalised; "x = 3" matches "3"; a percentage matches its number and its
// decimal value; a unit on one side only is ignored, different units never match.
#pragma once

#include <cstdint>

#include "scorers/math/big_rational.h"
#include "scorers/math/expr.h"

namespace rlscore::scorers::math {

enum class Equivalence : uint8_t { kEqual, kNotEqual, kBudgetExceeded };

Equivalence Equivalent(const Expr& a, uint32_t a_node, const Expr& b, uint32_t b_node,
                       Budget& budget);

}  // namespace rlscore::scorers::math
