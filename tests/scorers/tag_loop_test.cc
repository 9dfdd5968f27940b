#include "scorers/tag_loop.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::scorers {
namespace {

using ::testing::HasSubstr;

TEST(TagLoop, EveryWayOfWritingAReasoningTagCounts) {
  for (const char* tag : {"<think>", "</think>", "</ think>", "< think>", "<  /\tthink>", "<THINK>",
                          "</Think>", "<thinking>", "<think", "<think >"}) {
    std::string text;
    for (int i = 0; i < 4; ++i) text += std::string("Step. ") + tag + "\n";
    const TagLoopReport r = FindTagLoop(text, 3);
    EXPECT_TRUE(r.fired) << tag;
    EXPECT_EQ(r.tags, 4u) << tag;
    EXPECT_EQ(r.first_char_offset, 6u) << tag;
    EXPECT_EQ(text[r.char_offset], '<') << tag;
    EXPECT_EQ(r.char_offset, 3 * (text.size() / 4) + 6) << tag;
    // Complete at its 'k': nothing after it is needed.
    std::string name = text.substr(r.detected_at - 4, 5);
    for (char& c : name) c = static_cast<char>(c | 0x20);  // ASCII letters to lower case
    EXPECT_EQ(name, "think") << tag;
  }
}

TEST(TagLoop, TextThatOnlyLooksLikeATagDoesNotCount) {
  std::string text;
  for (const char* s : {"x <the y", "<thin>", "< / / think>", "<t hink>", "<tthink>", "a<b", "<<",
                        "</", "<answer>", "</answer>", "<\nthink>", "think>", "<thi"}) {
    for (int i = 0; i < 4; ++i) text += std::string(s) + " ";
  }
  const TagLoopReport r = FindTagLoop(text, 3);
  EXPECT_FALSE(r.fired);
  EXPECT_EQ(r.tags, 0u);
}

TEST(TagLoop, AnHonestCompletionDoesNotFire) {
  // One of each, and a tag quoted once in the answer.
  const std::string text =
      "<think>\nThe sum is 4.\n</think>\nThe model writes its reasoning between <think> and its "
      "end tag. \\boxed{4}";
  const TagLoopReport r = FindTagLoop(text, 4);
  EXPECT_FALSE(r.fired);
  EXPECT_EQ(r.tags, 3u);
  EXPECT_TRUE(FindTagLoop(text, 2).fired);
  EXPECT_FALSE(FindTagLoop(text + "<think><think><think>", 0).fired) << "0 turns the rule off";
}

TEST(TagLoop, PiecesGiveTheSameReportAsTheWhole) {
  const std::string text =
      "<think>a</ think>b<THI"
      "NK>c< think>d<<thinking>e<think f</think>g<think>";
  const TagLoopReport whole = FindTagLoop(text, 4);
  ASSERT_TRUE(whole.fired);
  for (size_t cut = 1; cut < text.size(); ++cut) {
    for (size_t step : {1, 2, 3, 7}) {
      TagLoopScanner scanner(4);
      size_t at = 0;
      for (size_t len = cut; at < text.size(); len = step) {
        const size_t n = std::min(len, text.size() - at);
        scanner.Feed(std::string_view(text).substr(at, n), at);
        at += n;
      }
      const TagLoopReport& r = scanner.report();
      ASSERT_TRUE(r.fired) << cut << " " << step;
      EXPECT_EQ(r.char_offset, whole.char_offset);
      EXPECT_EQ(r.first_char_offset, whole.first_char_offset);
      EXPECT_EQ(r.detected_at, whole.detected_at);
      EXPECT_EQ(r.tags, whole.tags);
    }
  }
  EXPECT_THAT(DescribeTagLoop(whole, 4), HasSubstr("reasoning tag 5 (more than 4"));
}

}  // namespace
}  // namespace rlscore::scorers
