#include "scorers/math/extract.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::scorers::math {
namespace {

using ::testing::ElementsAreArray;

struct Case {
  const char* name;
  std::string section;
  std::vector<std::string> parts;  // empty: no answer
};

TEST(Extract, FollowsTheOrderOfSpecSection2) {
  const std::vector<Case> cases = {
      {"last box wins", "First \\boxed{3}, then corrected: \\boxed{4}.", {"4"}},
      {"fbox", "So \\fbox{12}", {"12"}},
      {"a factorial keeps its !", "$\\boxed{5!}$!", {"5!"}},
      {"nested braces", "\\boxed{\\frac{1}{2}}", {"\\frac{1}{2}"}},
      {"set braces are literal", "\\boxed{\\{1, 2\\}}", {"\\{1, 2\\}"}},
      {"box in display math", "$$\\boxed{x = 3}$$", {"x = 3"}},
      {"unterminated box: cut", "The answer is \\boxed{\\frac{1}{2", {}},
      {"multi-part with comma", "So $x = \\boxed{3}$, $y = \\boxed{5}$.", {"3", "5"}},
      {"multi-part with and", "\\boxed{2} and \\boxed{7}", {"2", "7"}},
      {"earlier box separated by prose is not a part",
       "\\boxed{1} was wrong, so \\boxed{2}",
       {"2"}},
      {"answer tags", "Reasoning done. <answer> 17 </answer>", {"17"}},
      {"phrase: the answer is", "Thus, the answer is 42.", {"42"}},
      {"phrase: final answer with math", "**Final Answer:** $\\frac{3}{4}$", {"\\frac{3}{4}"}},
      {"phrase keeps decimals", "The answer is 3.5. Done.", {"3.5"}},
      {"last math environment", "We get \\(x^2\\) and finally \\[ 2\\sqrt{2} \\]", {"2\\sqrt{2}"}},
      {"last number of final sentence", "After simplifying we get 14 apples.", {"14"}},
      {"number with separators", "In total 1,000,000 grains.", {"1,000,000"}},
      {"negative and fraction", "It comes to -3/4", {"-3/4"}},
      {"no answer at all", "I am not sure how to proceed.", {}},
      {"empty", "", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ExtractedAnswer a = ExtractAnswer(c.section);
    EXPECT_THAT(a.parts, ElementsAreArray(c.parts)) << a.detail;
    EXPECT_FALSE(a.detail.empty());
  }
}

TEST(Extract, AdversarialInputsFinish) {
  const std::vector<std::string> inputs = {
      std::string(100000, '$'),
      std::string(10000, '{'),
      [] {
        std::string s;
        for (int i = 0; i < 10000; ++i) s += "\\boxed{";
        return s;
      }(),
      [] {
        std::string s;
        for (int i = 0; i < 5000; ++i) s += "\\boxed{1} and ";
        return s;
      }(),
      std::string(100000, '9'),
  };
  for (const std::string& input : inputs) {
    const ExtractedAnswer a = ExtractAnswer(input);
    EXPECT_LE(a.parts.size(), 16u);
  }
}

}  // namespace
}  // namespace rlscore::scorers::math
