// Tests of scorers/format.h: the accuracy gate of docs/DESIGN.md §1 as a full truth table, and the
// incident's exploit (perfect tags around an endless reflection loop and a wrong answer), which
// must earn nothing.
#include "scorers/format.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "scorers/anatomy.h"

namespace rlscore::scorers {
namespace {

constexpr std::string_view kWellFormed = "<think>2+2 is 4</think> The answer is \\boxed{4}.";
constexpr std::string_view kMalformed = "<think>2+2 is 4 <think> wait";

struct GateCase {
  bool well_formed_anatomy;
  bool truncated;
  double accuracy;
  bool ungated;
  // Expected.
  double reward;
  bool well_formed;
  bool gated;
  bool paid_ungated;
};

TEST(Format, GateTruthTable) {
  constexpr double R = 0.1;
  // clang-format off
  const std::vector<GateCase> cases = {
      // anatomy ok, truncated, accuracy, ungated -> reward, well_formed, gated, paid_ungated
      {true,  false, 0.0, false,   0, true,  true,  false},  // the gate: well-formed but wrong
      {true,  false, 0.5, false,   R, true,  false, false},
      {true,  false, 1.0, false,   R, true,  false, false},
      {true,  false, 0.0, true,    R, true,  false, true },  // opted out of the gate
      {true,  false, 0.5, true,    R, true,  false, false},
      {true,  false, 1.0, true,    R, true,  false, false},
      {true,  true,  0.0, false,   0, false, false, false},  // truncated is never well-formed
      {true,  true,  0.5, false,   0, false, false, false},
      {true,  true,  1.0, false,   0, false, false, false},
      {true,  true,  0.0, true,    0, false, false, false},
      {true,  true,  0.5, true,    0, false, false, false},
      {true,  true,  1.0, true,    0, false, false, false},
      {false, false, 0.0, false,   0, false, false, false},
      {false, false, 0.5, false,   0, false, false, false},
      {false, false, 1.0, false,   0, false, false, false},  // right answer, broken tags
      {false, false, 0.0, true,    0, false, false, false},
      {false, false, 0.5, true,    0, false, false, false},
      {false, false, 1.0, true,    0, false, false, false},
      {false, true,  0.0, false,   0, false, false, false},
      {false, true,  0.5, false,   0, false, false, false},
      {false, true,  1.0, false,   0, false, false, false},
      {false, true,  0.0, true,    0, false, false, false},
      {false, true,  0.5, true,    0, false, false, false},
      {false, true,  1.0, true,    0, false, false, false},
  };
  // clang-format on
  const Anatomy good = ParseAnatomy(kWellFormed, TagPolicy{});
  const Anatomy bad = ParseAnatomy(kMalformed, TagPolicy{});
  ASSERT_TRUE(good.WellFormed());
  ASSERT_FALSE(bad.WellFormed());
  for (const GateCase& c : cases) {
    SCOPED_TRACE(absl::StrCat("anatomy ", c.well_formed_anatomy ? "ok" : "bad", " truncated ",
                              c.truncated, " accuracy ", c.accuracy, " ungated ", c.ungated));
    FormatOptions options;
    options.ungated = c.ungated;
    const FormatResult f =
        ScoreFormat(c.well_formed_anatomy ? good : bad, c.truncated, c.accuracy, options);
    EXPECT_EQ(f.reward, c.reward);
    EXPECT_EQ(f.well_formed, c.well_formed);
    EXPECT_EQ(f.gated, c.gated);
    EXPECT_EQ(f.paid_ungated, c.paid_ungated);
  }
}

TEST(Format, PaysTheConfiguredReward) {
  FormatOptions options;
  options.reward = 0.25;
  const Anatomy good = ParseAnatomy(kWellFormed, TagPolicy{});
  EXPECT_EQ(ScoreFormat(good, false, 1.0, options).reward, 0.25);
  options.ungated = true;
  EXPECT_EQ(ScoreFormat(good, false, 0.0, options).reward, 0.25);
}

TEST(Format, DefaultsToTheGatedTenth) {
  const FormatOptions options;
  EXPECT_EQ(options.reward, 0.1);
  EXPECT_FALSE(options.ungated);
}

// Outside the REQUIRES, but a NaN accuracy must not open the gate.
TEST(Format, NanAccuracyDoesNotPay) {
  const Anatomy good = ParseAnatomy(kWellFormed, TagPolicy{});
  const FormatResult f =
      ScoreFormat(good, false, std::numeric_limits<double>::quiet_NaN(), FormatOptions{});
  EXPECT_EQ(f.reward, 0.0);
  EXPECT_TRUE(f.gated);
}

// Mechanism 2 of the postmortem: the model kept its tags perfect, looped on self-reflection and
// never committed to a correct answer; the ungated 0.1 paid for it.
TEST(Format, IncidentPerfectTagsWrongAnswerEarnsNothing) {
  std::string text = "<think>Let me compute 17 * 3.\n";
  for (int i = 0; i < 300; ++i) {
    text += "Wait, let me rethink the previous step... but wait, consider another case...\n";
  }
  text += "</think>\nThe answer is \\boxed{41}.";
  const Anatomy a = ParseAnatomy(text, TagPolicy{});
  ASSERT_TRUE(a.WellFormed());
  const FormatResult gated = ScoreFormat(a, /*truncated=*/false, /*accuracy=*/0.0, FormatOptions{});
  EXPECT_EQ(gated.reward, 0.0);
  EXPECT_TRUE(gated.well_formed);
  EXPECT_TRUE(gated.gated);
  EXPECT_FALSE(gated.paid_ungated);

  // The pre-incident configuration, now only by explicit opt-in, and flagged as such.
  FormatOptions old;
  old.ungated = true;
  const FormatResult paid = ScoreFormat(a, false, 0.0, old);
  EXPECT_EQ(paid.reward, 0.1);
  EXPECT_TRUE(paid.paid_ungated);
  EXPECT_FALSE(paid.gated);
}

// The loop that runs into the length limit without closing the reasoning: not well-formed, so
// not "gated" either (gated counts only the well-formed-but-wrong pattern).
TEST(Format, IncidentLoopThatNeverClosesIsNotWellFormed) {
  std::string text = "<think>";
  for (int i = 0; i < 300; ++i) text += "<think>\nWait, let me double check... but wait...\n";
  const Anatomy a = ParseAnatomy(text, TagPolicy{});
  const FormatResult f = ScoreFormat(a, /*truncated=*/true, 0.0, FormatOptions{});
  EXPECT_EQ(f.reward, 0.0);
  EXPECT_FALSE(f.well_formed);
  EXPECT_FALSE(f.gated);
  EXPECT_FALSE(f.paid_ungated);
}

}  // namespace
}  // namespace rlscore::scorers
