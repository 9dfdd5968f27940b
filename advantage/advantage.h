// Group-relative advantages with the zero-variance clamp (docs/DESIGN.md §4).
//
// This is the arithmetic that diverged in the incident docs/DESIGN.md describes:
// groups whose rewards were all identical were normalised by a near-zero standard deviation and
// float residue became advantages of ±20. Here such a group gets exactly +0.0 everywhere, is
// flagged zero-variance with its cause, and is marked `keep = false` (DAPO's dynamic-sampling
// hint).
//
// Rewards come as one flat array plus the size of each group (ragged groups allowed), so a
// trainer can send millions of numbers without a message per group:
//
//   std::vector<double> rewards = {0.1, 0.1, 0.1, 0.1,   1.1, 0.1, 1.1, 0.1};
//   std::vector<uint32_t> sizes = {4, 4};
//   absl::StatusOr<advantage::Result> r =
//       advantage::Compute({.rewards = rewards, .group_sizes = sizes}, advantage::Options{});
//   if (!r.ok()) return r.status();        // NaN/Inf or bad shape: INVALID_ARGUMENT
//   r->groups[0].cause;                    // ZeroVarianceCause::kIdenticalRewards, advantages +0.0
//   r->advantages[4];                      // (1.1 - 0.6) / 0.57735... (sample deviation)
//
// The estimators without a CUDA kernel (REINFORCE++-baseline, GRPO pass@k, GDPO; their formulas,
// clamps and divergences from verl and TRL are in cpu_estimators.h) and the keep band go through
// the same Compute() and Backend; every backend computes them on the CPU. GDPO reads reward
// components:
//
//   std::vector<double> c = {1, 0.1,  0, 0.1,  1, 0.1,  0, 0.1};   // [4 × 2]: accuracy, format
//   std::vector<double> w = {1.0, 1.0};
//   std::vector<uint32_t> one_group = {4};
//   absl::StatusOr<advantage::Result> g =
//       advantage::ComputeGdpo(c, 2, w, one_group, {}, advantage::Options{});
//   // format is constant in the group: it contributes exactly 0; accuracy alone decides.
//
// Everything here is pure: no I/O, no clock, no globals, no gRPC or protobuf types.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "advantage/types.h"

namespace rlscore::advantage {

// A stable snake_case name for metrics labels and logs, e.g. "identical_rewards".
std::string_view CauseName(ZeroVarianceCause cause);

// Checks the shape of `batch` and the options: group sizes positive and summing to the number of
// rewards, outcomes and accuracy empty or one per reward, τ finite and non-negative, a keep band
// with finite lo <= hi; for GDPO at least one component, rewards.size() × num_components
// components and one finite weight per component, and no components for any other estimator.
// Does not look at rewards, components or accuracies.
absl::Status ValidateShape(const Batch& batch, const Options& options);

// Computes advantages, group statistics and the batch summary on the CPU: the reference
// implementation every backend must match (identical zero-variance decisions, values within
// 1e-12 relative).
//
// Statistics are two-pass in double (mean, then the sum of squared deviations; never
// E[x²] - E[x]²). A group is zero-variance when it has fewer than two scorable entries, when its
// scorable rewards are bit-identical, or when σ < τ; for kBatchNormalized also when σ_batch < τ.
// Whatever τ is (even 0), a σ below the smallest normal double (+0.0 beside -0.0, subnormal
// spreads) counts as zero. All advantages of such a group are exactly +0.0; unscorable entries
// get +0.0 too. A tiny but normal σ keeps full precision (deviations are rescaled before
// squaring when their squares would underflow).
//
// The CPU-only estimators (HasCudaKernel false) start from the statistics and the zero-variance
// decisions above (as Dr. GRPO) and are finished as cpu_estimators.h states; then the keep band,
// when on, marks the groups outside it (ApplyKeepBand).
//
// Errors: INVALID_ARGUMENT for a bad shape (see ValidateShape), for advantages that overlap the
// rewards (no computing in place), or for a NaN/±Inf reward, component (GDPO) or accuracy (keep
// band) of a scorable entry, naming the group, the position in the group and the flat index of the
// first offending value.
//
// REQUIRES: advantages.size() == batch.rewards.size(), groups.size() == batch.group_sizes.size(),
// summary != nullptr. On error the outputs hold unspecified values.
// Thread-safe: touches nothing but its arguments.
absl::Status Compute(const Batch& batch, const Options& options, std::span<double> advantages,
                     std::span<GroupStats> groups, BatchSummary* summary);

// Allocating convenience over the function above.
absl::StatusOr<Result> Compute(const Batch& batch, const Options& options);

// The keep band of options.keep_band (types.h, KeepBand): when the band is on, sets
// GroupStats::outside_keep_band of every group (false for a group with no scorable entry); when it
// is off, does nothing, because every computation of the statistics (the CPU paths, the CUDA
// module) leaves the flag false. Compute() calls it last; a backend that computes elsewhere calls
// it on its results. INVALID_ARGUMENT names the
// group and position of a NaN/±Inf accuracy of a scorable entry.
// REQUIRES: ValidateShape(batch, options) is OK; groups.size() == batch.group_sizes.size() and
// each group's mean is final. Thread-safe: touches nothing but its arguments.
absl::Status ApplyKeepBand(const Batch& batch, const Options& options,
                           std::span<GroupStats> groups);

// r_i = Σ_k w_k · c_ik for each row of the row-major [n × K] matrix `components` (k in order, from
// +0.0): the rewards whose statistics GDPO reports when a caller sends only components.
// INVALID_ARGUMENT, naming what is wrong, when K is 0, components.size() is not a multiple of K,
// or weights are not K finite values.
absl::StatusOr<std::vector<double>> WeightedRowSums(std::span<const double> components,
                                                    uint32_t num_components,
                                                    std::span<const double> weights);

// GDPO (Estimator::kGdpo) of a row-major [n × num_components] matrix of reward components with one
// weight per component, in groups of `group_sizes` (summing to n), `outcomes` empty or one per
// row. The reported rewards are WeightedRowSums; options.estimator is ignored. Errors as above.
absl::StatusOr<Result> ComputeGdpo(std::span<const double> components, uint32_t num_components,
                                   std::span<const double> weights,
                                   std::span<const uint32_t> group_sizes,
                                   std::span<const Outcome> outcomes, Options options);

// Where advantages are computed. The CPU backend always exists; a CUDA backend (gpu/) plugs in
// behind the same contract as Compute() above, so callers never behave differently because of it
// (it computes the CPU-only estimators on the CPU and says so).
//
// Thread-safety: implementations must allow concurrent Compute() calls.
class Backend {
 public:
  virtual ~Backend() = default;

  // A short stable name for health, metrics and logs: "cpu", "cuda". A backend that dispatches
  // between others names the one it prefers.
  virtual std::string_view Name() const = 0;

  // Same contract, preconditions and errors as the free function Compute(). Returns the name of
  // the backend that computed this batch (a string with static storage: "cpu", "cuda").
  virtual absl::StatusOr<std::string_view> Compute(const Batch& batch, const Options& options,
                                                   std::span<double> advantages,
                                                   std::span<GroupStats> groups,
                                                   BatchSummary* summary) = 0;
};

// The reference backend, backed by the free function Compute().
std::unique_ptr<Backend> NewCpuBackend();

}  // namespace rlscore::advantage
