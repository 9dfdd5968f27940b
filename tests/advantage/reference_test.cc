#include "advantage/reference.h"

#include <bit>
#include <cstdint>
#include <random>
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
