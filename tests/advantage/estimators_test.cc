// Tests of the CPU-only estimators (advantage/cpu_estimators.h) and the keep band, through
// advantage::Compute: each against a long-double reference written from the formulas of
// docs/DESIGN.md §4, the clamp at every normalisation, ties, and the errors.
//
// Tolerances as in advantage_test.cc: a value x with reference `ref` must satisfy
// |x - ref| <= 1e-12 · (|ref| + scale), where `scale` is what the rounding of a double mean can
// move it by (max|r| / σ for a normalised value).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "advantage/advantage.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::advantage {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr long double kRel = 1e-12L;

bool IsPositiveZero(double x) { return std::bit_cast<uint64_t>(x) == 0; }

// A batch owned by the test; Batch only borrows.
struct Case {
  std::vector<double> rewards = {};
  std::vector<uint32_t> sizes = {};
  std::vector<Outcome> outcomes = {};   // empty or one per reward
  std::vector<double> components = {};  // GDPO: [rewards × k], row-major
  uint32_t k = 0;                       // GDPO: components per reward
  std::vector<double> weights = {};     // GDPO: k
  std::vector<double> accuracy = {};    // keep band: empty or one per reward

  Batch AsBatch() const {
    return {.rewards = rewards,
            .group_sizes = sizes,
            .outcomes = outcomes,
            .components = components,
            .num_components = k,
            .component_weights = weights,
            .accuracy = accuracy};
  }
  bool Scorable(size_t i) const { return outcomes.empty() || outcomes[i] != Outcome::kUnscorable; }
};

Options Make(Estimator e, Deviation d = Deviation::kSample) {
  Options o;
  o.estimator = e;
  o.deviation = d;
  return o;
}

std::string Name(const Options& o) {
  const char* e = o.estimator == Estimator::kReinforcePlusPlusBaseline ? "reinforce_pp_baseline"
                  : o.estimator == Estimator::kGrpoPassK               ? "grpo_passk"
                  : o.estimator == Estimator::kGdpo                    ? "gdpo"
                                                                       : "other";
  return absl::StrCat(e, o.deviation == Deviation::kSample ? "/sample" : "/population");
}

// ---------------------------------------------------------------------------------------------
// Long-double reference.

using LD = long double;

LD Std(LD m2, uint64_t n, Deviation d) {
  if (n < 2) return 0;
  return std::sqrt(m2 / static_cast<LD>(d == Deviation::kSample ? n - 1 : n));
}

struct LdMoments {
  uint64_t n = 0;
  LD mean = 0;
  LD std = 0;
  LD max_abs = 0;
  bool bit_identical = true;
};

LdMoments Moments(const std::vector<double>& x, Deviation d) {
  LdMoments m;
  LD sum = 0;
  for (double v : x) {
    sum += v;
    m.max_abs = std::max(m.max_abs, std::fabs(static_cast<LD>(v)));
    if (std::bit_cast<uint64_t>(v) != std::bit_cast<uint64_t>(x[0])) m.bit_identical = false;
  }
  m.n = x.size();
  if (m.n == 0) return m;
  m.mean = sum / m.n;
  LD m2 = 0;
  for (double v : x) m2 += (v - m.mean) * (v - m.mean);
  m.std = Std(m2, m.n, d);
  return m;
}

LdMoments MomentsLd(const std::vector<LD>& x, Deviation d) {
  LdMoments m;
  LD sum = 0;
  for (LD v : x) {
    sum += v;
    m.max_abs = std::max(m.max_abs, std::fabs(v));
    if (v != x[0]) m.bit_identical = false;
  }
  m.n = x.size();
  if (m.n == 0) return m;
  m.mean = sum / m.n;
  LD m2 = 0;
  for (LD v : x) m2 += (v - m.mean) * (v - m.mean);
  m.std = Std(m2, m.n, d);
  return m;
}

// The cause a zero-variance group names from its scorable outcomes, or kNone.
ZeroVarianceCause OutcomeCause(const Case& c, size_t offset, size_t size) {
  std::vector<Outcome> seen;
  for (size_t i = offset; i < offset + size; ++i) {
    if (c.Scorable(i) && !c.outcomes.empty()) seen.push_back(c.outcomes[i]);
  }
  if (seen.empty() ||
      !std::all_of(seen.begin(), seen.end(), [&](Outcome x) { return x == seen[0]; })) {
    return ZeroVarianceCause::kNone;
  }
  switch (seen[0]) {
    case Outcome::kCorrect:
      return ZeroVarianceCause::kAllCorrect;
    case Outcome::kWrong:
      return ZeroVarianceCause::kAllWrong;
    case Outcome::kTruncated:
      return ZeroVarianceCause::kAllTruncated;
    default:
      return ZeroVarianceCause::kNone;
  }
}

struct RefResult {
  std::vector<LD> advantages;  // 0 where the result must be exactly +0.0
  std::vector<LD> scale;       // 0 where the result must be exactly +0.0
  std::vector<ZeroVarianceCause> causes;
  std::vector<LD> mean;           // of each group's scorable rewards
  std::vector<LdMoments> reward;  // per group
};

// The group statistics of the rewards and the zero-variance causes every estimator starts from.
RefResult GroupStage(const Case& c, const Options& o) {
  RefResult ref;
  ref.advantages.assign(c.rewards.size(), 0);
  ref.scale.assign(c.rewards.size(), 0);
  size_t offset = 0;
  for (uint32_t size : c.sizes) {
    std::vector<double> r;
    for (size_t i = offset; i < offset + size; ++i) {
      if (c.Scorable(i)) r.push_back(c.rewards[i]);
    }
    const LdMoments m = Moments(r, o.deviation);
    ZeroVarianceCause cause = ZeroVarianceCause::kNone;
    if (m.n == 0) {
      cause = ZeroVarianceCause::kAllUnscorable;
    } else if (m.n == 1) {
      cause = ZeroVarianceCause::kSingleton;
    } else if (m.bit_identical || m.std < o.zero_variance_threshold || m.std == 0) {
      cause = OutcomeCause(c, offset, size);
      if (cause == ZeroVarianceCause::kNone) {
        cause = m.bit_identical ? ZeroVarianceCause::kIdenticalRewards
                                : ZeroVarianceCause::kBelowThreshold;
      }
    }
    ref.causes.push_back(cause);
    ref.mean.push_back(m.mean);
    ref.reward.push_back(m);
    offset += size;
  }
  return ref;
}

// (v - mean) / σ over the scorable entries of the batch, the values of zero-variance groups
// entering as 0; `scale` is the rounding scale of each value before whitening.
void WhitenRef(const Case& c, const Options& o, std::vector<LD> values, LD value_scale,
               RefResult* ref) {
  std::vector<LD> used;
  std::vector<size_t> group_of;
  for (size_t g = 0; g < c.sizes.size(); ++g) {
    for (uint32_t j = 0; j < c.sizes[g]; ++j) group_of.push_back(g);
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (ref->causes[group_of[i]] != ZeroVarianceCause::kNone) values[i] = 0;
    if (c.Scorable(i)) used.push_back(values[i]);
  }
  const LdMoments b = MomentsLd(used, o.deviation);
  const bool clamp = b.std < o.zero_variance_threshold || b.std == 0;
  for (size_t i = 0; i < values.size(); ++i) {
    ZeroVarianceCause& cause = ref->causes[group_of[i]];
    if (clamp && cause == ZeroVarianceCause::kNone) cause = ZeroVarianceCause::kBelowThreshold;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!c.Scorable(i) || ref->causes[group_of[i]] != ZeroVarianceCause::kNone) continue;
    ref->advantages[i] = (values[i] - b.mean) / b.std;
    ref->scale[i] = value_scale / b.std;
  }
}

RefResult ReinforceRef(const Case& c, const Options& o) {
  RefResult ref = GroupStage(c, o);
  std::vector<LD> a(c.rewards.size(), 0);
  LD max_abs = 0;
  size_t offset = 0;
  for (size_t g = 0; g < c.sizes.size(); ++g) {
    for (size_t i = offset; i < offset + c.sizes[g]; ++i) {
      if (c.Scorable(i)) a[i] = c.rewards[i] - ref.mean[g];
    }
    max_abs = std::max(max_abs, ref.reward[g].max_abs);
    offset += c.sizes[g];
  }
  WhitenRef(c, o, a, max_abs, &ref);
  return ref;
}

RefResult PassKRef(const Case& c, const Options& o) {
  RefResult ref = GroupStage(c, o);
  size_t offset = 0;
  for (size_t g = 0; g < c.sizes.size(); ++g) {
    const size_t size = c.sizes[g];
    if (ref.causes[g] == ZeroVarianceCause::kNone) {
      // Sort the scorable entries by reward, highest first, lowest index first among equals.
      std::vector<size_t> order;
      for (size_t i = offset; i < offset + size; ++i) {
        if (c.Scorable(i)) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t x, size_t y) { return c.rewards[x] > c.rewards[y]; });
      const LD gap = static_cast<LD>(c.rewards[order[0]]) - c.rewards[order[1]];
      if (gap > 0) {
        ref.advantages[order[0]] = gap / ref.reward[g].std;
        ref.scale[order[0]] = ref.reward[g].max_abs / ref.reward[g].std;
      }
    }
    offset += size;
  }
  return ref;
}

RefResult GdpoRef(const Case& c, const Options& o) {
  RefResult ref = GroupStage(c, o);
  std::vector<LD> s(c.rewards.size(), 0);
  LD max_scale = 0;
  size_t offset = 0;
  for (size_t g = 0; g < c.sizes.size(); ++g) {
    const size_t size = c.sizes[g];
    std::vector<size_t> rows;
    for (size_t i = offset; i < offset + size; ++i) {
      if (c.Scorable(i)) rows.push_back(i);
    }
    if (rows.size() >= 2) {
      bool all_identical = true;
      LD group_scale = 0;
      for (uint32_t k = 0; k < c.k; ++k) {
        std::vector<double> column;
        for (size_t r : rows) column.push_back(c.components[r * c.k + k]);
        const LdMoments m = Moments(column, o.deviation);
        if (m.bit_identical) continue;
        all_identical = false;
        if (m.std < o.zero_variance_threshold || m.std == 0) continue;
        for (size_t r : rows) s[r] += c.weights[k] * ((c.components[r * c.k + k] - m.mean) / m.std);
        group_scale += std::fabs(static_cast<LD>(c.weights[k])) * m.max_abs / m.std;
      }
      std::vector<LD> group_s;
      for (size_t r : rows) group_s.push_back(s[r]);
      const LdMoments ms = MomentsLd(group_s, o.deviation);
      if (ms.bit_identical || ms.std < o.zero_variance_threshold || ms.std == 0) {
        ZeroVarianceCause cause = OutcomeCause(c, offset, size);
        if (cause == ZeroVarianceCause::kNone) {
          cause = all_identical ? ZeroVarianceCause::kIdenticalRewards
                                : ZeroVarianceCause::kBelowThreshold;
        }
        ref.causes[g] = cause;
      } else {
        ref.causes[g] = ZeroVarianceCause::kNone;
        max_scale = std::max(max_scale, group_scale);
      }
    }
    offset += size;
  }
  WhitenRef(c, o, s, max_scale, &ref);
  return ref;
}

RefResult Reference(const Case& c, const Options& o) {
  switch (o.estimator) {
    case Estimator::kReinforcePlusPlusBaseline:
      return ReinforceRef(c, o);
    case Estimator::kGrpoPassK:
      return PassKRef(c, o);
    case Estimator::kGdpo:
      return GdpoRef(c, o);
    default:
      ADD_FAILURE() << "no reference here for " << Name(o);
      return {};
  }
}

// Compares a result with the reference: causes, keep, advantages (exact +0.0 where the reference
// says so), the group statistics of the rewards and the summary's counts; one failure per case.
void ExpectMatchesReference(const Case& c, const Options& o, const Result& res) {
  SCOPED_TRACE(Name(o));
  const RefResult ref = Reference(c, o);
  ASSERT_EQ(res.advantages.size(), c.rewards.size());
  ASSERT_EQ(res.groups.size(), c.sizes.size());
  std::array<uint64_t, kNumZeroVarianceCauses> by_cause{};
  for (size_t g = 0; g < c.sizes.size(); ++g) {
    ++by_cause[static_cast<size_t>(ref.causes[g])];
    EXPECT_EQ(res.groups[g].cause, ref.causes[g])
        << "group " << g << ": " << CauseName(res.groups[g].cause) << " vs "
        << CauseName(ref.causes[g]);
    EXPECT_EQ(res.groups[g].keep(), ref.causes[g] == ZeroVarianceCause::kNone) << "group " << g;
    EXPECT_EQ(res.groups[g].scorable, ref.reward[g].n) << "group " << g;
    EXPECT_LE(std::fabs(res.groups[g].mean - ref.mean[g]),
              kRel * (std::fabs(ref.mean[g]) + ref.reward[g].max_abs))
        << "mean of group " << g;
  }
  EXPECT_EQ(res.summary.groups_by_cause, by_cause);
  EXPECT_EQ(res.summary.zero_variance_groups, c.sizes.size() - by_cause[0]);
  long double worst = 0;
  std::string detail;
  for (size_t i = 0; i < c.rewards.size(); ++i) {
    const double got = res.advantages[i];
    if (ref.scale[i] == 0) {
      if (!IsPositiveZero(got)) {
        ADD_FAILURE() << "advantage " << i << " = " << got << ": expected exactly +0.0";
        return;
      }
      continue;
    }
    const LD tol = kRel * (std::fabs(ref.advantages[i]) + ref.scale[i]);
    const LD err = std::fabs(static_cast<LD>(got) - ref.advantages[i]);
    const LD ratio = err / tol;
    if (!(ratio <= worst)) {
      worst = std::isnan(ratio) ? kInf : ratio;
      detail = absl::StrCat("advantage ", i, ": got ", got, ", reference ",
                            static_cast<double>(ref.advantages[i]), ", tolerance ",
                            static_cast<double>(tol));
    }
  }
  EXPECT_LE(worst, 1.0L) << "worst case " << detail;
}

// ---------------------------------------------------------------------------------------------
// Random batches.

using Draw = std::function<double(std::mt19937_64&)>;

struct Range {
  const char* name;
  Draw draw;
};

std::vector<Range> Ranges() {
  return {
      {"unit", [](std::mt19937_64& g) { return std::uniform_real_distribution<double>(0, 1)(g); }},
      {"reward_levels",
       [](std::mt19937_64& g) {
         static constexpr double kLevels[] = {0.0, 0.1, 1.0, 1.1, -0.4, 0.6};
         return kLevels[std::uniform_int_distribution<int>(0, 5)(g)];
       }},
      {"binary",
       [](std::mt19937_64& g) { return std::uniform_int_distribution<int>(0, 1)(g) * 1.0; }},
      {"symmetric",
       [](std::mt19937_64& g) { return std::uniform_real_distribution<double>(-5, 5)(g); }},
      {"offset_1e6",
       [](std::mt19937_64& g) { return 1e6 + std::uniform_real_distribution<double>(-1, 1)(g); }},
      {"tiny",
       [](std::mt19937_64& g) { return std::uniform_real_distribution<double>(0, 1e-3)(g); }},
      {"wide_normal",
       [](std::mt19937_64& g) { return std::normal_distribution<double>(0, 1e3)(g); }},
  };
}

// `groups` groups of sizes in [min_size, max_size]; with `outcomes`, random outcomes, about one
// in ten unscorable (then its reward, components and accuracy are NaN half the time: ignored).
// With k > 0, k components per reward, each column drawn from its own range, and k weights.
Case RandomCase(std::mt19937_64& gen, const std::vector<Range>& ranges, size_t range, int groups,
                uint32_t min_size, uint32_t max_size, bool outcomes, uint32_t k) {
  Case c;
  c.k = k;
  std::vector<size_t> column_range(k);
  for (uint32_t j = 0; j < k; ++j) {
    column_range[j] = std::uniform_int_distribution<size_t>(0, ranges.size() - 1)(gen);
    const int pick = std::uniform_int_distribution<int>(0, 5)(gen);
    c.weights.push_back(pick == 0   ? 0.0
                        : pick == 1 ? 1.0
                                    : std::uniform_real_distribution<double>(-2, 2)(gen));
  }
  std::uniform_int_distribution<uint32_t> size_dist(min_size, max_size);
  std::uniform_int_distribution<int> outcome_dist(0, 9);
  for (int g = 0; g < groups; ++g) {
    const uint32_t size = size_dist(gen);
    c.sizes.push_back(size);
    for (uint32_t i = 0; i < size; ++i) {
      c.rewards.push_back(ranges[range].draw(gen));
      for (uint32_t j = 0; j < k; ++j) c.components.push_back(ranges[column_range[j]].draw(gen));
      c.accuracy.push_back(std::uniform_int_distribution<int>(0, 1)(gen));
      if (!outcomes) continue;
      const int pick = outcome_dist(gen);
      const Outcome o = pick < 4 ? static_cast<Outcome>(pick)
                                 : (pick == 9 ? Outcome::kUnscorable : Outcome::kWrong);
      c.outcomes.push_back(o);
      if (o == Outcome::kUnscorable && pick % 2 == 1) {
        c.rewards.back() = kNaN;
        for (uint32_t j = 0; j < k; ++j) c.components[c.components.size() - 1 - j] = kNaN;
        c.accuracy.back() = kNaN;
      }
    }
  }
  if (k == 0) c.accuracy.clear();
  return c;
}

// Random batches of every value range, ragged (groups of 1 to 96) and of `fixed` entries, with
// and without unscorable entries, under both deviations, against the long-double reference.
void ExpectRandomBatchesMatchReference(uint64_t seed, Estimator estimator, uint32_t fixed) {
  std::mt19937_64 gen(seed);
  const std::vector<Range> ranges = Ranges();
  for (size_t range = 0; range < ranges.size(); ++range) {
    SCOPED_TRACE(ranges[range].name);
    for (int trial = 0; trial < 24; ++trial) {
      SCOPED_TRACE(absl::StrCat("trial ", trial));
      const int groups = std::uniform_int_distribution<int>(1, 24)(gen);
      const Case c = trial % 2 == 0
                         ? RandomCase(gen, ranges, range, groups, 1, 96, trial % 3 == 0, 0)
                         : RandomCase(gen, ranges, range, groups, fixed, fixed, trial % 3 == 0, 0);
      for (Deviation d : {Deviation::kSample, Deviation::kPopulation}) {
        const Options o = Make(estimator, d);
        const absl::StatusOr<Result> res = Compute(c.AsBatch(), o);
        ASSERT_TRUE(res.ok()) << res.status();
        ExpectMatchesReference(c, o, *res);
      }
    }
  }
}

TEST(ReinforcePlusPlusBaseline, RandomBatchesMatchLongDoubleReference) {
  ExpectRandomBatchesMatchReference(20250114, Estimator::kReinforcePlusPlusBaseline, 16);
}

TEST(GrpoPassK, RandomBatchesMatchLongDoubleReference) {
  ExpectRandomBatchesMatchReference(20250325, Estimator::kGrpoPassK, 8);
}

TEST(Gdpo, RandomBatchesMatchLongDoubleReference) {
  std::mt19937_64 gen(20260108);
  const std::vector<Range> ranges = Ranges();
  for (size_t range = 0; range < ranges.size(); ++range) {
    SCOPED_TRACE(ranges[range].name);
    for (int trial = 0; trial < 24; ++trial) {
      SCOPED_TRACE(absl::StrCat("trial ", trial));
      const int groups = std::uniform_int_distribution<int>(1, 24)(gen);
      const uint32_t k = std::uniform_int_distribution<uint32_t>(1, 5)(gen);
      const Case c = trial % 2 == 0
                         ? RandomCase(gen, ranges, range, groups, 1, 96, trial % 3 == 0, k)
                         : RandomCase(gen, ranges, range, groups, 16, 16, trial % 3 == 0, k);
      for (Deviation d : {Deviation::kSample, Deviation::kPopulation}) {
        const Options o = Make(Estimator::kGdpo, d);
        const absl::StatusOr<Result> res = Compute(c.AsBatch(), o);
        ASSERT_TRUE(res.ok()) << res.status();
        ExpectMatchesReference(c, o, *res);
      }
    }
  }
}

TEST(CpuEstimators, EveryPowerOfTwoGroupSize) {
  std::mt19937_64 gen(5);
  const std::vector<Range> ranges = Ranges();
  for (uint32_t size = 1; size <= 1024; size *= 2) {
    SCOPED_TRACE(absl::StrCat("groups of ", size));
    for (size_t range = 0; range < ranges.size(); ++range) {
      SCOPED_TRACE(ranges[range].name);
      const Case plain = RandomCase(gen, ranges, range, 4, size, size, false, 0);
      const Case gdpo = RandomCase(gen, ranges, range, 4, size, size, false, 3);
      for (Estimator e :
           {Estimator::kReinforcePlusPlusBaseline, Estimator::kGrpoPassK, Estimator::kGdpo}) {
        const Case& c = e == Estimator::kGdpo ? gdpo : plain;
        const absl::StatusOr<Result> res = Compute(c.AsBatch(), Make(e));
        ASSERT_TRUE(res.ok()) << res.status();
        ExpectMatchesReference(c, Make(e), *res);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// REINFORCE++-baseline.

TEST(ReinforcePlusPlusBaseline, WhitensTheCentredValuesNotTheRawRewards) {
  // Group 0: {1, 0} centred to {0.5, -0.5}; group 1: {3, 3, 3, 5} centred to {-0.5, -0.5, -0.5,
  // 1.5}. The batch σ of the centred values (sample): Σa² = 0.5 + 3 = 3.5 over 5 → √0.875.
  // The raw rewards' σ (what kBatchNormalized divides by) is another number entirely.
  const Case c{.rewards = {1, 0, 3, 3, 3, 5}, .sizes = {2, 4}};
  const absl::StatusOr<Result> rpp =
      Compute(c.AsBatch(), Make(Estimator::kReinforcePlusPlusBaseline));
  const absl::StatusOr<Result> bn = Compute(c.AsBatch(), Make(Estimator::kBatchNormalized));
  ASSERT_TRUE(rpp.ok() && bn.ok());
  const double sd = std::sqrt(3.5 / 5);
  const std::vector<double> want = {0.5 / sd, -0.5 / sd, -0.5 / sd, -0.5 / sd, -0.5 / sd, 1.5 / sd};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(rpp->advantages[i], want[i], 1e-15) << i;
    EXPECT_GT(std::fabs(rpp->advantages[i] - bn->advantages[i]), 0.1) << i;
  }
  // The summary still describes the raw rewards.
  EXPECT_EQ(rpp->summary.reward_std, bn->summary.reward_std);
}

TEST(ReinforcePlusPlusBaseline, ZeroVarianceGroupsCountTheirZerosAndStayExactlyZero) {
  // The all-wrong group's zeros enter the batch statistics (N = 6, not 2), as in verl.
  const Case c{.rewards = {1, 0, 0.1, 0.1, 0.1, 0.1},
               .sizes = {2, 4},
               .outcomes = {Outcome::kCorrect, Outcome::kWrong, Outcome::kWrong, Outcome::kWrong,
                            Outcome::kWrong, Outcome::kWrong}};
  const absl::StatusOr<Result> res =
      Compute(c.AsBatch(), Make(Estimator::kReinforcePlusPlusBaseline));
  ASSERT_TRUE(res.ok()) << res.status();
  const double sd = std::sqrt(0.5 / 5);
  EXPECT_NEAR(res->advantages[0], 0.5 / sd, 1e-15);
  EXPECT_NEAR(res->advantages[1], -0.5 / sd, 1e-15);
  for (size_t i = 2; i < 6; ++i) EXPECT_TRUE(IsPositiveZero(res->advantages[i])) << i;
  EXPECT_EQ(res->groups[1].cause, ZeroVarianceCause::kAllWrong);
  EXPECT_FALSE(res->groups[1].keep());
  EXPECT_TRUE(res->groups[0].keep());
}

TEST(ReinforcePlusPlusBaseline, ClampsTheBatchWhenItsSigmaIsBelowThreshold) {
  // τ between the groups' σ and the batch's: group 0's σ is 1.41e-3, above τ; the batch's centred
  // values {±1e-3, 0 × 8} have σ 4.7e-4, below it.
  Options o = Make(Estimator::kReinforcePlusPlusBaseline);
  o.zero_variance_threshold = 1e-3;
  const Case c{.rewards = {0.0, 2e-3, 5, 5, 5, 5, 5, 5, 5, 5}, .sizes = {2, 8}};
  const absl::StatusOr<Result> res = Compute(c.AsBatch(), o);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->groups[0].cause, ZeroVarianceCause::kBelowThreshold);
  for (double a : res->advantages) EXPECT_TRUE(IsPositiveZero(a));
  EXPECT_EQ(res->summary.groups_by_cause[static_cast<size_t>(ZeroVarianceCause::kBelowThreshold)],
            1u);
  // A batch of one scorable completion has no σ at all.
  const Case one{.rewards = {0.3}, .sizes = {1}};
  const absl::StatusOr<Result> single =
      Compute(one.AsBatch(), Make(Estimator::kReinforcePlusPlusBaseline));
  ASSERT_TRUE(single.ok());
  EXPECT_TRUE(IsPositiveZero(single->advantages[0]));
  EXPECT_EQ(single->groups[0].cause, ZeroVarianceCause::kSingleton);
}

// ---------------------------------------------------------------------------------------------
// GRPO pass@k.

TEST(GrpoPassK, OnlyTheBestGetsTheGapOverSigma) {
  struct Row {
    const char* name;
    std::vector<double> rewards;
    std::vector<Outcome> outcomes;
    size_t best;  // rewards.size(): nobody
    double gap;
  };
  const std::vector<Row> rows = {
      {"distinct", {0.2, 0.9, 0.5, 0.1}, {}, 1, 0.4},
      {"tie for second place", {0.5, 1.0, 0.5, 0.0}, {}, 1, 0.5},
      {"tie for the maximum", {1.0, 0.0, 1.0, 0.5}, {}, 4, 0.0},
      {"three-way tie for the maximum", {1.0, 1.0, 1.0, 0.0}, {}, 4, 0.0},
      {"best is last", {0.0, 0.1, 0.2, 0.3}, {}, 3, 0.1},
      {"unscorable highest is ignored",
       {9.0, 0.3, 0.7, 0.1},
       {Outcome::kUnscorable, Outcome::kWrong, Outcome::kCorrect, Outcome::kWrong},
       2,
       0.4},
      {"unscorable breaks no tie",
       {1.0, 9.0, 1.0, 0.0},
       {Outcome::kCorrect, Outcome::kUnscorable, Outcome::kCorrect, Outcome::kWrong},
       4,
       0.0},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const Case c{.rewards = row.rewards, .sizes = {4}, .outcomes = row.outcomes};
    const absl::StatusOr<Result> res = Compute(c.AsBatch(), Make(Estimator::kGrpoPassK));
    ASSERT_TRUE(res.ok()) << res.status();
    // The group has signal whatever the tie: its rewards differ.
    EXPECT_EQ(res->groups[0].cause, ZeroVarianceCause::kNone);
    for (size_t i = 0; i < 4; ++i) {
      if (i == row.best) {
        EXPECT_NEAR(res->advantages[i], row.gap / res->groups[0].std, 1e-14) << i;
        EXPECT_GT(res->advantages[i], 0.0);
      } else {
        EXPECT_TRUE(IsPositiveZero(res->advantages[i])) << i << ": " << res->advantages[i];
      }
    }
  }
}

TEST(GrpoPassK, ZeroVarianceGroupsAndSingletonsAreExactlyZero) {
  const Case c{.rewards = {1, 1, 1, 1, 0.5, 0.2, 0.7}, .sizes = {4, 1, 2}};
  const absl::StatusOr<Result> res = Compute(c.AsBatch(), Make(Estimator::kGrpoPassK));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->groups[0].cause, ZeroVarianceCause::kIdenticalRewards);
  EXPECT_EQ(res->groups[1].cause, ZeroVarianceCause::kSingleton);
  for (size_t i = 0; i < 6; ++i) EXPECT_TRUE(IsPositiveZero(res->advantages[i])) << i;
  // A pair: gap 0.5, sample σ 0.5/√2.
  EXPECT_NEAR(res->advantages[6], std::sqrt(2.0), 1e-15);
}

// ---------------------------------------------------------------------------------------------
// GDPO.

// One group of four: accuracy {1, 0, 1, 0}, and a format component that is constant in the group.
TEST(Gdpo, AConstantComponentContributesExactlyZeroAndTheOthersStillCount) {
  const std::vector<uint32_t> sizes = {4, 4};
  const std::vector<double> w1 = {1.0};
  const std::vector<double> w2 = {1.0, 0.7};
  // Group 1 makes the batch statistics non-trivial: there both components vary.
  for (double constant : {0.1, 0.0, -3.0}) {
    for (double residue : {0.0, 1e-12}) {
      SCOPED_TRACE(absl::StrCat("format ", constant, " + residue ", residue));
      // Group 0: format constant (or within 1e-12: σ below τ, clamped all the same).
      std::vector<double> both = {
          1,   constant, 0,  constant + residue, 1, constant, 0, constant, 1, 0.1, 0, 0.0, 0,
          0.1, 0,        0.0};
      const absl::StatusOr<Result> two = ComputeGdpo(both, 2, w2, sizes, {}, Options{});
      ASSERT_TRUE(two.ok()) << two.status();
      // Group 0 by accuracy alone: ±1/σ_acc with σ_acc = √(1/3), before the batch whitening.
      EXPECT_EQ(two->groups[0].cause, ZeroVarianceCause::kNone);
      EXPECT_GT(two->advantages[0], 0.0);
      EXPECT_LT(two->advantages[1], 0.0);
      EXPECT_EQ(two->advantages[0], two->advantages[2]);
      EXPECT_EQ(two->advantages[1], two->advantages[3]);
      // The same batch where group 0's format column is any other constant: bit-identical
      // advantages (it contributed exactly 0).
      std::vector<double> other = both;
      for (size_t i = 0; i < 4; ++i) other[2 * i + 1] = 42.0;
      const absl::StatusOr<Result> moved = ComputeGdpo(other, 2, w2, sizes, {}, Options{});
      ASSERT_TRUE(moved.ok());
      for (size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(std::bit_cast<uint64_t>(two->advantages[i]),
                  std::bit_cast<uint64_t>(moved->advantages[i]))
            << i;
      }
      // The long-double reference agrees.
      Case c{.rewards = *WeightedRowSums(both, 2, w2),
             .sizes = sizes,
             .components = both,
             .k = 2,
             .weights = w2};
      ExpectMatchesReference(c, Make(Estimator::kGdpo), *two);
    }
  }
  // Without group 1 the batch is group 0 alone, and format never counts: the same advantages as
  // accuracy alone, bit for bit.
  const std::vector<double> four_both = {1, 0.1, 0, 0.1, 1, 0.1, 0, 0.1};
  const std::vector<double> four_acc = {1, 0, 1, 0};
  const std::vector<uint32_t> one_group = {4};
  const absl::StatusOr<Result> with_format = ComputeGdpo(four_both, 2, w2, one_group, {}, {});
  const absl::StatusOr<Result> without = ComputeGdpo(four_acc, 1, w1, one_group, {}, {});
  ASSERT_TRUE(with_format.ok() && without.ok());
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(with_format->advantages[i]),
              std::bit_cast<uint64_t>(without->advantages[i]))
        << i;
    // z = ±0.5/√(1/3) = ±√3/2 in the group; the batch of those has mean 0 and sample σ 1.
    EXPECT_NEAR(std::fabs(without->advantages[i]), std::sqrt(3.0) / 2.0, 1e-15) << i;
  }
}

TEST(Gdpo, GroupsWithoutSignalInEveryComponentAreClamped) {
  // Group 0: every component constant (all correct): zero-variance, +0.0.
  // Group 1: three components that trade off so that every summed reward is 0, yet each varies:
  // GDPO keeps a signal (s = -0.73, 0, 0.73) where sum-then-normalise would clamp the group.
  // Group 2: two mirrored components with equal weights cancel exactly after normalisation
  // (z = ±0.707 and ∓0.707): s ≡ 0, no signal, below threshold.
  const std::vector<double> components = {
      1,  0.5, 0,  1, 0.5, 0, 1, 0.5, 0,  // group 0
      1,  0,   -1, 0, 0,   0,             // group 1
      -1, 1,   0,                         //
      1,  0,   0,  0, 1,   0,             // group 2
  };
  const std::vector<double> weights = {1.0, 1.0, 1.0};
  const std::vector<uint32_t> sizes = {3, 3, 2};
  const std::vector<Outcome> outcomes = {Outcome::kCorrect, Outcome::kCorrect, Outcome::kCorrect,
                                         Outcome::kCorrect, Outcome::kWrong,   Outcome::kWrong,
                                         Outcome::kCorrect, Outcome::kWrong};
  const absl::StatusOr<Result> res = ComputeGdpo(components, 3, weights, sizes, outcomes, {});
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->groups[0].cause, ZeroVarianceCause::kAllCorrect);
  EXPECT_EQ(res->groups[1].cause, ZeroVarianceCause::kNone);
  EXPECT_EQ(res->groups[2].cause, ZeroVarianceCause::kBelowThreshold);
  for (size_t i : {0, 1, 2, 6, 7}) EXPECT_TRUE(IsPositiveZero(res->advantages[i])) << i;
  EXPECT_LT(res->advantages[3], -0.1);
  EXPECT_NEAR(res->advantages[4], 0.0, 1e-15);
  EXPECT_GT(res->advantages[5], 0.1);
  // The statistics describe the rewards: group 1's are all 0.
  EXPECT_EQ(res->groups[1].mean, 0.0);
  EXPECT_EQ(res->groups[1].std, 0.0);
  EXPECT_EQ(res->summary.zero_variance_groups, 2u);
  const Case c{.rewards = *WeightedRowSums(components, 3, weights),
               .sizes = sizes,
               .outcomes = outcomes,
               .components = components,
               .k = 3,
               .weights = weights};
  ExpectMatchesReference(c, Make(Estimator::kGdpo), *res);
  // Without outcomes, group 0 names identical components.
  const absl::StatusOr<Result> plain = ComputeGdpo(components, 3, weights, sizes, {}, {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->groups[0].cause, ZeroVarianceCause::kIdenticalRewards);
}

TEST(Gdpo, ShapeErrorsNameWhatIsWrong) {
  struct Row {
    const char* name;
    Case c;
    Estimator estimator;
    std::string want;
  };
  const std::vector<double> r4 = {0, 1, 0, 1};
  const std::vector<uint32_t> s4 = {4};
  const std::vector<Row> rows = {
      {"no components", Case{.rewards = r4, .sizes = s4, .k = 0}, Estimator::kGdpo,
       "num_components is 0"},
      {"a component short",
       Case{.rewards = r4,
            .sizes = s4,
            .components = {0, 1, 0, 1, 0, 1, 0},
            .k = 2,
            .weights = {1, 1}},
       Estimator::kGdpo, "components has 7 values; expected rewards (4) x num_components (2) = 8"},
      {"weights short",
       Case{.rewards = r4,
            .sizes = s4,
            .components = {0, 1, 0, 1, 0, 1, 0, 1},
            .k = 2,
            .weights = {1}},
       Estimator::kGdpo, "component_weights has 1 values; expected one per component (2)"},
      {"NaN weight",
       Case{.rewards = r4,
            .sizes = s4,
            .components = {0, 1, 0, 1, 0, 1, 0, 1},
            .k = 2,
            .weights = {1, kNaN}},
       Estimator::kGdpo, "component_weights[1] is NaN"},
      {"components for GRPO",
       Case{.rewards = r4, .sizes = s4, .components = {0, 1, 0, 1}, .k = 1, .weights = {1}},
       Estimator::kGrpo, "read by the GDPO estimator only"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const absl::Status status = ValidateShape(row.c.AsBatch(), Make(row.estimator));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), HasSubstr(row.want));
    const absl::StatusOr<Result> res = Compute(row.c.AsBatch(), Make(row.estimator));
    EXPECT_EQ(res.status(), status);
  }
  // The convenience function checks the matrix before anything else.
  const std::vector<double> seven(7, 0.5);
  const std::vector<double> two_weights = {1, 1};
  EXPECT_THAT(
      std::string(ComputeGdpo(seven, 2, two_weights, s4, {}, {}).status().message()),
      HasSubstr("components has 7 values, not a whole number of rows of num_components (2)"));
  EXPECT_THAT(std::string(ComputeGdpo(seven, 0, {}, s4, {}, {}).status().message()),
              HasSubstr("num_components is 0"));
}

// ---------------------------------------------------------------------------------------------
// Errors shared by the three.

TEST(CpuEstimators, NonFiniteValuesAreRejectedNamingGroupAndPosition) {
  auto rewards = [](double bad) {
    std::vector<double> r = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    r[4] = bad;
    return r;
  };
  for (Estimator e : {Estimator::kReinforcePlusPlusBaseline, Estimator::kGrpoPassK}) {
    for (double bad : {kNaN, kInf, -kInf}) {
      const Case c{.rewards = rewards(bad), .sizes = {3, 3}};
      const absl::StatusOr<Result> res = Compute(c.AsBatch(), Make(e));
      ASSERT_FALSE(res.ok());
      EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(res.status().message()), HasSubstr("group 1, position 1"));
      EXPECT_THAT(std::string(res.status().message()), HasSubstr("flat index 4"));
    }
  }
  // GDPO: a component, named with its index; an unscorable row's NaN is ignored.
  std::vector<double> components = {0, 1, 1, 0, 0, 1, kNaN, kNaN, 1, 1, 0, 0};
  const std::vector<double> weights = {1, 2};
  const std::vector<uint32_t> sizes = {3, 3};
  std::vector<Outcome> outcomes(6, Outcome::kUnknown);
  outcomes[3] = Outcome::kUnscorable;
  EXPECT_TRUE(ComputeGdpo(components, 2, weights, sizes, outcomes, {}).ok());
  components[11] = -kInf;
  const absl::StatusOr<Result> res = ComputeGdpo(components, 2, weights, sizes, outcomes, {});
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(res.status().message()),
              HasSubstr("component 1 at group 1, position 2 (flat index 5, components[11]) is "
                        "-Inf"));
  // Overflowing components are refused, not turned into NaN.
  const std::vector<double> huge = {1e308, -1e308, 1e308, -1e308};
  const std::vector<double> one = {1};
  const std::vector<uint32_t> four = {4};
  EXPECT_EQ(ComputeGdpo(huge, 1, one, four, {}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// The keep band.

TEST(KeepBand, KeepsExactlyTheGroupsWhoseMeanAccuracyIsInsideInclusive) {
  // Four groups of four with mean accuracy 0, 0.25, 0.5, 0.75 and one of 1 (all correct), each
  // with rewards that differ (so only the band decides), plus a zero-variance group at 0.5.
  Case c;
  const std::vector<std::vector<double>> accuracy = {
      {0, 0, 0, 0}, {1, 0, 0, 0}, {1, 1, 0, 0}, {1, 1, 1, 0}, {1, 1, 1, 1}};
  for (const std::vector<double>& a : accuracy) {
    c.sizes.push_back(4);
    for (size_t i = 0; i < 4; ++i) {
      c.accuracy.push_back(a[i]);
      c.rewards.push_back(a[i] + 0.01 * static_cast<double>(i));
    }
  }
  c.sizes.push_back(2);
  c.rewards.insert(c.rewards.end(), {0.5, 0.5});
  c.accuracy.insert(c.accuracy.end(), {1, 0});
  struct Row {
    double lo, hi;
    std::vector<bool> keep;
  };
  const double above_quarter = std::nextafter(0.25, 1.0);
  const double below_three_quarters = std::nextafter(0.75, 0.0);
  const std::vector<Row> rows = {
      {0.25, 0.75, {false, true, true, true, false, false}},  // boundaries inclusive
      {above_quarter, 0.75, {false, false, true, true, false, false}},
      {0.25, below_three_quarters, {false, true, true, false, false, false}},
      {0.5, 0.5, {false, false, true, false, false, false}},  // a point band
      {0.0, 1.0, {true, true, true, true, true, false}},      // everything with signal
      {-1e300, 1e300, {true, true, true, true, true, false}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(absl::StrCat("[", row.lo, ", ", row.hi, "]"));
    for (Estimator e : {Estimator::kGrpo, Estimator::kRloo, Estimator::kReinforcePlusPlusBaseline,
                        Estimator::kGrpoPassK}) {
      Options o = Make(e);
      const absl::StatusOr<Result> unbanded = Compute(c.AsBatch(), o);
      o.keep_band = {.enabled = true, .lo = row.lo, .hi = row.hi};
      const absl::StatusOr<Result> res = Compute(c.AsBatch(), o);
      ASSERT_TRUE(res.ok() && unbanded.ok()) << res.status();
      for (size_t g = 0; g < row.keep.size(); ++g) {
        EXPECT_EQ(res->groups[g].keep(), row.keep[g]) << Name(o) << " group " << g;
        EXPECT_EQ(res->groups[g].cause, unbanded->groups[g].cause) << "group " << g;
      }
      // The band changes no advantage.
      for (size_t i = 0; i < c.rewards.size(); ++i) {
        EXPECT_EQ(std::bit_cast<uint64_t>(res->advantages[i]),
                  std::bit_cast<uint64_t>(unbanded->advantages[i]))
            << i;
      }
    }
  }
}

// With the band off nothing marks the groups: every computation of the statistics must leave the
// flag false itself, also in output buffers that a banded call filled before. Groups of 16 take
// the interleaved kernels, groups of 100 and groups with an unscorable entry the one-group path.
TEST(KeepBand, OffClearsTheFlagsOfAnEarlierBandedCallInTheSameBuffers) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> rewards;
  std::vector<uint32_t> sizes;
  std::vector<Outcome> outcomes;
  for (int g = 0; g < 300; ++g) {
    const uint32_t size = g % 3 == 2 ? 100 : 16;
    sizes.push_back(size);
    for (uint32_t i = 0; i < size; ++i) {
      rewards.push_back(u(rng) < 0.5 ? 1.0 + 0.01 * u(rng) : 0.0);
      outcomes.push_back(g % 5 == 4 && i == 3 ? Outcome::kUnscorable : Outcome::kUnknown);
    }
  }
  for (Estimator e :
       {Estimator::kGrpo, Estimator::kDrGrpo, Estimator::kRloo, Estimator::kBatchNormalized,
        Estimator::kReinforcePlusPlusBaseline, Estimator::kGrpoPassK}) {
    for (bool with_outcomes : {false, true}) {
      SCOPED_TRACE(absl::StrCat(static_cast<int>(e), with_outcomes ? " with outcomes" : ""));
      const Batch batch{.rewards = rewards,
                        .group_sizes = sizes,
                        .outcomes = with_outcomes ? std::span<const Outcome>(outcomes)
                                                  : std::span<const Outcome>()};
      std::vector<double> advantages(rewards.size());
      std::vector<GroupStats> groups(sizes.size());
      BatchSummary summary;
      Options o = Make(e);
      o.keep_band = {.enabled = true, .lo = 2.0, .hi = 3.0};  // every group with signal outside
      ASSERT_TRUE(Compute(batch, o, advantages, groups, &summary).ok());
      ASSERT_TRUE(std::any_of(groups.begin(), groups.end(),
                              [](const GroupStats& st) { return st.outside_keep_band; }));
      o.keep_band = {};
      ASSERT_TRUE(Compute(batch, o, advantages, groups, &summary).ok());
      for (size_t g = 0; g < groups.size(); ++g) {
        ASSERT_FALSE(groups[g].outside_keep_band) << "group " << g;
      }
    }
  }
}

TEST(KeepBand, MeanAccuracyComesFromAccuracyThenOutcomesThenRewards) {
  // One group of four: rewards mean 0.3; outcomes say 1 of 3 scorable correct; accuracy 0.75.
  const std::vector<double> rewards = {0.1, 0.2, 0.3, 0.6};
  const std::vector<Outcome> outcomes = {Outcome::kCorrect, Outcome::kWrong, Outcome::kTruncated,
                                         Outcome::kUnscorable};
  const std::vector<double> accuracy = {1, 1, 0.25, kNaN};  // the unscorable one is ignored
  Options o;
  auto kept = [&](const Case& c, double lo, double hi) {
    o.keep_band = {.enabled = true, .lo = lo, .hi = hi};
    const absl::StatusOr<Result> res = Compute(c.AsBatch(), o);
    EXPECT_TRUE(res.ok()) << res.status();
    return res.ok() && res->groups[0].keep();
  };
  const Case with_accuracy{
      .rewards = rewards, .sizes = {4}, .outcomes = outcomes, .accuracy = accuracy};
  EXPECT_TRUE(kept(with_accuracy, 0.75, 0.75));
  EXPECT_FALSE(kept(with_accuracy, 0.0, 0.7));
  const Case with_outcomes{.rewards = rewards, .sizes = {4}, .outcomes = outcomes};
  EXPECT_TRUE(kept(with_outcomes, 1.0 / 3.0, 1.0 / 3.0));
  EXPECT_FALSE(kept(with_outcomes, 0.34, 1.0));
  // An unknown outcome in the group: the mean reward (over the scorable ones, about 0.2), as the
  // group statistics report it.
  std::vector<Outcome> unknown = outcomes;
  unknown[1] = Outcome::kUnknown;
  const Case with_unknown{.rewards = rewards, .sizes = {4}, .outcomes = unknown};
  const Case bare{.rewards = rewards, .sizes = {4}};
  for (const Case* c : {&with_unknown, &bare}) {
    const absl::StatusOr<Result> unbanded = Compute(c->AsBatch(), Options{});
    ASSERT_TRUE(unbanded.ok());
    const double mean = unbanded->groups[0].mean;
    EXPECT_NEAR(mean, c == &bare ? 0.3 : 0.2, 1e-15);
    EXPECT_TRUE(kept(*c, mean, mean));
    EXPECT_FALSE(kept(*c, std::nextafter(mean, 1.0), 1.0));
    EXPECT_FALSE(kept(*c, 0.0, std::nextafter(mean, 0.0)));
  }
}

TEST(KeepBand, BadBandsAndAccuraciesAreRejected) {
  const Case c{.rewards = {0, 1, 0, 1}, .sizes = {2, 2}, .accuracy = {0, 1, 0, kNaN}};
  struct Row {
    const char* name;
    KeepBand band;
    std::string want;
  };
  const std::vector<Row> rows = {
      {"lo above hi",
       {.enabled = true, .lo = 0.6, .hi = 0.4},
       "keep_band must have finite lo <= hi"},
      {"NaN lo", {.enabled = true, .lo = kNaN, .hi = 0.4}, "keep_band"},
      {"infinite hi", {.enabled = true, .lo = 0, .hi = kInf}, "keep_band"},
      {"NaN accuracy",
       {.enabled = true, .lo = 0, .hi = 1},
       "accuracy at group 1, position 1 (flat index 3) is NaN"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Options o;
    o.keep_band = row.band;
    const absl::StatusOr<Result> res = Compute(c.AsBatch(), o);
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(res.status().message()), HasSubstr(row.want));
  }
  // Off, the band reads nothing: the NaN accuracy is not an error.
  EXPECT_TRUE(Compute(c.AsBatch(), Options{}).ok());
  const Case short_accuracy{.rewards = {0, 1}, .sizes = {2}, .accuracy = {1}};
  EXPECT_THAT(std::string(ValidateShape(short_accuracy.AsBatch(), Options{}).message()),
              HasSubstr("accuracy has 1 entries"));
}

// ---------------------------------------------------------------------------------------------
// The backend.

TEST(CpuEstimators, CpuBackendMatchesTheFreeFunctionBitForBit) {
  const std::unique_ptr<Backend> backend = NewCpuBackend();
  std::mt19937_64 gen(3);
  const std::vector<Range> ranges = Ranges();
  for (Estimator e :
       {Estimator::kReinforcePlusPlusBaseline, Estimator::kGrpoPassK, Estimator::kGdpo}) {
    const Case c = RandomCase(gen, ranges, 1, 12, 1, 32, true, e == Estimator::kGdpo ? 4 : 0);
    Options o = Make(e);
    o.keep_band = {.enabled = true, .lo = 0.2, .hi = 0.8};
    SCOPED_TRACE(Name(o));
    const absl::StatusOr<Result> want = Compute(c.AsBatch(), o);
    ASSERT_TRUE(want.ok()) << want.status();
    std::vector<double> adv(c.rewards.size(), kNaN);
    std::vector<GroupStats> groups(c.sizes.size());
    BatchSummary summary;
    const absl::StatusOr<std::string_view> served =
        backend->Compute(c.AsBatch(), o, adv, groups, &summary);
    ASSERT_TRUE(served.ok()) << served.status();
    EXPECT_EQ(*served, "cpu");
    for (size_t i = 0; i < adv.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint64_t>(adv[i]), std::bit_cast<uint64_t>(want->advantages[i]));
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      EXPECT_EQ(groups[g].cause, want->groups[g].cause);
      EXPECT_EQ(groups[g].keep(), want->groups[g].keep());
    }
    EXPECT_EQ(summary.groups_by_cause, want->summary.groups_by_cause);
  }
}

}  // namespace
}  // namespace rlscore::advantage
