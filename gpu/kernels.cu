#include <cooperative_groups.h>

#include <algorithm>
#include <bit>
#include <cub/device/device_scan.cuh>
#include <type_traits>

#include "gpu/kernels.h"

namespace rlscore::gpu {
namespace {

namespace cg = cooperative_groups;
using advantage::Deviation;
using advantage::Estimator;
using advantage::GroupStats;
using advantage::kNumZeroVarianceCauses;
using advantage::Outcome;
using advantage::ZeroVarianceCause;
using advantage::reference::BelowThreshold;
using advantage::reference::CauseFromOutcomeSet;
using advantage::reference::Factor;
using advantage::reference::kTinySumOfSquares;
using advantage::reference::Merge;
using advantage::reference::Moments;
using advantage::reference::StdFromM2;

constexpr int kBlockThreads = 256;
constexpr uint32_t kMaxGroupsPerBlock = 256;  // a power of two, at most kBlockThreads
constexpr int kTreeThreads = 512;             // the tree kernel folds 2 * kTreeThreads partials
constexpr uint8_t kUnscorable = static_cast<uint8_t>(Outcome::kUnscorable);

// The canonical fold of the tile's lanes (lane[j] += lane[j + w], w = W/2 … 1), broadcast.
template <int W, typename Tile>
__device__ double FoldLanes(const Tile& tile, double acc) {
#pragma unroll
  for (int w = W / 2; w >= 1; w /= 2) acc = __dadd_rn(acc, tile.shfl_down(acc, w));
  return tile.shfl(acc, 0);
}

// The largest value over the tile (order-free).
template <int W, typename Tile>
__device__ double MaxOverTile(const Tile& tile, double v) {
#pragma unroll
  for (int w = W / 2; w >= 1; w /= 2) v = fmax(v, tile.shfl_xor(v, w));
  return v;
}

template <int W, typename Tile>
__device__ uint32_t OrOverTile(const Tile& tile, uint32_t v) {
#pragma unroll
  for (int w = W / 2; w >= 1; w /= 2) v |= tile.shfl_xor(v, w);
  return v;
}

__device__ inline bool Scorable(const uint8_t* outcomes, uint64_t index) {
  return outcomes == nullptr || outcomes[index] != kUnscorable;
}

// Where each group starts and how long it is: from the scan of the sizes, or, when every group
// has the same size (Workspace::uniform_offsets), from the index alone, without reading or
// scanning the sizes at all.
struct GroupLayout {
  const uint32_t* offsets;  // exclusive scan of the sizes; unused when uniform
  const uint32_t* sizes;    // unused when uniform
  uint32_t uniform;         // the size of every group, or 0

  __device__ uint64_t Offset(uint64_t g) const {
    return uniform != 0 ? g * uniform : static_cast<uint64_t>(offsets[g]);
  }
  __device__ uint32_t Size(uint64_t g) const { return uniform != 0 ? uniform : sizes[g]; }
};

// The zero-variance cause of a group of n scorable entries (kNone: it has signal). `present`: the
// outcomes of its scorable entries as a bit set, 0 without outcomes.
__device__ ZeroVarianceCause CauseOf(uint32_t n, bool identical, double std, double tau,
                                     uint32_t present) {
  if (n == 0) return ZeroVarianceCause::kAllUnscorable;
  if (n == 1) return ZeroVarianceCause::kSingleton;
  if (!identical && !BelowThreshold(std, tau)) return ZeroVarianceCause::kNone;
  const ZeroVarianceCause cause = CauseFromOutcomeSet(present);
  if (cause != ZeroVarianceCause::kNone) return cause;
  return identical ? ZeroVarianceCause::kIdenticalRewards : ZeroVarianceCause::kBelowThreshold;
}

__device__ GroupStats StatsOf(double mean, double std, uint32_t n, ZeroVarianceCause cause) {
  GroupStats stats;
  stats.mean = mean;
  stats.std = std;
  stats.scorable = n;
  stats.cause = cause;
  stats.outside_keep_band = false;  // the host applies the keep band
  return stats;
}

// Writes one group's advantages: +0.0 for a zero-variance group and for unscorable entries,
// (r - μ) · factor otherwise.
template <int W, typename Tile>
__device__ void WriteGroup(const Tile& tile, const DeviceBatch& batch, double* out, uint64_t offset,
                           uint32_t size, bool zero_variance, double mean, double factor) {
  const double* x = batch.rewards + offset;
  for (uint32_t i = tile.thread_rank(); i < size; i += W) {
    double a = 0.0;
    if (!zero_variance && Scorable(batch.outcomes, offset + i)) {
      a = __dmul_rn(__dsub_rn(x[i], mean), factor);
    }
    out[offset + i] = a;
  }
}

// The canonical tree over a block's aligned run of groups (empty moments past the end), its root
// into partials[blockIdx.x], and the block's counts into the batch's counters.
__device__ void FinishBlock(Moments* moments, const unsigned int* causes, unsigned int unscorable,
                            uint32_t groups_per_block, Moments* partials,
                            DeviceCounters* counters) {
  for (uint32_t w = 1; w < groups_per_block; w *= 2) {
    const uint32_t j = 2 * w * threadIdx.x;
    if (j + w < groups_per_block) moments[j] = Merge(moments[j], moments[j + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = moments[0];
  if (threadIdx.x < kNumZeroVarianceCauses && causes[threadIdx.x] != 0) {
    atomicAdd(&counters->by_cause[threadIdx.x], causes[threadIdx.x]);
  }
  if (threadIdx.x == 0 && unscorable != 0) atomicAdd(&counters->unscorable, unscorable);
}

// Statistics, cause and (unless batch-normalised) advantages of every group; the moments of the
// block's B = groups_per_block groups folded over the canonical tree into partials[blockIdx.x].
template <int W>
__global__ void __launch_bounds__(kBlockThreads)
    GroupKernel(DeviceBatch batch, DeviceOutput out, GroupLayout layout, double* compacted,
                Moments* partials, uint32_t groups_per_block, bool write_advantages) {
  __shared__ Moments moments[kMaxGroupsPerBlock];
  __shared__ unsigned int causes[kNumZeroVarianceCauses];
  __shared__ unsigned int unscorable;

  cg::thread_block block = cg::this_thread_block();
  const auto tile = cg::tiled_partition<W>(block);
  const uint32_t lane = tile.thread_rank();
  const uint32_t tiles = kBlockThreads / W;
  const uint32_t tile_index = threadIdx.x / W;

  for (uint32_t i = threadIdx.x; i < kMaxGroupsPerBlock; i += kBlockThreads) moments[i] = Moments{};
  if (threadIdx.x < kNumZeroVarianceCauses) causes[threadIdx.x] = 0;
  if (threadIdx.x == 0) unscorable = 0;
  block.sync();

  const double tau = batch.options.zero_variance_threshold;
  const Deviation deviation = batch.options.deviation;
  const uint64_t first_group = static_cast<uint64_t>(blockIdx.x) * groups_per_block;
  for (uint32_t local = tile_index; local < groups_per_block; local += tiles) {
    const uint64_t g = first_group + local;
    if (g >= batch.num_groups) break;
    const uint32_t size = layout.Size(g);
    const uint64_t offset = layout.Offset(g);
    const double* x = batch.rewards + offset;

    // The scorable values, contiguous: the rewards themselves, or compacted in order.
    const double* values = x;
    uint32_t n = size;
    uint32_t present = 0;  // the outcomes of the scorable entries, as a bit set
    if (batch.outcomes != nullptr) {
      const uint8_t* outcome = batch.outcomes + offset;
      double* dst = compacted + offset;
      uint32_t base = 0;
      for (uint32_t c = 0; c < size; c += W) {
        const uint32_t i = c + lane;
        const bool ok = i < size && outcome[i] != kUnscorable;
        if (ok) present |= 1u << outcome[i];
        const uint32_t mask = tile.ballot(ok);
        if (ok) dst[base + __popc(mask & ((1u << lane) - 1u))] = x[i];
        base += __popc(mask);
      }
      n = base;
      values = dst;
      present = OrOverTile<W>(tile, present);
      tile.sync();  // the compacted values are visible to the whole tile
    }

    // First pass: Σ x in the canonical order, and bit-identity with the first value.
    double mean = 0.0, m2 = 0.0, std = 0.0;
    bool identical = true;
    bool finite = true;
    if (n > 0) {
      const unsigned long long first = __double_as_longlong(values[0]);
      double acc = 0.0;
      bool differs = false;
      for (uint32_t i = lane; i < n; i += W) {
        const double v = values[i];
        acc = __dadd_rn(acc, v);
        differs |= __double_as_longlong(v) != first;
      }
      const double sum = FoldLanes<W>(tile, acc);
      identical = !tile.any(differs);
      finite = isfinite(sum);
      if (finite) {
        mean = identical ? values[0] : __ddiv_rn(sum, static_cast<double>(n));
        if (!identical) {
          // Second pass: Σ (x - μ)².
          acc = 0.0;
          for (uint32_t i = lane; i < n; i += W) {
            const double d = __dsub_rn(values[i], mean);
            acc = __dadd_rn(acc, __dmul_rn(d, d));
          }
          m2 = FoldLanes<W>(tile, acc);
          finite = isfinite(m2);
        }
        if (finite && !identical && m2 < kTinySumOfSquares) {
          // A spread below about 1e-140: deviations rescaled by the largest one (reference.cc).
          double scale = 0.0;
          for (uint32_t i = lane; i < n; i += W) {
            scale = fmax(scale, fabs(__dsub_rn(values[i], mean)));
          }
          scale = MaxOverTile<W>(tile, scale);
          if (scale == 0.0) {
            m2 = 0.0;
            std = 0.0;
          } else {
            acc = 0.0;
            for (uint32_t i = lane; i < n; i += W) {
              const double d = __ddiv_rn(__dsub_rn(values[i], mean), scale);
              acc = __dadd_rn(acc, __dmul_rn(d, d));
            }
            const double scaled = FoldLanes<W>(tile, acc);
            m2 = __dmul_rn(__dmul_rn(scaled, scale), scale);
            std = __dmul_rn(scale, StdFromM2(scaled, n, deviation));
          }
        } else if (finite) {
          std = StdFromM2(m2, n, deviation);
        }
      }
    }
    if (!finite) {
      // The host redoes the batch on the CPU, which names the offending value. The statistics
      // are still defined, so that nothing downstream reads garbage.
      if (lane == 0) {
        atomicMin(&out.counters->first_bad_group, static_cast<unsigned long long>(g));
        out.groups[g] = GroupStats{};
      }
      continue;
    }

    const ZeroVarianceCause cause = CauseOf(n, identical, std, tau, present);

    if (lane == 0) {
      out.groups[g] = StatsOf(mean, std, n, cause);
      moments[local] = Moments{n, mean, m2};
      atomicAdd(&unscorable, size - n);
      if (write_advantages) atomicAdd(&causes[static_cast<int>(cause)], 1u);
    }
    if (write_advantages) {
      const bool zero_variance = cause != ZeroVarianceCause::kNone;
      const double factor = zero_variance ? 0.0 : Factor(batch.options.estimator, std, n, 0.0);
      WriteGroup<W>(tile, batch, out.advantages, offset, size, zero_variance, mean, factor);
    }
  }
  block.sync();
  FinishBlock(moments, causes, unscorable, groups_per_block, partials, out.counters);
}

// Shared memory of the staged kernels: the block's rewards, one pad slot after every 16 so that
// threads reading their groups at a stride of 16 doubles hit different banks.
constexpr uint32_t kStagedDoubles = 4096;
__host__ __device__ constexpr uint32_t Padded(uint32_t i) { return i + i / 16; }
constexpr size_t kStagedBytes = Padded(kStagedDoubles) * sizeof(double);

// The block's aligned run of groups: [first_group, first_group + groups), whose rewards are
// [begin, begin + span) (at most kStagedDoubles, since a group has at most kMax entries and the
// block takes kStagedDoubles / kMax groups).
struct BlockRun {
  uint64_t first_group;
  uint32_t groups;
  uint64_t begin;
  uint32_t span;
};

__device__ BlockRun RunOfBlock(const DeviceBatch& batch, const GroupLayout& layout,
                               uint32_t groups_per_block) {
  BlockRun run;
  run.first_group = static_cast<uint64_t>(blockIdx.x) * groups_per_block;
  const uint64_t left = batch.num_groups - run.first_group;
  run.groups = left < groups_per_block ? static_cast<uint32_t>(left) : groups_per_block;
  const uint64_t last = run.first_group + run.groups - 1;
  run.begin = layout.Offset(run.first_group);
  run.span = static_cast<uint32_t>(layout.Offset(last) + layout.Size(last) - run.begin);
  return run;
}

// Copies the run's rewards into shared memory with coalesced loads, every load issued before any
// store so that a thread has all of its loads in flight at once. The caller synchronises.
__device__ void StageIn(const double* rewards, const BlockRun& run, double* staged) {
  constexpr uint32_t kPerThread = kStagedDoubles / kBlockThreads;
  double v[kPerThread];
#pragma unroll
  for (uint32_t k = 0; k < kPerThread; ++k) {
    const uint32_t i = threadIdx.x + k * kBlockThreads;
    v[k] = i < run.span ? rewards[run.begin + i] : 0.0;
  }
#pragma unroll
  for (uint32_t k = 0; k < kPerThread; ++k) {
    const uint32_t i = threadIdx.x + k * kBlockThreads;
    if (i < run.span) staged[Padded(i)] = v[k];
  }
}

// Stores the run's advantages, written in place of the staged rewards, with coalesced stores.
__device__ void StageOut(const double* staged, const BlockRun& run, double* advantages) {
  for (uint32_t i = threadIdx.x; i < run.span; i += kBlockThreads) {
    advantages[run.begin + i] = staged[Padded(i)];
  }
}

// Σ term(at(i)) over i < n <= kMax by one thread, in the canonical order (reference.h): lane
// i % 8 from +0.0 in index order, then the fold lane[j] += lane[j + w], w = 4, 2, 1.
template <int kMax, typename At, typename Term>
__device__ double ThreadSum(const At& at, uint32_t n, const Term& term) {
  constexpr int kLanes = static_cast<int>(advantage::reference::kLanes);
  // Up to 16 rewards in registers; longer groups loop by rows of 8 (registers decide occupancy).
  constexpr int kRowsUnrolled = kMax <= 16 ? kMax / kLanes : 1;
  double lane[kLanes];
#pragma unroll
  for (int l = 0; l < kLanes; ++l) lane[l] = 0.0;
#pragma unroll kRowsUnrolled
  for (int row = 0; row < kMax / kLanes; ++row) {
#pragma unroll
    for (int l = 0; l < kLanes; ++l) {
      const int i = row * kLanes + l;
      if (i < static_cast<int>(n)) lane[l] = __dadd_rn(lane[l], term(at(i)));
    }
  }
#pragma unroll
  for (int w = kLanes / 2; w >= 1; w /= 2) {
#pragma unroll
    for (int j = 0; j < w; ++j) lane[j] = __dadd_rn(lane[j], lane[j + w]);
  }
  return lane[0];
}

// M2 and σ of a group of n values whose M2 fell below kTinySumOfSquares (about 1e-140 of spread):
// the deviations rescaled by the largest one, as reference.cc does. By one thread.
template <int kMax, typename At>
__device__ void TinySpread(const At& at, uint32_t n, double mean, Deviation deviation, double* m2,
                           double* std) {
  double scale = 0.0;
  for (int i = 0; i < static_cast<int>(n); ++i) scale = fmax(scale, fabs(__dsub_rn(at(i), mean)));
  if (scale == 0.0) {
    *m2 = 0.0;
    *std = 0.0;
    return;
  }
  const double scaled = ThreadSum<kMax>(at, n, [&](double v) {
    const double d = __ddiv_rn(__dsub_rn(v, mean), scale);
    return __dmul_rn(d, d);
  });
  *m2 = __dmul_rn(__dmul_rn(scaled, scale), scale);
  *std = __dmul_rn(scale, StdFromM2(scaled, n, deviation));
}

// Adds the block's causes with one shared atomic per cause and warp rather than one per group.
// Every thread of the block calls it; `counted` is the cause its group adds, or -1 for none.
__device__ void CountCauses(int counted, unsigned int* causes) {
  for (int c = 0; c < kNumZeroVarianceCauses; ++c) {
    const unsigned int votes = __ballot_sync(0xffffffffu, counted == c);
    if ((threadIdx.x & 31u) == 0 && votes != 0) atomicAdd(&causes[c], __popc(votes));
  }
}

// GroupKernel's work for batches without outcomes whose groups have at most kMax entries, with
// one thread per group. The tile path spends its time per group (each of the 8 lanes runs the
// group's divisions and square root, for four groups per warp), and a thread reading its own group
// from global memory touches a line per lane per load. So the block stages its run of groups'
// rewards in shared memory, each thread computes its group there, keeping the 8 canonical lanes
// in registers (ThreadSum: the same bits as the reference), writes the advantages in place, and
// the block stores them with coalesced stores. A block takes kStagedDoubles / kMax groups
// (groups_per_block at most that), one thread each.
template <int kMax>
__global__ void __launch_bounds__(kBlockThreads)
    StagedGroupKernel(DeviceBatch batch, DeviceOutput out, GroupLayout layout, Moments* partials,
                      uint32_t groups_per_block, bool write_advantages) {
  static_assert(kStagedDoubles / kMax <= kBlockThreads, "one thread per group of the block");
  constexpr int kUnrolled = kMax <= 16 ? kMax : 8;
  extern __shared__ double staged[];
  __shared__ Moments moments[kMaxGroupsPerBlock];
  __shared__ unsigned int causes[kNumZeroVarianceCauses];
  if (threadIdx.x < kNumZeroVarianceCauses) causes[threadIdx.x] = 0;

  const BlockRun run = RunOfBlock(batch, layout, groups_per_block);
  StageIn(batch.rewards, run, staged);
  __syncthreads();

  const uint32_t local = threadIdx.x;
  const uint64_t g = run.first_group + local;
  Moments m{};
  int counted = -1;  // the cause this thread's group adds to the counters; -1 for none
  if (local < run.groups) {
    const uint32_t n = layout.Size(g);  // > 0, every entry scorable
    const uint32_t start = static_cast<uint32_t>(layout.Offset(g) - run.begin);
    auto at = [&](int i) -> double& { return staged[Padded(start + static_cast<uint32_t>(i))]; };

    const double first = at(0);
    const unsigned long long first_bits = __double_as_longlong(first);
    bool identical = true;
    const double sum = ThreadSum<kMax>(at, n, [&](double v) {
      identical &= __double_as_longlong(v) == first_bits;
      return v;
    });
    bool finite = isfinite(sum);
    double mean = 0.0, m2 = 0.0, std = 0.0;
    if (finite) {
      mean = identical ? first : __ddiv_rn(sum, static_cast<double>(n));
      if (!identical) {
        m2 = ThreadSum<kMax>(at, n, [&](double v) {
          const double d = __dsub_rn(v, mean);
          return __dmul_rn(d, d);
        });
        finite = isfinite(m2);
      }
      if (finite && !identical && m2 < kTinySumOfSquares) {
        TinySpread<kMax>(at, n, mean, batch.options.deviation, &m2, &std);
      } else if (finite) {
        std = StdFromM2(m2, n, batch.options.deviation);
      }
    }

    if (!finite) {
      // As in GroupKernel: the host redoes the batch on the CPU (the advantages stored for this
      // group are its rewards, unspecified like GroupKernel's).
      atomicMin(&out.counters->first_bad_group, static_cast<unsigned long long>(g));
      out.groups[g] = GroupStats{};
    } else {
      const ZeroVarianceCause cause =
          CauseOf(n, identical, std, batch.options.zero_variance_threshold, 0);
      out.groups[g] = StatsOf(mean, std, n, cause);
      m = Moments{n, mean, m2};
      if (write_advantages) {
        counted = static_cast<int>(cause);
        const bool zero_variance = cause != ZeroVarianceCause::kNone;
        const double factor = zero_variance ? 0.0 : Factor(batch.options.estimator, std, n, 0.0);
#pragma unroll kUnrolled
        for (int i = 0; i < static_cast<int>(n); ++i) {
          double& x = at(i);
          x = zero_variance ? 0.0 : __dmul_rn(__dsub_rn(x, mean), factor);
        }
      }
    }
  }
  if (local < kMaxGroupsPerBlock) moments[local] = m;
  CountCauses(counted, causes);
  __syncthreads();
  if (write_advantages) StageOut(staged, run, out.advantages);
  FinishBlock(moments, causes, 0, groups_per_block, partials, out.counters);
}

// The same work for groups of up to kMax = 64 entries of uneven sizes, where one thread walking
// its group (StagedGroupKernel) idles most of a warp on the longest of 32 groups and its reads
// collide in shared memory banks. Here the block alternates: tiles of 8 threads take the sums over
// the staged rewards (lane l of a tile adds the group's elements l, l + 8, …: the canonical lanes
// themselves, folded with shuffles), and one thread per group takes the scalar steps between them
// (the mean, σ, the cause, the factor), which on the tile path each of the 8 lanes repeats. The
// phases meet in shared memory at block barriers.
template <int kMax>
__global__ void __launch_bounds__(kBlockThreads)
    StagedTileKernel(DeviceBatch batch, DeviceOutput out, GroupLayout layout, Moments* partials,
                     uint32_t groups_per_block, bool write_advantages) {
  constexpr int W = static_cast<int>(advantage::reference::kLanes);
  constexpr uint32_t kGroups = kStagedDoubles / kMax;  // groups_per_block at most
  static_assert(kGroups <= kBlockThreads, "one thread per group of the block");
  extern __shared__ double staged[];
  __shared__ Moments moments[kGroups];
  __shared__ unsigned int causes[kNumZeroVarianceCauses];
  __shared__ uint32_t starts[kGroups];  // in `staged`, before padding
  __shared__ uint32_t sizes[kGroups];
  __shared__ double sums[kGroups];  // Σ x, then M2 (tiles to threads)
  __shared__ double means[kGroups];
  __shared__ double factors[kGroups];
  // Per group, from the threads to the tiles: whether the next tile phase has work.
  __shared__ bool identical[kGroups];
  __shared__ bool busy[kGroups];

  cg::thread_block block = cg::this_thread_block();
  const auto tile = cg::tiled_partition<W>(block);
  const uint32_t lane = tile.thread_rank();
  const uint32_t tiles = kBlockThreads / W;
  const uint32_t tile_index = threadIdx.x / W;
  if (threadIdx.x < kNumZeroVarianceCauses) causes[threadIdx.x] = 0;

  const BlockRun run = RunOfBlock(batch, layout, groups_per_block);
  const uint32_t local = threadIdx.x;  // this thread's group in the scalar phases
  const uint64_t g = run.first_group + local;
  if (local < run.groups) {
    starts[local] = static_cast<uint32_t>(layout.Offset(g) - run.begin);
    sizes[local] = layout.Size(g);  // > 0, every entry scorable
  }
  StageIn(batch.rewards, run, staged);
  block.sync();

  // Tiles: Σ x and bit-identity with the first value.
  for (uint32_t t = tile_index; t < run.groups; t += tiles) {
    const double* x = staged;
    const uint32_t start = starts[t], n = sizes[t];
    const unsigned long long first = __double_as_longlong(x[Padded(start)]);
    double acc = 0.0;
    bool differs = false;
    for (uint32_t i = lane; i < n; i += W) {
      const double v = x[Padded(start + i)];
      acc = __dadd_rn(acc, v);
      differs |= __double_as_longlong(v) != first;
    }
    const double sum = FoldLanes<W>(tile, acc);
    const bool same = !tile.any(differs);
    if (lane == 0) {
      sums[t] = sum;
      identical[t] = same;
    }
  }
  block.sync();

  // Threads: the mean.
  bool finite = false;
  if (local < run.groups) {
    const uint32_t n = sizes[local];
    finite = isfinite(sums[local]);
    means[local] = !finite            ? 0.0
                   : identical[local] ? staged[Padded(starts[local])]
                                      : __ddiv_rn(sums[local], static_cast<double>(n));
    busy[local] = finite && !identical[local];
  }
  block.sync();

  // Tiles: Σ (x - μ)², for the groups whose values differ.
  for (uint32_t t = tile_index; t < run.groups; t += tiles) {
    if (!busy[t]) continue;  // the same for the whole tile
    const uint32_t start = starts[t], n = sizes[t];
    const double mean = means[t];
    double acc = 0.0;
    for (uint32_t i = lane; i < n; i += W) {
      const double d = __dsub_rn(staged[Padded(start + i)], mean);
      acc = __dadd_rn(acc, __dmul_rn(d, d));
    }
    const double m2 = FoldLanes<W>(tile, acc);
    if (lane == 0) sums[t] = m2;
  }
  block.sync();

  // Threads: σ, the cause, the statistics, the factor.
  Moments m{};
  int counted = -1;  // the cause this thread's group adds to the counters; -1 for none
  if (local < run.groups) {
    const uint32_t n = sizes[local];
    const double mean = means[local];
    double m2 = 0.0, std = 0.0;
    if (busy[local]) {
      m2 = sums[local];
      finite = isfinite(m2);
      if (finite && m2 < kTinySumOfSquares) {
        auto at = [&](int i) { return staged[Padded(starts[local] + static_cast<uint32_t>(i))]; };
        TinySpread<kMax>(at, n, mean, batch.options.deviation, &m2, &std);
      } else if (finite) {
        std = StdFromM2(m2, n, batch.options.deviation);
      }
    }
    bool zero_variance = true;
    factors[local] = 0.0;
    if (!finite) {
      // As in GroupKernel: the host redoes the batch on the CPU (the advantages stored for this
      // group are unspecified).
      atomicMin(&out.counters->first_bad_group, static_cast<unsigned long long>(g));
      out.groups[g] = GroupStats{};
    } else {
      const ZeroVarianceCause cause =
          CauseOf(n, identical[local], std, batch.options.zero_variance_threshold, 0);
      out.groups[g] = StatsOf(mean, std, n, cause);
      m = Moments{n, mean, m2};
      zero_variance = cause != ZeroVarianceCause::kNone;
      if (write_advantages) counted = static_cast<int>(cause);
      if (!zero_variance) factors[local] = Factor(batch.options.estimator, std, n, 0.0);
    }
    busy[local] = !zero_variance;
  }
  if (local < kGroups) moments[local] = m;
  CountCauses(counted, causes);
  block.sync();

  if (write_advantages) {
    // Tiles: the advantages, in place.
    for (uint32_t t = tile_index; t < run.groups; t += tiles) {
      const uint32_t start = starts[t], n = sizes[t];
      const bool signal = busy[t];
      const double mean = means[t], factor = factors[t];
      for (uint32_t i = lane; i < n; i += W) {
        double& x = staged[Padded(start + i)];
        x = signal ? __dmul_rn(__dsub_rn(x, mean), factor) : 0.0;
      }
    }
    block.sync();
    StageOut(staged, run, out.advantages);
  }
  FinishBlock(moments, causes, 0, groups_per_block, partials, out.counters);
}

// One more stretch of the canonical tree: block b folds in[b·2T … (b+1)·2T) into out[b].
__global__ void __launch_bounds__(kTreeThreads)
    TreeKernel(const Moments* in, Moments* out, uint64_t count) {
  __shared__ Moments moments[2 * kTreeThreads];
  const uint64_t base = static_cast<uint64_t>(blockIdx.x) * 2 * kTreeThreads;
  for (uint32_t i = threadIdx.x; i < 2 * kTreeThreads; i += kTreeThreads) {
    moments[i] = base + i < count ? in[base + i] : Moments{};
  }
  __syncthreads();
  for (uint32_t w = 1; w < 2 * kTreeThreads; w *= 2) {
    const uint32_t j = 2 * w * threadIdx.x;
    if (j + w < 2 * kTreeThreads) moments[j] = Merge(moments[j], moments[j + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = moments[0];
}

// Batch-normalised advantages, once σ_batch is known: (r - μ_group) / σ_batch, and the clamp when
// σ_batch < τ.
template <int W>
__global__ void __launch_bounds__(kBlockThreads)
    BatchNormalizedKernel(DeviceBatch batch, DeviceOutput out, GroupLayout layout) {
  __shared__ unsigned int causes[kNumZeroVarianceCauses];
  cg::thread_block block = cg::this_thread_block();
  const auto tile = cg::tiled_partition<W>(block);
  if (threadIdx.x < kNumZeroVarianceCauses) causes[threadIdx.x] = 0;
  block.sync();
  // A batch with a non-finite group is redone on the CPU: nothing to write (the flag is final,
  // GroupKernel ran before on the same stream).
  if (out.counters->first_bad_group != ~0ull) return;

  const Moments root = *out.root;
  const double batch_std = StdFromM2(root.m2, root.n, batch.options.deviation);
  const bool batch_below = BelowThreshold(batch_std, batch.options.zero_variance_threshold);
  const double factor = Factor(Estimator::kBatchNormalized, 0.0, 0, batch_std);
  const uint64_t tiles = static_cast<uint64_t>(gridDim.x) * (kBlockThreads / W);
  for (uint64_t g = static_cast<uint64_t>(blockIdx.x) * (kBlockThreads / W) + threadIdx.x / W;
       g < batch.num_groups; g += tiles) {
    const GroupStats stats = out.groups[g];
    ZeroVarianceCause cause = stats.cause;
    if (cause == ZeroVarianceCause::kNone && batch_below)
      cause = ZeroVarianceCause::kBelowThreshold;
    tile.sync();  // every lane has read the statistics before lane 0 updates them
    if (tile.thread_rank() == 0) {
      out.groups[g].cause = cause;
      atomicAdd(&causes[static_cast<int>(cause)], 1u);
    }
    WriteGroup<W>(tile, batch, out.advantages, layout.Offset(g), layout.Size(g),
                  cause != ZeroVarianceCause::kNone, stats.mean, factor);
  }
  block.sync();
  if (threadIdx.x < kNumZeroVarianceCauses && causes[threadIdx.x] != 0) {
    atomicAdd(&out.counters->by_cause[threadIdx.x], causes[threadIdx.x]);
  }
}

// Which kernel covers the groups (Workspace::staged_group_max and staged_tile_max).
enum class Path { kTiles, kStagedThreads, kStagedTiles };

// The staged kernels by their kMax, for LaunchStaged.
template <int kMax>
struct StagedThreads {
  static constexpr auto kKernel = StagedGroupKernel<kMax>;
};
template <int kMax>
struct StagedTiles {
  static constexpr auto kKernel = StagedTileKernel<kMax>;
};

// Launches Kernel<staged_max>::kKernel with kStagedBytes of dynamic shared memory. The first
// launch of each staged kernel on a workspace sets the kernel's attributes, which belong to the
// process (another workspace may have set others): the workspace's shared_carveout, and for the
// tile kernels the dynamic shared memory, since StagedTileKernel<16>'s static arrays and the
// staged rewards pass the 48 KiB a kernel gets without asking.
template <template <int> class Kernel>
cudaError_t LaunchStaged(uint32_t staged_max, Workspace* workspace, unsigned grid,
                         cudaStream_t stream, const DeviceBatch& batch, const DeviceOutput& output,
                         const GroupLayout& layout, Moments* partials, uint32_t groups_per_block,
                         bool write_advantages) {
  constexpr bool kTiles = std::is_same_v<Kernel<16>, StagedTiles<16>>;
  auto launch = [&](auto kernel, bool* configured) {
    if (!*configured) {
      cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                           workspace->shared_carveout);
      if (e == cudaSuccess && kTiles) {
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(kStagedBytes));
      }
      if (e != cudaSuccess) return e;
      *configured = true;
    }
    kernel<<<grid, kBlockThreads, kStagedBytes, stream>>>(batch, output, layout, partials,
                                                          groups_per_block, write_advantages);
    return cudaSuccess;
  };
  bool* configured = workspace->staged_configured[kTiles ? 1 : 0];
  if (staged_max == 16) return launch(Kernel<16>::kKernel, &configured[0]);
  if (staged_max == 32) return launch(Kernel<32>::kKernel, &configured[1]);
  return launch(Kernel<64>::kKernel, &configured[2]);
}

// `staged_max`: the kMax of the staged kernels (16, 32 or 64); unused on the tile path.
template <int W>
cudaError_t LaunchForWidth(const DeviceBatch& batch, const DeviceOutput& output,
                           const GroupLayout& layout, Workspace* workspace,
                           uint32_t groups_per_block, uint64_t blocks, Path path,
                           uint32_t staged_max, cudaStream_t stream) {
  const bool batch_normalized = batch.options.estimator == Estimator::kBatchNormalized;
  const unsigned grid = static_cast<unsigned>(blocks);
  Moments* partials = workspace->partials[0];
  if (path == Path::kStagedThreads) {
    cudaError_t e =
        LaunchStaged<StagedThreads>(staged_max, workspace, grid, stream, batch, output, layout,
                                    partials, groups_per_block, !batch_normalized);
    if (e != cudaSuccess) return e;
  } else if (path == Path::kStagedTiles) {
    cudaError_t e =
        LaunchStaged<StagedTiles>(staged_max, workspace, grid, stream, batch, output, layout,
                                  partials, groups_per_block, !batch_normalized);
    if (e != cudaSuccess) return e;
  } else {
    GroupKernel<W><<<grid, kBlockThreads, 0, stream>>>(
        batch, output, layout, workspace->compacted, partials, groups_per_block, !batch_normalized);
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;

  // The rest of the tree, 1024 partials per block, ping-ponging between the two buffers.
  uint64_t count = blocks;
  int from = 0;
  if (count == 1) {
    e = cudaMemcpyAsync(output.root, workspace->partials[0], sizeof(Moments),
                        cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) return e;
  }
  while (count > 1) {
    const uint64_t next = (count + 2 * kTreeThreads - 1) / (2 * kTreeThreads);
    Moments* to = next == 1 ? output.root : workspace->partials[1 - from];
    TreeKernel<<<static_cast<unsigned>(next), kTreeThreads, 0, stream>>>(workspace->partials[from],
                                                                         to, count);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    count = next;
    from = 1 - from;
  }

  if (batch_normalized) {
    const uint64_t tiles_per_block = kBlockThreads / W;
    const uint64_t wanted = (batch.num_groups + tiles_per_block - 1) / tiles_per_block;
    const uint64_t grid =
        std::max<uint64_t>(1, std::min<uint64_t>(wanted, 32ull * workspace->sm_count));
    BatchNormalizedKernel<W>
        <<<static_cast<unsigned>(grid), kBlockThreads, 0, stream>>>(batch, output, layout);
    e = cudaGetLastError();
  }
  return e;
}

}  // namespace

Workspace::~Workspace() { Release(); }

void Workspace::Release() {
  cudaFree(offsets);
  cudaFree(compacted);
  cudaFree(partials[0]);
  cudaFree(partials[1]);
  cudaFree(scan_temp);
  offsets = nullptr;
  compacted = nullptr;
  partials[0] = partials[1] = nullptr;
  scan_temp = nullptr;
  offsets_bytes = compacted_bytes = partials_bytes[0] = partials_bytes[1] = scan_temp_bytes = 0;
}

cudaError_t Workspace::Reserve(void** buffer, size_t* capacity, size_t bytes) {
  if (*capacity >= bytes) return cudaSuccess;
  cudaFree(*buffer);
  *buffer = nullptr;
  *capacity = 0;
  const size_t want = bytes + bytes / 4;  // some headroom for the next, slightly larger batch
  cudaError_t e = cudaMalloc(buffer, want);
  if (e != cudaSuccess) return e;
  *capacity = want;
  return cudaSuccess;
}

cudaError_t LaunchAdvantages(const DeviceBatch& batch, const DeviceOutput& output,
                             Workspace* workspace, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(output.counters, 0, sizeof(DeviceCounters), stream);
  if (e != cudaSuccess) return e;
  e = cudaMemsetAsync(&output.counters->first_bad_group, 0xff, sizeof(unsigned long long), stream);
  if (e != cudaSuccess) return e;
  if (batch.num_groups == 0) return cudaMemsetAsync(output.root, 0, sizeof(Moments), stream);

  if (workspace->sm_count == 0) {
    int device = 0;
    e = cudaGetDevice(&device);
    if (e == cudaSuccess) {
      e = cudaDeviceGetAttribute(&workspace->sm_count, cudaDevAttrMultiProcessorCount, device);
    }
    if (e != cudaSuccess) return e;
  }

  // Where each group starts: an exclusive scan of the sizes (integers: exact in any order), or,
  // when every group has the largest size, the index times that size.
  GroupLayout layout{nullptr, batch.group_sizes, 0};
  if (workspace->uniform_offsets &&
      batch.num_rewards == batch.num_groups * static_cast<uint64_t>(batch.max_group_size)) {
    layout.uniform = batch.max_group_size;  // every size is at most the largest: all equal it
  } else {
    e = workspace->Reserve(reinterpret_cast<void**>(&workspace->offsets), &workspace->offsets_bytes,
                           batch.num_groups * sizeof(uint32_t));
    if (e != cudaSuccess) return e;
    const int num_groups = static_cast<int>(batch.num_groups);
    size_t scan_bytes = 0;
    e = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, batch.group_sizes, workspace->offsets,
                                      num_groups, stream);
    if (e != cudaSuccess) return e;
    e = workspace->Reserve(&workspace->scan_temp, &workspace->scan_temp_bytes, scan_bytes);
    if (e != cudaSuccess) return e;
    e = cub::DeviceScan::ExclusiveSum(workspace->scan_temp, scan_bytes, batch.group_sizes,
                                      workspace->offsets, num_groups, stream);
    if (e != cudaSuccess) return e;
    layout.offsets = workspace->offsets;
  }
  if (batch.outcomes != nullptr) {
    e = workspace->Reserve(reinterpret_cast<void**>(&workspace->compacted),
                           &workspace->compacted_bytes, batch.num_rewards * sizeof(double));
    if (e != cudaSuccess) return e;
  }

  // Small groups without outcomes go through shared memory (kernels.h).
  Path path = Path::kTiles;
  uint32_t staged_max = std::max<uint32_t>(16, std::bit_ceil(batch.max_group_size));
  if (batch.outcomes == nullptr && staged_max <= 64) {
    if (batch.max_group_size <= workspace->staged_group_max) {
      path = Path::kStagedThreads;
    } else if (batch.max_group_size <= workspace->staged_tile_max) {
      path = Path::kStagedTiles;
    }
  }

  // Enough blocks to fill the device (four per SM) before a block takes more groups.
  uint32_t groups_per_block =
      path != Path::kTiles ? kStagedDoubles / staged_max : kMaxGroupsPerBlock;
  const uint64_t enough = 4ull * static_cast<uint64_t>(workspace->sm_count);
  while (groups_per_block > 1 &&
         (batch.num_groups + groups_per_block - 1) / groups_per_block < enough) {
    groups_per_block /= 2;
  }
  const uint64_t blocks = (batch.num_groups + groups_per_block - 1) / groups_per_block;
  e = workspace->Reserve(reinterpret_cast<void**>(&workspace->partials[0]),
                         &workspace->partials_bytes[0], blocks * sizeof(Moments));
  if (e != cudaSuccess) return e;
  e = workspace->Reserve(reinterpret_cast<void**>(&workspace->partials[1]),
                         &workspace->partials_bytes[1],
                         ((blocks + 2 * kTreeThreads - 1) / (2 * kTreeThreads)) * sizeof(Moments));
  if (e != cudaSuccess) return e;

  constexpr uint32_t kLanes = static_cast<uint32_t>(advantage::reference::kLanes);
  static_assert(kLanes == 8, "the tile widths below");
  const uint32_t width =
      batch.max_group_size >= kLanes ? kLanes : std::bit_ceil(batch.max_group_size);
  switch (width) {
    case 1:
      return LaunchForWidth<1>(batch, output, layout, workspace, groups_per_block, blocks, path,
                               staged_max, stream);
    case 2:
      return LaunchForWidth<2>(batch, output, layout, workspace, groups_per_block, blocks, path,
                               staged_max, stream);
    case 4:
      return LaunchForWidth<4>(batch, output, layout, workspace, groups_per_block, blocks, path,
                               staged_max, stream);
    default:
      return LaunchForWidth<8>(batch, output, layout, workspace, groups_per_block, blocks, path,
                               staged_max, stream);
  }
}

}  // namespace rlscore::gpu
