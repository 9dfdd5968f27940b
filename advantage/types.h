// The plain value types of group advantages (docs/DESIGN.md §4): estimators, options, a borrowed
// batch, group statistics and the batch summary.
//
// This header needs nothing but the C++ standard library, so the CUDA module (gpu/) and its
// GPU-only test target share these exact types with the CPU reference. advantage.h is the entry
// point for everything else.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace rlscore::advantage {

// Which group-relative estimator turns rewards into advantages (docs/DESIGN.md §4). The first four
// have one canonical arithmetic (reference.h) shared with the CUDA module; the last three are
// computed on the CPU only (HasCudaKernel).
enum class Estimator : uint8_t {
  kGrpo = 0,         // (r - μ) / σ                    — Shao et al. 2024 (DeepSeekMath)
  kDrGrpo = 1,       // r - μ                          — Liu et al. 2025 ("GRPO done right")
  kRloo = 2,         // r - mean of the other members  — Ahmadian et al. 2024
  kBatchNormalized,  // (r - μ_group) / σ_batch        — REINFORCE++-style batch scaling
  // a = r - μ_group, then whitened over the batch: (a - mean_batch(a)) / σ_batch(a), σ of the
  // centred values — REINFORCE++-baseline, Hu 2025, arXiv:2501.03262 (verl
  // `reinforce_plus_plus_baseline`).
  kReinforcePlusPlusBaseline = 4,
  // (r_max - r_second_max) / σ for the best of the group, 0 for the others — pass@k,
  // arXiv:2503.19595 as verl implements it (`grpo_passk`).
  kGrpoPassK = 5,
  // Σ_k w_k (c_k - μ_k) / σ_k over reward components, then (s - mean_batch) / σ_batch — GDPO
  // ("Group reward-Decoupled Normalization Policy Optimization"), as TRL's GRPOTrainer does it with
  // multi_objective_aggregation="normalize_then_sum". Needs Batch::components.
  kGdpo = 6,
};

// Whether `e` has a kernel in the CUDA module (gpu/) and the canonical order of reference.h.
// The others always run on the CPU, whatever backend is asked.
constexpr bool HasCudaKernel(Estimator e) {
  return e == Estimator::kGrpo || e == Estimator::kDrGrpo || e == Estimator::kRloo ||
         e == Estimator::kBatchNormalized;
}

// The deviation σ: sample (n - 1, like torch.std) or population (n).
enum class Deviation : uint8_t { kSample = 0, kPopulation = 1 };

// What the caller knows of a completion's outcome. Only kUnscorable changes the arithmetic (the
// entry is left out of its group's statistics and gets advantage +0.0); the others only let a
// zero-variance group name its cause ("all correct" rather than "identical rewards").
enum class Outcome : uint8_t {
  kUnknown = 0,
  kCorrect = 1,
  kWrong = 2,
  kTruncated = 3,
  kUnscorable = 4,
};

// Why a group carries no learning signal. kNone means the group has signal.
enum class ZeroVarianceCause : uint8_t {
  kNone = 0,
  kIdenticalRewards = 1,  // every scorable reward bit-identical, outcomes unknown or mixed
  kBelowThreshold = 2,    // rewards differ only below τ (σ < τ)
  kAllCorrect = 3,        // σ < τ and every scorable completion was correct
  kAllWrong = 4,          // σ < τ and every scorable completion was wrong
  kAllTruncated = 5,      // σ < τ and every scorable completion was truncated
  kAllUnscorable = 6,     // no scorable completion in the group
  kSingleton = 7,         // exactly one scorable completion: nothing to compare against
};
inline constexpr int kNumZeroVarianceCauses = 8;

// τ of docs/DESIGN.md §4.
inline constexpr double kDefaultZeroVarianceThreshold = 1e-8;

// The band-pass keep filter (the accuracy-band group filter of verl and OpenRLHF): a group is kept
// only when it has signal and lo <= its mean accuracy <= hi. It changes no advantage, only
// GroupStats::keep(). Mean accuracy, over the group's scorable entries: of Batch::accuracy when
// given; else of the outcomes (correct 1, wrong or truncated 0) when every scorable outcome of the
// group is one of those; else the group's mean reward.
struct KeepBand {
  bool enabled = false;
  double lo = 0.0;  // finite, lo <= hi
  double hi = 1.0;
};

struct Options {
  Estimator estimator = Estimator::kGrpo;
  Deviation deviation = Deviation::kSample;
  // τ: a σ below this is clamped, at every normalisation. Must be finite and >= 0.
  double zero_variance_threshold = kDefaultZeroVarianceThreshold;
  KeepBand keep_band;
};

// The input, borrowed from the caller for the duration of one call.
struct Batch {
  std::span<const double> rewards;        // all groups back to back
  std::span<const uint32_t> group_sizes;  // each > 0; they sum to rewards.size()
  std::span<const Outcome> outcomes;      // empty, or one per reward
  // Estimator::kGdpo only (empty otherwise): the reward components, row-major
  // [rewards.size() × num_components], and one finite weight per component.
  std::span<const double> components = {};
  uint32_t num_components = 0;
  std::span<const double> component_weights = {};
  // Read by the keep band only: empty, or one accuracy per reward (finite where scorable).
  std::span<const double> accuracy = {};
};

// Statistics of one group, over its scorable entries.
struct GroupStats {
  double mean = 0.0;      // 0 when the group has no scorable entry
  double std = 0.0;       // σ under Options::deviation; 0 with fewer than two scorable entries
  uint32_t scorable = 0;  // entries that entered the statistics
  ZeroVarianceCause cause = ZeroVarianceCause::kNone;
  // The keep band is on and the group's mean accuracy lies outside it (KeepBand).
  bool outside_keep_band = false;

  bool zero_variance() const { return cause != ZeroVarianceCause::kNone; }
  // DAPO dynamic sampling: a group without signal is not worth a gradient step; nor, with a keep
  // band, one whose accuracy is outside the band.
  bool keep() const { return cause == ZeroVarianceCause::kNone && !outside_keep_band; }
};

struct BatchSummary {
  uint64_t groups = 0;
  uint64_t rewards = 0;
  uint64_t unscorable = 0;
  uint64_t zero_variance_groups = 0;
  std::array<uint64_t, kNumZeroVarianceCauses> groups_by_cause{};  // indexed by cause
  double zero_variance_fraction = 0.0;  // zero_variance_groups / groups; 0 for an empty batch
  double reward_mean = 0.0;             // over every scorable reward of the batch
  double reward_std = 0.0;              // σ under Options::deviation; σ_batch of kBatchNormalized
};

// An owning result, for callers that do not manage their own buffers.
struct Result {
  std::vector<double> advantages;
  std::vector<GroupStats> groups;
  BatchSummary summary;
};

}  // namespace rlscore::advantage
