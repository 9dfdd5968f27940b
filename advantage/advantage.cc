#include "advantage/advantage.h"

#include <cmath>

#include "absl/strings/str_cat.h"
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
  uint64_t total = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    if (batch.group_sizes[g] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("group_sizes[", g, "] is 0: every group needs at least one reward"));
    }
    total += batch.group_sizes[g];
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
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown estimator ", static_cast<int>(options.estimator)));
  }
  if (options.deviation != Deviation::kSample && options.deviation != Deviation::kPopulation) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown deviation ", static_cast<int>(options.deviation)));
  }
  return absl::OkStatus();
}

absl::Status Compute(const Batch& batch, const Options& options, std::span<double> advantages,
                     std::span<GroupStats> groups, BatchSummary* summary) {
  RLSCORE_RETURN_IF_ERROR(ValidateShape(batch, options));
  const reference::Failure failure =
      reference::ComputeInterleaved(batch, options, advantages, groups, summary);
  switch (failure.kind) {
    case reference::Failure::Kind::kNone:
      return absl::OkStatus();
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
