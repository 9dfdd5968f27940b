// The expression tree that answers and references parse into (docs/VERIFIER.md), stored flat in
// arrays: cheap to build, cheap to walk, bounded by the parser's node budget.
//
//   Expr e;                                   // builds "2x + 1"
//   uint32_t two = e.AddNumber(BigRational(2));
//   uint32_t x = e.AddSymbol("x");
//   uint32_t prod = e.Add(Kind::kMul, {two, x});
//   e.root = e.Add(Kind::kAdd, {prod, e.AddNumber(BigRational(1))});
//   e.DebugString();                          // "(+ (* 2 x) 1)"
//
// DebugString format (one s-expression per node, children in order):
//   number      its exact value: "3", "-3/4" (a decimal 0.5 prints as "1/2")
//   symbol      its name: "x", "theta", "a_1"
//   constant    "pi", "e", "i", "inf"
//   operators   "(+ a b c)", "(* a b)", "(- a)" (kNeg), "(/ a b)", "(^ a b)", "(! a)", "(% a)",
//               "(+- a b)" / "(+- b)" (kPlusMinus), "(sqrt a)", "(root a n)" (kRoot)
//   function    "(sin x)", "(log x b)", "(binom n k)", "(abs x)"
//   relation    "(rel x = 3)", "(rel 1 < x <= 3)": operands interleaved with = != < <= > >= ~=
//   collections "(set 1 2)", "(tuple 1 2)", "(interval [ 0 1 ))", "(union A B)", "emptyset",
//               "(matrix (1 2) (3 4))" (one list per row)
//   answers     "(text "no solution")", "(choice C)", "(unit km 3)"
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scorers/math/big_rational.h"

namespace rlscore::scorers::math {

enum class Kind : uint8_t {
  kNumber,     // an exact rational: payload indexes Expr::numbers
  kSymbol,     // a variable: payload indexes Expr::strings ("x", "theta", "a_1")
  kConstant,   // payload is a Constant
  kAdd,        // n-ary sum
  kMul,        // n-ary product (implicit multiplication included)
  kNeg,        // unary minus, one child
  kDiv,        // a / b, two children (fractions, \frac, ÷)
  kPow,        // base ^ exponent, two children
  kRoot,       // one child: square root; two children: {radicand, index} for \sqrt[n]{}
  kFactorial,  // n!, one child
  kFunction,   // payload: name in Expr::strings ("sin", "cos", "tan", "log", "ln", "exp",
               // "binom", "abs", ...); children: the arguments (log base: {x, base})
  kPlusMinus,  // a ± b: {a, b}; ±b: {b}
  kPercent,    // x%, one child
  kRelation,   // a chain a R b R c: children are the operands; payload indexes Expr::strings,
              // one character per relation: '=', '!' (≠), '<', 'l' (≤), '>', 'g' (≥), '~' (≈)
  kSet,       // {a, b, c}: unordered
  kTuple,     // (a, b): ordered; flags bit 0 (kBareList): a list written without brackets
              // ("2, -3", several boxes), which is unordered
  kInterval,  // {lo, hi}; flags: bit 0 left closed, bit 1 right closed
  kUnion,     // A ∪ B ∪ …: children are sets or intervals
  kEmptySet,  // ∅, \emptyset, \varnothing, {}
  kMatrix,    // rows × cols children, row-major
  kText,      // a text answer: payload is the normalised text (lower case, single spaces)
  kChoice,    // a multiple-choice letter: payload is the upper-case letter
  kWithUnit,  // a quantity: one child (the value); payload is the unit's canonical name ("km")
};

enum class Constant : uint8_t { kPi, kE, kI, kInfinity };

// Node::flags of a kTuple written without brackets.
inline constexpr uint8_t kBareList = 1;

struct Node {
  Kind kind;
  // kInterval: bit 0 left closed, bit 1 right closed. kNumber: the count of digits written after
  // the decimal point (0 for integers and fractions, saturating at 255), so that equivalence can
  // tell a rounded decimal ("0.33") from an exact value. kPlusMinus: 1 when written \mp.
  uint8_t flags = 0;
  uint16_t rows = 0;  // kMatrix
  uint16_t cols = 0;  // kMatrix
  uint32_t payload = 0;
  uint32_t first_child = 0;  // index into Expr::children
  uint32_t num_children = 0;
};

// Thread-compatible: const methods may be called concurrently.
class Expr {
 public:
  std::vector<Node> nodes;
  std::vector<uint32_t> children;  // child node indices, each node's run contiguous
  std::vector<BigRational> numbers;
  std::vector<std::string> strings;
  uint32_t root = 0;

  uint32_t AddNumber(BigRational value);
  uint32_t AddSymbol(std::string_view name);
  uint32_t AddConstant(Constant c);
  uint32_t AddText(Kind kind, std::string_view text);  // kText, kChoice, kSymbol, kFunction...
  // Appends `s` to `strings` and returns its index: the payload of kFunction, kRelation and
  // kWithUnit nodes built with Add().
  uint32_t AddString(std::string_view s);
  // A node of `kind` over `kids` (already added). `payload`, `flags`, `rows`, `cols` as Node.
  uint32_t Add(Kind kind, std::span<const uint32_t> kids, uint32_t payload = 0, uint8_t flags = 0);
  uint32_t Add(Kind kind, std::initializer_list<uint32_t> kids, uint32_t payload = 0,
               uint8_t flags = 0) {
    return Add(kind, std::span<const uint32_t>(kids.begin(), kids.size()), payload, flags);
  }

  // Copies the subtree of `from` at `node` into this expression and returns its root here.
  // `plus_minus` > 0 copies every a ± b as a + b, < 0 as a − b (\mp the other way), 0 keeps it.
  // Recursion follows the tree's height, which the parser bounds.
  uint32_t Graft(const Expr& from, uint32_t node, int plus_minus = 0);

  const Node& node(uint32_t i) const { return nodes[i]; }
  std::span<const uint32_t> kids(uint32_t i) const {
    return std::span<const uint32_t>(children.data() + nodes[i].first_child, nodes[i].num_children);
  }
  std::string_view text(uint32_t i) const { return strings[nodes[i].payload]; }
  const BigRational& number(uint32_t i) const { return numbers[nodes[i].payload]; }

  // An s-expression for tests and logs: "(+ (* 2 x) 1)", "(interval [ 0 1 ))", "(set 1 2)".
  std::string DebugString() const { return DebugString(root); }
  std::string DebugString(uint32_t node) const;
};

}  // namespace rlscore::scorers::math
