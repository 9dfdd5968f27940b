// The CUDA backend, loaded at run time, and the backend that chooses between it and the CPU.
//
// The server binary never links CUDA: the module (librlscore_gpu.so, gpu/module_abi.h) is opened
// with dlopen when --gpu is auto or require, so one binary starts and serves on machines without
// CUDA libraries or a GPU.
//
//   absl::StatusOr<std::unique_ptr<advantage::Backend>> cuda =
//       LoadCudaBackend(DefaultModulePath());
//   if (!cuda.ok()) LogWarning(cuda.status());  // --gpu=auto: serve from the CPU
//   DispatchingBackend backend(advantage::NewCpuBackend(), std::move(*cuda),
//                              {.min_rewards = 1000000, .on_fallback = ...});
//   backend.Compute(batch, options, ...);  // "cuda" for large batches, else "cpu"
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "advantage/advantage.h"

namespace rlscore::gpu {

// --gpu: off never loads the module; auto uses the GPU when the module loads and a device opens,
// and serves from the CPU otherwise; require refuses to start without one.
enum class GpuMode { kOff, kAuto, kRequire };

// "off", "auto", "require"; INVALID_ARGUMENT naming the accepted values otherwise.
absl::StatusOr<GpuMode> ParseGpuMode(std::string_view text);
std::string_view GpuModeName(GpuMode mode);

// librlscore_gpu.so in the directory of the running executable.
std::string DefaultModulePath();

// Opens the module at `path` and its device 0. Errors name the path and the cause:
// NOT_FOUND (no such file), FAILED_PRECONDITION (dlopen failed, a symbol is missing, or the ABI
// version differs), UNAVAILABLE (no usable device, with CUDA's message).
//
// The backend computes exactly what advantage::Compute computes (bit-identical, see
// advantage/reference.h); the keep band is applied on the host, and the estimators without a
// kernel are computed on the CPU (the backend then answers "cpu"). A batch with a NaN or ±Inf is
// recomputed on the CPU, which returns the same INVALID_ARGUMENT naming the value; a CUDA failure
// is UNAVAILABLE. Thread-safe (calls are serialised on the device).
absl::StatusOr<std::unique_ptr<advantage::Backend>> LoadCudaBackend(const std::string& path);

struct DispatchOptions {
  // Batches with fewer rewards than this go to the CPU, which is faster for them: on an H200 host
  // the module call (copies in and out included) lost to the CPU up to 512,000 rewards and won
  // from 768,000 on (docs/GPU.md).
  uint64_t min_rewards = 1000000;
  // Called after the accelerated backend failed on a batch that the CPU then computed.
  std::function<void(const absl::Status&)> on_fallback;
};

// Sends batches of at least min_rewards rewards to `accelerated` and the rest to `cpu`; the
// estimators without a CUDA kernel (advantage::HasCudaKernel: REINFORCE++-baseline, GRPO pass@k,
// GDPO) always go to `cpu`, as a documented CPU-only path rather than a fallback. When the
// accelerated backend fails for any reason but the caller's input (INVALID_ARGUMENT), the batch is
// computed on the CPU instead, logged as a warning and reported to on_fallback: a caller never
// sees the GPU's trouble. Thread-safe when both backends are.
class DispatchingBackend final : public advantage::Backend {
 public:
  // `accelerated` may be null: everything goes to the CPU.
  DispatchingBackend(std::unique_ptr<advantage::Backend> cpu,
                     std::unique_ptr<advantage::Backend> accelerated, DispatchOptions options);

  // The accelerated backend's name when there is one, else "cpu".
  std::string_view Name() const override;

  absl::StatusOr<std::string_view> Compute(const advantage::Batch& batch,
                                           const advantage::Options& options,
                                           std::span<double> advantages,
                                           std::span<advantage::GroupStats> groups,
                                           advantage::BatchSummary* summary) override;

 private:
  std::unique_ptr<advantage::Backend> cpu_;
  std::unique_ptr<advantage::Backend> accelerated_;
  DispatchOptions options_;
};

}  // namespace rlscore::gpu
