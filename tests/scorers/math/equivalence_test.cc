// Equivalence through the parser: answer and reference as a model and a dataset write them.
#include "scorers/math/equivalence.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scorers/math/parser.h"

namespace rlscore::scorers::math {
namespace {

struct Case {
  const char* answer;
  const char* reference;
  bool equal;
};

Expr MustParse(const char* text) {
  Budget budget;
  absl::StatusOr<Expr> e = ParseAnswer(text, ParseLimits{}, budget);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status();
  return e.ok() ? *std::move(e) : Expr();
}

TEST(Equivalence, SpecSection2) {
  const Case cases[] = {
      // Numbers.
      {"1,000", "1000", true},
      {"0.5", "\\frac{1}{2}", true},
      {"\\frac12", "0.5", true},
      {"\\dfrac{2}{4}", "1/2", true},
      {"2", "1/2", false},
      {"0.05", "0.5", false},
      {"0.333", "\\frac{1}{3}", false},
      {"3.1e8", "310000000", true},
      {"3.1\\times10^{8}", "3.1e8", true},
      {"3.1", "3.1e8", false},
      {"3\\frac{1}{2}", "\\frac{7}{2}", true},
      {"-\\frac{1}{2}", "-0.5", true},
      {"2+3", "5", true},
      {"\\frac{1}{2004!}", "\\frac{1}{2006!}", false},
      {"\\frac{1}{2004!}", "\\frac{1}{2004!}", true},
      // Radicals, constants.
      {"\\sqrt{8}", "2\\sqrt{2}", true},
      {"\\sqrt{8}", "2\\sqrt{3}", false},
      {"2\\pi", "\\pi \\cdot 2", true},
      {"\\pi", "3.14", false},
      {"\\sqrt[3]{27}", "3", true},
      // Algebra.
      {"(x+1)^2", "x^2+2x+1", true},
      {"(x+1)^2", "x^2+x+1", false},
      {"\\frac{x^2-1}{x-1}", "x+1", true},
      // Percentages and units.
      {"40\\%", "40", true},
      {"40\\%", "0.4", true},
      {"40\\%", "4", false},
      {"3 km", "3", true},
      {"3 km", "3 miles", false},
      {"90^\\circ", "90", true},
      // Relations.
      {"x = 3", "3", true},
      {"3", "x = 3", true},
      {"x=3", "x=4", false},
      {"y = 2x + 1", "2x - y + 1 = 0", true},
      {"x > 2", "2 < x", true},
      {"x \\ge 2", "x > 2", false},
      // Sets, tuples, intervals, matrices.
      {"\\{3, 1\\}", "\\{1, 3\\}", true},
      {"(3, 1)", "(1, 3)", false},
      {"(3,1)", "\\{1,3\\}", false},
      {"[0, 1)", "[0, 1)", true},
      {"[0, 1)", "[0, 1]", false},
      {"(0, 1)", "(0, 1)", true},
      {"\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}",
       true},
      {"\\begin{pmatrix}1&2\\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", false},
      {"\\emptyset", "\\varnothing", true},
      {"\\mathbb{R}", "(-\\infty, \\infty)", true},
      {"\\text{all real numbers}", "(-\\infty,\\infty)", true},
      {"\\mathbb{R}", "[0, \\infty)", false},
      {"\\frac{2R}{2}", "R", true},
      {"(-\\infty, 3]", "(-\\infty,3]", true},
      {"(0, \\infty)", "(0,\\infty)", true},
      {"(-\\infty, 3]", "(\\infty, 3]", false},
      {"\\frac{6!}{2!\\,4!}", "15", true},
      // Matrix arithmetic is evaluated; anything that is not a matrix or a scalar makes none (a
      // fuzzer found "{120}{}", 120 times an empty set, binding a reference to nothing).
      {"\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}+\\begin{pmatrix}5&6\\\\7&8\\end{pmatrix}",
       "\\begin{pmatrix}6&8\\\\10&12\\end{pmatrix}", true},
      {"2\\begin{pmatrix}1&2\\end{pmatrix}", "\\begin{pmatrix}2&4\\end{pmatrix}", true},
      {"\\begin{pmatrix}1&2\\end{pmatrix}\\begin{pmatrix}1&2\\end{pmatrix}",
       "\\begin{pmatrix}5\\end{pmatrix}", false},
      {"{120}{}", "\\begin{pmatrix}120\\end{pmatrix}", false},
      // Lists.
      {"1,2", "12", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.answer) + " vs " + c.reference);
    const Expr a = MustParse(c.answer);
    const Expr b = MustParse(c.reference);
    if (a.nodes.empty() || b.nodes.empty()) continue;
    Budget budget;
    const Equivalence eq = Equivalent(a, a.root, b, b.root, budget);
    EXPECT_EQ(eq, c.equal ? Equivalence::kEqual : Equivalence::kNotEqual)
        << a.DebugString() << " vs " << b.DebugString();
  }
}

TEST(Equivalence, BudgetIsAVerdictNotAHang) {
  const Expr a = MustParse("5^{5^{5^{5^5}}}");
  const Expr b = MustParse("5");
  if (a.nodes.empty() || b.nodes.empty()) return;
  Budget budget;
  const Equivalence eq = Equivalent(a, a.root, b, b.root, budget);
  EXPECT_NE(eq, Equivalence::kEqual);
  EXPECT_TRUE(eq == Equivalence::kBudgetExceeded || !budget.exceeded);
}

}  // namespace
}  // namespace rlscore::scorers::math
