// Tests of scorers/accuracy.h with the basic scorer: extraction order, every accepted form of
// each task, references that cannot be parsed, inputs built to make a scanner hang or allocate
// quadratically (they must simply return a verdict), and property loops over powers of ten and
// seeded random fractions graded exactly.
#include "scorers/accuracy.h"

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scorers/math/verifier.h"

namespace rlscore::scorers {

// Readable verdicts in failure messages (found by argument-dependent lookup).
void PrintTo(Verdict v, std::ostream* os) { *os << VerdictName(v); }

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr Task kNum = Task::kNumeric;
constexpr Task kMc = Task::kMultipleChoice;
constexpr Task kEx = Task::kExact;
constexpr Verdict kC = Verdict::kCorrect;
constexpr Verdict kW = Verdict::kWrong;
constexpr Verdict kNo = Verdict::kNoAnswer;
constexpr Verdict kBad = Verdict::kUnparseableReference;

struct Case {
  Task task;
  std::vector<std::string> references;
  std::string section;
  Verdict verdict;
  std::string extracted;
  std::string detail = "";  // a substring expected in `detail`; "" checks nothing
};

const char* TaskName(Task t) {
  switch (t) {
    case Task::kMath:
      return "MATH";
    case Task::kMultipleChoice:
      return "MULTIPLE_CHOICE";
    case Task::kExact:
      return "EXACT";
    case Task::kNumeric:
      return "NUMERIC";
    case Task::kExternal:
      return "EXTERNAL";
    case Task::kInstructionFollowing:
      return "INSTRUCTION_FOLLOWING";
  }
  return "?";
}

std::string Excerpt(const std::string& s) { return s.size() <= 120 ? s : s.substr(0, 120) + "..."; }

AccuracyResult GradeOne(Task task, const std::vector<std::string>& references,
                        const std::string& section) {
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  const std::unique_ptr<Judge> judge = scorer->Prepare(task, references);
  return judge->Grade(section);
}

void RunCases(const std::vector<Case>& cases) {
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    std::string refs;
    for (const std::string& r : c.references) absl::StrAppend(&refs, "[", Excerpt(r), "]");
    SCOPED_TRACE(absl::StrCat("case ", i, " ", TaskName(c.task), " refs ", refs, " section [",
                              Excerpt(c.section), "]"));
    const AccuracyResult r = GradeOne(c.task, c.references, c.section);
    EXPECT_EQ(r.verdict, c.verdict);
    EXPECT_EQ(r.extracted, c.extracted);
    EXPECT_EQ(r.accuracy, c.verdict == kC ? 1.0 : 0.0);
    if (!c.detail.empty()) {
      EXPECT_THAT(r.detail, HasSubstr(c.detail));
    }
  }
}

TEST(Accuracy, HeaderExample) {
  for (const char* reference : {"0.5", "1/2", "\\frac12"}) {
    SCOPED_TRACE(reference);
    const AccuracyResult r = GradeOne(kNum, {reference}, "so the answer is \\boxed{\\frac{1}{2}}.");
    EXPECT_EQ(r.verdict, kC);
    EXPECT_EQ(r.extracted, "\\frac{1}{2}");
    EXPECT_EQ(r.accuracy, 1.0);
  }
}

TEST(Accuracy, ExtractionOrder) {
  const std::vector<std::string> ref = {"42"};
  RunCases({
      // \boxed and \fbox: the last one wins, wherever it is.
      {kNum, ref, "The answer is \\boxed{42}.", kC, "42"},
      {kNum, ref, "\\boxed{41} hmm, no: \\boxed{42}", kC, "42"},
      {kNum, ref, "\\boxed{42} wait, no: \\boxed{41}", kW, "41"},
      {kNum, ref, "Thus $\\boxed{42}$ is the number of apples we want.", kC, "42"},
      {kNum, ref, "\\fbox{42}", kC, "42"},
      {kNum, ref, "\\boxed {42}", kC, "42"},
      {kNum, ref, "\\boxed{ 42 }", kC, "42"},
      {kNum, ref, "\\boxed{\\boxed{42}}", kC, "\\boxed{42}"},
      {kNum, ref, "\\boxed{\\text{42}}", kC, "\\text{42}"},
      {kNum, ref, "\\boxed{42}. The answer is 41.", kC, "42"},
      {kNum, ref, "\\boxed{42} <answer>41</answer>", kC, "42"},
      {kNum, ref, "\\\\boxed{42}", kC, "42"},
      // Boxes joined by "and" are one two-part answer: against one number, a hedge.
      {kNum, ref, "\\boxed 41, and \\boxed{42}", kW, "41, 42"},
      // An unterminated box: the generation was cut, even after a complete one.
      {kNum, ref, "we get \\boxed{42} and then \\boxed{4", kNo, "", "unterminated \\boxed{"},
      {kNum, ref, "\\boxed{", kNo, "", "unterminated \\boxed{"},
      {kNum, ref, "\\fbox{42", kNo, "", "unterminated \\fbox{"},
      {kNum, ref, "\\boxed{\\frac{42}{1}", kNo, "", "unterminated"},
      {kNum, ref, "\\boxed{}", kNo, "", "empty \\boxed{}"},
      {kNum, ref, "\\boxed{  }", kNo, "", "empty"},
      // Escaped braces do not close a box.
      {kNum, ref, "\\boxed{42\\}", kNo, "", "unterminated"},
      // <answer> tags: the last complete pair.
      {kNum, ref, "<answer>42</answer>", kC, "42"},
      {kNum, ref, "<answer> 41 </answer> then <answer> 42 </answer>", kC, "42"},
      {kNum, ref, "<answer>41</answer> then <answer>42", kW, "41"},
      {kNum, ref, "<answer></answer>", kNo, "", "empty <answer>"},
      {kNum, ref, "The answer is 41. <answer>42</answer>", kC, "42"},
      // Phrases, the last one, to the end of its sentence or line.
      {kNum, ref, "The answer is 42.", kC, "42"},
      {kNum, ref, "the final answer is: 42", kC, "42"},
      {kNum, ref, "ANSWER: 42", kC, "42"},
      {kNum, ref, "**Final Answer:** 42\n\nThat is all.", kC, "42"},
      {kNum, ref, "Answer: 41. Hmm, re-checking. Answer: 42.", kC, "42"},
      {kNum, ref, "The answer is 42. I double-checked 41 times.", kC, "42"},
      {kNum, ref, "The answer is\n42", kC, "42"},
      {kNum, ref, "The answer is 42, since 6 times 7 is 42.", kC, "42"},
      {kNum, ref, "The answer is 4.2 thousand", kW, "4.2 thousand"},
      {kNum, ref, "The answer is:", kNo, ""},
      // Fallback: the last standalone number.
      // The final sentence's last expression, as for MATH; a chain of constants by its last side.
      {kNum, ref, "So 6 * 7 = 42", kC, "6 * 7 = 42"},
      {kNum, ref, "It is 42 for x^2", kW, "x^2"},
      {kNum, ref, "so 42 = 2^{10}", kW, "42 = 2^{10}"},
      {kNum, ref, "so 41 and then 42.", kC, "42"},
      {kNum, {"0.5"}, "The probability is 50%.", kC, "50%"},
      {kNum, {"0.5"}, "so p = \\frac{1}{2}", kC, "\\frac{1}{2}"},
      {kNum, {"-2/3"}, "3x + 2 = 0 gives x = -2/3", kC, "-2/3"},
      {kNum, {"2"}, "\\frac{\\pi}{2}", kW, "\\frac{\\pi}{2}", "not a number"},
      {kNum, {"2"}, "\\pi/2", kW, "\\pi/2", "not a number"},
      {kNum, ref, "no numbers here", kNo, "", "no answer in the answer section"},
      {kNum, ref, "", kNo, "", "empty answer section"},
      {kNum, ref, " \n\t ", kNo, "", "empty answer section"},
  });
}

TEST(Accuracy, NumericForms) {
  RunCases({
      // Thousands separators, only in proper groups of three.
      {kNum, {"1000"}, "\\boxed{1,000}", kC, "1,000"},
      {kNum, {"1000"}, "\\boxed{1{,}000}", kC, "1{,}000"},
      {kNum, {"1000"}, "\\boxed{1\\,000}", kC, "1\\,000"},
      {kNum, {"1000"}, "\\boxed{1000.0}", kC, "1000.0"},
      {kNum, {"1,000"}, "\\boxed{1000}", kC, "1000"},
      {kNum, {"1234567"}, "\\boxed{1,234,567}", kC, "1,234,567"},
      {kNum, {"1000"}, "\\boxed{1,00}", kW, "1,00"},  // a decimal comma: 1.00
      {kNum, {"1000"}, "\\boxed{10,00}", kW, "10,00"},
      {kNum, {"1234567"}, "\\boxed{1234,567}", kW, "1234,567"},
      {kNum, {"1000"}, "\\boxed{1,0000}", kW, "1,0000"},
      // Decimals and fractions, as exact rationals.
      {kNum, {"0.5"}, "\\boxed{1/2}", kC, "1/2"},
      {kNum, {"0.5"}, "\\boxed{2 / 4}", kC, "2 / 4"},
      {kNum, {"0.5"}, "\\boxed{\\frac{1}{2}}", kC, "\\frac{1}{2}"},
      {kNum, {"0.5"}, "\\boxed{\\dfrac{1}{2}}", kC, "\\dfrac{1}{2}"},
      {kNum, {"0.5"}, "\\boxed{\\tfrac12}", kC, "\\tfrac12"},
      {kNum, {"0.5"}, "\\boxed{\\frac12}", kC, "\\frac12"},
      {kNum, {"0.5"}, "\\boxed{\\frac 1 2}", kC, "\\frac 1 2"},
      {kNum, {"0.5"}, "\\boxed{\\frac{ 1 }{ 2 }}", kC, "\\frac{ 1 }{ 2 }"},
      {kNum, {"0.5"}, "\\boxed{.5}", kC, ".5"},
      {kNum, {"0.5"}, "\\boxed{0.50}", kC, "0.50"},
      {kNum, {"0.5"}, "\\boxed{\\frac{0.5}{1}}", kC, "\\frac{0.5}{1}"},
      {kNum, {"\\frac12"}, "\\boxed{0.5}", kC, "0.5"},
      {kNum, {"1/3"}, "\\boxed{0.333}", kW, "0.333"},
      {kNum, {"1/3"}, "\\boxed{0.3333333333333333}", kW, "0.3333333333333333"},
      {kNum, {"1/3"}, "\\boxed{\\frac{2}{6}}", kC, "\\frac{2}{6}"},
      {kNum, {"0.333"}, "\\boxed{1/3}", kW, "1/3"},
      {kNum, {"1"}, "\\boxed{\\frac{1}{0}}", kW, "\\frac{1}{0}", "not a number"},
      {kNum, {"1.5"}, "\\boxed{1\\frac{1}{2}}", kC, "1\\frac{1}{2}"},
      {kNum, {"-1.5"}, "\\boxed{-1\\frac{1}{2}}", kC, "-1\\frac{1}{2}"},
      {kNum, {"3/2"}, "\\boxed{1 \\frac12}", kC, "1 \\frac12"},
      // Signs, including U+2212 MINUS SIGN.
      {kNum, {"-0.5"}, "\\boxed{-\\frac{1}{2}}", kC, "-\\frac{1}{2}"},
      {kNum, {"-0.5"}, "\\boxed{\\frac{-1}{2}}", kC, "\\frac{-1}{2}"},
      {kNum, {"-0.5"}, "\\boxed{\\frac{1}{-2}}", kC, "\\frac{1}{-2}"},
      {kNum, {"-0.5"}, "\\boxed{\xE2\x88\x92\\frac12}", kC, "\xE2\x88\x92\\frac12"},
      {kNum, {"-0.5"}, "\\boxed{-1/2}", kC, "-1/2"},
      {kNum, {"0.5"}, "\\boxed{-\\frac{-1}{2}}", kC, "-\\frac{-1}{2}"},
      {kNum,
       {"-7"},
       "\\boxed{\xE2\x88\x92"
       "7}",
       kC,
       "\xE2\x88\x92"
       "7"},
      {kNum,
       {"\xE2\x88\x92"
        "7"},
       "\\boxed{-7}",
       kC,
       "-7"},
      {kNum, {"-7"}, "\\boxed{7}", kW, "7"},
      {kNum, {"7"}, "\\boxed{+7}", kC, "+7"},
      {kNum, {"0"}, "\\boxed{-0}", kC, "-0"},
      {kNum,
       {"-7"},
       "so x = \xE2\x88\x92"
       "7",
       kC,
       "\xE2\x88\x92"
       "7"},
      {kNum, {"5"}, "3-5", kW, "3-5"},  // an expression, -2
      {kNum, {"-5"}, "It went from 3 to -5", kC, "-5"},
      // Big integers are exact.
      {kNum,
       {"123456789012345678901234567890"},
       "\\boxed{123456789012345678901234567890}",
       kC,
       "123456789012345678901234567890"},
      {kNum,
       {"123456789012345678901234567890"},
       "\\boxed{123456789012345678901234567891}",
       kW,
       "123456789012345678901234567891"},
      {kNum,
       {"123456789012345678901234567890"},
       "\\boxed{123,456,789,012,345,678,901,234,567,890}",
       kC,
       "123,456,789,012,345,678,901,234,567,890"},
      {kNum,
       {"123456789012345678901234567890"},
       "\\boxed{1.2345678901234567890123456789e29}",
       kC,
       "1.2345678901234567890123456789e29"},
      {kNum,
       {"1/123456789012345678901234567890"},
       "\\boxed{\\frac{2}{246913578024691357802469135780}}",
       kC,
       "\\frac{2}{246913578024691357802469135780}"},
      // Scientific notation.
      {kNum, {"310000000"}, "\\boxed{3.1e8}", kC, "3.1e8"},
      {kNum, {"310000000"}, "\\boxed{3.1E+8}", kC, "3.1E+8"},
      {kNum, {"310000000"}, "\\boxed{3.1\\times10^{8}}", kC, "3.1\\times10^{8}"},
      {kNum, {"310000000"}, "\\boxed{3.1 \\times 10^8}", kC, "3.1 \\times 10^8"},
      {kNum, {"310000000"}, "\\boxed{3.1\\cdot 10^{8}}", kC, "3.1\\cdot 10^{8}"},
      {kNum,
       {"310000000"},
       "\\boxed{3.1\xC3\x97"
       "10^8}",
       kC,
       "3.1\xC3\x97"
       "10^8"},
      {kNum, {"3.1e8"}, "\\boxed{310,000,000}", kC, "310,000,000"},
      {kNum, {"0.001"}, "\\boxed{1\\times10^{-3}}", kC, "1\\times10^{-3}"},
      {kNum, {"0.001"}, "\\boxed{1e-3}", kC, "1e-3"},
      {kNum, {"1e300"}, "\\boxed{1e300}", kC, "1e300"},
      {kNum, {"1e300"}, "\\boxed{1.0000000000001e300}", kW, "1.0000000000001e300"},
      {kNum, {"1"}, "\\boxed{1e99999}", kW, "1e99999", "not a number"},
      // Wrappers, currency, trailing punctuation, "x =".
      {kNum, {"5"}, "\\boxed{\\$5}", kC, "\\$5"},
      {kNum, {"5"}, "The answer is $5$.", kC, "5"},
      {kNum, {"5"}, "The answer is \\(5\\).", kC, "5"},
      {kNum, {"5"}, "The answer is $5.", kC, "5"},
      {kNum, {"5"}, "The answer is **5**.", kC, "5"},
      {kNum, {"5"}, "\\boxed{\\text{5}}", kC, "\\text{5}"},
      {kNum, {"5"}, "\\boxed{\\displaystyle 5}", kC, "\\displaystyle 5"},
      {kNum, {"5"}, "\\boxed{x = 5}", kC, "x = 5"},
      {kNum, {"5"}, "\\boxed{x_1=5}", kC, "x_1=5"},
      {kNum, {"5"}, "\\boxed{5 = n}", kC, "5 = n"},
      {kNum, {"5"}, "\\boxed{x + 1 = 5}", kW, "x + 1 = 5"},
      {kNum, {"5"}, "\\boxed{5 = 5 = 5}", kC, "5 = 5 = 5"},  // a chain, by its last side
      {kNum, {"5"}, "\\boxed{2+3}", kC, "2+3"},              // exact arithmetic is a number
      {kNum, {"5"}, "\\boxed{\\sqrt{2}}", kW, "\\sqrt{2}", "not a number"},
      {kNum, {"5"}, "\\boxed{5x}", kW, "5x", "not a number"},
      {kNum, {"5"}, "\\boxed{5k}", kW, "5k"},
      {kNum, {"5"}, "\\boxed{5e}", kW, "5e"},
      {kNum, {"2"}, "\\boxed{2pi}", kW, "2pi"},
      // Percent: 40% matches 40 and 0.4.
      {kNum, {"40"}, "\\boxed{40\\%}", kC, "40\\%"},
      {kNum, {"40"}, "\\boxed{40%}", kC, "40%"},
      {kNum, {"0.4"}, "\\boxed{40\\%}", kC, "40\\%"},
      {kNum, {"40\\%"}, "\\boxed{0.4}", kC, "0.4"},
      {kNum, {"40%"}, "\\boxed{40}", kC, "40"},
      {kNum, {"40 percent"}, "\\boxed{40\\%}", kC, "40\\%"},
      {kNum, {"40%"}, "\\boxed{4}", kW, "4"},
      {kNum, {"40%"}, "\\boxed{0.4\\%}", kW, "0.4\\%"},
      // Units: ignored on one side, compared on both.
      {kNum, {"3 km"}, "\\boxed{3}", kC, "3"},
      {kNum, {"3"}, "\\boxed{3 \\text{km}}", kC, "3 \\text{km}"},
      {kNum, {"3 km"}, "\\boxed{3\\,\\text{km}}", kC, "3\\,\\text{km}"},
      {kNum, {"3 km"}, "\\boxed{3 miles}", kW, "3 miles"},
      {kNum, {"3 km"}, "\\boxed{3 \\text{ miles}}", kW, "3 \\text{ miles}"},
      {kNum, {"5"}, "The answer is 5 dollars.", kC, "5 dollars"},
      {kNum, {"5"}, "\\boxed{5 m}", kC, "5 m"},
      {kNum, {"5 s"}, "\\boxed{5 m}", kW, "5 m"},
      {kNum, {"9.8 m/s^2"}, "\\boxed{9.8 \\text{m/s}^{2}}", kC, "9.8 \\text{m/s}^{2}"},
      {kNum, {"30"}, "\\boxed{30^\\circ}", kC, "30^\\circ"},
      {kNum, {"30"}, "\\boxed{30^{\\circ}}", kC, "30^{\\circ}"},
      {kNum, {"30"}, "\\boxed{30\xC2\xB0}", kC, "30\xC2\xB0"},
      {kNum, {"30^\\circ"}, "The answer is 30 degrees.", kC, "30 degrees"},
      // Degree signs are dropped (docs/VERIFIER.md), so only the answer carries a unit.
      {kNum, {"30^\\circ"}, "\\boxed{30 \\text{ cm}}", kC, "30 \\text{ cm}"},
      {kNum, {"5"}, "The answer is 5 apples and 3 pears", kW, "5 apples and 3 pears"},
      {kNum, {"5"}, "\\boxed{5 \\pi}", kW, "5 \\pi"},
      // Plain mismatches.
      {kNum, {"2"}, "\\boxed{3}", kW, "3"},
      {kNum, {"100"}, "\\boxed{1e2}", kC, "1e2"},
  });
}

TEST(Accuracy, SeveralReferencesAnyMatches) {
  RunCases({
      {kNum, {"7", "0.5"}, "\\boxed{\\frac12}", kC, "\\frac12"},
      {kNum, {"7", "0.5"}, "\\boxed{7}", kC, "7"},
      {kNum, {"7", "0.5"}, "\\boxed{8}", kW, "8"},
      {kNum, {"seven", "7"}, "\\boxed{7}", kC, "7"},  // the unparseable one is skipped
      {kNum, {"seven", "7"}, "\\boxed{8}", kW, "8"},
      {kMc, {"A", "(c)"}, "\\boxed{C}", kC, "C"},
      {kMc, {"A", "(c)"}, "\\boxed{A}", kC, "A"},
      {kMc, {"A", "(c)"}, "\\boxed{B}", kW, "B"},
      {kEx, {"NYC", "New York City"}, "\\boxed{new york city}", kC, "new york city"},
      {kEx, {"NYC", "New York City"}, "\\boxed{nyc}", kC, "nyc"},
      {kEx, {"NYC", "New York City"}, "\\boxed{New York}", kW, "New York"},
  });
}

TEST(Accuracy, MathIsTheVerifier) {
  RunCases({
      {Task::kMath, {"\\frac{1}{2}"}, "\\boxed{0.5}", kC, "0.5"},
      {Task::kMath, {"\\frac{1}{2}"}, "\\boxed{0.51}", kW, "0.51"},
      {Task::kMath, {"x^2+1"}, "\\boxed{x^2+1}", kC, "x^2+1"},
      {kNum, {"x^2+1"}, "\\boxed{x^2+1}", kBad, "x^2+1", "no reference is a number: \"x^2+1\""},
  });
}

TEST(Accuracy, MultipleChoice) {
  const std::vector<std::string> c = {"C"};
  RunCases({
      {kMc, c, "\\boxed{C}", kC, "C"},
      {kMc, c, "\\boxed{(C)}", kC, "(C)"},
      {kMc, c, "\\boxed{\\text{(C)}}", kC, "\\text{(C)}"},
      {kMc, c, "\\boxed{\\textbf{C}}", kC, "\\textbf{C}"},
      {kMc, c, "\\boxed{c}", kC, "c"},
      {kMc, c, "\\boxed{C. 42}", kC, "C. 42"},
      {kMc, c, "\\boxed{42}", kW, "42", "no choice letter"},
      {kMc, c, "\\boxed{B}", kW, "B"},
      {kMc, c, "<answer>C</answer>", kC, "C"},
      {kMc, c, "<answer>(B)</answer>", kW, "(B)"},
      {kMc, c, "Answer: C", kC, "C"},
      {kMc, c, "Answer: (C) 7", kC, "(C) 7"},
      {kMc, c, "Answer: C) 7", kC, "C) 7"},
      {kMc, c, "The answer is (B) 7", kW, "(B) 7"},
      {kMc, c, "The answer is C, because the others are wrong.", kC, "C"},
      {kMc, c, "The answer is **C**.", kC, "C"},
      {kMc, c, "The answer is: $\\text{(C)}$", kC, "\\text{(C)}"},
      {kMc, c, "The correct answer is option (C).", kC, "option (C)"},
      {kMc, c, "The answer is a bit unclear", kW, "a bit unclear", "no choice letter"},
      {kMc, c, "The answer is c", kC, "c"},
      // Fallback: the final token, else the last "(X)".
      {kMc, c, "(C)", kC, "(C)"},
      {kMc, c, "**C**", kC, "C"},
      {kMc, c, "I think it's C.", kC, "C"},
      {kMc, c, "I pick \\textbf{C}", kC, "C"},
      {kMc, c, "Between (A) and (C), (C) fits because it matches the data.", kC, "(C)"},
      {kMc, c, "Between (A) and (C), (A) fits because it matches the data.", kW, "(A)"},
      {kMc, c, "Nothing here.", kNo, "", "choice letter"},
      {kMc, c, "I think so.", kNo, ""},
      {kMc, c, "ABC", kNo, ""},
      // Letters past J are single letters too.
      {kMc, {"K"}, "\\boxed{K}", kC, "K"},
      {kMc, {"(k)"}, "\\boxed{(K)}", kC, "(K)"},
  });
}

TEST(Accuracy, Exact) {
  const std::vector<std::string> paris = {"Paris"};
  RunCases({
      {kEx, paris, "\\boxed{Paris}", kC, "Paris"},
      {kEx, paris, "\\boxed{\\text{paris}}", kC, "\\text{paris}"},
      {kEx, paris, "The answer is PARIS.", kC, "PARIS"},
      {kEx, paris, "  paris  ", kC, "paris"},
      {kEx, paris, "Paris!", kC, "Paris!"},
      {kEx, paris, "<answer> Paris; </answer>", kC, "Paris"},
      {kEx, paris, "\\boxed{Lyon}", kW, "Lyon"},
      {kEx, paris, "\\boxed{Paris, France}", kW, "Paris, France"},
      {kEx, paris, "The capital is Paris", kW, "The capital is Paris"},
      {kEx, paris, "\\boxed{Pa ris}", kW, "Pa ris"},
      {kEx, {"new york"}, "\\boxed{New   York}", kC, "New   York"},
      {kEx, {"new york"}, "\\boxed{New\n\tYork}", kC, "New\n\tYork"},
      {kEx, {"\\text{New York}"}, "\\boxed{new york.}", kC, "new york"},
      {kEx, {"Caf\xC3\xA9"}, "\\boxed{caf\xC3\xA9}", kC, "caf\xC3\xA9"},  // ASCII fold only
      {kEx, {"Caf\xC3\xA9"}, "\\boxed{CAF\xC3\x89}", kW, "CAF\xC3\x89"},
  });
}

TEST(Accuracy, UnparseableReferences) {
  for (const Task task : {kNum, kMc, kEx, Task::kMath}) {
    SCOPED_TRACE(TaskName(task));
    const AccuracyResult r = GradeOne(task, {}, "\\boxed{5}");
    EXPECT_EQ(r.verdict, kBad);
    EXPECT_EQ(r.detail, "no reference");
    EXPECT_EQ(r.accuracy, 0.0);
    EXPECT_TRUE(IsUnscorable(r.verdict));
  }
  RunCases({
      {kNum, {"x"}, "\\boxed{7}", kBad, "7", "no reference is a number: \"x\""},
      {kNum, {"x", "\\sqrt{2}"}, "\\boxed{7}", kBad, "7", "\"\\sqrt{2}\""},
      {kNum, {""}, "\\boxed{7}", kBad, "7", "\"\""},
      // Number words and decimal commas are numbers.
      {kNum, {"seven"}, "\\boxed{7}", kC, "7"},
      {kNum, {"1,00"}, "\\boxed{100}", kW, "100"},
      {kMc, {"CD"}, "\\boxed{C}", kBad, "", "\"CD\" is not a single choice letter"},
      {kMc, {"Option C"}, "\\boxed{C}", kBad, "", "Option C"},
      {kMc, {"7"}, "\\boxed{C}", kBad, ""},
      {kEx, {"  "}, "\\boxed{C}", kBad, "", "is empty"},
      {kEx, {std::string(2000, 'a')}, "\\boxed{a}", kW, "a"},  // a long reference is still one
      // Unscorable wins over a missing answer.
      {kNum, {"x"}, "", kBad, ""},
  });
  const AccuracyResult external = GradeOne(Task::kExternal, {"1"}, "\\boxed{1}");
  EXPECT_EQ(external.verdict, kBad);
}

TEST(Accuracy, ReferenceDetailIsBounded) {
  const std::string huge(100000, 'x');
  const AccuracyResult r = GradeOne(kNum, {huge, huge, huge, huge, huge, huge}, "\\boxed{1}");
  EXPECT_EQ(r.verdict, kBad);
  EXPECT_LT(r.detail.size(), 1000u);
  EXPECT_THAT(r.detail, StartsWith("no reference is a number: \"xxx"));
}

TEST(Accuracy, JudgeIsReusable) {
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  const std::vector<std::string> refs = {"12"};
  const std::unique_ptr<Judge> judge = scorer->Prepare(kNum, refs);
  for (int i = 0; i < 40; ++i) {
    const AccuracyResult r = judge->Grade(absl::StrCat("\\boxed{", i, "}"));
    EXPECT_EQ(r.verdict, i == 12 ? kC : kW) << i;
  }
}

// Inputs built to hang a backtracking scanner or make one quadratic. Each must come back with an
// ordinary verdict; the suite's timeout is the only clock.
TEST(Accuracy, PathologicalInputsTerminate) {
  constexpr size_t kMiB = 1 << 20;
  auto repeat = [](std::string_view unit, size_t bytes) {
    std::string s;
    s.reserve(bytes + unit.size());
    while (s.size() < bytes) s.append(unit);
    return s;
  };
  const std::string digits(kMiB, '7');
  RunCases({
      {kNum, {"1"}, repeat("\\boxed{", kMiB), kNo, "", "unterminated \\boxed{"},
      {kMc, {"A"}, repeat("\\boxed{", kMiB), kNo, "", "unterminated"},
      {kEx, {"a"}, repeat("\\boxed{", kMiB), kNo, "", "unterminated"},
      {kNum, {"1"}, absl::StrCat("\\boxed{", repeat("{", kMiB)), kNo, "", "unterminated"},
      {kNum, {"1"}, repeat("\\boxed{}", kMiB), kNo, "", "empty"},
      {kNum, {"1"}, repeat("\\boxed{1}", kMiB), kC, "1"},
      {kNum, {"1"}, repeat("\\fbox", kMiB), kNo, ""},
      {kNum, {"1"}, repeat("\\", kMiB), kNo, ""},
      {kNum, {"1"}, repeat("\\frac{", kMiB), kNo, ""},
      {kNum, {"1"}, repeat("<answer>", kMiB), kNo, ""},
      {kNum, {"1"}, repeat("</answer>", kMiB), kNo, ""},
      {kNum, {"1"}, repeat("answer: ", kMiB), kNo, ""},
      {kNum, {"1"}, repeat("answer is ", kMiB), kNo, ""},
      {kMc, {"A"}, repeat("(", kMiB), kNo, ""},
      {kMc, {"A"}, repeat("(A", kMiB), kC, "A"},
  });
  // Over-long answers are wrong, not compared, and `extracted` stays bounded.
  const std::vector<Case> long_answers = {
      {kNum, {"7"}, digits, kW, ""},
      {kNum, {"7"}, "\\boxed{" + digits + "}", kW, ""},
      {kNum, {"1000"}, absl::StrCat("1", repeat(",000", kMiB)), kW, ""},
      {kNum, {"7"}, "The answer is " + digits, kW, ""},
      {kNum, {"7"}, "<answer>" + digits + "</answer>", kW, ""},
      {kEx, {"a"}, repeat("a ", kMiB), kW, ""},
      {kMc, {"A"}, absl::StrCat("\\boxed{", repeat("A", kMiB), "}"), kW, ""},
      {kNum, {"1"}, absl::StrCat(repeat("\\boxed{", 1000), "1", repeat("}", 1000)), kW, ""},
      // A megabyte of one pattern as the final sentence: a runaway answer, not its first number.
      {kNum, {"1"}, repeat("\\frac{1}{", kMiB), kW, ""},
      {kNum, {"1"}, repeat("- ", kMiB), kW, ""},
      {kNum, {"1"}, repeat("1,", kMiB), kW, ""},
      {kNum, {"10"}, repeat("1e", kMiB), kW, ""},
      {kNum, {"1"}, repeat("1 \\times 10^{", kMiB), kW, ""},
  };
  for (size_t i = 0; i < long_answers.size(); ++i) {
    const Case& c = long_answers[i];
    SCOPED_TRACE(absl::StrCat("long answer ", i, ": ", Excerpt(c.section)));
    const AccuracyResult r = GradeOne(c.task, c.references, c.section);
    EXPECT_EQ(r.verdict, kW);
    EXPECT_LE(r.extracted.size(), 1024u);
    EXPECT_GT(r.extracted.size(), 1000u);
    EXPECT_THAT(r.detail, HasSubstr("longer than any answer (1024 bytes)"));
  }
  // Deep nesting within the budget is peeled.
  RunCases({
      {kNum,
       {"1"},
       absl::StrCat(repeat("\\boxed{", 7 * 100), "1", repeat("}", 100)),
       kC,
       absl::StrCat(repeat("\\boxed{", 7 * 99), "1", repeat("}", 99))},
  });
}

// Powers of ten in every notation: equal to themselves, never to their neighbours.
TEST(Accuracy, PowersOfTenAreExact) {
  for (int k = 0; k <= 60; ++k) {
    SCOPED_TRACE(k);
    const std::string plain = absl::StrCat("1", std::string(static_cast<size_t>(k), '0'));
    std::string grouped = "1";
    for (int g = 0; g < k % 3; ++g) grouped += '0';
    for (int g = 0; g < k / 3; ++g) grouped += ",000";
    const std::string nines(static_cast<size_t>(k == 0 ? 1 : k), '9');
    const std::string tenth =
        k == 0 ? "1" : absl::StrCat("0.", std::string(static_cast<size_t>(k - 1), '0'), "1");
    const std::vector<std::string> ref = {plain};
    EXPECT_EQ(GradeOne(kNum, ref, "\\boxed{" + plain + "}").verdict, kC);
    EXPECT_EQ(GradeOne(kNum, ref, "\\boxed{" + grouped + "}").verdict, kC) << grouped;
    EXPECT_EQ(GradeOne(kNum, ref, absl::StrCat("\\boxed{1e", k, "}")).verdict, kC);
    EXPECT_EQ(GradeOne(kNum, ref, absl::StrCat("\\boxed{1\\times 10^{", k, "}}")).verdict, kC);
    EXPECT_EQ(GradeOne(kNum, ref, "\\boxed{" + plain + "1}").verdict, kW);
    if (k > 0) {
      EXPECT_EQ(GradeOne(kNum, ref, "\\boxed{" + nines + "}").verdict, kW);
    }
    EXPECT_EQ(GradeOne(kNum, {tenth}, "\\boxed{\\frac{1}{" + plain + "}}").verdict, kC) << tenth;
    EXPECT_EQ(GradeOne(kNum, {tenth}, "\\boxed{\\frac{1}{" + plain + "1}}").verdict, kW);
  }
}

// 128-bit products to print exact references; __extension__ keeps -Wpedantic quiet.
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

std::string ToDecimal(Int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  UInt128 u = negative ? static_cast<UInt128>(-(v + 1)) + 1 : static_cast<UInt128>(v);
  std::string s;
  while (u != 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return negative ? "-" + s : s;
}

// Seeded random fractions: scaling numerator and denominator keeps the value, and adding one to
// the scaled numerator never does, however large the products get.
TEST(Accuracy, RandomFractionsAreExact) {
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<int64_t> num(-1'000'000'000'000, 1'000'000'000'000);
  std::uniform_int_distribution<int64_t> den(1, 1'000'000'000'000);
  std::uniform_int_distribution<int64_t> scale(1, 1'000'000'000'000'000);
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  for (int i = 0; i < 500; ++i) {
    const int64_t p = num(rng);
    const int64_t q = den(rng);
    const int64_t m = scale(rng);
    const std::vector<std::string> ref = {absl::StrCat(p, "/", q)};
    SCOPED_TRACE(ref[0]);
    const std::unique_ptr<Judge> judge = scorer->Prepare(kNum, ref);
    const std::string pm = ToDecimal(static_cast<Int128>(p) * m);
    const std::string pm1 = ToDecimal(static_cast<Int128>(p) * m + 1);
    const std::string qm = ToDecimal(static_cast<Int128>(q) * m);
    EXPECT_EQ(judge->Grade("\\boxed{\\frac{" + pm + "}{" + qm + "}}").verdict, kC);
    EXPECT_EQ(judge->Grade("\\boxed{" + pm1 + "/" + qm + "}").verdict, kW);
  }
}

}  // namespace
}  // namespace rlscore::scorers
