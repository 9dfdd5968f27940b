// CUDA kernels for group advantages (docs/DESIGN.md §4) on device-resident data, in the canonical
// order of advantage/reference.h, so every statistic, zero-variance decision and advantage is
// bit-identical to the CPU reference.
//
// Layout of the work: a tile of W threads (W = 1, 2, 4 or 8: the largest group rounded up to a
// power of two, at most the 8 canonical lanes) owns one group at a time. Lane l of the tile adds
// the group's elements l, l + 8, … (a tile narrower than 8 only exists when every group fits in
// it), the lanes are folded with shuffles, and the same tile writes the advantages. Small groups
// without outcomes instead go through shared memory: the block loads their rewards coalesced,
// computes there (one thread per group keeping the 8 lanes in registers, or tiles of 8 for the
// sums and a thread per group for the rest), and stores the advantages coalesced
// (Workspace::staged_group_max, staged_tile_max). A block owns an aligned run of B groups (a power
// of two) and folds their moments over the canonical tree in shared memory, so only one partial per
// block reaches global memory.
//
//   DeviceBatch batch{...};            // device pointers; see the fields
//   Workspace workspace;               // owned by the caller, reused across calls
//   cudaError_t e = LaunchAdvantages(batch, output, &workspace, stream);
//
// Host code only (the kernels are internal to kernels.cu). Nothing here synchronises the stream;
// the results are ready when the stream is.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "advantage/reference.h"
#include "advantage/types.h"

namespace rlscore::gpu {

// Counters the kernels add to; zeroed by LaunchAdvantages.
struct DeviceCounters {
  unsigned long long by_cause[advantage::kNumZeroVarianceCauses];
  unsigned long long unscorable;
  // The first group (lowest index) whose sum or M2 is not finite; ~0 when none.
  unsigned long long first_bad_group;
};

struct DeviceBatch {
  const double* rewards = nullptr;        // num_rewards
  const uint32_t* group_sizes = nullptr;  // num_groups, each > 0
  const uint8_t* outcomes = nullptr;      // num_rewards advantage::Outcome values, or null
  uint64_t num_rewards = 0;               // < 2^32
  uint64_t num_groups = 0;
  uint32_t max_group_size = 0;
  advantage::Options options;
};

struct DeviceOutput {
  double* advantages = nullptr;                   // num_rewards
  advantage::GroupStats* groups = nullptr;        // num_groups
  advantage::reference::Moments* root = nullptr;  // one: the batch's moments
  DeviceCounters* counters = nullptr;             // one
};

// Device scratch that LaunchAdvantages grows as needed and reuses; free with Release().
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace();

  void Release();

  // Which kernel takes a batch without outcomes whose groups all have at most 64 entries; the
  // results are the same bits whichever does. Groups of at most staged_group_max entries: one
  // thread per group over the block's rewards staged in shared memory (StagedGroupKernel); else
  // groups of at most staged_tile_max: the same staging, tiles of 8 for the sums and a thread per
  // group for the rest (StagedTileKernel); else, and always with outcomes, a tile per group on
  // global memory (GroupKernel). 0 turns a path off: the parity test and the benchmark set these
  // to hold each path to the reference on every batch and to compare them.
  // On an H200 at 10^8 rewards (bench/gpu_advantage_bench.cu, docs/GPU.md): groups of 16 take
  // 0.58 to 0.60 of the tile path's time with a thread per group, while for groups of 64 and
  // ragged groups of 1 to 64 a thread per group takes 1.4 to 1.5 times as long as the tiles.
  // StagedTileKernel has been bit-identical on the device but not yet timed there, so it stays
  // off by default until the benchmark says where it wins.
  static constexpr uint32_t kDefaultStagedGroupMax = 16;
  static constexpr uint32_t kDefaultStagedTileMax = 0;
  uint32_t staged_group_max = kDefaultStagedGroupMax;
  uint32_t staged_tile_max = kDefaultStagedTileMax;

  // The share of each SM's L1 and shared memory the staged kernels prefer as shared memory, in
  // percent (cudaFuncAttributePreferredSharedMemoryCarveout), or cudaSharedmemCarveoutDefault to
  // leave it to the driver. Nsight Compute on an H200 found the thread path at 4 blocks per SM,
  // bounded by shared memory, with the default; a larger carveout fits a fifth. Not measured
  // yet, so the default stays; the benchmark times both. Read at a workspace's first launch of
  // each staged kernel.
  int shared_carveout = cudaSharedmemCarveoutDefault;

  // Batches whose groups all have the same size skip the scan of the sizes (a kernel that reads
  // 4 bytes and writes 4 per group, and two launches) and find each group from its index; the
  // kernels then never read the sizes. Off until a device has held it to the reference and
  // timed it (gpu/run_device_checks.sh: RLSCORE_GPU_UNIFORM_OFFSETS=1, the "uniform" column).
  bool uniform_offsets = false;

  // Internal to kernels.cu.
  cudaError_t Reserve(void** buffer, size_t* capacity, size_t bytes);
  uint32_t* offsets = nullptr;
  size_t offsets_bytes = 0;
  double* compacted = nullptr;  // scorable rewards, compacted per group (only with outcomes)
  size_t compacted_bytes = 0;
  advantage::reference::Moments* partials[2] = {nullptr, nullptr};
  size_t partials_bytes[2] = {0, 0};
  void* scan_temp = nullptr;
  size_t scan_temp_bytes = 0;
  int sm_count = 0;
  // Whether the staged kernels (threads, tiles; kMax 16, 32, 64) have had their attributes set
  // from this workspace.
  bool staged_configured[2][3] = {};
};

// Computes advantages, group statistics, the batch moments (root) and the counters for `batch`.
// REQUIRES: a valid shape (advantage::ValidateShape), num_rewards < 2^32, num_groups < 2^31,
// max_group_size the largest group size (it picks the tile width, hence the summation order), every
// pointer on the current device. Groups whose values are not finite are reported in
// counters->first_bad_group (their outputs are then unspecified); the caller redoes such a batch on
// the CPU for the message.
cudaError_t LaunchAdvantages(const DeviceBatch& batch, const DeviceOutput& output,
                             Workspace* workspace, cudaStream_t stream);

}  // namespace rlscore::gpu
