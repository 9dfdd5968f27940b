#include "advantage/advantage.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "advantage/cpu_estimators.h"
#include "advantage/reference.h"
#include "common/status_macros.h"

namespace rlscore::advantage {
namespace {

bool IsScorable(const Batch& batch, size_t index) {
  return batch.outcomes.empty() || batch.outcomes[index] != Outcome::kUnscorable;
}

const char* DescribeNonFinite(double x) {
  if (std::isnan(x)) return "NaN";
  return x > 0 ? "+Inf" : "-Inf";
}

// The error for group `g` (starting at flat index `offset`, `size` entries) whose scorable
// rewards did not sum to a finite value: names the first NaN/±Inf, or the overflow.
absl::Status NonFiniteError(const Batch& batch, size_t g, size_t offset, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    const double r = batch.rewards[offset + i];
    if (IsScorable(batch, offset + i) && !std::isfinite(r)) {
      return absl::InvalidArgumentError(
          absl::StrCat("reward at group ", g, ", position ", i, " (flat index ", offset + i,
                       ") is ", DescribeNonFinite(r),
                       ": rewards must be finite (mark the entry unscorable to leave it out)"));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "rewards of group ", g, " (flat index ", offset,
      ") overflow double precision: ", "magnitudes above about 1e150 are not supported"));
}

// The K and weights of a components matrix of `rows` rows (or any whole number of rows when
// `rows` is absent: WeightedRowSums).
absl::Status ValidateMatrix(size_t components, uint32_t num_components,
                            std::span<const double> weights, const size_t* rows) {
  if (num_components == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_components is 0 with ", components,
                     " components: GDPO needs at least one reward component"));
  }
  if (rows != nullptr && components != *rows * num_components) {
    return absl::InvalidArgumentError(absl::StrCat(
        "components has ", components, " values; expected rewards (", *rows, ") x num_components (",
        num_components, ") = ", *rows * num_components, ", row-major"));
  }
  if (rows == nullptr && components % num_components != 0) {
    return absl::InvalidArgumentError(absl::StrCat("components has ", components,
                                                   " values, not a whole number of rows of ",
                                                   "num_components (", num_components, ")"));
  }
  if (weights.size() != num_components) {
    return absl::InvalidArgumentError(absl::StrCat("component_weights has ", weights.size(),
                                                   " values; expected one per component (",
                                                   num_components, ")"));
  }
  for (size_t k = 0; k < weights.size(); ++k) {
    if (!std::isfinite(weights[k])) {
      return absl::InvalidArgumentError(absl::StrCat("component_weights[", k, "] is ",
                                                     DescribeNonFinite(weights[k]),
                                                     ": weights must be finite"));
    }
  }
  return absl::OkStatus();
}

// GDPO needs a components matrix; every other estimator must not be given one (it would be
// silently ignored).
absl::Status ValidateComponentsShape(const Batch& batch, const Options& options) {
  if (options.estimator == Estimator::kGdpo) {
    const size_t rows = batch.rewards.size();
    return ValidateMatrix(batch.components.size(), batch.num_components, batch.component_weights,
                          &rows);
  }
  if (!batch.components.empty() || batch.num_components != 0 || !batch.component_weights.empty()) {
    return absl::InvalidArgumentError(
        "components, num_components and component_weights are read by the GDPO estimator only");
  }
  return absl::OkStatus();
}

// The mean accuracy of one group with scorable entries (types.h, KeepBand), or an error naming a
// non-finite accuracy.
absl::StatusOr<double> MeanAccuracy(const Batch& batch, const GroupStats& stats, size_t g,
                                    size_t offset, size_t size) {
  if (!batch.accuracy.empty()) {
    double sum = 0.0;
    for (size_t i = 0; i < size; ++i) {
      if (!IsScorable(batch, offset + i)) continue;
      const double a = batch.accuracy[offset + i];
      if (!std::isfinite(a)) {
        return absl::InvalidArgumentError(
            absl::StrCat("accuracy at group ", g, ", position ", i, " (flat index ", offset + i,
                         ") is ", DescribeNonFinite(a), ": accuracies must be finite"));
      }
      sum += a;
    }
    return sum / static_cast<double>(stats.scorable);
  }
  if (!batch.outcomes.empty()) {
    uint64_t correct = 0;
    bool known = true;
    for (size_t i = offset; i < offset + size && known; ++i) {
      switch (batch.outcomes[i]) {
        case Outcome::kCorrect:
          ++correct;
          break;
        case Outcome::kWrong:
        case Outcome::kTruncated:
        case Outcome::kUnscorable:
          break;
        case Outcome::kUnknown:
        default:
          known = false;
          break;
      }
    }
    if (known) return static_cast<double>(correct) / static_cast<double>(stats.scorable);
  }
  return stats.mean;
}

}  // namespace

std::string_view CauseName(ZeroVarianceCause cause) {
  switch (cause) {
    case ZeroVarianceCause::kNone:
      return "none";
    case ZeroVarianceCause::kIdenticalRewards:
      return "identical_rewards";
    case ZeroVarianceCause::kBelowThreshold:
      return "below_threshold";
    case ZeroVarianceCause::kAllCorrect:
      return "all_correct";
    case ZeroVarianceCause::kAllWrong:
      return "all_wrong";
    case ZeroVarianceCause::kAllTruncated:
      return "all_truncated";
    case ZeroVarianceCause::kAllUnscorable:
      return "all_unscorable";
    case ZeroVarianceCause::kSingleton:
      return "singleton";
  }
  return "unknown";
}

absl::Status ValidateShape(const Batch& batch, const Options& options) {
  if (!batch.outcomes.empty() && batch.outcomes.size() != batch.rewards.size()) {
    return absl::InvalidArgumentError(absl::StrCat("outcomes has ", batch.outcomes.size(),
                                                   " entries; expected none or one per ",
                                                   "reward (", batch.rewards.size(), ")"));
  }
  // Reductions the compiler vectorises (no early exit), then the first empty group if any.
  uint64_t total = 0;
  uint32_t smallest = ~uint32_t{0};
  for (const uint32_t size : batch.group_sizes) {
    total += size;
    smallest = std::min(smallest, size);
  }
  if (smallest == 0) {
    const size_t g =
        static_cast<size_t>(std::find(batch.group_sizes.begin(), batch.group_sizes.end(), 0u) -
                            batch.group_sizes.begin());
    return absl::InvalidArgumentError(
        absl::StrCat("group_sizes[", g, "] is 0: every group needs at least one reward"));
  }
  if (total != batch.rewards.size()) {
    return absl::InvalidArgumentError(absl::StrCat("group_sizes sum to ", total, " but there are ",
                                                   batch.rewards.size(), " rewards"));
  }
  if (!std::isfinite(options.zero_variance_threshold) || options.zero_variance_threshold < 0) {
    return absl::InvalidArgumentError(absl::StrCat("zero_variance_threshold must be finite and ",
                                                   ">= 0, got ", options.zero_variance_threshold));
  }
  switch (options.estimator) {
    case Estimator::kGrpo:
    case Estimator::kDrGrpo:
    case Estimator::kRloo:
    case Estimator::kBatchNormalized:
    case Estimator::kReinforcePlusPlusBaseline:
    case Estimator::kGrpoPassK:
    case Estimator::kGdpo:
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown estimator ", static_cast<int>(options.estimator)));
  }
  if (options.deviation != Deviation::kSample && options.deviation != Deviation::kPopulation) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown deviation ", static_cast<int>(options.deviation)));
  }
  RLSCORE_RETURN_IF_ERROR(ValidateComponentsShape(batch, options));
  if (!batch.accuracy.empty() && batch.accuracy.size() != batch.rewards.size()) {
    return absl::InvalidArgumentError(absl::StrCat("accuracy has ", batch.accuracy.size(),
                                                   " entries; expected none or one per ",
                                                   "reward (", batch.rewards.size(), ")"));
  }
  const KeepBand& band = options.keep_band;
  if (band.enabled && !(std::isfinite(band.lo) && std::isfinite(band.hi) && band.lo <= band.hi)) {
    return absl::InvalidArgumentError(
        absl::StrCat("keep_band must have finite lo <= hi, got [", band.lo, ", ", band.hi, "]"));
  }
  return absl::OkStatus();
}

absl::Status Compute(const Batch& batch, const Options& options, std::span<double> advantages,
                     std::span<GroupStats> groups, BatchSummary* summary) {
  RLSCORE_RETURN_IF_ERROR(ValidateShape(batch, options));
  // The kernels write whole rows, past a group's end into the groups after it, before those are
  // read (reference.h): written over the rewards, they would change rewards still to be read.
  const auto address = [](const double* p) { return reinterpret_cast<uintptr_t>(p); };
  if (!advantages.empty() &&
      address(advantages.data()) < address(batch.rewards.data() + batch.rewards.size()) &&
      address(batch.rewards.data()) < address(advantages.data() + advantages.size())) {
    return absl::InvalidArgumentError(
        "advantages overlap the rewards: Compute needs an output buffer of its own");
  }
  if (options.estimator == Estimator::kGdpo) RLSCORE_RETURN_IF_ERROR(CheckComponents(batch));
  // The CPU-only estimators start as Dr. GRPO: the group statistics, zero-variance decisions and
  // r - μ they are finished from.
  Options stage_one = options;
  if (!HasCudaKernel(options.estimator)) stage_one.estimator = Estimator::kDrGrpo;
  const reference::Failure failure =
      reference::ComputeInterleaved(batch, stage_one, advantages, groups, summary);
  switch (failure.kind) {
    case reference::Failure::Kind::kNone:
      if (!HasCudaKernel(options.estimator)) {
        RLSCORE_RETURN_IF_ERROR(FinishCpuEstimator(batch, options, advantages, groups, summary));
      }
      return ApplyKeepBand(batch, options, groups);
    case reference::Failure::Kind::kGroupNotFinite: {
      size_t offset = 0;
      for (size_t g = 0; g < failure.group; ++g) offset += batch.group_sizes[g];
      return NonFiniteError(batch, failure.group, offset, batch.group_sizes[failure.group]);
    }
    case reference::Failure::Kind::kBatchOverflow:
      break;
  }
  return absl::InvalidArgumentError(
      "rewards of the batch overflow double precision: magnitudes above about 1e150 are not "
      "supported");
}

absl::StatusOr<Result> Compute(const Batch& batch, const Options& options) {
  Result result;
  result.advantages.resize(batch.rewards.size());
  result.groups.resize(batch.group_sizes.size());
  RLSCORE_RETURN_IF_ERROR(
      Compute(batch, options, result.advantages, result.groups, &result.summary));
  return result;
}

absl::Status ApplyKeepBand(const Batch& batch, const Options& options,
                           std::span<GroupStats> groups) {
  // Every path that computes statistics leaves outside_keep_band false: with the band off there is
  // nothing to do, and a pass over the groups would cost a tenth of a batch of groups of 16.
  if (!options.keep_band.enabled) return absl::OkStatus();
  size_t offset = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    const size_t size = batch.group_sizes[g];
    GroupStats& st = groups[g];
    st.outside_keep_band = false;
    if (st.scorable > 0) {
      RLSCORE_ASSIGN_OR_RETURN(const double mean, MeanAccuracy(batch, st, g, offset, size));
      // Both ends inclusive.
      st.outside_keep_band = !(options.keep_band.lo <= mean && mean <= options.keep_band.hi);
    }
    offset += size;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> WeightedRowSums(std::span<const double> components,
                                                    uint32_t num_components,
                                                    std::span<const double> weights) {
  RLSCORE_RETURN_IF_ERROR(ValidateMatrix(components.size(), num_components, weights, nullptr));
  std::vector<double> sums(components.size() / num_components);
  for (size_t i = 0; i < sums.size(); ++i) {
    double r = 0.0;
    for (size_t k = 0; k < num_components; ++k)
      r += weights[k] * components[i * num_components + k];
    sums[i] = r;
  }
  return sums;
}

absl::StatusOr<Result> ComputeGdpo(std::span<const double> components, uint32_t num_components,
                                   std::span<const double> weights,
                                   std::span<const uint32_t> group_sizes,
                                   std::span<const Outcome> outcomes, Options options) {
  RLSCORE_ASSIGN_OR_RETURN(const std::vector<double> rewards,
                           WeightedRowSums(components, num_components, weights));
  options.estimator = Estimator::kGdpo;
  return Compute({.rewards = rewards,
                  .group_sizes = group_sizes,
                  .outcomes = outcomes,
                  .components = components,
                  .num_components = num_components,
                  .component_weights = weights},
                 options);
}

namespace {

class CpuBackend final : public Backend {
 public:
  std::string_view Name() const override { return "cpu"; }
  absl::StatusOr<std::string_view> Compute(const Batch& batch, const Options& options,
                                           std::span<double> advantages,
                                           std::span<GroupStats> groups,
                                           BatchSummary* summary) override {
    RLSCORE_RETURN_IF_ERROR(advantage::Compute(batch, options, advantages, groups, summary));
    return "cpu";
  }
};

}  // namespace

std::unique_ptr<Backend> NewCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace rlscore::advantage
