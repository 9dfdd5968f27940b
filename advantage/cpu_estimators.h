// The estimators that run on the CPU only (types.h, HasCudaKernel false): REINFORCE++-baseline,
// GRPO pass@k and GDPO. advantage::Compute (advantage.h) is their entry point:
//
//   advantage::Options o;
//   o.estimator = advantage::Estimator::kReinforcePlusPlusBaseline;
//   advantage::Compute(batch, o, advantages, groups, &summary);   // validates, then ...
//   // ... stage one (reference.h, as Dr. GRPO): group statistics, zero-variance decisions and
//   // r - μ; then FinishCpuEstimator() below.
//
// Every normalisation has the zero-variance clamp of docs/DESIGN.md §4 (τ = 1e-8 by default):
// a deviation below τ (or below the smallest normal double) is never divided by; what it would
// have scaled is exactly +0.0 instead. verl and TRL add an ε to the deviation instead (1e-6 and
// 1e-4), which turns float residue into large values; that is the divergence common to all three.
// Unscorable entries are left out of every statistic and get +0.0. Sums of a batch are
// compensated (Neumaier), deviations two-pass and rescaled by the largest deviation, so values hold
// 1e-12 relative to the scale of the data (docs/DESIGN.md §4).
//
// REINFORCE++-baseline (Hu 2025, arXiv:2501.03262; verl `reinforce_plus_plus_baseline`):
//   a_i  = r_i − μ_group                              (stage one; +0.0 in a zero-variance group)
//   A_i  = (a_i − mean_batch(a)) / σ_batch(a)
// mean_batch and σ_batch (Options::deviation) are over every scorable entry of the batch,
// zero-variance groups included with their a = +0.0, as verl's whitening counts their zeros; their
// advantages stay exactly +0.0 (verl gives them (0 − mean)/σ, float residue). σ_batch < τ: every
// advantage is +0.0 and every group with signal becomes kBelowThreshold. Divergences: verl whitens
// token-weighted (each completion counts once per response token); this whitens per completion,
// so a group's centred values sum to 0 and mean_batch(a) is 0 up to rounding. verl centres a
// group of one at 0 (a = r); here it is a singleton, +0.0.
//
// GRPO pass@k (arXiv:2503.19595 as verl implements it, `compute_grpo_passk_outcome_advantage`):
//   A_best = (r_max − r_second_max) / σ_group,  A_i = 0 for every other member.
// The best is the scorable entry with the largest reward, the lowest index among equals; a tie
// for the maximum gives +0.0 to the whole group (r_max − r_second_max = 0, as in verl), which keeps
// its statistics and cause. σ_group is that of stage one (Options::deviation; verl uses the sample
// deviation and norm_adv_by_std_in_grpo, whose default, dividing, is the only behaviour here).
// A zero-variance group is +0.0 everywhere; verl refuses groups of one, here they are singletons.
//
// GDPO (TRL's GRPOTrainer with multi_objective_aggregation="normalize_then_sum"), for the K
// components c_ik of Batch::components with weights w_k:
//   z_ik = (c_ik − μ_k) / σ_k           within the group, per component; exactly 0 when the
//                                       component is bit-identical in the group or σ_k < τ,
//                                       while the other components still count
//   s_i  = Σ_k w_k z_ik                 k in order, from +0.0
//   A_i  = (s_i − mean_batch(s)) / σ_batch(s)
// A group is zero-variance when it has fewer than two scorable entries, or when its s are
// bit-identical or their σ < τ (every component clamped: all s are +0.0); its cause is then the
// common outcome when there is one, else identical rewards when every component was bit-identical,
// else below threshold. Its advantages are +0.0 and it enters the batch statistics with s = +0.0
// (TRL's s of such a group is 0 too, and it counts in nanmean/nanstd). σ_batch < τ: every
// advantage is +0.0 and every group with signal becomes kBelowThreshold. The group statistics
// (mean, std) describe Batch::rewards as for every estimator; only the cause follows the
// components. TRL divides by σ + 1e-4 at both levels.
//
// Thread-safe: pure functions of their arguments.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "advantage/types.h"

namespace rlscore::advantage {

// INVALID_ARGUMENT naming the group, the position, the component and the flat index of the first
// NaN/±Inf component of a scorable entry. REQUIRES: ValidateShape OK for Estimator::kGdpo.
absl::Status CheckComponents(const Batch& batch);

// Finishes `options.estimator` (one of the CPU-only estimators) from stage one's results in
// `advantages` (r − μ, +0.0 for zero-variance groups and unscorable entries), `groups` and
// `summary`, in place; recounts the summary's causes. INVALID_ARGUMENT when a batch statistic or a
// GDPO sum overflows double precision.
// REQUIRES: ValidateShape OK; for GDPO, CheckComponents OK; stage one succeeded on this batch.
absl::Status FinishCpuEstimator(const Batch& batch, const Options& options,
                                std::span<double> advantages, std::span<GroupStats> groups,
                                BatchSummary* summary);

}  // namespace rlscore::advantage
