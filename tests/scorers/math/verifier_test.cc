#include "scorers/math/verifier.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::scorers::math {
namespace {

using ::testing::HasSubstr;

AccuracyResult GradeOne(const std::string& reference, const std::string& answer_section,
                        Task task = Task::kMath) {
  const std::vector<std::string> refs = {reference};
  return NewAccuracyScorer()->Prepare(task, refs)->Grade(answer_section);
}

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Verifier, AdversarialInputsEndInATypedVerdictThroughTheBudgets) {
  struct Case {
    const char* name;
    std::string section;
    Verdict verdict;
  };
  const std::vector<Case> cases = {
      // Longer than any answer: a runaway generation, WRONG before any parsing (never
      // unscorable, which would let it escape the wrong-answer signal).
      {"100k-character answer", "\\boxed{" + std::string(100000, '7') + "}", Verdict::kWrong},
      {"10,000 nested braces", "\\boxed{" + Repeat("{", 10000) + "1" + Repeat("}", 10000) + "}",
       Verdict::kWrong},
      // Within the size budget, over ParseLimits::max_depth: unscorable.
      {"400 nested braces", "\\boxed{" + Repeat("{", 400) + "1" + Repeat("}", 400) + "}",
       Verdict::kBudgetExceeded},
      {"\\frac chain 100 deep",
       "\\boxed{" + Repeat("\\frac{1}{", 100) + "2" + Repeat("}", 100) + "}",
       Verdict::kBudgetExceeded},
      // A tower: parsed, then evaluated within the integer-size budget; it is not 5.
      {"power tower", "\\boxed{5^{5^{5^{5^5}}}}", Verdict::kWrong},
      {"thousands of $", Repeat("$", 5000), Verdict::kNoAnswer},
      {"unbalanced braces", "\\boxed{\\frac{1}{2}", Verdict::kNoAnswer},
      {"100k characters of prose, no answer", Repeat("word ", 20000), Verdict::kNoAnswer},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const AccuracyResult r = GradeOne("5", c.section);
    EXPECT_EQ(static_cast<int>(r.verdict), static_cast<int>(c.verdict)) << r.detail;
  }
}

TEST(Verifier, ReferencesParsedOnceAndVerdictsCachedPerGroup) {
  const std::vector<std::string> refs = {"\\frac{1}{2}", "0.5"};
  const std::unique_ptr<Judge> judge = NewAccuracyScorer()->Prepare(Task::kMath, refs);
  const AccuracyResult first = judge->Grade(" so \\boxed{2/4}.");
  const AccuracyResult again = judge->Grade(" hence \\boxed{2/4}");
  EXPECT_EQ(first.verdict, Verdict::kCorrect);
  EXPECT_EQ(again.verdict, Verdict::kCorrect);
  EXPECT_EQ(first.extracted, "2/4");
  EXPECT_EQ(judge->Grade("\\boxed{2}").verdict, Verdict::kWrong);
}

TEST(Verifier, UnparseableReferencesAreUnscorable) {
  const AccuracyResult r = GradeOne("\\frac{1}{", "\\boxed{1}");
  EXPECT_EQ(r.verdict, Verdict::kUnparseableReference);
  EXPECT_THAT(r.detail, HasSubstr("\\frac{1}{"));
  const std::vector<std::string> none;
  EXPECT_EQ(NewAccuracyScorer()->Prepare(Task::kMath, none)->Grade("\\boxed{1}").verdict,
            Verdict::kUnparseableReference);
}

TEST(Verifier, OtherTasksUseTheBasicRules) {
  EXPECT_EQ(GradeOne("C", "Answer: (C)", Task::kMultipleChoice).verdict, Verdict::kCorrect);
  EXPECT_EQ(GradeOne("Paris", "\\boxed{paris}", Task::kExact).verdict, Verdict::kCorrect);
  EXPECT_EQ(GradeOne("0.5", "\\boxed{1/2}", Task::kNumeric).verdict, Verdict::kCorrect);
}

}  // namespace
}  // namespace rlscore::scorers::math
