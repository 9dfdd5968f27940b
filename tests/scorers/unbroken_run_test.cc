#include "scorers/unbroken_run.h"

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::scorers {
namespace {

using ::testing::HasSubstr;

TEST(UnbrokenRun, DegenerateRunsFireAtTheByteThatPassesTheLimit) {
  // Symbols after a word, and an endless word after a space.
  for (const std::string unit :
       {"!", "\n", ".", ")", "= ", "\\\\", " \t", "-|", "3", "0", "a", "ab1"}) {
    const bool letters = RunClass(unit[0]) == 1;
    std::string text = letters ? "<think>So x = 0." : "<think>Let me compute the sum";
    const size_t start = text.size();
    while (text.size() < start + 3000) text += unit;
    const UnbrokenRunReport r = FindUnbrokenRun(text, 2048);
    ASSERT_TRUE(r.fired) << unit;
    EXPECT_EQ(r.first_char_offset, start) << unit;
    EXPECT_EQ(r.char_offset, start + 2048) << unit;
    EXPECT_EQ(r.letters, letters) << unit;
    EXPECT_THAT(DescribeUnbrokenRun(r, 2048), HasSubstr("more than 2048 bytes in a row of"));
  }
}

TEST(UnbrokenRun, AChangeOfClassOrANonAsciiByteEndsARun) {
  for (const std::string breaker : {"a", "Z", "7", "é", "。", "😀"}) {
    std::string text;
    for (int i = 0; i < 10; ++i) text += std::string(2000, '!') + breaker;
    EXPECT_FALSE(FindUnbrokenRun(text, 2048).fired) << breaker;
    EXPECT_TRUE(FindUnbrokenRun(text, 1999).fired) << breaker;
  }
  for (const std::string breaker : {" ", ".", "é", "。"}) {
    std::string text;
    for (int i = 0; i < 10; ++i) text += std::string(2000, '3') + breaker;
    EXPECT_FALSE(FindUnbrokenRun(text, 2048).fired) << breaker;
    EXPECT_TRUE(FindUnbrokenRun(text, 1999).fired) << breaker;
  }
  // Chinese has no ASCII for pages; it never makes a run.
  std::string chinese;
  while (chinese.size() < 20000) chinese += "我们再检查一下这个和。";
  EXPECT_FALSE(FindUnbrokenRun(chinese, 2048).fired);
  EXPECT_FALSE(FindUnbrokenRun(std::string(100000, '!'), 0).fired) << "0 turns the rule off";
}

TEST(UnbrokenRun, TheTileScanMatchesTheByteScan) {
  // Runs of both classes, of every length around the limits, at every alignment, meeting each
  // other directly or across a non-ASCII character.
  std::mt19937_64 rng(2048);
  int fired = 0;
  for (int k = 0; k < 3000; ++k) {
    const uint32_t limit =
        k % 3 == 0 ? static_cast<uint32_t>(rng() % 140) : static_cast<uint32_t>(126 + rng() % 2100);
    std::string text;
    while (text.size() < 6000) {
      const char* pool = rng() % 2 == 0 ? " !.)\n-=" : "a3Zx9q0";
      const size_t run = rng() % (k % 2 == 0 ? 2 * limit + 2 : 70);
      for (size_t i = 0; i < run; ++i) text += pool[rng() % 7];
      if (k % 5 == 0) text += "é";
    }
    UnbrokenRunScanner scanner(limit);
    for (size_t i = 0; i < text.size() && !scanner.Push(text[i], i); ++i) {
    }
    const UnbrokenRunReport expected = scanner.report();
    const UnbrokenRunReport r = FindUnbrokenRun(text, limit);
    ASSERT_EQ(r.fired, expected.fired) << k;
    fired += r.fired;
    EXPECT_EQ(r.char_offset, expected.char_offset) << k;
    EXPECT_EQ(r.first_char_offset, expected.first_char_offset) << k;
    EXPECT_EQ(r.letters, expected.letters) << k;
  }
  EXPECT_GT(fired, 500);  // both outcomes were exercised
  EXPECT_LT(fired, 2500);
}

}  // namespace
}  // namespace rlscore::scorers
