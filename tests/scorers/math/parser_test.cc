// Tests of scorers/math/parser.h: one table row per accepted form (input → the tree's
// DebugString), rows for inputs that must be rejected (the status code), and adversarial inputs
// that must stop on a budget or a limit — asserted through the mechanism that tripped (its
// message, budget.exceeded), never through wall time.
#include "scorers/math/parser.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scorers/math/expr.h"

namespace rlscore::scorers::math {
namespace {

using ::testing::HasSubstr;

struct Row {
  std::string input;
  std::string tree;  // expected DebugString
};

absl::StatusOr<Expr> Parse(const std::string& text, ParseLimits limits = {}) {
  Budget budget;
  return ParseAnswer(text, limits, budget);
}

void CheckRows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    SCOPED_TRACE("input: " + row.input);
    absl::StatusOr<Expr> e = Parse(row.input);
    if (!e.ok()) {
      ADD_FAILURE() << e.status();
      continue;
    }
    EXPECT_EQ(e->DebugString(), row.tree);
  }
}

TEST(Parser, Numbers) {
  CheckRows({
      {"42", "42"},
      {"-7", "-7"},
      {"0", "0"},
      {"3.25", "13/4"},
      {".5", "1/2"},
      {"0.05", "1/20"},
      {"-0.5", "-1/2"},
      {"1,000", "1000"},
      {"1,234,567", "1234567"},
      {"1\\,000", "1000"},
      {"1{,}000", "1000"},
      {"12,345.5", "24691/2"},
      {"1,2", "(tuple 1 2)"},
      {"0,100", "(tuple 0 100)"},
      {"1,23", "(tuple 1 23)"},
      {"3{,}5", "7/2"},
      {"3.1e8", "310000000"},
      {"2E-3", "1/500"},
      {"3.1\\times10^{8}", "(* 31/10 (^ 10 8))"},
      {"3.1 \\cdot 10^8", "(* 31/10 (^ 10 8))"},
      {"\xE2\x88\x92"
       "5",
       "-5"},  // U+2212 minus sign
      {"\xE2\x80\x93"
       "5",
       "-5"},  // en dash
      {"+5", "5"},
      {"$5$", "5"},
      {"$$5$$", "5"},
      {"\\(5\\)", "5"},
      {"\\[5\\]", "5"},
      {"5.", "5"},
      {"5 .", "5"},
      {"0.\\overline{3}", "1/3"},
      {"0.1\\overline{6}", "1/6"},
      {"1.\\overline{27}", "14/11"},
      {"-0.\\overline{9}", "-1"},
      {"seven", "7"},
      {"Twenty-one", "21"},
      {"zero", "0"},
  });
}

TEST(Parser, Fractions) {
  CheckRows({
      {"\\frac{1}{2}", "(/ 1 2)"},
      {"\\dfrac{1}{2}", "(/ 1 2)"},
      {"\\tfrac{3}{4}", "(/ 3 4)"},
      {"\\cfrac{1}{1+x}", "(/ 1 (+ 1 x))"},
      {"\\frac12", "(/ 1 2)"},
      {"\\frac1{2}", "(/ 1 2)"},
      {"\\frac{1}2", "(/ 1 2)"},
      {"\\frac123", "(* (/ 1 2) 3)"},
      {"\\frac ab", "(/ a b)"},
      {"\\frac\\pi2", "(/ pi 2)"},
      {"1/2", "(/ 1 2)"},
      {"-1/2", "(/ -1 2)"},
      {"-\\frac{1}{2}", "(- (/ 1 2))"},
      {"3\\frac{1}{2}", "(+ 3 (/ 1 2))"},
      {"3\\frac12", "(+ 3 (/ 1 2))"},
      {"-3\\frac{1}{2}", "(- (+ 3 (/ 1 2)))"},
      {"3 1/2", "(+ 3 (/ 1 2))"},
      {"2\\frac{x}{3}", "(* 2 (/ x 3))"},
      {"\\frac{\\frac{1}{2}}{3}", "(/ (/ 1 2) 3)"},
      {"1/2/3", "(/ (/ 1 2) 3)"},
      {"\\frac{a+b}{c-d}", "(/ (+ a b) (+ c (- d)))"},
  });
}

TEST(Parser, Operators) {
  CheckRows({
      {"2+3", "(+ 2 3)"},
      {"2-3", "(+ 2 -3)"},
      {"x-y", "(+ x (- y))"},
      {"1+2+3", "(+ 1 2 3)"},
      {"2*3", "(* 2 3)"},
      {"2\\times 3", "(* 2 3)"},
      {"2 \\cdot 3", "(* 2 3)"},
      {"2\xC3\x97"
       "3",
       "(* 2 3)"},  // ×
      {"2\xC2\xB7"
       "3",
       "(* 2 3)"},  // ·
      {"6\\div 3", "(/ 6 3)"},
      {"6\xC3\xB7"
       "3",
       "(/ 6 3)"},  // ÷
      {"1+2\\cdot 3", "(+ 1 (* 2 3))"},
      {"(1+2)\\cdot 3", "(* (+ 1 2) 3)"},
      {"2x", "(* 2 x)"},
      {"2xy", "(* 2 x y)"},
      {"2\\pi", "(* 2 pi)"},
      {"2\\pi r", "(* 2 pi r)"},
      {"x(y+1)", "(* x (+ y 1))"},
      {"(a)(b)", "(* a b)"},
      {"(x+1)(x-1)", "(* (+ x 1) (+ x -1))"},
      {"\\sqrt{2}\\pi", "(* (sqrt 2) pi)"},
      {"-x", "(- x)"},
      {"--x", "(- (- x))"},
      {"-2x", "(* -2 x)"},
      {"-x^2", "(- (^ x 2))"},
      {"x^2", "(^ x 2)"},
      {"x^{2}", "(^ x 2)"},
      {"x^{n+1}", "(^ x (+ n 1))"},
      {"2^10", "(^ 2 10)"},
      {"2^{-1}", "(^ 2 -1)"},
      {"2^-1", "(^ 2 -1)"},
      {"x^2y", "(* (^ x 2) y)"},
      {"2^3^2", "(^ 2 (^ 3 2))"},
      {"x^\\frac12", "(^ x (/ 1 2))"},
      {"x\xC2\xB2", "(^ x 2)"},  // ²
      {"5!", "(! 5)"},
      {"2x!", "(* 2 (! x))"},
      {"(n+1)!", "(! (+ n 1))"},
      {"1 \\pm \\sqrt{2}", "(+- 1 (sqrt 2))"},
      {"\\pm 2", "(+- 2)"},
      {"1 \\mp x", "(+- 1 x)"},
      {"\xC2\xB1"
       "3",
       "(+- 3)"},  // ±
      {"\\frac{-b \\pm \\sqrt{b^2-4ac}}{2a}",
       "(/ (+- (- b) (sqrt (+ (^ b 2) (- (* 4 a c))))) (* 2 a))"},
      {"a/b*c", "(* (/ a b) c)"},
      {"2(3)", "(* 2 3)"},
      {"\\left(x+1\\right)^2", "(^ (+ x 1) 2)"},
      {"\\Big( x \\Big)", "x"},
      {"x\\,y", "(* x y)"},
      {"2\\!x", "(* 2 x)"},
  });
}

TEST(Parser, RootsFunctionsConstants) {
  CheckRows({
      {"\\sqrt{2}", "(sqrt 2)"},
      {"\\sqrt2", "(sqrt 2)"},
      {"\\sqrt 2x", "(* (sqrt 2) x)"},
      {"\\sqrt[3]{x}", "(root x 3)"},
      {"2\\sqrt{3}", "(* 2 (sqrt 3))"},
      {"\\sqrt{\\sqrt{2}}", "(sqrt (sqrt 2))"},
      {"sqrt(2)", "(sqrt 2)"},
      {"\xE2\x88\x9A"
       "2",
       "(sqrt 2)"},  // √
      {"\\binom{5}{2}", "(binom 5 2)"},
      {"\\dbinom{n}{k}", "(binom n k)"},
      {"{10 \\choose 3}", "(binom 10 3)"},
      {"\\sin x", "(sin x)"},
      {"\\sin(x)", "(sin x)"},
      {"\\sin{x}", "(sin x)"},
      {"\\sin 2x", "(sin (* 2 x))"},
      {"\\sin^2 x", "(^ (sin x) 2)"},
      {"\\sin^2(x)+\\cos^2(x)", "(+ (^ (sin x) 2) (^ (cos x) 2))"},
      {"\\sin x \\cos x", "(* (sin x) (cos x))"},
      {"\\sin x + 1", "(+ (sin x) 1)"},
      {"\\sin(x)^2", "(^ (sin x) 2)"},
      {"\\sin^{-1} x", "(arcsin x)"},
      {"\\arctan 1", "(arctan 1)"},
      {"\\tan\\frac{\\pi}{4}", "(tan (/ pi 4))"},
      {"\\sec x", "(sec x)"},
      {"\\csc x", "(csc x)"},
      {"\\cot x", "(cot x)"},
      {"\\ln 2", "(ln 2)"},
      {"\\ln(x+1)", "(ln (+ x 1))"},
      {"\\log x", "(log x)"},
      {"\\log_2 8", "(log 8 2)"},
      {"\\log_{10} x", "(log x 10)"},
      {"\\log_{2}(x)", "(log x 2)"},
      {"\\exp(2)", "(exp 2)"},
      {"sin(x)", "(sin x)"},
      {"log(x)", "(log x)"},
      {"ln x", "(ln x)"},
      {"|x|", "(abs x)"},
      {"|x-1|", "(abs (+ x -1))"},
      {"\\left| x \\right|", "(abs x)"},
      {"|x||y|", "(* (abs x) (abs y))"},
      {"2|x|", "(* 2 (abs x))"},
      {"\\lfloor x \\rfloor", "(floor x)"},
      {"\\pi", "pi"},
      {"\xCF\x80", "pi"},  // π
      {"pi", "pi"},
      {"2pi", "(* 2 pi)"},
      {"e", "e"},
      {"e^{x}", "(^ e x)"},
      {"e^{i\\pi}", "(^ e (* i pi))"},
      {"2e", "(* 2 e)"},
      {"\\mathrm{e}", "e"},
      {"i", "i"},
      {"3+4i", "(+ 3 (* 4 i))"},
      {"2i", "(* 2 i)"},
      {"\\infty", "inf"},
      {"-\\infty", "(- inf)"},
      {"\xE2\x88\x9E", "inf"},  // ∞
      {"infinity", "inf"},
      {"inf", "inf"},
      {"\\alpha", "alpha"},
      {"\\theta_1", "theta_1"},
      {"x_1", "x_1"},
      {"a_{n+1}", "a_n+1"},
      {"e_1", "e_1"},
      {"\\hat{x}", "x"},
      {"\\mathbf{v}", "v"},
  });
}

TEST(Parser, RelationsAndChains) {
  CheckRows({
      {"x = 3", "(rel x = 3)"},
      {"x=3", "(rel x = 3)"},
      {"y = 2x + 1", "(rel y = (+ (* 2 x) 1))"},
      {"x \\neq 1", "(rel x != 1)"},
      {"x \\ne 1", "(rel x != 1)"},
      {"x != 1", "(rel x != 1)"},
      {"x \xE2\x89\xA0 1", "(rel x != 1)"},  // ≠
      {"x < 3", "(rel x < 3)"},
      {"x > 3", "(rel x > 3)"},
      {"x \\le 3", "(rel x <= 3)"},
      {"x \\leq 3", "(rel x <= 3)"},
      {"x <= 3", "(rel x <= 3)"},
      {"x \xE2\x89\xA4 3", "(rel x <= 3)"},  // ≤
      {"x \\ge 3", "(rel x >= 3)"},
      {"x \\geq 3", "(rel x >= 3)"},
      {"x >= 3", "(rel x >= 3)"},
      {"x \\approx 3.14", "(rel x ~= 157/50)"},
      {"1 < x \\le 3", "(rel 1 < x <= 3)"},
      {"a = b = c", "(rel a = b = c)"},
      {"x = 1, y = 2", "(tuple (rel x = 1) (rel y = 2))"},
      {"x = 1 \\text{ or } x = 2", "(tuple (rel x = 1) (rel x = 2))"},
      {"x^2 + y^2 = 1", "(rel (+ (^ x 2) (^ y 2)) = 1)"},
  });
}

TEST(Parser, SetsIntervalsTuples) {
  CheckRows({
      {"\\{1, 2, 3\\}", "(set 1 2 3)"},
      {"\\{1\\}", "(set 1)"},
      {"\\left\\{ 1, 2 \\right\\}", "(set 1 2)"},
      {"\\lbrace 1, 2 \\rbrace", "(set 1 2)"},
      {"{1, 2}", "(set 1 2)"},
      {"{1,000}", "1000"},
      {"\\{100,200\\}", "(set 100 200)"},
      {"\\emptyset", "emptyset"},
      {"\\varnothing", "emptyset"},
      {"\xE2\x88\x85", "emptyset"},  // ∅
      {"{}", "emptyset"},
      {"\\{\\}", "emptyset"},
      {"[0, 1]", "(interval [ 0 1 ])"},
      {"[0,1)", "(interval [ 0 1 ))"},
      {"(0,1]", "(interval ( 0 1 ])"},
      {"(0, 1)", "(tuple 0 1)"},
      {"(1,100)", "(tuple 1 100)"},
      {"(-\\infty, 2)", "(interval ( (- inf) 2 ))"},
      {"(-\\infty, 2]", "(interval ( (- inf) 2 ])"},
      {"[3, \\infty)", "(interval [ 3 inf ))"},
      {"\\left[ 0, \\frac{1}{2} \\right)", "(interval [ 0 (/ 1 2) ))"},
      {"(1,2) \\cup (3,4)", "(union (interval ( 1 2 )) (interval ( 3 4 )))"},
      {"(-\\infty,1)\\cup[2,\\infty)", "(union (interval ( (- inf) 1 )) (interval [ 2 inf )))"},
      {"\\{1\\} \\cup \\{2\\}", "(union (set 1) (set 2))"},
      {"x \\in [0, 1)", "(interval [ 0 1 ))"},
      {"x \\in (0, 1)", "(interval ( 0 1 ))"},
      {"\\theta \\in [0,\\pi]", "(interval [ 0 pi ])"},
      {"(1, 2, 3)", "(tuple 1 2 3)"},
      {"(3, -1)", "(tuple 3 -1)"},
      {"1, 2, 3", "(tuple 1 2 3)"},
      {"1; 2", "(tuple 1 2)"},
      {"3 and 5", "(tuple 3 5)"},
      {"\\langle 1, 2 \\rangle", "(tuple 1 2)"},
      {"[1, 2, 3]", "(tuple 1 2 3)"},
      {"(x)", "x"},
      {"[x]", "x"},
  });
}

TEST(Parser, Matrices) {
  CheckRows({
      {"\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "(matrix (1 2) (3 4))"},
      {"\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}", "(matrix (1 2) (3 4))"},
      {"\\begin{pmatrix} 1 \\\\ 2 \\\\ 3 \\end{pmatrix}", "(matrix (1) (2) (3))"},
      {"\\begin{pmatrix} 1 & 2 & 3 \\end{pmatrix}", "(matrix (1 2 3))"},
      {"\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\\\ \\end{pmatrix}", "(matrix (1 2) (3 4))"},
      {"\\left(\\begin{array}{cc} a & b \\\\ c & d \\end{array}\\right)", "(matrix (a b) (c d))"},
      {"\\begin{vmatrix} 1 & 2 \\\\ 3 & 4 \\end{vmatrix}", "(det (matrix (1 2) (3 4)))"},
      {"\\begin{bmatrix} \\frac{1}{2} & -x \\end{bmatrix}", "(matrix ((/ 1 2) (- x)))"},
      {"2\\begin{pmatrix} 1 \\\\ 0 \\end{pmatrix}", "(* 2 (matrix (1) (0)))"},
  });
}

TEST(Parser, NormalisationUnitsPercentCurrency) {
  CheckRows({
      {"30^\\circ", "30"},
      {"30^{\\circ}", "30"},
      {"30 ^ { \\circ }", "30"},
      {"30\xC2\xB0", "30"},  // °
      {"30 degrees", "30"},
      {"25^\\circ C", "25"},
      {"\\$5", "5"},
      {"5 dollars", "5"},
      {"\\$1,000", "1000"},
      {"\xE2\x82\xAC"
       "5",
       "5"},  // €
      {"40\\%", "(% 40)"},
      {"40%", "(% 40)"},
      {"40 percent", "(% 40)"},
      {"12.5\\%", "(% 25/2)"},
      {"3 km", "(unit km 3)"},
      {"3\\text{ km}", "(unit km 3)"},
      {"3 \\text{kilometers}", "(unit km 3)"},
      {"3 miles", "(unit mi 3)"},
      {"5\\,\\mathrm{m}", "(unit m 5)"},
      {"5m", "(* 5 m)"},
      {"10 cm^2", "(unit cm^2 10)"},
      {"10\\text{ cm}^{2}", "(unit cm^2 10)"},
      {"20 square feet", "(unit ft^2 20)"},
      {"60 mph", "(unit mi/h 60)"},
      {"\\sin 30^\\circ", "(sin (* 30 (/ pi 180)))"},
      {"\\cos(120\xC2\xB0)", "(cos (* 120 (/ pi 180)))"},
      {"60 km/h", "(unit km/h 60)"},
      {"9.8 \\text{m/s}^2", "(unit m/s^2 49/5)"},
      {"3 meters per second", "(unit m/s 3)"},
      {"2 hours", "(unit h 2)"},
      {"45 minutes", "(unit min 45)"},
      {"5 kg", "(unit kg 5)"},
      {"2.5 liters", "(unit l 5/2)"},
      {"12 inches", "(unit in 12)"},
      {"6 feet", "(unit ft 6)"},
      {"12 apples", "(unit apples 12)"},
      {"5 \\text{ apples}", "(unit apples 5)"},
      {"x = 5 \\text{ cm}", "(rel x = (unit cm 5))"},
      {"\\frac{1}{2}\\text{ m}", "(unit m (/ 1 2))"},
      {"2\\pi \\text{ cm}", "(unit cm (* 2 pi))"},
      {"-5 km", "(unit km -5)"},
      {"5.", "5"},
      {"x = 5.", "(rel x = 5)"},
      {"5;", "5"},
      {"\\boxed{5}", "5"},
      {"\\boxed{1,2}", "(tuple 1 2)"},
      {"\\displaystyle \\frac{1}{2}", "(/ 1 2)"},
      {"5\\quad", "5"},
      {"\"5\"", "5"},
  });
}

TEST(Parser, TextAndChoices) {
  CheckRows({
      {"C", "(choice C)"},
      {"(C)", "(choice C)"},
      {"C)", "(choice C)"},
      {"\\text{(C)}", "(choice C)"},
      {"\\textbf{(B)}", "(choice B)"},
      {"\\text{A}", "(choice A)"},
      {"E", "(choice E)"},
      {"F", "F"},
      {"c", "c"},
      {"x", "x"},
      {"Yes", "(text \"yes\")"},
      {"\\text{No}", "(text \"no\")"},
      {"no", "(text \"no\")"},
      {"\\text{No solution}", "(text \"no solution\")"},
      {"No   Solution.", "(text \"no solution\")"},
      {"\\text{Monday}", "(text \"monday\")"},
      {"red, green", "(text \"red green\")"},
      {"well-defined", "(text \"well-defined\")"},
      {"\\text{it's odd}", "(text \"it's odd\")"},
      {"DNE", "(text \"dne\")"},
      {"(B) 7", "(choice B)"},
      {"\\text{(B) } 7", "(choice B)"},
      {"(A) and (C)", "(tuple A C)"},
      {"(A)(B)", "(* A B)"},
      {"\\mathrm{even}", "(text \"even\")"},
  });
}

struct ErrorRow {
  std::string input;
  absl::StatusCode code;
  std::string message;  // a substring of the status message
};

TEST(Parser, Rejects) {
  const std::vector<ErrorRow> rows = {
      {"", absl::StatusCode::kInvalidArgument, "empty"},
      {"   ", absl::StatusCode::kInvalidArgument, "empty"},
      {"$$", absl::StatusCode::kInvalidArgument, "empty"},
      {"{1", absl::StatusCode::kInvalidArgument, "unbalanced"},
      {"1}", absl::StatusCode::kInvalidArgument, "unbalanced"},
      {"\\frac{1}{2", absl::StatusCode::kInvalidArgument, "unbalanced"},
      {"\\text{abc", absl::StatusCode::kInvalidArgument, "unbalanced"},
      {"(1", absl::StatusCode::kInvalidArgument, "expected"},
      {"1 +", absl::StatusCode::kInvalidArgument, "ends"},
      {"2 3", absl::StatusCode::kInvalidArgument, "unexpected"},
      {"\\foo", absl::StatusCode::kInvalidArgument, "unsupported command"},
      {"x @ y", absl::StatusCode::kInvalidArgument, "unsupported character"},
      {"\\begin{cases} 1 \\end{cases}", absl::StatusCode::kInvalidArgument, "environment"},
      {"\\begin{pmatrix} 1 & 2 \\\\ 3 \\end{pmatrix}", absl::StatusCode::kInvalidArgument,
       "different lengths"},
      {"\\begin{pmatrix} 1 \\end{bmatrix}", absl::StatusCode::kInvalidArgument, "closed"},
      {"\\sin", absl::StatusCode::kInvalidArgument, "argument"},
      {"\\frac{}{2}", absl::StatusCode::kInvalidArgument, "empty"},
      {"x \\cap y", absl::StatusCode::kInvalidArgument, "unsupported command"},
      {"km", absl::StatusCode::kInvalidArgument, "without a value"},
      {"\\text{cm}", absl::StatusCode::kInvalidArgument, "without a value"},
      {"|x", absl::StatusCode::kInvalidArgument, "'|'"},
      {"1 & 2", absl::StatusCode::kInvalidArgument, "unexpected"},
      {"\\", absl::StatusCode::kInvalidArgument, "dangling"},
      {"caf\xC3\xA9", absl::StatusCode::kInvalidArgument, "unsupported character"},
  };
  for (const ErrorRow& row : rows) {
    SCOPED_TRACE("input: " + row.input);
    absl::StatusOr<Expr> e = Parse(row.input);
    if (e.ok()) {
      ADD_FAILURE() << "parsed as " << e->DebugString();
      continue;
    }
    EXPECT_EQ(e.status().code(), row.code) << e.status();
    EXPECT_THAT(std::string(e.status().message()), HasSubstr(row.message));
  }
}

TEST(Parser, NumberFlagsRecordDecimalPlaces) {
  absl::StatusOr<Expr> e = Parse("0.330");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->node(e->root).flags, 3);
  e = Parse("1/3");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->node(e->kids(e->root)[0]).flags, 0);
}

// ---- adversarial inputs: each stops on the limit named in its message ----

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(ParserLimits, OversizedInputStopsOnMaxBytes) {
  Budget budget;
  std::string big(100 * 1024, '1');
  absl::StatusOr<Expr> e = ParseAnswer(big, ParseLimits{}, budget);
  ASSERT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("max_bytes"));
  EXPECT_EQ(budget.steps, Budget{}.steps);  // rejected before any work
}

TEST(ParserLimits, TenThousandNestedBracesStopOnMaxDepth) {
  ParseLimits limits;
  limits.max_bytes = 1 << 20;
  for (std::string open : {"{", "(", "\\{", "\\left(", "|", "-", "\\sqrt{", "\\sqrt"}) {
    SCOPED_TRACE(open);
    std::string close = open == "{" || open == "\\sqrt{"   ? "}"
                        : open == "(" || open == "\\left(" ? ")"
                        : open == "\\{"                    ? "\\}"
                        : open == "|"                      ? "|"
                                                           : "";
    std::string text = Repeat(open, 10000) + "1" + Repeat(close, 10000);
    Budget budget;
    absl::StatusOr<Expr> e = ParseAnswer(text, limits, budget);
    ASSERT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted) << e.status();
    EXPECT_THAT(std::string(e.status().message()), HasSubstr("max_depth"));
  }
}

TEST(ParserLimits, DepthLimitIsExactAndHardCapped) {
  ParseLimits limits;
  limits.max_depth = 10;
  // Nine nested groups fit in depth 10 (the top-level expression is one level); ten do not.
  EXPECT_TRUE(Parse(Repeat("(", 9) + "1" + Repeat(")", 9), limits).ok());
  EXPECT_EQ(Parse(Repeat("(", 10) + "1" + Repeat(")", 10), limits).status().code(),
            absl::StatusCode::kResourceExhausted);
  // A caller asking for unbounded depth still gets a stack-safe parser.
  limits.max_depth = UINT32_MAX;
  limits.max_bytes = 1 << 20;
  absl::StatusOr<Expr> e = Parse(Repeat("(", 100000) + "1" + Repeat(")", 100000), limits);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("max_depth (256)"));
}

TEST(ParserLimits, FracChainsStopOnMaxDepth) {
  ParseLimits limits;
  limits.max_bytes = 1 << 20;
  for (std::string text :
       {Repeat("\\frac{1}{", 3000) + "2" + Repeat("}", 3000),
        Repeat("\\frac{", 3000) + "1" + Repeat("}{2}", 3000), Repeat("\\frac1", 3000) + "2"}) {
    absl::StatusOr<Expr> e = Parse(text, limits);
    ASSERT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted) << e.status();
    EXPECT_THAT(std::string(e.status().message()), HasSubstr("max_depth"));
  }
}

TEST(ParserLimits, LongFlatChainsStopOnTreeHeightOrNodes) {
  ParseLimits limits;
  limits.max_bytes = 1 << 20;
  // a/b/c/... nests without recursion: the tree height is what is capped.
  absl::StatusOr<Expr> e = Parse(absl::StrCat("1", Repeat("/2", 5000)), limits);
  ASSERT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("tree deeper than max_depth"));
  e = Parse(absl::StrCat("1", Repeat("+1", 5000)), limits);
  ASSERT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("max_nodes"));
  e = Parse(Repeat("x^", 5000) + "2", limits);
  ASSERT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("max_depth"));
}

TEST(ParserLimits, PowerTowerParsesWithoutEvaluating) {
  Budget budget;
  absl::StatusOr<Expr> e = ParseAnswer("5^{5^{5^{5^5}}}", ParseLimits{}, budget);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->DebugString(), "(^ 5 (^ 5 (^ 5 (^ 5 5))))");
  EXPECT_FALSE(budget.exceeded);
  EXPECT_GT(budget.steps, Budget{}.steps - 100);  // a handful of steps, no arithmetic
}

TEST(ParserLimits, ThousandsOfDollarSignsAreDroppedInOnePass) {
  ParseLimits limits;
  limits.max_bytes = 1 << 20;
  absl::StatusOr<Expr> e = Parse(std::string(5000, '$'), limits);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  e = Parse(std::string(5000, '$') + "7" + std::string(5000, '$'), limits);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->DebugString(), "7");
}

TEST(ParserLimits, StepBudgetStopsTokensAndNodes) {
  ParseLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_nodes = 1 << 20;
  Budget budget;
  budget.steps = 100;
  absl::StatusOr<Expr> e = ParseAnswer(Repeat("1,", 1000) + "1", limits, budget);
  ASSERT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(budget.exceeded);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("step budget"));
  // An exhausted budget stays exhausted.
  e = ParseAnswer("1", limits, budget);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ParserLimits, HugeNumbersAndExponentsAreBounded) {
  Budget budget;
  // An exponent beyond exact arithmetic's 1000 is no number an answer is: invalid (the answer is
  // WRONG), not a budget that ran out (unscorable), and read without spending one.
  absl::StatusOr<Expr> e = ParseAnswer("1e999999", ParseLimits{}, budget);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("exponent out of range"));
  EXPECT_FALSE(budget.exceeded);
  EXPECT_TRUE(ParseAnswer("1e1000", ParseLimits{}, budget).ok());
  EXPECT_EQ(ParseAnswer("1e-1001", ParseLimits{}, budget).status().code(),
            absl::StatusCode::kInvalidArgument);
  Budget fresh;
  e = ParseAnswer(std::string(4000, '9'), ParseLimits{}, fresh);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->number(e->root).num().ToString(), std::string(4000, '9'));
}

TEST(ParserLimits, UnbalancedInputsAreInvalidNotExhausted) {
  ParseLimits limits;
  limits.max_bytes = 1 << 20;
  for (std::string text : {Repeat("{", 10000), Repeat("}", 10000), Repeat("\\text{", 5000),
                           Repeat("\\left(", 3) + "1"}) {
    absl::StatusOr<Expr> e = Parse(text, limits);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << e.status();
  }
}

uint32_t Height(const Expr& e, uint32_t node) {
  uint32_t h = 0;
  for (uint32_t k : e.kids(node)) h = std::max(h, Height(e, k));
  return h + 1;
}

// Seeded fragment soup: whatever comes in, the parser returns a typed status, and a tree it
// returns respects the node and height limits (consumers recurse over it).
TEST(ParserProperty, RandomFragmentSoupIsTypedAndBounded) {
  const std::vector<std::string> fragments = {"{",       "}",       "(",
                                              ")",       "[",       "]",
                                              "\\frac",  "\\sqrt",  "^",
                                              "_",       "x",       "1",
                                              "2.5",     ",",       "+",
                                              "-",       "*",       "/",
                                              "|",       "\\left(", "\\right)",
                                              "\\text{", "a b",     "=",
                                              "<",       "\\pm",    "\\begin{pmatrix}",
                                              "&",       "\\\\",    "\\end{pmatrix}",
                                              "\\cup",   "!",       "%",
                                              "e",       "i",       "\\pi",
                                              " ",       "$",       "km",
                                              "\\{",     "\\}",     "\\sin",
                                              "\\log_",  "1,000",   "\\,",
                                              "{,}",     "C",       "\\infty"};
  std::mt19937 rng(20240601);
  for (ParseLimits limits :
       {ParseLimits{}, ParseLimits{.max_bytes = 4096, .max_depth = 6, .max_nodes = 40}}) {
    for (int iter = 0; iter < 3000; ++iter) {
      std::string text;
      size_t n = rng() % 60;
      for (size_t j = 0; j < n; ++j) text += fragments[rng() % fragments.size()];
      SCOPED_TRACE("input: " + text);
      Budget budget;
      absl::StatusOr<Expr> e = ParseAnswer(text, limits, budget);
      if (!e.ok()) {
        EXPECT_TRUE(e.status().code() == absl::StatusCode::kInvalidArgument ||
                    e.status().code() == absl::StatusCode::kResourceExhausted)
            << e.status();
        continue;
      }
      EXPECT_LE(e->nodes.size(), limits.max_nodes);
      EXPECT_LE(Height(*e, e->root), limits.max_depth);
      EXPECT_FALSE(e->DebugString().empty());
    }
  }
}

}  // namespace
}  // namespace rlscore::scorers::math
