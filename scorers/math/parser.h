// From an answer as a model writes it (LaTeX or plain text) to an expression tree (docs/DESIGN.md
// §2): normalisation, then a hand-written Pratt parser. Bounded: input bytes, nesting depth and
// node count are capped by `ParseLimits`, and the parser never backtracks.
//
//   Budget budget;
//   absl::StatusOr<Expr> e = ParseAnswer("\\dfrac{1}{2}\\pi", ParseLimits{}, budget);
//   e->DebugString();   // "(* (/ 1 2) pi)"
//
// Normalisation (lexer.h) drops typesetting (\left, \,, $, \displaystyle), degrees and currency,
// unwraps \text{}/\mathrm{}/\boxed{}, and maps Unicode (−, ×, ÷, π, ≤, ∞, ², …) to LaTeX. Then:
//
//   numbers      "1,000" "1\,000" "1{,}000" are 1000 only in proper groups of three, and a bare ','
//                only outside ( [ \{ — so "1,2", "0,100" and "(1,100)" stay lists/pairs. "3.1e8"
//                is one number; "3.1\times10^{8}" is (* 31/10 (^ 10 8)), folded by the evaluator.
//                "-3" is the number -3; "2-3" is (+ 2 -3). Number words zero..ninety-nine.
//                "0.1\overline{6}" is exactly 1/6.
//   mixed        "3\frac{1}{2}" and "3 1/2" are (+ 3 (/ 1 2)) when both parts are integer
//                literals; "2\frac{x}{3}" is a product.
//   macro args   \frac \sqrt \binom read one character without braces, as LaTeX does ("\frac123"
//                is (1/2)·3); ^ and _ read a whole number ("2^10" is 2^{10}, as plain text means).
//   letters      a run of letters in math is a product of symbols ("xy"), unless it is a known
//                name (sin, sqrt, pi, theta, inf, a unit, a number word) or starts with a
//                function name ("sinx"). "e" is Euler's number and "i" the imaginary unit wherever
//                they stand alone (not subscripted, not inside a longer name): "2e", "e^{x}",
//                "3+4i". Subscripts join the name: "x_1", "a_{n+1}" → a_n+1.
//   functions    "\sin x", "\sin(x)", "\sin^2 x" (^ (sin x) 2), "\sin^{-1} x" (arcsin x),
//                "\log_2 8" (log 8 2); an unparenthesised argument runs over implicit factors up
//                to the next function ("\sin 2x \cos x"). |x| is (abs x).
//   brackets     "(a, b)" is a tuple — an interval reference may still match it; the equivalence
//                layer decides — except when an end is ±∞ or after \cup or "x \in", where it is
//                an open interval. "[a, b]", "[a, b)", "(a, b]" are intervals. "{a, b}" and
//                "\{a\}" are sets; "{a}" is a group; "{}" and "\{\}" are ∅.
//   lists        a top-level list separated by ',' ';' "and" "or" is a kTuple (the verifier may
//                treat it as a multi-part answer). "x \in S" parses as S.
//   choices      a single capital A–E as the whole answer ("C", "(C)", "C)", "\text{(C)}"), or a
//                parenthesised one labelling a value ("(B) 7"). Lower case is a symbol.
//   text         only words and punctuation, with a real word among them (3+ letters, a word in
//                \text{}, or "no"/"ok"-like): lower case, single spaces.
//   units        after a value: the unit table (km, miles, kg, hours, mph, ...; plurals; "cm^2",
//                "square feet", "km/h", "meters per second"); a single letter only inside
//                \text{}/\mathrm{} ("5\,\mathrm{m}"; "5m" is 5·m); any other word inside \text{},
//                or a plain word of 3+ letters ending the answer after a number ("12 apples").
//   percent      "%", "\%", "percent" → (% x). Degrees are dropped ("30^\circ" is 30).
//
// Not supported (INVALID_ARGUMENT): set-builder notation, \cap, \setminus, derivatives and
// integrals, \dots, primes, cases/aligned environments.
//
// Bounds: the tree never has more than max_nodes nodes nor a height above max_depth, so
// consumers may recurse over it; recursion while parsing is capped by max_depth, itself clamped
// to 256 whatever the caller asks. One budget step is spent per token and per node.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "scorers/math/big_rational.h"
#include "scorers/math/expr.h"

namespace rlscore::scorers::math {

struct ParseLimits {
  uint32_t max_bytes = 4096;  // of the answer text
  uint32_t max_depth = 64;    // nesting of braces, parentheses and operators
  uint32_t max_nodes = 4096;  // of the tree
};

// INVALID_ARGUMENT when the text is not a math answer the grammar knows (the caller may then
// compare it as text); RESOURCE_EXHAUSTED when a limit or `budget` ran out (the verdict is
// BUDGET_EXCEEDED). Pure; thread-safe for distinct budgets.
absl::StatusOr<Expr> ParseAnswer(std::string_view text, const ParseLimits& limits, Budget& budget);

}  // namespace rlscore::scorers::math
