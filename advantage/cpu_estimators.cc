#include "advantage/cpu_estimators.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "advantage/reference.h"

namespace rlscore::advantage {
namespace {

using reference::BelowThreshold;
using reference::CauseFromOutcomes;

bool IsScorable(const Batch& batch, size_t index) {
  return batch.outcomes.empty() || batch.outcomes[index] != Outcome::kUnscorable;
}

const char* DescribeNonFinite(double x) {
  if (std::isnan(x)) return "NaN";
  return x > 0 ? "+Inf" : "-Inf";
}

// Σ x in order with Neumaier's compensation: within a few ulps of the exact sum whatever the
// cancellation and the count, so a batch mean keeps docs/DESIGN.md §4's 1e-12 at any batch size.
// An overflow makes the value non-finite.
class CompensatedSum {
 public:
  void Add(double x) {
    const double t = sum_ + x;
    if (std::fabs(sum_) >= std::fabs(x)) {
      compensation_ += (sum_ - t) + x;
    } else {
      compensation_ += (x - t) + sum_;
    }
    sum_ = t;
  }
  double Value() const { return sum_ + compensation_; }

 private:
  double sum_ = 0.0;
  double compensation_ = 0.0;
};

struct MeanAndStd {
  double mean = 0.0;
  double std = 0.0;
  uint64_t n = 0;
  bool finite = true;  // false when a sum overflowed
};

// The mean and σ (two-pass, deviations rescaled by the largest before squaring, so neither tiny
// nor huge spreads lose precision) of x[i] for the i where use(i).
template <typename Use>
MeanAndStd Moments(std::span<const double> x, Use use, Deviation deviation) {
  MeanAndStd m;
  CompensatedSum sum;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!use(i)) continue;
    sum.Add(x[i]);
    ++m.n;
  }
  if (m.n == 0) return m;
  const double total = sum.Value();
  if (!std::isfinite(total)) {
    m.finite = false;
    return m;
  }
  m.mean = total / static_cast<double>(m.n);
  if (m.n < 2) return m;
  double scale = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (use(i)) scale = std::max(scale, std::fabs(x[i] - m.mean));
  }
  if (!std::isfinite(scale)) {
    m.finite = false;
    return m;
  }
  if (scale == 0.0) return m;
  double squares = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!use(i)) continue;
    const double d = (x[i] - m.mean) / scale;
    squares += d * d;
  }
  m.std = scale * reference::StdFromM2(squares, m.n, deviation);
  return m;
}

bool BitIdentical(std::span<const double> x) {
  for (double v : x) {
    if (std::bit_cast<uint64_t>(v) != std::bit_cast<uint64_t>(x[0])) return false;
  }
  return true;
}

absl::Status BatchOverflow(const char* what) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " of the batch overflow double precision: magnitudes above about 1e150 ",
                   "are not supported"));
}

// The batch-level whitening of REINFORCE++-baseline and GDPO: `values` holds each entry's value
// (+0.0 for zero-variance groups and unscorable entries); every scorable entry enters the
// statistics; the entries of groups with signal become (v − mean) / σ, the rest +0.0. σ < τ
// clamps the whole batch.
absl::Status WhitenBatch(const Batch& batch, const Options& options, const char* what,
                         std::span<double> values, std::span<GroupStats> groups) {
  const MeanAndStd m = Moments(
      values, [&batch](size_t i) { return IsScorable(batch, i); }, options.deviation);
  if (!m.finite) return BatchOverflow(what);
  const bool clamp = BelowThreshold(m.std, options.zero_variance_threshold);
  size_t offset = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    const size_t size = batch.group_sizes[g];
    GroupStats& st = groups[g];
    if (!st.zero_variance() && clamp) st.cause = ZeroVarianceCause::kBelowThreshold;
    for (size_t i = offset; i < offset + size; ++i) {
      values[i] = !st.zero_variance() && IsScorable(batch, i) ? (values[i] - m.mean) / m.std : 0.0;
    }
    offset += size;
  }
  return absl::OkStatus();
}

absl::Status FinishReinforcePlusPlusBaseline(const Batch& batch, const Options& options,
                                             std::span<double> advantages,
                                             std::span<GroupStats> groups) {
  // Stage one left a = r − μ in groups with signal and +0.0 everywhere else.
  return WhitenBatch(batch, options, "centred rewards", advantages, groups);
}

void FinishGrpoPassK(const Batch& batch, std::span<double> advantages,
                     std::span<const GroupStats> groups) {
  size_t offset = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    const size_t size = batch.group_sizes[g];
    const GroupStats& st = groups[g];
    double* out = advantages.data() + offset;
    std::fill(out, out + size, 0.0);
    if (!st.zero_variance()) {
      // Stage one found at least two scorable, finite rewards that differ.
      size_t best = size;
      for (size_t i = 0; i < size; ++i) {
        if (!IsScorable(batch, offset + i)) continue;
        if (best == size || batch.rewards[offset + i] > batch.rewards[offset + best]) best = i;
      }
      const double r_max = batch.rewards[offset + best];
      double r_second = 0.0;
      bool have_second = false;
      for (size_t i = 0; i < size; ++i) {
        if (i == best || !IsScorable(batch, offset + i)) continue;
        const double r = batch.rewards[offset + i];
        if (!have_second || r > r_second) r_second = r;
        have_second = true;
      }
      // A tie for the maximum (r_second == r_max) leaves the whole group at +0.0.
      if (r_max > r_second) out[best] = (r_max - r_second) / st.std;
    }
    offset += size;
  }
}

absl::Status FinishGdpo(const Batch& batch, const Options& options, std::span<double> advantages,
                        std::span<GroupStats> groups) {
  const size_t k_count = batch.num_components;
  const double tau = options.zero_variance_threshold;
  std::vector<size_t> rows;    // the scorable entries of a group, as flat indices
  std::vector<double> column;  // one component over those rows, then the rows' s
  size_t offset = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    const size_t size = batch.group_sizes[g];
    GroupStats& st = groups[g];
    double* s = advantages.data() + offset;  // s_i accumulates in place
    std::fill(s, s + size, 0.0);
    rows.clear();
    for (size_t i = offset; i < offset + size; ++i) {
      if (IsScorable(batch, i)) rows.push_back(i);
    }
    if (rows.size() < 2) {  // stage one named it all-unscorable or singleton
      offset += size;
      continue;
    }
    bool every_component_identical = true;
    for (size_t k = 0; k < k_count; ++k) {
      column.clear();
      for (size_t r : rows) column.push_back(batch.components[r * k_count + k]);
      if (BitIdentical(column)) continue;  // contributes exactly 0
      every_component_identical = false;
      const MeanAndStd m = Moments(
          column, [](size_t) { return true; }, options.deviation);
      if (!m.finite) {
        return absl::InvalidArgumentError(absl::StrCat(
            "component ", k, " of group ", g, " (flat index ", offset,
            ") overflows double precision: magnitudes above about 1e150 are not ", "supported"));
      }
      if (BelowThreshold(m.std, tau)) continue;  // clamped: exactly 0, the others still count
      const double w = batch.component_weights[k];
      for (size_t j = 0; j < rows.size(); ++j) {
        s[rows[j] - offset] += w * ((column[j] - m.mean) / m.std);
      }
    }
    column.clear();
    for (size_t r : rows) column.push_back(advantages[r]);
    bool zero_variance = BitIdentical(column);
    if (!zero_variance) {
      const MeanAndStd m = Moments(
          column, [](size_t) { return true; }, options.deviation);
      if (!m.finite) {
        return absl::InvalidArgumentError(
            absl::StrCat("the weighted sum of group ", g, " (flat index ", offset,
                         ") overflows double precision: component_weights too large"));
      }
      zero_variance = BelowThreshold(m.std, tau);
    }
    if (zero_variance) {
      std::fill(s, s + size, 0.0);
      st.cause = CauseFromOutcomes(batch, offset, size);
      if (st.cause == ZeroVarianceCause::kNone) {
        st.cause = every_component_identical ? ZeroVarianceCause::kIdenticalRewards
                                             : ZeroVarianceCause::kBelowThreshold;
      }
    } else {
      st.cause = ZeroVarianceCause::kNone;
    }
    offset += size;
  }
  return WhitenBatch(batch, options, "GDPO's weighted sums", advantages, groups);
}

void Recount(std::span<const GroupStats> groups, BatchSummary* summary) {
  summary->groups_by_cause.fill(0);
  for (const GroupStats& g : groups) ++summary->groups_by_cause[static_cast<size_t>(g.cause)];
  summary->zero_variance_groups = summary->groups - summary->groups_by_cause[0];
  summary->zero_variance_fraction = summary->groups == 0
                                        ? 0.0
                                        : static_cast<double>(summary->zero_variance_groups) /
                                              static_cast<double>(summary->groups);
}

}  // namespace

absl::Status CheckComponents(const Batch& batch) {
  const size_t k_count = batch.num_components;
  size_t offset = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    const size_t size = batch.group_sizes[g];
    for (size_t i = 0; i < size; ++i) {
      if (!IsScorable(batch, offset + i)) continue;
      for (size_t k = 0; k < k_count; ++k) {
        const double c = batch.components[(offset + i) * k_count + k];
        if (std::isfinite(c)) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            "component ", k, " at group ", g, ", position ", i, " (flat index ", offset + i,
            ", components[", (offset + i) * k_count + k, "]) is ", DescribeNonFinite(c),
            ": components must be finite (mark the entry unscorable to leave it out)"));
      }
    }
    offset += size;
  }
  return absl::OkStatus();
}

absl::Status FinishCpuEstimator(const Batch& batch, const Options& options,
                                std::span<double> advantages, std::span<GroupStats> groups,
                                BatchSummary* summary) {
  absl::Status status;
  switch (options.estimator) {
    case Estimator::kReinforcePlusPlusBaseline:
      status = FinishReinforcePlusPlusBaseline(batch, options, advantages, groups);
      break;
    case Estimator::kGrpoPassK:
      FinishGrpoPassK(batch, advantages, groups);
      break;
    case Estimator::kGdpo:
      status = FinishGdpo(batch, options, advantages, groups);
      break;
    case Estimator::kGrpo:
    case Estimator::kDrGrpo:
    case Estimator::kRloo:
    case Estimator::kBatchNormalized:
      break;
  }
  if (!status.ok()) return status;
  Recount(groups, summary);
  return absl::OkStatus();
}

}  // namespace rlscore::advantage
