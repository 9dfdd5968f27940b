#include "scorers/ast/code_shape.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rlscore::scorers::ast {
namespace {

std::string Shape(std::string_view code, CodeLanguage language) {
  std::vector<uint32_t> tokens;
  AppendShapeTokens(code, language, &tokens);
  std::string s;
  for (uint32_t t : tokens) s += static_cast<char>(t);
  return s;
}

TEST(CodeShape, Tokens) {
  EXPECT_EQ(Shape("def f(a):\n  return a + 1  # one\n", CodeLanguage::kPython), "ww(w):ww+0");
  EXPECT_EQ(Shape("x = \"a # b\" + 'c' + \"\"\"multi\nline\"\"\"", CodeLanguage::kPython),
            "w=s+s+s");
  EXPECT_EQ(Shape("int x = 0x1F; // c\n/* block\n */ y++;", CodeLanguage::kCpp), "ww=0;w++;");
  EXPECT_EQ(Shape("s = `t ${a}\n`; // x", CodeLanguage::kJavaScript), "w=s;");
  EXPECT_EQ(Shape("#include <a.h>", CodeLanguage::kC), "#w<w.w>");
  EXPECT_EQ(Shape("\"unterminated\nnext", CodeLanguage::kC), "sw");
  EXPECT_EQ(Shape("/* open", CodeLanguage::kJavaScript), "");
  EXPECT_EQ(Shape("", CodeLanguage::kPython), "");
}

TEST(CodeShape, RenamedCodeHasTheSameShape) {
  EXPECT_EQ(Shape("for (int i = 0; i < n; ++i) total += v[i] * 2;", CodeLanguage::kCpp),
            Shape("for (int k = 5; k < len; ++k) acc += values[k] * 7;", CodeLanguage::kCpp));
}

TEST(CodeShape, WindowRecurrence) {
  using Marks = std::vector<bool>;
  const std::vector<uint32_t> four = {1, 2, 3, 9, 1, 2, 3, 9, 1, 2, 3, 9, 1, 2, 3};
  EXPECT_EQ(SequencesWithRecurringWindow({&four, 1}, 3, 3), Marks{true});  // (1,2,3) four times
  EXPECT_EQ(SequencesWithRecurringWindow({&four, 1}, 3, 4), Marks{false});
  EXPECT_EQ(SequencesWithRecurringWindow({&four, 1}, 16, 0), Marks{false});  // too long
  EXPECT_EQ(SequencesWithRecurringWindow({&four, 1}, 0, 0), Marks{false});
  // Windows never span two sequences.
  const std::vector<std::vector<uint32_t>> split = {{1, 2}, {3, 1}, {2, 3}, {1, 2}, {3}};
  EXPECT_EQ(SequencesWithRecurringWindow(split, 3, 0), Marks(5, false));
  // Only the sequences that hold the recurring window are marked.
  const std::vector<std::vector<uint32_t>> across = {{7, 8, 9}, {1, 2, 3}, {7, 8, 9}, {0, 7, 8, 9}};
  EXPECT_EQ(SequencesWithRecurringWindow(across, 3, 2), (Marks{true, false, true, true}));
  EXPECT_EQ(SequencesWithRecurringWindow(across, 3, 3), Marks(4, false));
}

TEST(CodeShape, OverlappingOccurrencesCountOnce) {
  using Marks = std::vector<bool>;
  // A data literal repeats its windows at every period: 0,0,0,0,... holds the window (0,0,0)
  // at every position but only ⌊n / 3⌋ times without overlap.
  const std::vector<uint32_t> zeros(11, '0');
  EXPECT_EQ(SequencesWithRecurringWindow({&zeros, 1}, 3, 3), Marks{false});  // 3 disjoint
  const std::vector<uint32_t> more(12, '0');
  EXPECT_EQ(SequencesWithRecurringWindow({&more, 1}, 3, 3), Marks{true});  // 4 disjoint
}

}  // namespace
}  // namespace rlscore::scorers::ast
