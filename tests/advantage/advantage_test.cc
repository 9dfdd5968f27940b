// Tests of advantage/advantage.h: the zero-variance clamp of the incident, every estimator against
// a long-double reference, outcomes, errors, and the CPU backend.
//
// Tolerances. docs/DESIGN.md §4 holds values to 1e-12 relative. Against exact arithmetic that is
// honest only relative to the scale of the data: a double computation of μ is off by about
// eps·max|r| however it is done (that is the rounding of μ itself), and (r - μ)/σ magnifies that by
// 1/σ. An advantage near 0 (r ≈ μ), or a group such as 1e6 + noise, cannot be relative-accurate in
// double. So a value x with reference `ref` must satisfy
//
//   |x - ref| <= 1e-12 · (|ref| + scale)
//
// where `scale` is what rounding μ can move it by: max|r|/σ for normalised advantages, max|r| for
// unnormalised ones and for means. A two-pass σ only feels the error of μ squared, so its scale is
// (1e-12·max|r|)²/σ / 1e-12. The naive E[x²] - E[x]² variance misses these bounds by orders of
// magnitude on the offset ranges below, so the property tests can fail.
#include "advantage/advantage.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::advantage {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRel = 1e-12;

// +0.0 and nothing else: rejects -0.0, which compares equal to 0.0.
bool IsPositiveZero(double x) { return std::bit_cast<uint64_t>(x) == 0; }

size_t CauseIndex(ZeroVarianceCause c) { return static_cast<size_t>(c); }

std::string OptionsName(const Options& o) {
  const char* est = "?";
  switch (o.estimator) {
    case Estimator::kGrpo:
      est = "grpo";
      break;
    case Estimator::kDrGrpo:
      est = "dr_grpo";
      break;
    case Estimator::kRloo:
      est = "rloo";
      break;
    case Estimator::kBatchNormalized:
      est = "batch_normalized";
      break;
    case Estimator::kReinforcePlusPlusBaseline:
      est = "reinforce_pp_baseline";
      break;
    case Estimator::kGrpoPassK:
      est = "grpo_passk";
      break;
    case Estimator::kGdpo:
      est = "gdpo";
      break;
  }
  return absl::StrCat(est, o.deviation == Deviation::kSample ? "/sample" : "/population",
                      " tau=", o.zero_variance_threshold);
}

Options MakeOptions(Estimator e, Deviation d = Deviation::kSample,
                    double tau = kDefaultZeroVarianceThreshold) {
  Options o;
  o.estimator = e;
  o.deviation = d;
  o.zero_variance_threshold = tau;
  return o;
}

// Every estimator under both deviations.
std::vector<Options> AllOptions() {
  std::vector<Options> all;
  for (Estimator e :
       {Estimator::kGrpo, Estimator::kDrGrpo, Estimator::kRloo, Estimator::kBatchNormalized}) {
    for (Deviation d : {Deviation::kSample, Deviation::kPopulation})
      all.push_back(MakeOptions(e, d));
  }
  return all;
}

// A batch owned by the test; Batch only borrows.
struct Case {
  std::vector<double> rewards;
  std::vector<uint32_t> sizes;
  std::vector<Outcome> outcomes;  // empty or one per reward

  Batch AsBatch() const { return {.rewards = rewards, .group_sizes = sizes, .outcomes = outcomes}; }
  bool Scorable(size_t i) const { return outcomes.empty() || outcomes[i] != Outcome::kUnscorable; }
};

absl::StatusOr<Result> ComputeCase(const Case& c, const Options& o = Options{}) {
  return Compute(c.AsBatch(), o);
}

// ---------------------------------------------------------------------------------------------
// Long-double reference, written from docs/DESIGN.md §4 independently of advantage.cc.

struct RefGroup {
  uint32_t n = 0;           // scorable entries
  long double sum = 0;      // of scorable rewards
  long double mean = 0;     // two-pass
  long double m2 = 0;       // Σ (r - mean)²
  long double max_abs = 0;  // max |r| over scorable rewards
  bool bit_identical = true;
  ZeroVarianceCause cause = ZeroVarianceCause::kNone;
};

long double RefStd(long double m2, uint64_t n, Deviation d) {
  if (n < 2) return 0;
  return std::sqrt(m2 / static_cast<long double>(d == Deviation::kSample ? n - 1 : n));
}

struct Reference {
  std::vector<RefGroup> groups;
  std::vector<size_t> group_of;  // flat index -> group
  uint64_t n = 0;                // scorable rewards in the batch
  long double mean = 0;          // of every scorable reward, two-pass
  long double m2 = 0;
  long double max_abs = 0;
};

Reference MakeReference(const Case& c, const Options& o) {
  Reference ref;
  size_t offset = 0;
  for (uint32_t size : c.sizes) {
    RefGroup g;
    uint64_t first_bits = 0;
    for (size_t i = offset; i < offset + size; ++i) {
      ref.group_of.push_back(ref.groups.size());
      if (!c.Scorable(i)) continue;
      const uint64_t bits = std::bit_cast<uint64_t>(c.rewards[i]);
      if (g.n == 0) first_bits = bits;
      if (bits != first_bits) g.bit_identical = false;
      ++g.n;
      g.sum += c.rewards[i];
      g.max_abs = std::max(g.max_abs, std::fabs(static_cast<long double>(c.rewards[i])));
    }
    if (g.n > 0) g.mean = g.sum / g.n;
    for (size_t i = offset; i < offset + size; ++i) {
      if (!c.Scorable(i)) continue;
      const long double d = c.rewards[i] - g.mean;
      g.m2 += d * d;
    }
    ref.n += g.n;
    ref.max_abs = std::max(ref.max_abs, g.max_abs);
    // docs/DESIGN.md §4: the cause of a zero-variance group names the common outcome when there is
    // one.
    if (g.n == 0) {
      g.cause = ZeroVarianceCause::kAllUnscorable;
    } else if (g.n == 1) {
      g.cause = ZeroVarianceCause::kSingleton;
    } else if (g.bit_identical || RefStd(g.m2, g.n, o.deviation) < o.zero_variance_threshold ||
               g.m2 == 0) {
      std::vector<Outcome> seen;
      for (size_t i = offset; i < offset + size; ++i) {
        if (c.Scorable(i) && !c.outcomes.empty()) seen.push_back(c.outcomes[i]);
      }
      const bool common = !seen.empty() && std::all_of(seen.begin(), seen.end(),
                                                       [&](Outcome x) { return x == seen[0]; });
      g.cause = g.bit_identical ? ZeroVarianceCause::kIdenticalRewards
                                : ZeroVarianceCause::kBelowThreshold;
      if (common && seen[0] == Outcome::kCorrect) g.cause = ZeroVarianceCause::kAllCorrect;
      if (common && seen[0] == Outcome::kWrong) g.cause = ZeroVarianceCause::kAllWrong;
      if (common && seen[0] == Outcome::kTruncated) g.cause = ZeroVarianceCause::kAllTruncated;
    }
    ref.groups.push_back(g);
    offset += size;
  }
  long double total = 0;
  for (size_t i = 0; i < c.rewards.size(); ++i) {
    if (c.Scorable(i)) total += c.rewards[i];
  }
  if (ref.n > 0) ref.mean = total / ref.n;
  for (size_t i = 0; i < c.rewards.size(); ++i) {
    if (!c.Scorable(i)) continue;
    const long double d = c.rewards[i] - ref.mean;
    ref.m2 += d * d;
  }
  if (o.estimator == Estimator::kBatchNormalized &&
      (RefStd(ref.m2, ref.n, o.deviation) < o.zero_variance_threshold || ref.m2 == 0)) {
    for (RefGroup& g : ref.groups) {
      if (g.cause == ZeroVarianceCause::kNone) g.cause = ZeroVarianceCause::kBelowThreshold;
    }
  }
  return ref;
}

// The advantage of entry i by the formula of docs/DESIGN.md §4, and the scale of its rounding
// error.
struct RefValue {
  long double value = 0;
  long double scale = 0;
};

RefValue ReferenceAdvantage(const Case& c, const Options& o, const Reference& ref, size_t i) {
  const RefGroup& g = ref.groups[ref.group_of[i]];
  if (!c.Scorable(i) || g.cause != ZeroVarianceCause::kNone) return {0, 0};
  const long double r = c.rewards[i];
  switch (o.estimator) {
    case Estimator::kGrpo: {
      const long double sd = RefStd(g.m2, g.n, o.deviation);
      return {(r - g.mean) / sd, g.max_abs / sd};
    }
    case Estimator::kDrGrpo:
      return {r - g.mean, g.max_abs};
    case Estimator::kRloo:
      // Directly as written: r minus the mean of the other scorable members.
      return {r - (g.sum - r) / (g.n - 1), 2 * g.max_abs};
    case Estimator::kBatchNormalized: {
      const long double sd = RefStd(ref.m2, ref.n, o.deviation);
      return {(r - g.mean) / sd, g.max_abs / sd};
    }
    case Estimator::kReinforcePlusPlusBaseline:
    case Estimator::kGrpoPassK:
    case Estimator::kGdpo:
      break;  // estimators_test.cc
  }
  return {0, 0};
}

// Records the worst |x - ref| / (kRel·(|ref| + scale)) seen, and where; fails once at the end
// instead of once per element.
class Closeness {
 public:
  void Check(double x, long double ref, long double scale, const std::string& where) {
    const long double tol = kRel * (std::fabs(ref) + scale);
    const long double err = std::fabs(static_cast<long double>(x) - ref);
    const long double ratio = tol > 0 ? err / tol : (err == 0 ? 0.0L : kInf);
    if (!(ratio <= worst_)) {  // also catches NaN
      worst_ = std::isnan(ratio) ? kInf : ratio;
      detail_ =
          absl::StrCat(where, ": got ", x, ", reference ", static_cast<double>(ref), ", |error| ",
                       static_cast<double>(err), ", tolerance ", static_cast<double>(tol));
      if (std::isnan(x)) worst_ = kInf;
    }
  }
  void Expect() const { EXPECT_LE(worst_, 1.0L) << "worst case " << detail_; }

 private:
  long double worst_ = 0;
  std::string detail_;
};

// Compares a whole result with the reference: causes, statistics, advantages, summary.
void ExpectMatchesReference(const Case& c, const Options& o, const Result& res) {
  SCOPED_TRACE(OptionsName(o));
  const Reference ref = MakeReference(c, o);
  ASSERT_EQ(res.advantages.size(), c.rewards.size());
  ASSERT_EQ(res.groups.size(), c.sizes.size());
  Closeness close;
  std::array<uint64_t, kNumZeroVarianceCauses> by_cause{};
  for (size_t g = 0; g < ref.groups.size(); ++g) {
    const RefGroup& rg = ref.groups[g];
    const GroupStats& st = res.groups[g];
    ++by_cause[CauseIndex(rg.cause)];
    EXPECT_EQ(st.cause, rg.cause) << "group " << g << ": " << CauseName(st.cause) << " vs "
                                  << CauseName(rg.cause);
    EXPECT_EQ(st.keep(), rg.cause == ZeroVarianceCause::kNone) << "group " << g;
    EXPECT_EQ(st.scorable, rg.n) << "group " << g;
    close.Check(st.mean, rg.mean, rg.max_abs, absl::StrCat("mean of group ", g));
    const long double sd = RefStd(rg.m2, rg.n, o.deviation);
    const long double sd_scale = sd > 0 ? kRel * rg.max_abs * rg.max_abs / sd : 0;
    close.Check(st.std, sd, sd_scale, absl::StrCat("std of group ", g));
  }
  for (size_t i = 0; i < c.rewards.size(); ++i) {
    const RefValue want = ReferenceAdvantage(c, o, ref, i);
    const double got = res.advantages[i];
    if (want.scale == 0) {
      EXPECT_TRUE(IsPositiveZero(got)) << "advantage " << i << " = " << got << " in group "
                                       << ref.group_of[i] << ": expected exactly +0.0";
      continue;
    }
    close.Check(got, want.value, want.scale, absl::StrCat("advantage ", i));
    if (o.estimator == Estimator::kGrpo && o.deviation == Deviation::kSample) {
      // Samuelson's inequality: a standardised score is at most (n - 1)/√n in magnitude.
      const double n = ref.groups[ref.group_of[i]].n;
      const long double bound = (n - 1) / std::sqrt(n);
      EXPECT_LE(std::fabs(got), bound + kRel * (bound + want.scale)) << "advantage " << i;
    }
  }
  const BatchSummary& s = res.summary;
  EXPECT_EQ(s.groups, c.sizes.size());
  EXPECT_EQ(s.rewards, c.rewards.size());
  EXPECT_EQ(s.unscorable, c.rewards.size() - ref.n);
  EXPECT_EQ(s.groups_by_cause, by_cause);
  EXPECT_EQ(s.zero_variance_groups, c.sizes.size() - by_cause[0]);
  EXPECT_DOUBLE_EQ(s.zero_variance_fraction, c.sizes.empty()
                                                 ? 0.0
                                                 : static_cast<double>(s.zero_variance_groups) /
                                                       static_cast<double>(c.sizes.size()));
  close.Check(s.reward_mean, ref.mean, ref.max_abs, "summary reward_mean");
  // σ of the batch may be merged from group moments (Chan et al.), which is first-order sensitive
  // to the rounding of the running mean: scale max|r|, not its square.
  close.Check(s.reward_std, RefStd(ref.m2, ref.n, o.deviation), ref.max_abs, "summary reward_std");
  close.Expect();
}

// ---------------------------------------------------------------------------------------------
// Random batches.

struct Range {
  const char* name;
  std::function<double(std::mt19937_64&)> draw;
};

std::vector<Range> Ranges() {
  return {
      {"unit", [](std::mt19937_64& g) { return std::uniform_real_distribution<double>(0, 1)(g); }},
      {"reward_levels",
       [](std::mt19937_64& g) {
         static constexpr double kLevels[] = {0.0, 0.1, 1.0, 1.1, -0.4, 0.6};
         return kLevels[std::uniform_int_distribution<int>(0, 5)(g)];
       }},
      {"symmetric",
       [](std::mt19937_64& g) { return std::uniform_real_distribution<double>(-5, 5)(g); }},
      {"offset_1e6",
       [](std::mt19937_64& g) { return 1e6 + std::uniform_real_distribution<double>(-1, 1)(g); }},
      {"offset_-7.25_noise_1e-3",
       [](std::mt19937_64& g) {
         return -7.25 + std::uniform_real_distribution<double>(0, 1e-3)(g);
       }},
      {"tiny",
       [](std::mt19937_64& g) { return std::uniform_real_distribution<double>(0, 1e-3)(g); }},
      {"wide_normal",
       [](std::mt19937_64& g) { return std::normal_distribution<double>(0, 1e3)(g); }},
      {"float_residue",
       [](std::mt19937_64& g) {
         return static_cast<double>(
             static_cast<float>(std::uniform_real_distribution<double>(0, 2)(g)));
       }},
  };
}

// `groups` groups with sizes drawn from [min_size, max_size]; with `outcomes`, random outcomes,
// about one in ten unscorable (and then its reward NaN half the time: it must be ignored).
Case RandomCase(std::mt19937_64& gen, const Range& range, int groups, uint32_t min_size,
                uint32_t max_size, bool outcomes) {
  Case c;
  std::uniform_int_distribution<uint32_t> size_dist(min_size, max_size);
  std::uniform_int_distribution<int> outcome_dist(0, 9);
  for (int g = 0; g < groups; ++g) {
    const uint32_t size = size_dist(gen);
    c.sizes.push_back(size);
    for (uint32_t i = 0; i < size; ++i) {
      c.rewards.push_back(range.draw(gen));
      if (!outcomes) continue;
      const int k = outcome_dist(gen);
      Outcome o =
          k < 4 ? static_cast<Outcome>(k) : (k == 9 ? Outcome::kUnscorable : Outcome::kWrong);
      c.outcomes.push_back(o);
      if (o == Outcome::kUnscorable && k % 2 == 1) c.rewards.back() = kNaN;
    }
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// The incident.

TEST(Advantage, IncidentBatchClampsFormatOnlyGroups) {
  // Step 1,428 of the postmortem: 16 prompts × 8 rollouts; 14 prompts all wrong with the format
  // reward only (0.1 each), 2 prompts with some correct answers (1.1).
  constexpr int kGroups = 16, kSize = 8;
  const std::vector<int> mixed = {5, 12};
  const std::vector<std::vector<double>> mixed_rewards = {
      {1.1, 0.1, 0.1, 1.1, 0.1, 0.1, 0.1, 1.1},
      {0.1, 1.1, 1.1, 1.1, 1.1, 0.1, 1.1, 1.1},
  };
  Case c;
  for (int g = 0; g < kGroups; ++g) {
    c.sizes.push_back(kSize);
    const auto it = std::find(mixed.begin(), mixed.end(), g);
    for (int i = 0; i < kSize; ++i) {
      c.rewards.push_back(it == mixed.end() ? 0.1 : mixed_rewards[it - mixed.begin()][i]);
    }
  }
  const absl::StatusOr<Result> res = ComputeCase(c);
  ASSERT_TRUE(res.ok()) << res.status();

  int zero_advantages = 0;
  for (int g = 0; g < kGroups; ++g) {
    SCOPED_TRACE(absl::StrCat("group ", g));
    const GroupStats& st = res->groups[g];
    const auto it = std::find(mixed.begin(), mixed.end(), g);
    if (it == mixed.end()) {
      EXPECT_TRUE(st.zero_variance());
      EXPECT_EQ(st.cause, ZeroVarianceCause::kIdenticalRewards) << CauseName(st.cause);
      EXPECT_FALSE(st.keep());
      EXPECT_EQ(st.mean, 0.1);
      EXPECT_TRUE(IsPositiveZero(st.std)) << st.std;
      for (int i = 0; i < kSize; ++i) {
        const double a = res->advantages[g * kSize + i];
        EXPECT_TRUE(IsPositiveZero(a)) << "position " << i << ": " << a;
        zero_advantages += IsPositiveZero(a);
      }
      continue;
    }
    EXPECT_EQ(st.cause, ZeroVarianceCause::kNone) << CauseName(st.cause);
    EXPECT_TRUE(st.keep());
    const std::vector<double>& r = mixed_rewards[it - mixed.begin()];
    long double mean = 0, m2 = 0;
    for (double x : r) mean += x;
    mean /= kSize;
    for (double x : r) m2 += (x - mean) * (x - mean);
    const long double sd = std::sqrt(m2 / (kSize - 1));
    EXPECT_NEAR(st.mean, static_cast<double>(mean), 1e-15);
    EXPECT_NEAR(st.std, static_cast<double>(sd), kRel * static_cast<double>(sd));
    for (int i = 0; i < kSize; ++i) {
      const long double want = (r[i] - mean) / sd;
      EXPECT_NEAR(res->advantages[g * kSize + i], static_cast<double>(want),
                  kRel * std::fabs(static_cast<double>(want)))
          << "position " << i;
    }
  }
  EXPECT_EQ(zero_advantages, 112);

  const BatchSummary& s = res->summary;
  EXPECT_EQ(s.groups, 16u);
  EXPECT_EQ(s.rewards, 128u);
  EXPECT_EQ(s.unscorable, 0u);
  EXPECT_EQ(s.zero_variance_groups, 14u);
  EXPECT_EQ(s.zero_variance_fraction, 14.0 / 16.0);
  std::array<uint64_t, kNumZeroVarianceCauses> by_cause{};
  by_cause[CauseIndex(ZeroVarianceCause::kNone)] = 2;
  by_cause[CauseIndex(ZeroVarianceCause::kIdenticalRewards)] = 14;
  EXPECT_EQ(s.groups_by_cause, by_cause);
  ExpectMatchesReference(c, Options{}, *res);
}

// ---------------------------------------------------------------------------------------------
// Identical rewards: exact +0.0 whatever the residue of the mean.

TEST(Advantage, IdenticalRewardsGiveExactPositiveZero) {
  std::vector<double> values;
  for (double v : {0.1, 0.3, 1.1, 2.1, 0.943, -7.25}) {
    values.push_back(v);
    values.push_back(static_cast<double>(static_cast<float>(v)));  // float32 residue
  }
  for (const Options& o : AllOptions()) {
    SCOPED_TRACE(OptionsName(o));
    for (double v : values) {
      SCOPED_TRACE(absl::StrCat("value ", v));
      for (uint32_t size = 2; size <= 128; ++size) {
        Case c{.rewards = std::vector<double>(size, v), .sizes = {size}, .outcomes = {}};
        const absl::StatusOr<Result> res = ComputeCase(c, o);
        ASSERT_TRUE(res.ok()) << res.status();
        const GroupStats& st = res->groups[0];
        ASSERT_EQ(st.cause, ZeroVarianceCause::kIdenticalRewards)
            << "size " << size << ": " << CauseName(st.cause);
        ASSERT_FALSE(st.keep());
        ASSERT_EQ(std::bit_cast<uint64_t>(st.mean), std::bit_cast<uint64_t>(v)) << "size " << size;
        ASSERT_TRUE(IsPositiveZero(st.std)) << "size " << size;
        for (uint32_t i = 0; i < size; ++i) {
          ASSERT_TRUE(IsPositiveZero(res->advantages[i]))
              << "size " << size << ", position " << i << ": " << res->advantages[i];
        }
      }
    }
  }
}

// leveldb style: every power of two.
TEST(Advantage, IdenticalRewardsEveryPowerOfTwo) {
  for (uint32_t size = 1; size <= 4096; size *= 2) {
    SCOPED_TRACE(absl::StrCat("size ", size));
    for (double v : {0.1, static_cast<double>(0.1f), -7.25, 1e6 + 0.1}) {
      Case c{.rewards = std::vector<double>(size, v), .sizes = {size}, .outcomes = {}};
      for (const Options& o : AllOptions()) {
        const absl::StatusOr<Result> res = ComputeCase(c, o);
        ASSERT_TRUE(res.ok()) << res.status();
        EXPECT_EQ(res->groups[0].cause,
                  size == 1 ? ZeroVarianceCause::kSingleton : ZeroVarianceCause::kIdenticalRewards);
        EXPECT_EQ(res->groups[0].mean, v);
        EXPECT_TRUE(std::all_of(res->advantages.begin(), res->advantages.end(), IsPositiveZero))
            << OptionsName(o);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Random batches against the long-double reference.

TEST(Advantage, RandomBatchesMatchLongDoubleReference) {
  std::mt19937_64 gen(20240917);
  const std::vector<Options> options = AllOptions();
  for (const Range& range : Ranges()) {
    SCOPED_TRACE(range.name);
    for (int trial = 0; trial < 24; ++trial) {
      SCOPED_TRACE(absl::StrCat("trial ", trial));
      const bool ragged = trial % 2 == 0;
      const bool outcomes = trial % 3 == 0;
      const int groups = std::uniform_int_distribution<int>(1, 24)(gen);
      const Case c = ragged ? RandomCase(gen, range, groups, 1, 128, outcomes)
                            : RandomCase(gen, range, groups, 16, 16, outcomes);
      for (const Options& o : options) {
        const absl::StatusOr<Result> res = ComputeCase(c, o);
        ASSERT_TRUE(res.ok()) << res.status();
        ExpectMatchesReference(c, o, *res);
      }
    }
  }
}

TEST(Advantage, RandomGroupsEveryPowerOfTwo) {
  std::mt19937_64 gen(7);
  for (uint32_t size = 1; size <= 4096; size *= 2) {
    SCOPED_TRACE(absl::StrCat("size ", size));
    for (const Range& range : Ranges()) {
      SCOPED_TRACE(range.name);
      const Case c = RandomCase(gen, range, 1, size, size, /*outcomes=*/false);
      const Options o;
      const absl::StatusOr<Result> res = ComputeCase(c, o);
      ASSERT_TRUE(res.ok()) << res.status();
      ExpectMatchesReference(c, o, *res);
      if (res->groups[0].zero_variance()) continue;  // singletons, or a draw of equal levels
      // Σ a = 0 and Σ a² = n - 1 for GRPO with the sample deviation.
      const RefGroup g = MakeReference(c, o).groups[0];
      const long double scale = g.max_abs / RefStd(g.m2, g.n, o.deviation);
      long double sum = 0, sum_sq = 0, abs_sum = 0;
      for (double a : res->advantages) {
        sum += a;
        sum_sq += static_cast<long double>(a) * a;
        abs_sum += std::fabs(a);
      }
      EXPECT_LE(std::fabs(sum), kRel * (abs_sum + size * scale)) << "Σ advantages";
      EXPECT_NEAR(static_cast<double>(sum_sq), size - 1.0, kRel * size) << "Σ advantages²";
    }
  }
}

TEST(Advantage, RlooIsRewardMinusMeanOfOthers) {
  std::mt19937_64 gen(99);
  for (const Range& range : Ranges()) {
    SCOPED_TRACE(range.name);
    for (uint32_t size : {2u, 3u, 5u, 8u, 16u, 64u, 127u}) {
      SCOPED_TRACE(absl::StrCat("size ", size));
      const Case c = RandomCase(gen, range, 1, size, size, /*outcomes=*/false);
      const absl::StatusOr<Result> res = ComputeCase(c, MakeOptions(Estimator::kRloo));
      ASSERT_TRUE(res.ok()) << res.status();
      if (res->groups[0].zero_variance()) continue;
      long double max_abs = 0;
      for (double r : c.rewards)
        max_abs = std::max(max_abs, std::fabs(static_cast<long double>(r)));
      Closeness close;
      for (uint32_t i = 0; i < size; ++i) {
        long double others = 0;
        for (uint32_t j = 0; j < size; ++j) {
          if (j != i) others += c.rewards[j];
        }
        const long double want = c.rewards[i] - others / (size - 1);
        close.Check(res->advantages[i], want, 2 * max_abs, absl::StrCat("position ", i));
      }
      close.Expect();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Estimator options (docs/DESIGN.md §4).

TEST(Advantage, PopulationDeviationScalesBySqrtNOverNMinusOne) {
  std::mt19937_64 gen(5);
  for (uint32_t size : {2u, 3u, 4u, 7u, 16u, 100u, 1024u}) {
    SCOPED_TRACE(absl::StrCat("size ", size));
    const Case c = RandomCase(gen, Ranges()[0], 1, size, size, false);
    const absl::StatusOr<Result> sample =
        ComputeCase(c, MakeOptions(Estimator::kGrpo, Deviation::kSample));
    const absl::StatusOr<Result> pop =
        ComputeCase(c, MakeOptions(Estimator::kGrpo, Deviation::kPopulation));
    ASSERT_TRUE(sample.ok() && pop.ok());
    const double ratio = std::sqrt(static_cast<double>(size) / (size - 1.0));
    EXPECT_NEAR(sample->groups[0].std / pop->groups[0].std, ratio, 1e-14);
    EXPECT_EQ(sample->groups[0].mean, pop->groups[0].mean);
    for (uint32_t i = 0; i < size; ++i) {
      // a_population = a_sample · sqrt(n / (n - 1)).
      EXPECT_NEAR(pop->advantages[i], sample->advantages[i] * ratio,
                  1e-14 * std::fabs(pop->advantages[i]) + 1e-300)
          << "position " << i;
    }
  }
}

TEST(Advantage, EstimatorsOnAFixedGroup) {
  // {0, 1, 2, 5}: μ = 2, Σ(r - μ)² = 14, sample σ = sqrt(14/3), population σ = sqrt(3.5).
  const Case c{.rewards = {0.0, 1.0, 2.0, 5.0}, .sizes = {4}, .outcomes = {}};
  const double s = std::sqrt(14.0 / 3.0), p = std::sqrt(3.5);
  struct Row {
    Options options;
    std::vector<double> want;
    double std;
  };
  const std::vector<Row> rows = {
      {MakeOptions(Estimator::kGrpo), {-2 / s, -1 / s, 0, 3 / s}, s},
      {MakeOptions(Estimator::kGrpo, Deviation::kPopulation), {-2 / p, -1 / p, 0, 3 / p}, p},
      // Dr. GRPO is not divided by σ, whatever the deviation.
      {MakeOptions(Estimator::kDrGrpo), {-2, -1, 0, 3}, s},
      {MakeOptions(Estimator::kDrGrpo, Deviation::kPopulation), {-2, -1, 0, 3}, p},
      // RLOO: r - mean of the other three.
      {MakeOptions(Estimator::kRloo), {0 - 8 / 3.0, 1 - 7 / 3.0, 2 - 6 / 3.0, 5 - 3 / 3.0}, s},
      // One group: σ_batch is σ_group.
      {MakeOptions(Estimator::kBatchNormalized), {-2 / s, -1 / s, 0, 3 / s}, s},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(OptionsName(row.options));
    const absl::StatusOr<Result> res = ComputeCase(c, row.options);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_EQ(res->groups[0].mean, 2.0);
    EXPECT_NEAR(res->groups[0].std, row.std, 1e-15);
    for (size_t i = 0; i < row.want.size(); ++i) {
      EXPECT_NEAR(res->advantages[i], row.want[i], 1e-15) << "position " << i;
    }
    EXPECT_TRUE(IsPositiveZero(res->advantages[2]));  // r = μ exactly
  }
}

TEST(Advantage, BatchNormalizedUsesSigmaOfTheWholeBatch) {
  // Two groups with very different spreads; σ_batch over all five rewards.
  const Case c{.rewards = {0.0, 1.0, 0.0, 10.0, 20.0}, .sizes = {2, 3}, .outcomes = {}};
  for (Deviation d : {Deviation::kSample, Deviation::kPopulation}) {
    const Options o = MakeOptions(Estimator::kBatchNormalized, d);
    SCOPED_TRACE(OptionsName(o));
    // μ_batch = 31/5 = 6.2; Σ(r - 6.2)² = 6.2² + 5.2² + 6.2² + 3.8² + 13.8² = 308.8.
    const double sd = std::sqrt(308.8 / (d == Deviation::kSample ? 4 : 5));
    const absl::StatusOr<Result> res = ComputeCase(c, o);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_NEAR(res->summary.reward_std, sd, 1e-14);
    EXPECT_NEAR(res->summary.reward_mean, 6.2, 1e-14);
    const std::vector<double> want = {-0.5 / sd, 0.5 / sd, -10 / sd, 0, 10 / sd};
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(res->advantages[i], want[i], 1e-14) << "position " << i;
    }
    // Group statistics stay per group.
    EXPECT_EQ(res->groups[0].mean, 0.5);
    EXPECT_EQ(res->groups[1].mean, 10.0);
  }
}

TEST(Advantage, BatchNormalizedClampsWhenBatchSigmaBelowThreshold) {
  // The second group alone has σ = √2·1e-8 >= τ, but σ_batch over 1002 rewards is ~4.5e-10 < τ.
  Case c{.rewards = std::vector<double>(1000, 0.0), .sizes = {1000, 2}, .outcomes = {}};
  c.rewards.push_back(0.0);
  c.rewards.push_back(2e-8);
  const absl::StatusOr<Result> grpo = ComputeCase(c);
  ASSERT_TRUE(grpo.ok()) << grpo.status();
  EXPECT_EQ(grpo->groups[1].cause, ZeroVarianceCause::kNone);
  const absl::StatusOr<Result> res = ComputeCase(c, MakeOptions(Estimator::kBatchNormalized));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_LT(res->summary.reward_std, kDefaultZeroVarianceThreshold);
  EXPECT_EQ(res->groups[0].cause, ZeroVarianceCause::kIdenticalRewards);
  EXPECT_EQ(res->groups[1].cause, ZeroVarianceCause::kBelowThreshold)
      << CauseName(res->groups[1].cause);
  EXPECT_FALSE(res->groups[1].keep());
  EXPECT_TRUE(std::all_of(res->advantages.begin(), res->advantages.end(), IsPositiveZero));
  EXPECT_EQ(res->summary.zero_variance_groups, 2u);
}

// ---------------------------------------------------------------------------------------------
// The threshold τ.

TEST(Advantage, ThresholdClampsNearlyIdenticalRewards) {
  struct Row {
    const char* name;
    std::vector<double> rewards;
    Options options;
    ZeroVarianceCause want;
  };
  const double one_up = 1.0 + 1e-12;
  const std::vector<Row> rows = {
      {"σ ~ 5.8e-13 < default τ",
       {1.0, one_up, 1.0, one_up},
       Options{},
       ZeroVarianceCause::kBelowThreshold},
      {"dr_grpo clamps too",
       {1.0, one_up, 1.0, one_up},
       MakeOptions(Estimator::kDrGrpo),
       ZeroVarianceCause::kBelowThreshold},
      {"rloo clamps too",
       {1.0, one_up, 1.0, one_up},
       MakeOptions(Estimator::kRloo),
       ZeroVarianceCause::kBelowThreshold},
      {"batch_normalized clamps too",
       {1.0, one_up, 1.0, one_up},
       MakeOptions(Estimator::kBatchNormalized),
       ZeroVarianceCause::kBelowThreshold},
      {"1e6 offset, differences of 1e-9",
       {1e6, 1e6 + 1e-9, 1e6},
       Options{},
       ZeroVarianceCause::kBelowThreshold},
      {"σ = 0.7 >= τ = 0.5",
       {0.0, 1.0},
       MakeOptions(Estimator::kGrpo, Deviation::kSample, 0.5),
       ZeroVarianceCause::kNone},
      {"σ = 0.35 < τ = 0.5",
       {0.0, 0.5},
       MakeOptions(Estimator::kGrpo, Deviation::kSample, 0.5),
       ZeroVarianceCause::kBelowThreshold},
      // Population σ of {0, 2} is exactly 1: the clamp is strict, σ < τ.
      {"σ == τ is kept",
       {0.0, 2.0},
       MakeOptions(Estimator::kGrpo, Deviation::kPopulation, 1.0),
       ZeroVarianceCause::kNone},
      {"σ just below τ",
       {0.0, 2.0},
       MakeOptions(Estimator::kGrpo, Deviation::kPopulation, std::nextafter(1.0, 2.0)),
       ZeroVarianceCause::kBelowThreshold},
      // τ = 0 clamps only bit-identical rewards.
      {"τ = 0 keeps 1e-12 differences",
       {1.0, one_up, 1.0, one_up},
       MakeOptions(Estimator::kGrpo, Deviation::kSample, 0.0),
       ZeroVarianceCause::kNone},
      {"τ = 0 still clamps bit-identical",
       {0.3, 0.3, 0.3},
       MakeOptions(Estimator::kGrpo, Deviation::kSample, 0.0),
       ZeroVarianceCause::kIdenticalRewards},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Case c{.rewards = row.rewards,
                 .sizes = {static_cast<uint32_t>(row.rewards.size())},
                 .outcomes = {}};
    const absl::StatusOr<Result> res = ComputeCase(c, row.options);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_EQ(res->groups[0].cause, row.want) << CauseName(res->groups[0].cause);
    EXPECT_EQ(res->groups[0].keep(), row.want == ZeroVarianceCause::kNone);
    if (row.want != ZeroVarianceCause::kNone) {
      EXPECT_TRUE(std::all_of(res->advantages.begin(), res->advantages.end(), IsPositiveZero));
    } else {
      ExpectMatchesReference(c, row.options, *res);
      EXPECT_TRUE(std::none_of(res->advantages.begin(), res->advantages.end(),
                               [](double a) { return a == 0; }));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Outcomes.

TEST(Advantage, OutcomesNameTheCauseAndExcludeUnscorable) {
  using O = Outcome;
  using Z = ZeroVarianceCause;
  struct Row {
    const char* name;
    std::vector<double> rewards;
    std::vector<Outcome> outcomes;  // empty: none given
    Z want;
    uint32_t scorable;
  };
  const std::vector<Row> rows = {
      {"unscorable excluded, NaN accepted",
       {1.0, kNaN, 0.0, 1.0},
       {O::kCorrect, O::kUnscorable, O::kWrong, O::kCorrect},
       Z::kNone,
       3},
      {"unscorable Inf accepted",
       {-kInf, 1.0, 0.0},
       {O::kUnscorable, O::kCorrect, O::kWrong},
       Z::kNone,
       2},
      {"all unscorable",
       {kNaN, 0.5, 0.5},
       {O::kUnscorable, O::kUnscorable, O::kUnscorable},
       Z::kAllUnscorable,
       0},
      {"one scorable",
       {kNaN, 0.5, 0.7},
       {O::kUnscorable, O::kCorrect, O::kUnscorable},
       Z::kSingleton,
       1},
      {"group of one", {0.7}, {}, Z::kSingleton, 1},
      {"group of one with outcome", {1.1}, {O::kCorrect}, Z::kSingleton, 1},
      {"all correct", {1.1, 1.1, 1.1}, {O::kCorrect, O::kCorrect, O::kCorrect}, Z::kAllCorrect, 3},
      {"all correct but one unscorable",
       {1.1, kNaN, 1.1},
       {O::kCorrect, O::kUnscorable, O::kCorrect},
       Z::kAllCorrect,
       2},
      {"all correct below τ",
       {1.1, 1.1 + 1e-12, 1.1},
       {O::kCorrect, O::kCorrect, O::kCorrect},
       Z::kAllCorrect,
       3},
      {"all correct with different rewards",
       {1.1, 0.9, 1.1},
       {O::kCorrect, O::kCorrect, O::kCorrect},
       Z::kNone,
       3},
      {"all wrong",
       {0.0, 0.0, 0.0, 0.0},
       {O::kWrong, O::kWrong, O::kWrong, O::kWrong},
       Z::kAllWrong,
       4},
      {"all truncated", {-0.5, -0.5}, {O::kTruncated, O::kTruncated}, Z::kAllTruncated, 2},
      {"mixed outcomes, identical rewards",
       {0.1, 0.1, 0.1},
       {O::kWrong, O::kTruncated, O::kWrong},
       Z::kIdenticalRewards,
       3},
      {"unknown outcomes, identical rewards",
       {0.1, 0.1},
       {O::kUnknown, O::kUnknown},
       Z::kIdenticalRewards,
       2},
      {"correct and unknown, identical rewards",
       {1.1, 1.1},
       {O::kCorrect, O::kUnknown},
       Z::kIdenticalRewards,
       2},
      {"mixed outcomes below τ",
       {0.1, 0.1 + 1e-12},
       {O::kWrong, O::kCorrect},
       Z::kBelowThreshold,
       2},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Case c{.rewards = row.rewards,
                 .sizes = {static_cast<uint32_t>(row.rewards.size())},
                 .outcomes = row.outcomes};
    for (const Options& o : AllOptions()) {
      const absl::StatusOr<Result> res = ComputeCase(c, o);
      ASSERT_TRUE(res.ok()) << res.status();
      const GroupStats& st = res->groups[0];
      EXPECT_EQ(st.cause, row.want) << CauseName(st.cause) << ", " << OptionsName(o);
      EXPECT_EQ(st.scorable, row.scorable);
      EXPECT_EQ(res->summary.unscorable, row.rewards.size() - row.scorable);
      for (size_t i = 0; i < row.rewards.size(); ++i) {
        if (!c.Scorable(i)) {
          EXPECT_TRUE(IsPositiveZero(res->advantages[i])) << "unscorable position " << i;
        }
      }
      if (row.scorable == 0) {
        EXPECT_TRUE(IsPositiveZero(st.mean));
        EXPECT_TRUE(IsPositiveZero(st.std));
      }
      if (row.scorable == 1) {
        EXPECT_TRUE(IsPositiveZero(st.std));
      }
      ExpectMatchesReference(c, o, *res);
    }
  }
}

TEST(Advantage, UnscorableEntriesDoNotMoveTheStatistics) {
  // The same scorable rewards, with and without unscorable entries spliced in: identical
  // statistics, and identical advantages at the scorable positions.
  std::mt19937_64 gen(3);
  const Case plain = RandomCase(gen, Ranges()[2], 8, 2, 40, false);
  Case spliced;
  std::vector<size_t> where;  // plain index -> spliced index
  size_t k = 0;
  for (uint32_t size : plain.sizes) {
    uint32_t grown = 0;
    for (uint32_t i = 0; i < size; ++i, ++k) {
      if (k % 3 == 0) {
        spliced.rewards.push_back(k % 2 ? kNaN : 1e300);
        spliced.outcomes.push_back(Outcome::kUnscorable);
        ++grown;
      }
      where.push_back(spliced.rewards.size());
      spliced.rewards.push_back(plain.rewards[k]);
      spliced.outcomes.push_back(Outcome::kUnknown);
      ++grown;
    }
    spliced.sizes.push_back(grown);
  }
  for (const Options& o : AllOptions()) {
    SCOPED_TRACE(OptionsName(o));
    const absl::StatusOr<Result> a = ComputeCase(plain, o);
    const absl::StatusOr<Result> b = ComputeCase(spliced, o);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    for (size_t g = 0; g < plain.sizes.size(); ++g) {
      EXPECT_EQ(a->groups[g].mean, b->groups[g].mean) << "group " << g;
      EXPECT_EQ(a->groups[g].std, b->groups[g].std) << "group " << g;
      EXPECT_EQ(a->groups[g].cause, b->groups[g].cause) << "group " << g;
    }
    for (size_t i = 0; i < plain.rewards.size(); ++i) {
      EXPECT_EQ(a->advantages[i], b->advantages[where[i]]) << "position " << i;
    }
    EXPECT_EQ(b->summary.unscorable, spliced.rewards.size() - plain.rewards.size());
    EXPECT_EQ(a->summary.reward_mean, b->summary.reward_mean);
    EXPECT_EQ(a->summary.reward_std, b->summary.reward_std);
  }
}

// ---------------------------------------------------------------------------------------------
// Errors.

TEST(Advantage, NonFiniteRewardsAreRejectedWithTheirPosition) {
  struct Row {
    const char* name;
    Case c;
    std::vector<std::string> want;  // substrings of the message
  };
  auto four_groups = [](double bad, size_t group, size_t position) {
    Case c{.rewards = std::vector<double>(16, 0.5), .sizes = {4, 4, 4, 4}, .outcomes = {}};
    for (size_t i = 0; i < c.rewards.size(); ++i) c.rewards[i] += 0.01 * static_cast<double>(i);
    c.rewards[group * 4 + position] = bad;
    return c;
  };
  Case with_unscorable{
      .rewards = {0.1, 0.2, 0.3, kNaN, 0.5, kInf, 0.7},
      .sizes = {3, 4},
      .outcomes = {Outcome::kUnknown, Outcome::kUnknown, Outcome::kUnknown, Outcome::kUnscorable,
                   Outcome::kWrong, Outcome::kCorrect, Outcome::kWrong}};
  const std::vector<Row> rows = {
      {"NaN", four_groups(kNaN, 2, 3), {"group 2, position 3", "flat index 11", "NaN"}},
      {"+Inf", four_groups(kInf, 1, 0), {"group 1, position 0", "flat index 4", "+Inf"}},
      {"-Inf", four_groups(-kInf, 3, 2), {"group 3, position 2", "flat index 14", "-Inf"}},
      {"first of two", four_groups(kNaN, 0, 1), {"group 0, position 1", "flat index 1"}},
      {"singleton",
       Case{.rewards = {0.0, kNaN}, .sizes = {1, 1}, .outcomes = {}},
       {"group 1, position 0", "flat index 1", "NaN"}},
      // Positions count every entry of the group, unscorable ones included.
      {"after an unscorable NaN", with_unscorable, {"group 1, position 2", "flat index 5", "+Inf"}},
      {"NaN and Inf cancel nothing",
       Case{.rewards = {kInf, -kInf}, .sizes = {2}, .outcomes = {}},
       {"group 0, position 0", "+Inf"}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    for (const Options& o : AllOptions()) {
      const absl::StatusOr<Result> res = ComputeCase(row.c, o);
      ASSERT_FALSE(res.ok()) << OptionsName(o);
      EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument);
      for (const std::string& w : row.want) {
        EXPECT_THAT(std::string(res.status().message()), HasSubstr(w)) << OptionsName(o);
      }
    }
  }
}

TEST(Advantage, BadShapesAndOptionsAreRejected) {
  struct Row {
    const char* name;
    Case c;
    Options options;
    std::string want;  // a substring of the message
  };
  Options negative_tau, nan_tau, inf_tau, bad_estimator, bad_deviation;
  negative_tau.zero_variance_threshold = -1e-8;
  nan_tau.zero_variance_threshold = kNaN;
  inf_tau.zero_variance_threshold = kInf;
  bad_estimator.estimator = static_cast<Estimator>(9);
  bad_deviation.deviation = static_cast<Deviation>(7);
  const Case good{.rewards = {0.0, 1.0, 0.5}, .sizes = {2, 1}, .outcomes = {}};
  const std::vector<Row> rows = {
      {"sizes sum short",
       Case{.rewards = {0.0, 1.0, 0.5}, .sizes = {2}, .outcomes = {}},
       {},
       "sum to 2"},
      {"sizes sum long",
       Case{.rewards = {0.0, 1.0, 0.5}, .sizes = {2, 2}, .outcomes = {}},
       {},
       "sum to 4"},
      {"rewards without groups",
       Case{.rewards = {1.0}, .sizes = {}, .outcomes = {}},
       {},
       "sum to 0"},
      {"groups without rewards", Case{.rewards = {}, .sizes = {1}, .outcomes = {}}, {}, "sum to 1"},
      {"zero group size",
       Case{.rewards = {0.0, 1.0}, .sizes = {2, 0}, .outcomes = {}},
       {},
       "group_sizes[1] is 0"},
      {"outcomes short",
       Case{.rewards = {0.0, 1.0, 0.5}, .sizes = {2, 1}, .outcomes = {Outcome::kCorrect}},
       {},
       "outcomes has 1 entries"},
      {"negative τ", good, negative_tau, "zero_variance_threshold"},
      {"NaN τ", good, nan_tau, "zero_variance_threshold"},
      {"infinite τ", good, inf_tau, "zero_variance_threshold"},
      {"unknown estimator", good, bad_estimator, "estimator"},
      {"unknown deviation", good, bad_deviation, "deviation"},
      {"overflow",
       Case{.rewards = {1e308, 1e308, 1e308, -1e308}, .sizes = {4}, .outcomes = {}},
       {},
       "overflow"},
      {"overflow of Σ(r - μ)²",
       Case{.rewards = {1e300, -1e300}, .sizes = {2}, .outcomes = {}},
       {},
       "overflow"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const absl::StatusOr<Result> res = ComputeCase(row.c, row.options);
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument) << res.status();
    EXPECT_THAT(std::string(res.status().message()), HasSubstr(row.want));
    if (row.want != "overflow") {
      EXPECT_EQ(ValidateShape(row.c.AsBatch(), row.options).code(),
                absl::StatusCode::kInvalidArgument);
    }
  }
}

// The kernels write past a group's end into the groups after it before reading them, so
// advantages computed over the rewards would be wrong: refused, whether they cover the rewards
// or part of them; a buffer right after the rewards is fine.
TEST(Advantage, RefusesAdvantagesOverTheRewards) {
  const std::vector<uint32_t> sizes = {3, 17, 9, 40, 1, 26, 64, 40};  // 200 rewards
  std::vector<double> buffer(400);
  for (size_t i = 0; i < 200; ++i) buffer[i] = static_cast<double>(i % 7) * 0.25;
  const std::span<double> rewards = std::span<double>(buffer).subspan(0, 200);
  const Batch batch{.rewards = rewards, .group_sizes = sizes, .outcomes = {}};
  std::vector<GroupStats> groups(sizes.size());
  BatchSummary summary;
  for (const size_t start : {0, 100, 199}) {
    const absl::Status status =
        Compute(batch, Options{}, std::span<double>(buffer).subspan(start, 200), groups, &summary);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << start << ": " << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr("overlap the rewards"));
  }
  std::vector<double> apart(200);
  ASSERT_TRUE(Compute(batch, Options{}, apart, groups, &summary).ok());
  const std::span<double> adjacent = std::span<double>(buffer).subspan(200, 200);
  ASSERT_TRUE(Compute(batch, Options{}, adjacent, groups, &summary).ok());
  EXPECT_TRUE(std::equal(apart.begin(), apart.end(), adjacent.begin()));
}

TEST(Advantage, ValidateShapeDoesNotLookAtValues) {
  const Case c{.rewards = {kNaN, kInf, 1e308}, .sizes = {2, 1}, .outcomes = {}};
  EXPECT_TRUE(ValidateShape(c.AsBatch(), Options{}).ok());
  EXPECT_FALSE(ComputeCase(c).ok());
}

TEST(Advantage, EmptyBatchIsOkWithZeroedSummary) {
  for (const Options& o : AllOptions()) {
    SCOPED_TRACE(OptionsName(o));
    const absl::StatusOr<Result> res = ComputeCase(Case{}, o);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_TRUE(res->advantages.empty());
    EXPECT_TRUE(res->groups.empty());
    const BatchSummary& s = res->summary;
    EXPECT_EQ(s.groups, 0u);
    EXPECT_EQ(s.rewards, 0u);
    EXPECT_EQ(s.unscorable, 0u);
    EXPECT_EQ(s.zero_variance_groups, 0u);
    EXPECT_EQ(s.groups_by_cause, (std::array<uint64_t, kNumZeroVarianceCauses>{}));
    EXPECT_TRUE(IsPositiveZero(s.zero_variance_fraction));
    EXPECT_TRUE(IsPositiveZero(s.reward_mean));
    EXPECT_TRUE(IsPositiveZero(s.reward_std));
  }
}

// An OK result carries only finite numbers: nothing may reach the trainer as NaN or ±Inf
// (docs/DESIGN.md §4: a NaN or infinite reward is refused, nothing is coerced).
void ExpectAllFinite(const Result& res, const std::string& what) {
  for (size_t i = 0; i < res.advantages.size(); ++i) {
    EXPECT_TRUE(std::isfinite(res.advantages[i]))
        << what << ": advantage " << i << " = " << res.advantages[i];
  }
  for (size_t g = 0; g < res.groups.size(); ++g) {
    EXPECT_TRUE(std::isfinite(res.groups[g].mean)) << what << ": mean of group " << g;
    EXPECT_TRUE(std::isfinite(res.groups[g].std)) << what << ": std of group " << g;
  }
  EXPECT_TRUE(std::isfinite(res.summary.reward_mean)) << what << ": summary reward_mean";
  EXPECT_TRUE(std::isfinite(res.summary.reward_std))
      << what << ": summary reward_std = " << res.summary.reward_std;
}

TEST(Advantage, ZeroThresholdNeverDividesByZero) {
  // With τ = 0, a group whose rewards are not bit-identical but whose σ is 0 or subnormal in
  // double (+0.0 beside -0.0, subnormal spreads) is clamped, not divided by σ: the header's
  // "a σ below the smallest normal double counts as zero".
  struct Row {
    const char* name;
    std::vector<double> rewards;
  };
  const std::vector<Row> rows = {
      {"+0.0 and -0.0", {0.0, -0.0}},
      {"-0.0 among +0.0", {0.0, 0.0, -0.0, 0.0}},
      {"subnormal", {0.0, std::numeric_limits<double>::denorm_min()}},
      {"subnormal spread", {0.0, 1e-310, 2e-310}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Case c{.rewards = row.rewards,
                 .sizes = {static_cast<uint32_t>(row.rewards.size())},
                 .outcomes = {}};
    for (Options o : AllOptions()) {
      o.zero_variance_threshold = 0.0;
      SCOPED_TRACE(OptionsName(o));
      const absl::StatusOr<Result> res = ComputeCase(c, o);
      ASSERT_TRUE(res.ok()) << res.status();
      ExpectAllFinite(*res, OptionsName(o));
      EXPECT_EQ(res->groups[0].cause, ZeroVarianceCause::kBelowThreshold)
          << CauseName(res->groups[0].cause);
      EXPECT_FALSE(res->groups[0].keep());
      EXPECT_TRUE(std::all_of(res->advantages.begin(), res->advantages.end(), IsPositiveZero));
    }
  }
}

TEST(Advantage, ZeroThresholdTinySpreadsStayAccurate) {
  // With τ = 0 a group whose σ is tiny but normal is normalised. Σ(r - μ)² would fall into the
  // subnormal range and keep only a few significant bits; the library rescales the deviations, so
  // the advantages still match the long-double reference. For {1e-160, 2e-160} that reference is
  // exactly ∓1/√2, which is also the largest magnitude a standardised score of a pair can have.
  struct Row {
    const char* name;
    std::vector<double> rewards;
  };
  const std::vector<Row> rows = {
      {"pair 1e-160 apart", {1e-160, 2e-160}},
      {"triple 1e-158 apart", {1e-158, 2e-158, 3e-158}},
      {"pair 1e-155 apart", {1e-155, 2e-155}},
      {"pair 1e-170 apart", {1e-170, 2e-170}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Case c{.rewards = row.rewards,
                 .sizes = {static_cast<uint32_t>(row.rewards.size())},
                 .outcomes = {}};
    for (Deviation d : {Deviation::kSample, Deviation::kPopulation}) {
      const Options o = MakeOptions(Estimator::kGrpo, d, 0.0);
      SCOPED_TRACE(OptionsName(o));
      const absl::StatusOr<Result> res = ComputeCase(c, o);
      ASSERT_TRUE(res.ok()) << res.status();
      // σ is tiny but a normal double: the group has signal and is normalised accurately.
      ASSERT_FALSE(res->groups[0].zero_variance()) << CauseName(res->groups[0].cause);
      const Reference ref = MakeReference(c, o);
      for (size_t i = 0; i < c.rewards.size(); ++i) {
        const RefValue want = ReferenceAdvantage(c, o, ref, i);
        EXPECT_NEAR(res->advantages[i], static_cast<double>(want.value),
                    static_cast<double>(kRel * (std::fabs(want.value) + want.scale)))
            << "position " << i << ", group σ = " << res->groups[0].std;
      }
    }
  }
}

TEST(Advantage, HugeRewardsAreRejectedOrFinite) {
  // advantage.cc rejects group sums and Σ(r - μ)² that overflow, and says magnitudes above about
  // 1e150 are unsupported. Either answer is acceptable here: INVALID_ARGUMENT, or an OK result
  // with finite numbers only. What must not happen is OK with a NaN in it.
  struct Row {
    const char* name;
    std::vector<double> rewards;
    std::vector<uint32_t> sizes;
  };
  const double a = 1e160, b = 1e160 * (1 + 1e-10);
  const std::vector<Row> rows = {
      {"a singleton of 1e200", {1e200}, {1}},
      {"two identical 1e155", {1e155, 1e155}, {2}},
      {"one group near 1e160", {a, b}, {2}},
      {"groups 2e160 apart", {a, b, -a, -b}, {2, 2}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Case c{.rewards = row.rewards, .sizes = row.sizes, .outcomes = {}};
    for (const Options& o : AllOptions()) {
      const absl::StatusOr<Result> res = ComputeCase(c, o);
      if (!res.ok()) {
        EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument) << OptionsName(o);
        continue;
      }
      ExpectAllFinite(*res, OptionsName(o));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The backend interface and names.

TEST(Advantage, CpuBackendMatchesFreeFunctionBitForBit) {
  const std::unique_ptr<Backend> backend = NewCpuBackend();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Name(), "cpu");
  std::mt19937_64 gen(11);
  for (const Range& range : Ranges()) {
    SCOPED_TRACE(range.name);
    const Case c = RandomCase(gen, range, 12, 1, 64, /*outcomes=*/true);
    for (const Options& o : AllOptions()) {
      SCOPED_TRACE(OptionsName(o));
      const absl::StatusOr<Result> want = ComputeCase(c, o);
      ASSERT_TRUE(want.ok()) << want.status();
      std::vector<double> adv(c.rewards.size(), kNaN);
      std::vector<GroupStats> groups(c.sizes.size());
      BatchSummary summary;
      const absl::StatusOr<std::string_view> served =
          backend->Compute(c.AsBatch(), o, adv, groups, &summary);
      ASSERT_TRUE(served.ok());
      EXPECT_EQ(*served, "cpu");
      for (size_t i = 0; i < adv.size(); ++i) {
        ASSERT_EQ(std::bit_cast<uint64_t>(adv[i]), std::bit_cast<uint64_t>(want->advantages[i]))
            << "advantage " << i;
      }
      for (size_t g = 0; g < groups.size(); ++g) {
        EXPECT_EQ(std::bit_cast<uint64_t>(groups[g].mean),
                  std::bit_cast<uint64_t>(want->groups[g].mean));
        EXPECT_EQ(std::bit_cast<uint64_t>(groups[g].std),
                  std::bit_cast<uint64_t>(want->groups[g].std));
        EXPECT_EQ(groups[g].cause, want->groups[g].cause);
        EXPECT_EQ(groups[g].scorable, want->groups[g].scorable);
      }
      EXPECT_EQ(summary.groups_by_cause, want->summary.groups_by_cause);
      EXPECT_EQ(summary.unscorable, want->summary.unscorable);
      EXPECT_EQ(std::bit_cast<uint64_t>(summary.reward_mean),
                std::bit_cast<uint64_t>(want->summary.reward_mean));
      EXPECT_EQ(std::bit_cast<uint64_t>(summary.reward_std),
                std::bit_cast<uint64_t>(want->summary.reward_std));
    }
  }
  // And the same errors.
  const Case bad{.rewards = {0.0, 1.0, kNaN}, .sizes = {3}, .outcomes = {}};
  std::vector<double> adv(3);
  std::vector<GroupStats> groups(1);
  BatchSummary summary;
  EXPECT_EQ(backend->Compute(bad.AsBatch(), Options{}, adv, groups, &summary).status(),
            ComputeCase(bad).status());
}

TEST(Advantage, CauseNamesAreStableSnakeCase) {
  const std::vector<std::pair<ZeroVarianceCause, std::string_view>> names = {
      {ZeroVarianceCause::kNone, "none"},
      {ZeroVarianceCause::kIdenticalRewards, "identical_rewards"},
      {ZeroVarianceCause::kBelowThreshold, "below_threshold"},
      {ZeroVarianceCause::kAllCorrect, "all_correct"},
      {ZeroVarianceCause::kAllWrong, "all_wrong"},
      {ZeroVarianceCause::kAllTruncated, "all_truncated"},
      {ZeroVarianceCause::kAllUnscorable, "all_unscorable"},
      {ZeroVarianceCause::kSingleton, "singleton"},
  };
  ASSERT_EQ(names.size(), static_cast<size_t>(kNumZeroVarianceCauses));
  for (const auto& [cause, name] : names) {
    SCOPED_TRACE(name);
    EXPECT_EQ(CauseName(cause), name);
  }
}

}  // namespace
}  // namespace rlscore::advantage
