// The module ABI (gpu/module_abi.h) implemented with the CPU reference, so that the parity
// harness (parity_test.cc) runs on every machine: against an exact module it must pass, and
// against one that is a single ulp off (RLSCORE_CPU_MODULE_ULP_OFF=1) it must fail. This tests the
// test; the real module is tested by the same harness on a GPU (gpu/run_device_checks.sh).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "advantage/reference.h"
#include "advantage/types.h"
#include "gpu/module_abi.h"

struct RlscoreGpu {
  bool ulp_off = false;
};

extern "C" {

int rlscore_gpu_abi_version(void) { return RLSCORE_GPU_ABI_VERSION; }

RlscoreGpu* rlscore_gpu_open(int, char*, size_t) {
  auto* gpu = new RlscoreGpu;
  const char* off = std::getenv("RLSCORE_CPU_MODULE_ULP_OFF");
  gpu->ulp_off = off != nullptr && off[0] == '1';
  return gpu;
}

const char* rlscore_gpu_device_name(const RlscoreGpu* gpu) {
  return gpu->ulp_off ? "CPU stand-in, one ulp off" : "CPU stand-in";
}

int rlscore_gpu_compute(RlscoreGpu* gpu, const RlscoreGpuBatch* in, const RlscoreGpuOutput* out,
                        char* error, size_t error_size) {
  using namespace rlscore::advantage;
  Options options;
  options.estimator = static_cast<Estimator>(in->estimator);
  options.deviation = static_cast<Deviation>(in->deviation);
  options.zero_variance_threshold = in->zero_variance_threshold;
  const Batch batch{{in->rewards, in->num_rewards},
                    {in->group_sizes, in->num_groups},
                    {reinterpret_cast<const Outcome*>(in->outcomes),
                     in->outcomes == nullptr ? 0 : in->num_rewards}};
  const reference::Failure failure =
      reference::ComputeReference(batch, options, {out->advantages, in->num_rewards},
                                  {static_cast<GroupStats*>(out->groups), in->num_groups},
                                  static_cast<BatchSummary*>(out->summary));
  if (failure.kind != reference::Failure::Kind::kNone) {
    std::snprintf(error, error_size, "not finite");
    return RLSCORE_GPU_NOT_FINITE;
  }
  if (gpu->ulp_off && in->num_rewards > 0) {
    double& last = out->advantages[in->num_rewards - 1];
    last = std::nextafter(last, INFINITY);
  }
  return RLSCORE_GPU_OK;
}

void rlscore_gpu_close(RlscoreGpu* gpu) { delete gpu; }

}  // extern "C"
