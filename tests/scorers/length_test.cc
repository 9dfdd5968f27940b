// Tests of scorers/length.h: the goldens of docs/DESIGN.md §1 for every shape, monotonicity and
// bounds over every power of two, and the degenerate options that must not produce NaN.
#include "scorers/length.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rlscore::scorers {
namespace {

constexpr uint32_t kMaxU32 = std::numeric_limits<uint32_t>::max();

// Lengths worth probing: 0, every power of two and its neighbours, and the extremes.
std::vector<uint32_t> ProbeLengths() {
  std::vector<uint32_t> out = {0, 1, kMaxU32 - 1, kMaxU32};
  for (int k = 1; k < 32; ++k) {
    const uint32_t p = uint32_t{1} << k;
    out.insert(out.end(), {p - 1, p, p + 1});
  }
  return out;
}

TEST(Length, QuadraticGoldens) {
  const LengthOptions o;  // w = 0.5, L_t = 4096, L_max = 16384
  struct Case {
    uint32_t length;
    double expected;
  };
  const Case cases[] = {
      {0, 0.0},
      {1, 0.0},
      {4096, 0.0},
      {4097, -0.5 / (12288.0 * 12288.0)},
      {10240, -0.125},
      {7168, -0.03125},
      {16383, -0.5 * (12287.0 / 12288.0) * (12287.0 / 12288.0)},
      {16384, -0.5},
      {20000, -0.5},
      {kMaxU32, -0.5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("L=", c.length));
    EXPECT_DOUBLE_EQ(QuadraticLengthPenalty(c.length, o), c.expected);
    EXPECT_DOUBLE_EQ(LengthComponent(c.length, /*correct=*/true, o), c.expected);
  }
}

TEST(Length, QuadraticIsMonotoneAndBounded) {
  for (double w : {0.0, 0.5, 2.0}) {
    LengthOptions o;
    o.weight = w;
    double previous = 0.0;
    for (uint32_t l = 0; l <= 20000; l += 7) {
      SCOPED_TRACE(absl::StrCat("w=", w, " L=", l));
      const double v = QuadraticLengthPenalty(l, o);
      EXPECT_LE(v, previous);
      EXPECT_GE(v, -w);
      EXPECT_LE(v, 0.0);
      previous = v;
    }
  }
}

TEST(Length, QuadraticDegenerateOptionsAreFinite) {
  for (uint32_t target : {0u, 100u, 4096u, kMaxU32}) {
    for (uint32_t max : {0u, 100u, 4096u, kMaxU32}) {
      LengthOptions o;
      o.target = target;
      o.max = max;
      for (uint32_t l : ProbeLengths()) {
        SCOPED_TRACE(absl::StrCat("target=", target, " max=", max, " L=", l));
        const double v = QuadraticLengthPenalty(l, o);
        ASSERT_TRUE(std::isfinite(v));
        EXPECT_LE(v, 0.0);
        EXPECT_GE(v, -o.weight);
        if (l >= max) {  // truncated
          EXPECT_EQ(v, -o.weight);
        }
      }
    }
  }
}

TEST(Length, DapoGoldens) {
  struct Case {
    uint32_t length;
    double expected;
  };
  const Case cases[] = {
      {0, 0.0},    {50, 0.0},   {80, 0.0},   {81, -0.05}, {90, -0.5},
      {99, -0.95}, {100, -1.0}, {101, -1.0}, {110, -1.0}, {kMaxU32, -1.0},
  };
  LengthOptions o;
  o.shape = LengthShape::kDapoOverlong;
  o.max = 100;
  o.dapo_buffer = 20;
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("L=", c.length));
    EXPECT_DOUBLE_EQ(DapoOverlongPenalty(c.length, 100, 20), c.expected);
    EXPECT_DOUBLE_EQ(LengthComponent(c.length, /*correct=*/false, o), c.expected);
  }
}

TEST(Length, DapoDegenerateOptionsAreFiniteAndBounded) {
  for (uint32_t max : {0u, 1u, 100u, kMaxU32}) {
    for (uint32_t buffer : {0u, 1u, 20u, 100u, 200u, kMaxU32}) {
      for (uint32_t l : ProbeLengths()) {
        SCOPED_TRACE(absl::StrCat("max=", max, " buffer=", buffer, " L=", l));
        const double v = DapoOverlongPenalty(l, max, buffer);
        ASSERT_TRUE(std::isfinite(v));
        EXPECT_LE(v, 0.0);
        EXPECT_GE(v, -1.0);
        if (l > max) {
          EXPECT_EQ(v, -1.0);
        }
        if (buffer == 0 && l <= max) {
          EXPECT_EQ(v, 0.0);
        }
      }
    }
  }
}

TEST(Length, DapoIsMonotone) {
  for (uint32_t buffer : {1u, 20u, 100u}) {
    double previous = 0.0;
    for (uint32_t l = 0; l <= 200; ++l) {
      SCOPED_TRACE(absl::StrCat("buffer=", buffer, " L=", l));
      const double v = DapoOverlongPenalty(l, 100, buffer);
      EXPECT_LE(v, previous);
      previous = v;
    }
  }
}

TEST(Length, CosineGoldens) {
  LengthOptions o;
  o.shape = LengthShape::kCosine;
  o.max = 1000;
  struct Case {
    uint32_t length;
    bool correct;
    double expected;
  };
  const Case cases[] = {
      {0, true, 1.0},      {1000, true, 0.5},
      {1001, true, 0.5},   {kMaxU32, true, 0.5},
      {500, true, 0.75},   {0, false, -1.0},
      {1000, false, -0.5}, {5000, false, -0.5},
      {500, false, -0.75}, {250, true, 1.0 - 0.5 * (1.0 - std::sqrt(0.5)) / 2.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("L=", c.length, " correct=", c.correct));
    EXPECT_NEAR(CosineLengthReward(c.length, c.correct, o), c.expected, 1e-15);
    EXPECT_NEAR(LengthComponent(c.length, c.correct, o), c.expected, 1e-15);
  }
  // Past the maximum the ratio is clamped: exactly the *_long values.
  EXPECT_EQ(CosineLengthReward(2000, true, o), 0.5);
  EXPECT_EQ(CosineLengthReward(2000, false, o), -0.5);
}

TEST(Length, CosineIsMonotoneBetweenItsEnds) {
  LengthOptions o;
  o.max = 4096;
  double previous_correct = o.cosine_correct_short;
  double previous_wrong = o.cosine_wrong_short;
  for (uint32_t l = 0; l <= 5000; l += 3) {
    SCOPED_TRACE(absl::StrCat("L=", l));
    const double c = CosineLengthReward(l, true, o);
    const double w = CosineLengthReward(l, false, o);
    EXPECT_LE(c, previous_correct);  // correct: shorter is better
    EXPECT_GE(w, previous_wrong);    // wrong: longer is penalised less
    EXPECT_GE(c, 0.5);
    EXPECT_LE(w, -0.5);
    EXPECT_GT(c, w);
    previous_correct = c;
    previous_wrong = w;
  }
}

TEST(Length, CosineZeroMaxIsFinite) {
  LengthOptions o;
  o.max = 0;
  for (uint32_t l : ProbeLengths()) {
    SCOPED_TRACE(absl::StrCat("L=", l));
    EXPECT_EQ(CosineLengthReward(l, true, o), o.cosine_correct_long);
    EXPECT_EQ(CosineLengthReward(l, false, o), o.cosine_wrong_long);
  }
}

// Runs KimiLengthRewards with `correct` spelled as a string of '1' and '0'.
std::vector<double> Kimi(const std::vector<uint32_t>& lengths, const std::string& correct) {
  auto flags = std::make_unique<bool[]>(correct.size() + 1);
  for (size_t i = 0; i < correct.size(); ++i) flags[i] = correct[i] == '1';
  return KimiLengthRewards(lengths, std::span<const bool>(flags.get(), correct.size()));
}

TEST(Length, KimiGoldens) {
  struct Case {
    std::vector<uint32_t> lengths;
    std::string correct;
    std::vector<double> expected;
  };
  const Case cases[] = {
      {{}, "", {}},
      {{100}, "1", {0.0}},
      {{100, 100, 100}, "101", {0.0, 0.0, 0.0}},  // all equal → zeros
      {{100, 200}, "11", {0.5, -0.5}},
      {{100, 200}, "00", {0.0, -0.5}},
      {{100, 150, 200}, "111", {0.5, 0.0, -0.5}},
      {{100, 150, 200}, "010", {0.0, 0.0, -0.5}},
      {{200, 100, 125, 175}, "1010", {-0.5, 0.0, 0.25, -0.25}},
      {{0, kMaxU32}, "10", {0.5, -0.5}},
      // min and max come from this group only, so a group's rewards do not depend on others.
      {{5000, 6000}, "11", {0.5, -0.5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.lengths) + " " + c.correct);
    const std::vector<double> got = Kimi(c.lengths, c.correct);
    ASSERT_EQ(got.size(), c.expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_DOUBLE_EQ(got[i], c.expected[i]);
    }
  }
}

TEST(Length, KimiBoundsOnRandomGroups) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    const size_t g = 1 + rng() % 16;
    std::vector<uint32_t> lengths(g);
    std::string correct(g, '0');
    for (size_t i = 0; i < g; ++i) {
      lengths[i] = static_cast<uint32_t>(rng() % 20000);
      correct[i] = (rng() % 2 == 0) ? '1' : '0';
    }
    SCOPED_TRACE(::testing::PrintToString(lengths) + " " + correct);
    const std::vector<double> got = Kimi(lengths, correct);
    ASSERT_EQ(got.size(), g);
    for (size_t i = 0; i < g; ++i) {
      ASSERT_TRUE(std::isfinite(got[i]));
      EXPECT_GE(got[i], -0.5);
      EXPECT_LE(got[i], correct[i] == '1' ? 0.5 : 0.0);
    }
  }
}

TEST(Length, KimiMismatchedSpansGiveZeros) {
  const std::vector<double> got = Kimi({100, 200, 300}, "11");
  EXPECT_EQ(got, std::vector<double>(3, 0.0));
}

TEST(Length, ComponentDispatch) {
  LengthOptions o;
  o.max = 1000;
  o.target = 500;
  o.dapo_buffer = 100;
  for (uint32_t l : ProbeLengths()) {
    for (bool correct : {false, true}) {
      SCOPED_TRACE(absl::StrCat("L=", l, " correct=", correct));
      o.shape = LengthShape::kNone;
      EXPECT_EQ(LengthComponent(l, correct, o), 0.0);
      o.shape = LengthShape::kKimi;
      EXPECT_EQ(LengthComponent(l, correct, o), 0.0);
      o.shape = LengthShape::kQuadratic;
      EXPECT_EQ(LengthComponent(l, correct, o), QuadraticLengthPenalty(l, o));
      o.shape = LengthShape::kDapoOverlong;
      EXPECT_EQ(LengthComponent(l, correct, o), DapoOverlongPenalty(l, 1000, 100));
      o.shape = LengthShape::kCosine;
      EXPECT_EQ(LengthComponent(l, correct, o), CosineLengthReward(l, correct, o));
    }
  }
}

}  // namespace
}  // namespace rlscore::scorers
