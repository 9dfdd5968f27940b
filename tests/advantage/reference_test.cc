#include "advantage/reference.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rlscore::advantage::reference {
namespace {

// The canonical order spelled out with no shortcut: kLanes lanes from +0.0, element i into lane
// i % kLanes, then the full fold from w = kLanes / 2. The CPU's fast paths (raw sums plus +0.0 at
// the end, small groups folded from their own width, a partial last row) must match it bit for bit.
double Spelled(const std::vector<double>& x) {
  double lanes[kLanes] = {};
  for (size_t i = 0; i < x.size(); ++i) lanes[i % kLanes] += x[i];
  for (size_t w = kLanes / 2; w >= 1; w /= 2) {
    for (size_t j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  return lanes[0];
}

TEST(Reference, CanonicalSumIsTheSpelledOutOrderForEverySize) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (size_t n = 1; n <= 300; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> x(n);
      for (double& v : x) {
        // Mix magnitudes so that the order matters, and signed zeros.
        const uint64_t pick = rng() % 8;
        v = pick == 0 ? -0.0 : pick == 1 ? 0.0 : uniform(rng) * (pick == 2 ? 1e16 : 1.0);
      }
      SCOPED_TRACE(testing::Message() << "n=" << n << " trial=" << trial);
      const SumAndIdentity got = CanonicalSumAndIdentity(x.data(), n);
      EXPECT_EQ(std::bit_cast<uint64_t>(got.sum), std::bit_cast<uint64_t>(Spelled(x)));
      std::vector<double> squares(n);
      for (size_t i = 0; i < n; ++i) squares[i] = (x[i] - 0.25) * (x[i] - 0.25);
      EXPECT_EQ(std::bit_cast<uint64_t>(CanonicalSumSquaredDeviations(x.data(), n, 0.25)),
                std::bit_cast<uint64_t>(Spelled(squares)));
    }
  }
}

TEST(Reference, AllNegativeZerosSumToPositiveZero) {
  for (size_t n = 1; n <= 64; ++n) {
    const std::vector<double> x(n, -0.0);
    const SumAndIdentity got = CanonicalSumAndIdentity(x.data(), n);
    EXPECT_EQ(std::bit_cast<uint64_t>(got.sum), 0u) << n;
    EXPECT_TRUE(got.identical);
  }
}

TEST(Reference, MomentStackIsTheLevelByLevelTree) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> uniform(-5.0, 5.0);
  for (size_t count = 0; count <= 600; ++count) {
    std::vector<Moments> m(count);
    MomentStack stack;
    for (Moments& g : m) {
      g = Moments{rng() % 5, uniform(rng), std::fabs(uniform(rng))};  // some empty groups
      stack.Push(g);
    }
    const Moments tree = MergeTree(m);
    const Moments streamed = stack.Root();
    SCOPED_TRACE(count);
    EXPECT_EQ(streamed.n, tree.n);
    EXPECT_EQ(std::bit_cast<uint64_t>(streamed.mean), std::bit_cast<uint64_t>(tree.mean));
    EXPECT_EQ(std::bit_cast<uint64_t>(streamed.m2), std::bit_cast<uint64_t>(tree.m2));
  }
}

// ComputeInterleaved against ComputeReference, the single-group path, on random batches built to
// reach every branch: ragged groups of 1 to 70 entries or of 1 to at most 64 (every number of rows
// and every partial last row, groups that end the batch), large groups (the single-group path's
// vector sums, with every partial last row), ties, bit-identical groups (and +0.0 beside -0.0),
// unscorable entries and all-unscorable groups, magnitudes near overflow and tiny spreads (the
// rescaled σ), subnormals, and now and then a NaN or ±Inf (the same Failure expected). Everything
// must match to the bit: advantages, every GroupStats field, the summary, and the Failure.
struct RandomBatch {
  std::vector<double> rewards;
  std::vector<uint32_t> sizes;
  std::vector<Outcome> outcomes;
  Options options;
};

RandomBatch MakeRandomBatch(std::mt19937_64& rng) {
  RandomBatch b;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto pick = [&rng](uint64_t n) { return static_cast<size_t>(rng() % n); };
  constexpr uint32_t kFixedSizes[] = {1,  2,  3,  7,  8,  9,  15, 16, 17,
                                      24, 31, 32, 33, 63, 64, 65, 70, 129};
  constexpr double kScales[] = {1.0, 1e-3, 1e6, 1e150, 1e-150, 1e-160, 1e-300, 1e-320};
  constexpr double kTies[] = {0.1, 1.1, 0.6, 0.0, -0.0};

  const bool few_groups = pick(4) == 0;
  // Ragged 1-70, ragged 1 to at most 64 (every group small: blocks of small groups of different
  // sizes, with as few rows as the top allows), one fixed size, a few common sizes, or ragged
  // large groups (65 to 184 entries, now and then up to 1,164; fewer of them).
  const size_t size_mode = pick(5);
  const size_t groups = 1 + pick(few_groups ? 8 : size_mode == 4 ? 60 : 300);
  const uint32_t fixed = kFixedSizes[pick(std::size(kFixedSizes))];
  const uint32_t small_top = static_cast<uint32_t>(1 + pick(64));
  const bool with_outcomes = pick(2) == 0;
  for (size_t g = 0; g < groups; ++g) {
    const uint32_t size = size_mode == 0   ? static_cast<uint32_t>(1 + pick(70))
                          : size_mode == 1 ? static_cast<uint32_t>(1 + pick(small_top))
                          : size_mode == 2 ? fixed
                          : size_mode == 3
                              ? (8u << pick(4)) + (pick(4) == 0 ? 1u : 0u)
                              : static_cast<uint32_t>(65 + pick(pick(8) == 0 ? 1100 : 120));
    b.sizes.push_back(size);
    const size_t kind = pick(8);
    const double scale = kScales[pick(std::size(kScales))];
    const double offset = pick(3) == 0 ? 0.0 : (unit(rng) - 0.5) * 4 * scale;
    const double same = pick(4) == 0 ? (pick(2) == 0 ? 0.0 : -0.0) : offset + scale * unit(rng);
    for (uint32_t i = 0; i < size; ++i) {
      double r = 0.0;
      switch (kind) {
        case 0:  // bit-identical (or +0.0 beside -0.0 when `same` is a zero)
          r = pick(8) == 0 && same == 0.0 ? -same : same;
          break;
        case 1:  // a few tied values
        case 2:
          r = kTies[pick(std::size(kTies))];
          break;
        case 3:  // a few ulps apart
          r = std::nextafter(same, pick(2) == 0 ? 1e300 : -1e300);
          if (pick(2) == 0) r = same;
          break;
        default:  // continuous, signed zeros now and then
          r = pick(40) == 0 ? -0.0 : offset + scale * (unit(rng) - 0.5);
          break;
      }
      b.rewards.push_back(r);
      if (with_outcomes) {
        // Sometimes a whole group is unscorable, or shares one outcome.
        const size_t o = kind == 7 ? 4 : kind == 6 ? 1 : pick(10) < 2 ? 4 : pick(4);
        b.outcomes.push_back(static_cast<Outcome>(o));
      }
    }
  }
  if (pick(12) == 0) {  // a non-finite reward somewhere
    constexpr double kBad[] = {std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(), 1e300};
    b.rewards[pick(b.rewards.size())] = kBad[pick(std::size(kBad))];
  }
  constexpr double kTaus[] = {0.0, 1e-8, 1e-3, 0.3};
  b.options.estimator = static_cast<Estimator>(pick(4));
  b.options.deviation = static_cast<Deviation>(pick(2));
  b.options.zero_variance_threshold = kTaus[pick(std::size(kTaus))];
  return b;
}

bool SameBits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

struct Outputs {
  std::vector<double> advantages;
  std::vector<GroupStats> groups;
  BatchSummary summary;
  Failure failure;
};

// Outputs prefilled with the same junk, so that an entry one path leaves unwritten shows.
Outputs RunBatch(const RandomBatch& rb, bool interleaved, VectorIsa isa) {
  const Batch batch{.rewards = rb.rewards, .group_sizes = rb.sizes, .outcomes = rb.outcomes};
  Outputs o;
  o.advantages.assign(rb.rewards.size(), std::bit_cast<double>(uint64_t{0x7ff4deadbeef0001}));
  o.groups.assign(rb.sizes.size(), GroupStats{.mean = -1.5, .std = -2.5, .scorable = 99});
  o.failure = interleaved
                  ? ComputeInterleaved(batch, rb.options, o.advantages, o.groups, &o.summary, isa)
                  : ComputeReference(batch, rb.options, o.advantages, o.groups, &o.summary);
  return o;
}

testing::AssertionResult SameOutputs(const Outputs& want, const Outputs& got) {
  if (want.failure.kind != got.failure.kind || want.failure.group != got.failure.group) {
    return testing::AssertionFailure()
           << "failure kind/group " << static_cast<int>(want.failure.kind) << "/"
           << want.failure.group << " vs " << static_cast<int>(got.failure.kind) << "/"
           << got.failure.group;
  }
  if (want.failure.kind != Failure::Kind::kNone) return testing::AssertionSuccess();  // unspecified
  for (size_t i = 0; i < want.advantages.size(); ++i) {
    if (!SameBits(want.advantages[i], got.advantages[i])) {
      return testing::AssertionFailure()
             << "advantage " << i << ": " << want.advantages[i] << " vs " << got.advantages[i];
    }
  }
  for (size_t g = 0; g < want.groups.size(); ++g) {
    const GroupStats& w = want.groups[g];
    const GroupStats& o = got.groups[g];
    if (!SameBits(w.mean, o.mean) || !SameBits(w.std, o.std) || w.scorable != o.scorable ||
        w.cause != o.cause) {
      return testing::AssertionFailure()
             << "group " << g << ": mean " << w.mean << " vs " << o.mean << ", std " << w.std
             << " vs " << o.std << ", scorable " << w.scorable << " vs " << o.scorable << ", cause "
             << static_cast<int>(w.cause) << " vs " << static_cast<int>(o.cause);
    }
  }
  const BatchSummary& w = want.summary;
  const BatchSummary& o = got.summary;
  if (w.groups != o.groups || w.rewards != o.rewards || w.unscorable != o.unscorable ||
      w.zero_variance_groups != o.zero_variance_groups || w.groups_by_cause != o.groups_by_cause ||
      !SameBits(w.zero_variance_fraction, o.zero_variance_fraction) ||
      !SameBits(w.reward_mean, o.reward_mean) || !SameBits(w.reward_std, o.reward_std)) {
    return testing::AssertionFailure()
           << "summary: reward_mean " << w.reward_mean << " vs " << o.reward_mean << ", reward_std "
           << w.reward_std << " vs " << o.reward_std << ", unscorable " << w.unscorable << " vs "
           << o.unscorable;
  }
  return testing::AssertionSuccess();
}

TEST(Reference, InterleavedMatchesSingleGroupPathBitForBit) {
  std::vector<VectorIsa> isas;
  for (VectorIsa isa :
       {VectorIsa::kBest, VectorIsa::kPortable, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (IsaAvailable(isa)) isas.push_back(isa);
  }
  std::mt19937_64 rng(2024);
  size_t failures = 0;
  size_t clean = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const RandomBatch batch = MakeRandomBatch(rng);
    const Outputs want = RunBatch(batch, /*interleaved=*/false, VectorIsa::kBest);
    failures += want.failure.kind != Failure::Kind::kNone;
    clean += want.failure.kind == Failure::Kind::kNone;
    for (VectorIsa isa : isas) {
      ASSERT_TRUE(SameOutputs(want, RunBatch(batch, /*interleaved=*/true, isa)))
          << "trial " << trial << ", isa " << static_cast<int>(isa) << ", " << batch.sizes.size()
          << " groups, estimator " << static_cast<int>(batch.options.estimator) << ", tau "
          << batch.options.zero_variance_threshold;
    }
  }
  // Both outcomes were exercised.
  EXPECT_GT(failures, 50u);
  EXPECT_GT(clean, 1000u);
}

// The property above leans on every branch being reached; count them on the reference's results.
TEST(Reference, InterleavedPropertyReachesEveryCause) {
  std::mt19937_64 rng(2024);
  std::array<uint64_t, kNumZeroVarianceCauses> causes{};
  uint64_t rescaled = 0;  // groups whose σ came from the tiny-spread rescaling
  for (int trial = 0; trial < 300; ++trial) {
    const RandomBatch rb = MakeRandomBatch(rng);
    const Outputs o = RunBatch(rb, /*interleaved=*/false, VectorIsa::kBest);
    if (o.failure.kind != Failure::Kind::kNone) continue;
    for (size_t g = 0; g < o.groups.size(); ++g) {
      ++causes[static_cast<size_t>(o.groups[g].cause)];
      rescaled += o.groups[g].std > 0 && o.groups[g].std < 1e-140;
    }
  }
  for (int c = 0; c < kNumZeroVarianceCauses; ++c) EXPECT_GT(causes[c], 0u) << "cause " << c;
  EXPECT_GT(rescaled, 0u);
}

// The kernels tell identical rewards from their spread, not their bits (kIdenticalSpread): every
// identical group of every kernel size, at values whose sums round the most, must still come out
// identical, exactly as on the single-group path; and groups one ulp from identical too.
TEST(Reference, InterleavedTellsIdenticalGroupsOfEverySize) {
  std::vector<VectorIsa> isas;
  for (VectorIsa isa : {VectorIsa::kPortable, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (IsaAvailable(isa)) isas.push_back(isa);
  }
  std::mt19937_64 rng(7);
  constexpr double kScales[] = {1.0, 1e-3, 1e6, 1e-140, 1e-150, 1e-300, 1e150};
  size_t identical_groups = 0;
  for (uint32_t size = 2; size <= 64; ++size) {
    for (const double scale : kScales) {
      RandomBatch rb;
      rb.options.zero_variance_threshold = 0.0;  // only identity may clamp
      for (int g = 0; g < 96; ++g) {
        // Every mantissa bit set now and then: the sum of such values rounds at every step.
        const uint64_t mantissa = g % 3 == 0 ? (uint64_t{1} << 52) - 1 : rng() >> 12;
        const double x =
            scale * std::bit_cast<double>((uint64_t{1023} << 52) | mantissa) * (g % 2 ? -1 : 1);
        rb.sizes.push_back(size);
        for (uint32_t i = 0; i < size; ++i) rb.rewards.push_back(x);
        if (g % 4 == 3) rb.rewards.back() = std::nextafter(x, 0.0);  // one ulp from identical
      }
      const Outputs want = RunBatch(rb, /*interleaved=*/false, VectorIsa::kBest);
      ASSERT_EQ(want.failure.kind, Failure::Kind::kNone);
      for (const GroupStats& st : want.groups) {
        identical_groups += st.cause == ZeroVarianceCause::kIdenticalRewards;
      }
      for (VectorIsa isa : isas) {
        ASSERT_TRUE(SameOutputs(want, RunBatch(rb, /*interleaved=*/true, isa)))
            << "groups of " << size << ", scale " << scale << ", isa " << static_cast<int>(isa);
      }
    }
  }
  EXPECT_GT(identical_groups, 63u * std::size(kScales) * 60);
}

// Groups with unscorable entries: in blocks of one size with few of them (the kernel for one size
// leaves those to the single-group path) and with many (the block's groups go through copies of
// their scorable rewards), in ragged blocks, with one or no scorable entry left, and with a NaN
// behind an unscorable entry, which must be ignored. Every layout must match the single-group
// path bit for bit, and the batches must mix scored and unscorable entries.
TEST(Reference, InterleavedTakesGroupsWithUnscorableEntries) {
  std::vector<VectorIsa> isas;
  for (VectorIsa isa : {VectorIsa::kPortable, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (IsaAvailable(isa)) isas.push_back(isa);
  }
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  size_t unscorable = 0;
  size_t normal_with_unscorable = 0;
  for (const uint32_t size : {0u, 1u, 5u, 8u, 9u, 16u, 33u, 64u, 65u}) {  // 0: ragged 1-70
    for (const size_t per_block : {size_t{1}, size_t{4}, size_t{5}, size_t{12}, size_t{64}}) {
      RandomBatch rb;
      rb.options.estimator = static_cast<Estimator>(rng() % 4);
      const size_t groups = 64 * 3 + 17;
      for (size_t g = 0; g < groups; ++g) {
        const uint32_t n = size == 0 ? static_cast<uint32_t>(1 + rng() % 70) : size;
        rb.sizes.push_back(n);
        // `per_block` groups of each 64 have unscorable entries: one, all but one, or all.
        const bool marked = g % 64 < per_block;
        const size_t kind = rng() % 4;
        for (uint32_t i = 0; i < n; ++i) {
          bool out = false;
          if (marked) {
            out = kind == 0 ? i == n / 2 : kind == 1 ? i != 0 : kind == 2 ? true : rng() % 3 == 0;
          }
          rb.rewards.push_back(out && rng() % 5 == 0 ? std::numeric_limits<double>::quiet_NaN()
                                                     : (rng() % 2 ? 1.1 : 0.1) - 0.5 * unit(rng));
          rb.outcomes.push_back(out ? Outcome::kUnscorable : Outcome::kCorrect);
        }
      }
      const Outputs want = RunBatch(rb, /*interleaved=*/false, VectorIsa::kBest);
      ASSERT_EQ(want.failure.kind, Failure::Kind::kNone);
      unscorable += want.summary.unscorable;
      for (size_t g = 0; g < groups; ++g) {
        normal_with_unscorable += want.groups[g].cause == ZeroVarianceCause::kNone &&
                                  want.groups[g].scorable < rb.sizes[g];
      }
      for (VectorIsa isa : isas) {
        ASSERT_TRUE(SameOutputs(want, RunBatch(rb, /*interleaved=*/true, isa)))
            << "groups of " << size << ", " << per_block << " marked a block, isa "
            << static_cast<int>(isa);
      }
    }
  }
  EXPECT_GT(unscorable, 10000u);
  EXPECT_GT(normal_with_unscorable, 1000u);
}

// A group with spread whose mean rounds to -0.0 (the sum is one negative subnormal): x - μ of a
// -0.0 reward is +0.0 on the single-group path, so the kernels must subtract μ as it is, sign of
// zero included, in every group of a block of one size and of a ragged one.
TEST(Reference, InterleavedKeepsTheSignOfAZeroMean) {
  std::vector<VectorIsa> isas;
  for (VectorIsa isa : {VectorIsa::kPortable, VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (IsaAvailable(isa)) isas.push_back(isa);
  }
  constexpr double kTiny = 0x1p-1074;
  const std::vector<double> group = {1.0, -kTiny, -1.0, -0.0, 0.0, 0.0, 0.0, 0.0};
  for (const bool ragged : {false, true}) {
    RandomBatch rb;
    for (int g = 0; g < 80; ++g) {
      const size_t extra = ragged ? static_cast<size_t>(g % 5) * 4 : 0;  // zeros keep the sum
      rb.sizes.push_back(static_cast<uint32_t>(group.size() + extra));
      rb.rewards.insert(rb.rewards.end(), group.begin(), group.end());
      rb.rewards.insert(rb.rewards.end(), extra, 0.0);
    }
    const Outputs want = RunBatch(rb, /*interleaved=*/false, VectorIsa::kBest);
    ASSERT_EQ(want.failure.kind, Failure::Kind::kNone);
    ASSERT_TRUE(std::signbit(want.groups[0].mean) && want.groups[0].mean == 0.0);
    ASSERT_EQ(want.groups[0].cause, ZeroVarianceCause::kNone);
    ASSERT_FALSE(std::signbit(want.advantages[3]));
    for (VectorIsa isa : isas) {
      EXPECT_TRUE(SameOutputs(want, RunBatch(rb, /*interleaved=*/true, isa)))
          << (ragged ? "ragged" : "one size") << ", isa " << static_cast<int>(isa);
    }
  }
}

TEST(Reference, MergeIsExactForTwoKnownHalves) {
  // {1, 2} and {3, 4, 5}: mean 3, M2 = 10.
  const Moments a{2, 1.5, 0.5};
  const Moments b{3, 4.0, 2.0};
  const Moments m = Merge(a, b);
  EXPECT_EQ(m.n, 5u);
  EXPECT_DOUBLE_EQ(m.mean, 3.0);
  EXPECT_DOUBLE_EQ(m.m2, 10.0);
  EXPECT_EQ(Merge(Moments{}, b).mean, b.mean);
  EXPECT_EQ(Merge(a, Moments{}).m2, a.m2);
}

}  // namespace
}  // namespace rlscore::advantage::reference
