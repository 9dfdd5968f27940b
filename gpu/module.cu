// The CUDA module behind gpu/module_abi.h: a device context (stream, device buffers, a small ring
// of pinned staging buffers) reused across calls, around the kernels of gpu/kernels.h.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>

#include "advantage/reference.h"
#include "advantage/types.h"
#include "gpu/kernels.h"
#include "gpu/module_abi.h"
#include "gpu/parallel_copy.h"

namespace rlscore::gpu {
namespace {

using advantage::BatchSummary;
using advantage::GroupStats;
using advantage::reference::Moments;

static_assert(std::is_standard_layout_v<GroupStats> && sizeof(GroupStats) == 24,
              "GroupStats is copied between host and device as bytes; bump the ABI version");

void SetError(char* error, size_t size, const std::string& message) {
  if (error == nullptr || size == 0) return;
  std::snprintf(error, size, "%s", message.c_str());
}

std::string Describe(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorString(e);
}

// A device allocation that only grows.
struct DeviceBuffer {
  void* data = nullptr;
  size_t capacity = 0;

  cudaError_t Reserve(size_t bytes) {
    if (capacity >= bytes) return cudaSuccess;
    cudaFree(data);
    data = nullptr;
    capacity = 0;
    const size_t want = bytes + bytes / 4;
    const cudaError_t e = cudaMalloc(&data, want);
    if (e == cudaSuccess) capacity = want;
    return e;
  }
  ~DeviceBuffer() { cudaFree(data); }
};

// Host <-> device copies through a ring of pinned slots, so pinned memory stays small whatever the
// batch size, and the CPU's copy into (or out of) one slot overlaps the DMA of the others. The CPU
// copies run on up to kCopyThreads threads (parallel_copy.h).
class Staging {
 public:
  static constexpr int kSlots = 4;
  static constexpr size_t kSlotBytes = 16u << 20;
  static constexpr unsigned kCopyThreads = 4;

  cudaError_t Open() {
    const unsigned cores = std::thread::hardware_concurrency();
    copier_ = std::make_unique<ParallelCopier>(cores == 0 ? 1 : std::min(cores, kCopyThreads));
    for (int s = 0; s < kSlots; ++s) {
      cudaError_t e = cudaMallocHost(&slot_[s], kSlotBytes);
      if (e != cudaSuccess) return e;
      e = cudaEventCreateWithFlags(&done_[s], cudaEventDisableTiming);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
  ~Staging() {
    for (int s = 0; s < kSlots; ++s) {
      if (slot_[s] != nullptr) cudaFreeHost(slot_[s]);
      if (done_[s] != nullptr) cudaEventDestroy(done_[s]);
    }
  }

  cudaError_t CopyIn(void* device, const void* host, size_t bytes, cudaStream_t stream) {
    for (size_t at = 0; at < bytes; at += kSlotBytes) {
      const size_t len = bytes - at < kSlotBytes ? bytes - at : kSlotBytes;
      const int s = next_;
      next_ = (next_ + 1) % kSlots;
      cudaError_t e = cudaEventSynchronize(done_[s]);  // the slot's previous copy has left
      if (e != cudaSuccess) return e;
      copier_->Copy(slot_[s], static_cast<const char*>(host) + at, len);
      e = cudaMemcpyAsync(static_cast<char*>(device) + at, slot_[s], len, cudaMemcpyHostToDevice,
                          stream);
      if (e != cudaSuccess) return e;
      e = cudaEventRecord(done_[s], stream);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }

  // Copies out after everything queued on `stream` so far, up to kSlots chunks in flight.
  cudaError_t CopyOut(void* host, const void* device, size_t bytes, cudaStream_t stream) {
    const size_t chunks = (bytes + kSlotBytes - 1) / kSlotBytes;
    auto issue = [&](size_t k) {
      const size_t at = k * kSlotBytes;
      const size_t len = bytes - at < kSlotBytes ? bytes - at : kSlotBytes;
      const int s = static_cast<int>(k % kSlots);
      cudaError_t e = cudaMemcpyAsync(slot_[s], static_cast<const char*>(device) + at, len,
                                      cudaMemcpyDeviceToHost, stream);
      if (e == cudaSuccess) e = cudaEventRecord(done_[s], stream);
      return e;
    };
    for (size_t k = 0; k < chunks && k < kSlots; ++k) {
      const cudaError_t e = issue(k);
      if (e != cudaSuccess) return e;
    }
    for (size_t k = 0; k < chunks; ++k) {
      const int s = static_cast<int>(k % kSlots);
      cudaError_t e = cudaEventSynchronize(done_[s]);
      if (e != cudaSuccess) return e;
      const size_t at = k * kSlotBytes;
      const size_t len = bytes - at < kSlotBytes ? bytes - at : kSlotBytes;
      copier_->Copy(static_cast<char*>(host) + at, slot_[s], len);
      if (k + kSlots < chunks) {
        e = issue(k + kSlots);
        if (e != cudaSuccess) return e;
      }
    }
    next_ = 0;
    return cudaSuccess;
  }

 private:
  std::unique_ptr<ParallelCopier> copier_;
  void* slot_[kSlots] = {};
  cudaEvent_t done_[kSlots] = {};
  int next_ = 0;
};

}  // namespace
}  // namespace rlscore::gpu

struct RlscoreGpu {
  int device = 0;
  std::string name;
  cudaStream_t stream = nullptr;
  std::mutex mu;  // one batch at a time on this context
  rlscore::gpu::Staging staging;
  rlscore::gpu::Workspace workspace;
  rlscore::gpu::DeviceBuffer rewards, sizes, outcomes, advantages, groups, root, counters;

  ~RlscoreGpu() {
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

namespace rlscore::gpu {
namespace {

int Compute(RlscoreGpu* gpu, const RlscoreGpuBatch& in, const RlscoreGpuOutput& out, char* error,
            size_t error_size) {
  if (in.num_rewards >= (1ull << 32) || in.num_groups >= (1ull << 31)) {
    SetError(error, error_size, "batch too large for the GPU path (2^32 rewards, 2^31 groups)");
    return RLSCORE_GPU_TOO_LARGE;
  }
  // The kernels' estimators are 0 to kBatchNormalized; the others (advantage::HasCudaKernel) never
  // come here: the host computes them on the CPU.
  if (in.estimator < 0 ||
      in.estimator > static_cast<int32_t>(advantage::Estimator::kBatchNormalized) ||
      in.deviation < 0 || in.deviation > static_cast<int32_t>(advantage::Deviation::kPopulation)) {
    SetError(error, error_size, "unknown estimator or deviation");
    return RLSCORE_GPU_INVALID;
  }
  // The tile width follows the largest group: computed here, never trusted from the caller.
  uint32_t max_group_size = 0;
  for (uint64_t i = 0; i < in.num_groups; ++i) {
    max_group_size = in.group_sizes[i] > max_group_size ? in.group_sizes[i] : max_group_size;
  }
  std::lock_guard<std::mutex> lock(gpu->mu);
  cudaError_t e = cudaSetDevice(gpu->device);
  const char* call = "cudaSetDevice";
  // A failure of an earlier call (an allocation, say) stays in the runtime's per-thread error
  // state, where CUB's launch checks would find it again: start clean.
  (void)cudaGetLastError();
#define RLSCORE_CUDA(expr)    \
  do {                        \
    if (e == cudaSuccess) {   \
      e = (expr);             \
      if (e != cudaSuccess) { \
        call = #expr;         \
      }                       \
    }                         \
  } while (0)

  const size_t n = in.num_rewards;
  const size_t g = in.num_groups;
  RLSCORE_CUDA(gpu->rewards.Reserve(n * sizeof(double) + 1));
  RLSCORE_CUDA(gpu->advantages.Reserve(n * sizeof(double) + 1));
  RLSCORE_CUDA(gpu->sizes.Reserve(g * sizeof(uint32_t) + 1));
  RLSCORE_CUDA(gpu->groups.Reserve(g * sizeof(GroupStats) + 1));
  RLSCORE_CUDA(gpu->root.Reserve(sizeof(Moments)));
  RLSCORE_CUDA(gpu->counters.Reserve(sizeof(DeviceCounters)));
  if (in.outcomes != nullptr) RLSCORE_CUDA(gpu->outcomes.Reserve(n + 1));

  RLSCORE_CUDA(gpu->staging.CopyIn(gpu->rewards.data, in.rewards, n * sizeof(double), gpu->stream));
  RLSCORE_CUDA(
      gpu->staging.CopyIn(gpu->sizes.data, in.group_sizes, g * sizeof(uint32_t), gpu->stream));
  if (in.outcomes != nullptr) {
    RLSCORE_CUDA(gpu->staging.CopyIn(gpu->outcomes.data, in.outcomes, n, gpu->stream));
  }

  DeviceBatch batch;
  batch.rewards = static_cast<const double*>(gpu->rewards.data);
  batch.group_sizes = static_cast<const uint32_t*>(gpu->sizes.data);
  batch.outcomes =
      in.outcomes != nullptr ? static_cast<const uint8_t*>(gpu->outcomes.data) : nullptr;
  batch.num_rewards = n;
  batch.num_groups = g;
  batch.max_group_size = max_group_size;
  batch.options.estimator = static_cast<advantage::Estimator>(in.estimator);
  batch.options.deviation = static_cast<advantage::Deviation>(in.deviation);
  batch.options.zero_variance_threshold = in.zero_variance_threshold;
  DeviceOutput output;
  output.advantages = static_cast<double*>(gpu->advantages.data);
  output.groups = static_cast<GroupStats*>(gpu->groups.data);
  output.root = static_cast<Moments*>(gpu->root.data);
  output.counters = static_cast<DeviceCounters*>(gpu->counters.data);
  RLSCORE_CUDA(LaunchAdvantages(batch, output, &gpu->workspace, gpu->stream));

  DeviceCounters counters{};
  Moments root;
  RLSCORE_CUDA(gpu->staging.CopyOut(&counters, output.counters, sizeof counters, gpu->stream));
  RLSCORE_CUDA(gpu->staging.CopyOut(&root, output.root, sizeof root, gpu->stream));
  const bool finite = counters.first_bad_group == ~0ull && std::isfinite(root.m2);
  if (e == cudaSuccess && finite) {
    RLSCORE_CUDA(
        gpu->staging.CopyOut(out.advantages, output.advantages, n * sizeof(double), gpu->stream));
    RLSCORE_CUDA(
        gpu->staging.CopyOut(out.groups, output.groups, g * sizeof(GroupStats), gpu->stream));
  }
  RLSCORE_CUDA(cudaStreamSynchronize(gpu->stream));
#undef RLSCORE_CUDA
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    SetError(error, error_size, Describe(call, e));
    return RLSCORE_GPU_CUDA_ERROR;
  }
  if (!finite) {
    SetError(error, error_size, "a reward or a group sum is not finite");
    return RLSCORE_GPU_NOT_FINITE;
  }

  // The summary exactly as advantage::reference::ComputeReference fills it.
  BatchSummary s;
  s.groups = g;
  s.rewards = n;
  s.unscorable = counters.unscorable;
  for (int c = 0; c < advantage::kNumZeroVarianceCauses; ++c) {
    s.groups_by_cause[c] = counters.by_cause[c];
  }
  s.reward_mean = root.mean;
  s.reward_std = advantage::reference::StdFromM2(root.m2, root.n, batch.options.deviation);
  s.zero_variance_groups = s.groups - s.groups_by_cause[0];
  s.zero_variance_fraction =
      s.groups == 0 ? 0.0
                    : static_cast<double>(s.zero_variance_groups) / static_cast<double>(s.groups);
  *static_cast<BatchSummary*>(out.summary) = s;
  return RLSCORE_GPU_OK;
}

}  // namespace
}  // namespace rlscore::gpu

extern "C" {

int rlscore_gpu_abi_version(void) { return RLSCORE_GPU_ABI_VERSION; }

RlscoreGpu* rlscore_gpu_open(int device, char* error, size_t error_size) {
  using rlscore::gpu::Describe;
  using rlscore::gpu::SetError;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    SetError(error, error_size, Describe("cudaGetDeviceCount", e));
    return nullptr;
  }
  if (device < 0 || device >= count) {
    SetError(
        error, error_size,
        "no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " present)");
    return nullptr;
  }
  cudaDeviceProp props;
  e = cudaGetDeviceProperties(&props, device);
  if (e != cudaSuccess) {
    SetError(error, error_size, Describe("cudaGetDeviceProperties", e));
    return nullptr;
  }
  auto* gpu = new RlscoreGpu;
  gpu->device = device;
  gpu->name = props.name;
  // Which kernel path takes small groups, and how groups are found (kernels.h). Every choice
  // gives the same bits: this only lets the parity test hold each to the reference on every
  // batch (gpu/run_device_checks.sh).
  if (const char* limit = std::getenv("RLSCORE_GPU_STAGED_GROUP_MAX")) {
    gpu->workspace.staged_group_max = static_cast<uint32_t>(std::strtoul(limit, nullptr, 10));
  }
  if (const char* limit = std::getenv("RLSCORE_GPU_STAGED_TILE_MAX")) {
    gpu->workspace.staged_tile_max = static_cast<uint32_t>(std::strtoul(limit, nullptr, 10));
  }
  if (const char* uniform = std::getenv("RLSCORE_GPU_UNIFORM_OFFSETS")) {
    gpu->workspace.uniform_offsets = std::strcmp(uniform, "1") == 0;
  }
  e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&gpu->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = gpu->staging.Open();
  if (e != cudaSuccess) {
    SetError(error, error_size, Describe("opening the device", e));
    delete gpu;
    return nullptr;
  }
  return gpu;
}

const char* rlscore_gpu_device_name(const RlscoreGpu* gpu) { return gpu->name.c_str(); }

int rlscore_gpu_compute(RlscoreGpu* gpu, const RlscoreGpuBatch* batch,
                        const RlscoreGpuOutput* output, char* error, size_t error_size) {
  return rlscore::gpu::Compute(gpu, *batch, *output, error, error_size);
}

void rlscore_gpu_close(RlscoreGpu* gpu) {
  if (gpu == nullptr) return;
  cudaSetDevice(gpu->device);  // its buffers and stream belong to that device
  delete gpu;
}

}  // extern "C"
