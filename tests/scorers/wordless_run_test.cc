#include "scorers/wordless_run.h"

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::scorers {
namespace {

using ::testing::HasSubstr;

TEST(WordlessRun, DegenerateRunsFireAtTheByteThatPassesTheLimit) {
  for (const std::string unit : {"!", "\n", ".", ")", "= ", "\\\\", " \t", "-|"}) {
    std::string text = "<think>Let me compute the sum";
    const size_t start = text.size();
    while (text.size() < start + 3000) text += unit;
    const WordlessRunReport r = FindWordlessRun(text, 2048);
    ASSERT_TRUE(r.fired) << unit;
    EXPECT_EQ(r.first_char_offset, start) << unit;
    EXPECT_EQ(r.char_offset, start + 2048) << unit;
    EXPECT_THAT(DescribeWordlessRun(r, 2048), HasSubstr("more than 2048 bytes"));
  }
}

TEST(WordlessRun, LettersDigitsAndNonAsciiEndARun) {
  for (const std::string breaker : {"a", "Z", "7", "é", "。", "😀"}) {
    std::string text;
    for (int i = 0; i < 10; ++i) text += std::string(2000, '!') + breaker;
    EXPECT_FALSE(FindWordlessRun(text, 2048).fired) << breaker;
    EXPECT_TRUE(FindWordlessRun(text, 1999).fired) << breaker;
  }
  EXPECT_FALSE(FindWordlessRun(std::string(100000, '!'), 0).fired) << "0 turns the rule off";
}

TEST(WordlessRun, TheBlockScanMatchesTheByteScan) {
  // Runs of every length around the limits, at every alignment, with words between them.
  std::mt19937_64 rng(2048);
  int fired = 0;
  for (int k = 0; k < 3000; ++k) {
    const uint32_t limit =
        k % 3 == 0 ? static_cast<uint32_t>(rng() % 140) : static_cast<uint32_t>(126 + rng() % 2100);
    std::string text;
    while (text.size() < 6000) {
      const size_t run = rng() % (k % 2 == 0 ? 2 * limit + 2 : 70);
      for (size_t i = 0; i < run; ++i) text += " !.)\n-="[rng() % 7];
      text += k % 5 == 0 ? "é" : "word";
    }
    WordlessRunScanner scanner(limit);
    for (size_t i = 0; i < text.size() && !scanner.Push(text[i], i); ++i) {
    }
    const WordlessRunReport expected = scanner.report();
    const WordlessRunReport r = FindWordlessRun(text, limit);
    ASSERT_EQ(r.fired, expected.fired) << k;
    fired += r.fired;
    EXPECT_EQ(r.char_offset, expected.char_offset) << k;
    EXPECT_EQ(r.first_char_offset, expected.first_char_offset) << k;
  }
  EXPECT_GT(fired, 1000);  // both outcomes were exercised
  EXPECT_LT(fired, 2000);
}

}  // namespace
}  // namespace rlscore::scorers
