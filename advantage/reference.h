// The canonical arithmetic of group advantages (docs/DESIGN.md §4): the exact order of every
// floating-point operation, so that the CPU path and the CUDA path (gpu/) produce bit-identical
// statistics, zero-variance decisions and advantages.
//
// Sums over a group use 8 lanes: element i of the group's scorable rewards goes to lane i % 8, each
// lane adds its elements in index order starting from +0.0, and the lanes are then folded
// pairwise, lane[j] += lane[j + w] for w = 4, 2, 1. On the GPU a tile of 8 threads does exactly
// this with shuffles (one thread per lane, 64 contiguous bytes per load); the CPU keeps the lanes
// in SIMD registers. Eight lanes rather than a warp's 32: the fold is cheap for the small groups
// that dominate GRPO (8 to 64 completions), which is what the CPU path spends its time on, and
// the GPU stays bandwidth-bound with four groups per warp. A lane is never -0.0 (+0.0 + -0.0 is
// +0.0, and an exact zero sum is +0.0), so lanes that received nothing add nothing: a group of
// n < 8 may fold from w = bit_ceil(n) / 2 with the same result.
//
// The batch's moments (n, mean, M2) are merged from the groups' with the pairwise update of
// Chan, Golub & LeVeque (1979) over a fixed tree of adjacent pairs: level w = 1, 2, 4, … merges
// m[2wk] = Merge(m[2wk], m[2wk + w]) wherever 2wk + w < G. A GPU runs each level in parallel; the
// CPU gets the same result streaming, with a binary counter of partial merges (MomentStack).
//
// Nothing here may be contracted into fused multiply-adds: the CPU library is built with
// -ffp-contract=off and the CUDA module with -fmad=false.
//
// The inline functions marked RLSCORE_HOST_DEVICE are compiled for the GPU too, so there is one
// source for each scalar formula. This header needs only the C++ standard library.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include "advantage/types.h"

#if defined(__CUDACC__)
#define RLSCORE_HOST_DEVICE __host__ __device__
#else
#define RLSCORE_HOST_DEVICE
#endif

namespace rlscore::advantage::reference {

inline constexpr size_t kLanes = 8;

// A σ below the smallest normal double is treated as zero whatever τ is: 1/σ would overflow.
inline constexpr double kSmallestUsableStd = 2.2250738585072014e-308;  // DBL_MIN

// Below this, Σ(x - μ)² has lost bits to subnormal underflow (deviations under about 1e-140):
// σ is then recomputed from deviations rescaled by the largest one.
inline constexpr double kTinySumOfSquares = 1e-280;

// σ from M2 = Σ(x - μ)² over n values; 0 with fewer than two.
RLSCORE_HOST_DEVICE inline double StdFromM2(double m2, uint64_t n, Deviation kind) {
  if (n < 2) return 0.0;
  const double denom =
      kind == Deviation::kSample ? static_cast<double>(n - 1) : static_cast<double>(n);
  return sqrt(m2 / denom);
}

// True when σ is too small to divide by: σ < τ, or σ below the smallest normal double.
RLSCORE_HOST_DEVICE inline bool BelowThreshold(double std, double tau) {
  return std < (tau > kSmallestUsableStd ? tau : kSmallestUsableStd);
}

// Running (n, mean, M2) of a set of rewards.
struct Moments {
  uint64_t n = 0;
  double mean = 0.0;
  double m2 = 0.0;
};

// Chan, Golub & LeVeque's pairwise update. Merging an empty side returns the other side as it is
// (which also keeps δ² of a huge mean out of the sum: ∞ · 0 would be NaN).
RLSCORE_HOST_DEVICE inline Moments Merge(const Moments& a, const Moments& b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  const uint64_t total = a.n + b.n;
  const double delta = b.mean - a.mean;
  const double b_over_total = static_cast<double>(b.n) / static_cast<double>(total);
  Moments m;
  m.n = total;
  m.mean = a.mean + delta * b_over_total;
  m.m2 = a.m2 + b.m2 + delta * delta * static_cast<double>(a.n) * b_over_total;
  return m;
}

// Every estimator is (r - μ_group) · factor for the scorable entries of a group with signal:
//   GRPO              1/σ            (one division per group, within an ulp of (r - μ)/σ)
//   Dr. GRPO          1              (exact: r - μ)
//   RLOO              n/(n - 1)      (r - (S - r)/(n - 1), without the cancellation in S - r)
//   batch-normalised  1/σ_batch
// The CPU-only estimators (HasCudaKernel false) are never computed here: advantage.cc runs their
// first stage as Dr. GRPO (factor 1) and finishes them itself.
RLSCORE_HOST_DEVICE inline double Factor(Estimator estimator, double group_std, uint32_t scorable,
                                         double batch_std) {
  switch (estimator) {
    case Estimator::kGrpo:
      return 1.0 / group_std;
    case Estimator::kDrGrpo:
    case Estimator::kReinforcePlusPlusBaseline:
    case Estimator::kGrpoPassK:
    case Estimator::kGdpo:
      return 1.0;
    case Estimator::kRloo: {
      const double n = static_cast<double>(scorable);
      return n / (n - 1.0);
    }
    case Estimator::kBatchNormalized:
      return 1.0 / batch_std;
  }
  return 0.0;
}

// The cause a zero-variance group gets from the outcomes of its scorable entries, given as a
// bit set (1 << Outcome) of the outcomes present: a single known outcome names the cause; mixed or
// unknown outcomes give kNone (the caller then says identical rewards or below threshold).
RLSCORE_HOST_DEVICE inline ZeroVarianceCause CauseFromOutcomeSet(uint32_t present) {
  switch (present) {
    case 1u << static_cast<int>(Outcome::kCorrect):
      return ZeroVarianceCause::kAllCorrect;
    case 1u << static_cast<int>(Outcome::kWrong):
      return ZeroVarianceCause::kAllWrong;
    case 1u << static_cast<int>(Outcome::kTruncated):
      return ZeroVarianceCause::kAllTruncated;
    default:
      return ZeroVarianceCause::kNone;
  }
}

// The cause from the outcomes of the scorable entries of the group at [offset, offset + size) of
// `batch`: CauseFromOutcomeSet of the outcomes present; kNone without outcomes. Host only.
ZeroVarianceCause CauseFromOutcomes(const Batch& batch, size_t offset, size_t size);

// Σ x over n > 0 values in the canonical lane order, and whether every value has the bit pattern
// of the first (bit-identity, not σ, is the primary zero-variance test: it is exact whatever
// residue the mean leaves).
struct SumAndIdentity {
  double sum;
  bool identical;
};
SumAndIdentity CanonicalSumAndIdentity(const double* x, size_t n);

// Σ (x - mean)², n > 0, in the canonical lane order.
double CanonicalSumSquaredDeviations(const double* x, size_t n, double mean);

// Σ ((x - mean) / scale)², n > 0, scale > 0, in the canonical lane order.
double CanonicalSumSquaredScaled(const double* x, size_t n, double mean, double scale);

// Folds the moments in place over the canonical tree, level by level, and returns the root (empty
// moments for an empty span).
Moments MergeTree(std::span<Moments> m);

// The same fold as MergeTree, fed one group at a time in order with O(log G) memory: a binary
// counter whose slot k holds the merge of the last complete run of 2^k groups.
class MomentStack {
 public:
  void Push(const Moments& m);
  // Pushes the root of a complete run of 2^level groups at once: the same state as pushing them
  // one by one. REQUIRES: the number of groups pushed so far is a multiple of 2^level.
  void PushRun(const Moments& m, int level);
  // The root of the tree over everything pushed.
  Moments Root() const;

 private:
  Moments slots_[64];
  uint64_t count_ = 0;
};

// What went wrong in ComputeReference. The caller (advantage.cc) turns it into a message that
// names the offending value.
struct Failure {
  enum class Kind : uint8_t {
    kNone,
    kGroupNotFinite,  // the sum or M2 of group `group` is NaN or ±Inf
    kBatchOverflow,   // the batch's M2 overflowed
  };
  Kind kind = Kind::kNone;
  size_t group = 0;
};

// The whole computation of advantage::Compute (advantage.h) on the CPU, without validation, one
// group at a time: the plain statement of the arithmetic, which ComputeInterleaved (what Compute
// runs) and the CUDA path match bit for bit. For the estimators without a CUDA kernel it computes
// Dr. GRPO's r - μ (their first stage; advantage.cc finishes them) and ignores the keep band.
// REQUIRES: the shape and options are valid (advantage::ValidateShape), advantages.size() ==
// batch.rewards.size(), groups.size() == batch.group_sizes.size(), summary != nullptr.
// Thread-safe: touches nothing but its arguments.
Failure ComputeReference(const Batch& batch, const Options& options, std::span<double> advantages,
                         std::span<GroupStats> groups, BatchSummary* summary);

// The vector instructions ComputeInterleaved may use. kBest is the widest the CPU has; kPortable
// is the compiler's generic two-double vectors (SSE2 on x86-64), available everywhere.
enum class VectorIsa : uint8_t { kBest, kPortable, kAvx2, kAvx512 };

// Whether this build and this CPU can run `isa`.
bool IsaAvailable(VectorIsa isa);

// ComputeReference with the same preconditions and bit-identical results (advantages, statistics,
// summary, and the same Failure), faster when groups are small: every group still gets exactly
// the floating-point operations of the canonical order above, in the same order; only which
// operations run side by side changes. Groups of at most 64 scorable entries are taken up to W at
// a time (W the doubles in a vector) by kernels unrolled for their number of rows: each group's
// lanes accumulate in its own vectors, then the fold pairs the lanes of the W groups so that one
// vector holds one sum per group, and that vector carries them all through μ, σ and the factor
// (lanes across groups). A block of small groups of different sizes, not at the end of the batch
// (and on SSE2 and AVX2 without unscorable entries), is taken W consecutive groups at a time, in
// place and in address order, every group reading as many rows as the longest of its W (the
// entries past its end masked off in its sums) and writing its own rows whole (what it writes past
// its end is overwritten by the groups after it). A group with unscorable entries is read from a
// copy of its scorable rewards.
// Everything else (longer groups, the last groups of the batch, any group whose Σ(x - μ)² is too
// small to rule out identical rewards, and any group that turns out clamped, rescaled or not
// finite) takes ComputeReference's single-group path, with its canonical sums and its writes W
// lanes at a time (each vector one row's W lanes, the same additions in the same order) and the
// lines ahead asked for, since large groups come from memory. The kernels read up to 63 rewards
// past a group's end (ignored); advantages past a group's end are either stored back as they were
// or overwritten later with their own values. Both stay within the spans.
// Thread-safe: touches nothing but its arguments (about 32 KiB of stack, and up to 32 KiB of heap
// for the copies when some group has unscorable entries).
// REQUIRES: IsaAvailable(isa); `advantages` does not overlap batch.rewards.
Failure ComputeInterleaved(const Batch& batch, const Options& options, std::span<double> advantages,
                           std::span<GroupStats> groups, BatchSummary* summary,
                           VectorIsa isa = VectorIsa::kBest);

}  // namespace rlscore::advantage::reference
