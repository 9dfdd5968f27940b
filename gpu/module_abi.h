// The C ABI of the CUDA module (librlscore_gpu.so), which the server loads at run time with
// dlopen (gpu/loader.h) so that one server binary starts on machines without CUDA libraries or a
// GPU. Plain C types and functions only: the module and the server share nothing else but the
// layout of advantage::GroupStats and advantage::BatchSummary (advantage/types.h), which the ABI
// version pins.
//
//   char error[256];
//   RlscoreGpu* gpu = rlscore_gpu_open(0, error, sizeof error);   // null: no usable device
//   int rc = rlscore_gpu_compute(gpu, &batch, &output, error, sizeof error);
//   rlscore_gpu_close(gpu);
//
// Thread-safety: every function may be called from any thread; calls on one handle are
// serialised inside the module.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bumped whenever a struct below, GroupStats or BatchSummary changes.
// 2: GroupStats gained outside_keep_band (in what was padding; the host sets it).
#define RLSCORE_GPU_ABI_VERSION 2

// The module is built with hidden visibility; only these functions are exported.
#define RLSCORE_GPU_EXPORT __attribute__((visibility("default")))

typedef struct RlscoreGpu RlscoreGpu;

typedef struct {
  const double* rewards;        // host memory, num_rewards
  uint64_t num_rewards;         // < 2^32
  const uint32_t* group_sizes;  // host memory, num_groups, each > 0, summing to num_rewards
  uint64_t num_groups;          // < 2^31
  const uint8_t* outcomes;      // host memory, num_rewards advantage::Outcome values, or null
  int32_t estimator;            // advantage::Estimator
  int32_t deviation;            // advantage::Deviation
  double zero_variance_threshold;
} RlscoreGpuBatch;

typedef struct {
  double* advantages;  // host memory, num_rewards
  void* groups;        // host memory, num_groups advantage::GroupStats
  void* summary;       // one advantage::BatchSummary
} RlscoreGpuOutput;

enum {
  RLSCORE_GPU_OK = 0,
  RLSCORE_GPU_NOT_FINITE = 1,  // a reward or a sum is NaN/±Inf: redo on the CPU for the message
  RLSCORE_GPU_CUDA_ERROR = 2,  // the message says which call failed and why
  RLSCORE_GPU_TOO_LARGE = 3,   // beyond the sizes above
  RLSCORE_GPU_INVALID = 4,     // an unknown estimator or deviation
};

RLSCORE_GPU_EXPORT int rlscore_gpu_abi_version(void);

// Opens device `device` (creates its stream and pinned staging buffers). Null on failure, with a
// message in `error` (e.g. "cudaGetDeviceCount: CUDA driver version is insufficient...").
RLSCORE_GPU_EXPORT RlscoreGpu* rlscore_gpu_open(int device, char* error, size_t error_size);

// The device's name, e.g. "NVIDIA H200". Valid until rlscore_gpu_close.
RLSCORE_GPU_EXPORT const char* rlscore_gpu_device_name(const RlscoreGpu* gpu);

// Computes advantages, group statistics and the batch summary of `batch`, identical to
// advantage::Compute. Returns one of the codes above; on an error the outputs are unspecified.
RLSCORE_GPU_EXPORT int rlscore_gpu_compute(RlscoreGpu* gpu, const RlscoreGpuBatch* batch,
                                           const RlscoreGpuOutput* output, char* error,
                                           size_t error_size);

RLSCORE_GPU_EXPORT void rlscore_gpu_close(RlscoreGpu* gpu);

#ifdef __cplusplus
}  // extern "C"
#endif
