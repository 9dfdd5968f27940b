#include "gpu/loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "gpu/module_abi.h"

namespace rlscore::gpu {
namespace {

// The module's entry points, resolved once.
struct Module {
  void* handle = nullptr;
  int (*abi_version)() = nullptr;
  RlscoreGpu* (*open)(int, char*, size_t) = nullptr;
  const char* (*device_name)(const RlscoreGpu*) = nullptr;
  int (*compute)(RlscoreGpu*, const RlscoreGpuBatch*, const RlscoreGpuOutput*, char*,
                 size_t) = nullptr;
  void (*close)(RlscoreGpu*) = nullptr;
};

template <typename Fn>
absl::Status Resolve(const std::string& path, void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU module ", path, " lacks the symbol ", name));
  }
  return absl::OkStatus();
}

class CudaBackend final : public advantage::Backend {
 public:
  CudaBackend(Module module, RlscoreGpu* gpu) : module_(module), gpu_(gpu) {}
  ~CudaBackend() override {
    module_.close(gpu_);
    // The module stays mapped: CUDA's runtime registers exit handlers that must still find it.
  }

  std::string_view Name() const override { return "cuda"; }

  absl::StatusOr<std::string_view> Compute(const advantage::Batch& batch,
                                           const advantage::Options& options,
                                           std::span<double> advantages,
                                           std::span<advantage::GroupStats> groups,
                                           advantage::BatchSummary* summary) override {
    RLSCORE_RETURN_IF_ERROR(advantage::ValidateShape(batch, options));
    if (!advantage::HasCudaKernel(options.estimator)) {
      // REINFORCE++-baseline, pass@k and GDPO have no kernel: the CPU computes them, and says so.
      RLSCORE_RETURN_IF_ERROR(advantage::Compute(batch, options, advantages, groups, summary));
      return "cpu";
    }
    RlscoreGpuBatch in{};
    in.rewards = batch.rewards.data();
    in.num_rewards = batch.rewards.size();
    in.group_sizes = batch.group_sizes.data();
    in.num_groups = batch.group_sizes.size();
    in.outcomes =
        batch.outcomes.empty() ? nullptr : reinterpret_cast<const uint8_t*>(batch.outcomes.data());
    in.estimator = static_cast<int32_t>(options.estimator);
    in.deviation = static_cast<int32_t>(options.deviation);
    in.zero_variance_threshold = options.zero_variance_threshold;
    const RlscoreGpuOutput out{advantages.data(), groups.data(), summary};
    char error[512] = {};
    switch (module_.compute(gpu_, &in, &out, error, sizeof error)) {
      case RLSCORE_GPU_OK:
        // The keep band is a pass over the group statistics on the host.
        RLSCORE_RETURN_IF_ERROR(advantage::ApplyKeepBand(batch, options, groups));
        return "cuda";
      case RLSCORE_GPU_NOT_FINITE:
        // The CPU names the offending value with the very message it always gives.
        RLSCORE_RETURN_IF_ERROR(advantage::Compute(batch, options, advantages, groups, summary));
        return "cpu";
      default:
        return absl::UnavailableError(absl::StrCat("CUDA backend: ", error));
    }
  }

 private:
  const Module module_;
  RlscoreGpu* const gpu_;
};

}  // namespace

absl::StatusOr<GpuMode> ParseGpuMode(std::string_view text) {
  if (text == "off") return GpuMode::kOff;
  if (text == "auto") return GpuMode::kAuto;
  if (text == "require") return GpuMode::kRequire;
  return absl::InvalidArgumentError(
      absl::StrCat("--gpu must be off, auto or require, not \"", Sv(text), "\""));
}

std::string_view GpuModeName(GpuMode mode) {
  switch (mode) {
    case GpuMode::kOff:
      return "off";
    case GpuMode::kAuto:
      return "auto";
    case GpuMode::kRequire:
      return "require";
  }
  return "unknown";
}

std::string DefaultModulePath() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "librlscore_gpu.so";
  return (exe.parent_path() / "librlscore_gpu.so").string();
}

absl::StatusOr<std::unique_ptr<advantage::Backend>> LoadCudaBackend(const std::string& path) {
  if (access(path.c_str(), R_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("GPU module ", path, " cannot be read: ", std::strerror(errno)));
  }
  Module m;
  m.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m.handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU module ", path, " does not load: ", dlerror()));
  }
  absl::Status status = Resolve(path, m.handle, "rlscore_gpu_abi_version", &m.abi_version);
  if (status.ok()) status = Resolve(path, m.handle, "rlscore_gpu_open", &m.open);
  if (status.ok()) status = Resolve(path, m.handle, "rlscore_gpu_device_name", &m.device_name);
  if (status.ok()) status = Resolve(path, m.handle, "rlscore_gpu_compute", &m.compute);
  if (status.ok()) status = Resolve(path, m.handle, "rlscore_gpu_close", &m.close);
  if (status.ok() && m.abi_version() != RLSCORE_GPU_ABI_VERSION) {
    status = absl::FailedPreconditionError(absl::StrCat("GPU module ", path, " has ABI version ",
                                                        m.abi_version(), ", this server needs ",
                                                        RLSCORE_GPU_ABI_VERSION));
  }
  if (!status.ok()) {
    dlclose(m.handle);
    return status;
  }
  char error[512] = {};
  RlscoreGpu* gpu = m.open(0, error, sizeof error);
  if (gpu == nullptr) {
    // Left mapped, like a loaded one: CUDA's runtime may have registered exit handlers.
    return absl::UnavailableError(absl::StrCat("no usable GPU (", error, ")"));
  }
  LogInfo(absl::StrCat("GPU module ", path, " opened ", m.device_name(gpu)));
  return std::make_unique<CudaBackend>(m, gpu);
}

DispatchingBackend::DispatchingBackend(std::unique_ptr<advantage::Backend> cpu,
                                       std::unique_ptr<advantage::Backend> accelerated,
                                       DispatchOptions options)
    : cpu_(std::move(cpu)), accelerated_(std::move(accelerated)), options_(std::move(options)) {}

std::string_view DispatchingBackend::Name() const {
  return accelerated_ != nullptr ? accelerated_->Name() : cpu_->Name();
}

absl::StatusOr<std::string_view> DispatchingBackend::Compute(
    const advantage::Batch& batch, const advantage::Options& options, std::span<double> advantages,
    std::span<advantage::GroupStats> groups, advantage::BatchSummary* summary) {
  // The estimators without a CUDA kernel go to the CPU whatever the size: a documented CPU-only
  // path, not a fallback (no warning, no on_fallback).
  if (accelerated_ != nullptr && advantage::HasCudaKernel(options.estimator) &&
      batch.rewards.size() >= options_.min_rewards) {
    absl::StatusOr<std::string_view> served =
        accelerated_->Compute(batch, options, advantages, groups, summary);
    if (served.ok() || served.status().code() == absl::StatusCode::kInvalidArgument) {
      return served;
    }
    LogWarning(absl::StrCat(Sv(accelerated_->Name()), " backend failed on a batch of ",
                            batch.rewards.size(), " rewards (", served.status().ToString(),
                            "); computing it on the CPU"));
    if (options_.on_fallback) options_.on_fallback(served.status());
  }
  return cpu_->Compute(batch, options, advantages, groups, summary);
}

}  // namespace rlscore::gpu
