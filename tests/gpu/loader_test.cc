#include "gpu/loader.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::gpu {
namespace {

using ::testing::HasSubstr;

// Twelve rewards in three groups, with signal in every group.
struct SmallBatch {
  std::vector<double> rewards = {1.1, 0.1, 0.1, 1.1, 0.0, 0.5, 1.0, 0.5, 0.2, 0.3, 0.2, 0.9};
  std::vector<uint32_t> sizes = {4, 4, 4};
  advantage::Batch batch() const { return {rewards, sizes, {}}; }
};

// An accelerated backend that fails the way a GPU can (or returns what it is told to), and
// counts its calls.
class ScriptedBackend final : public advantage::Backend {
 public:
  explicit ScriptedBackend(absl::Status status) : status_(std::move(status)) {}
  std::string_view Name() const override { return "cuda"; }
  absl::StatusOr<std::string_view> Compute(const advantage::Batch& batch,
                                           const advantage::Options& options,
                                           std::span<double> advantages,
                                           std::span<advantage::GroupStats> groups,
                                           advantage::BatchSummary* summary) override {
    ++calls;
    if (!status_.ok()) return status_;
    absl::Status s = advantage::Compute(batch, options, advantages, groups, summary);
    if (!s.ok()) return s;
    return "cuda";
  }
  std::atomic<int> calls = 0;

 private:
  absl::Status status_;
};

struct Outputs {
  explicit Outputs(const SmallBatch& b) : advantages(b.rewards.size()), groups(b.sizes.size()) {}
  std::vector<double> advantages;
  std::vector<advantage::GroupStats> groups;
  advantage::BatchSummary summary;
};

TEST(GpuMode, ParsesTheThreeModesAndNamesThemInErrors) {
  EXPECT_EQ(*ParseGpuMode("off"), GpuMode::kOff);
  EXPECT_EQ(*ParseGpuMode("auto"), GpuMode::kAuto);
  EXPECT_EQ(*ParseGpuMode("require"), GpuMode::kRequire);
  for (GpuMode m : {GpuMode::kOff, GpuMode::kAuto, GpuMode::kRequire}) {
    EXPECT_EQ(*ParseGpuMode(GpuModeName(m)), m);
  }
  const absl::StatusOr<GpuMode> bad = ParseGpuMode("on");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("\"on\""));
}

TEST(LoadCudaBackend, AMissingModuleIsNotFoundAndNamesThePath) {
  const absl::StatusOr<std::unique_ptr<advantage::Backend>> b =
      LoadCudaBackend("/nonexistent/librlscore_gpu.so");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("/nonexistent/librlscore_gpu.so"));
}

TEST(LoadCudaBackend, AFileThatIsNotAModuleIsRefused) {
  const std::string path = testing::TempDir() + "/not_a_module.so";
  std::ofstream(path) << "this is not an ELF shared object\n";
  const absl::StatusOr<std::unique_ptr<advantage::Backend>> b = LoadCudaBackend(path);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr(path));
  std::remove(path.c_str());
}

TEST(LoadCudaBackend, TheBuiltModuleOpensADeviceOrSaysWhyNot) {
#ifndef RLSCORE_GPU_MODULE
  GTEST_SKIP() << "built without CUDA (RLSCORE_WITH_CUDA=OFF or no nvcc): no module to load";
#else
  absl::StatusOr<std::unique_ptr<advantage::Backend>> b = LoadCudaBackend(RLSCORE_GPU_MODULE);
  if (!b.ok()) {
    // No GPU here: the module loaded, and CUDA's own reason comes back.
    EXPECT_EQ(b.status().code(), absl::StatusCode::kUnavailable) << b.status();
    EXPECT_THAT(std::string(b.status().message()), HasSubstr("no usable GPU"));
    GTEST_SKIP() << "the module loads but no device opens: " << b.status().message();
  }
  // A device: the same numbers as the CPU, bit for bit, and a NaN named exactly as the CPU does.
  SmallBatch small;
  Outputs gpu(small), cpu(small);
  const absl::StatusOr<std::string_view> served =
      (*b)->Compute(small.batch(), {}, gpu.advantages, gpu.groups, &gpu.summary);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(*served, "cuda");
  ASSERT_TRUE(advantage::Compute(small.batch(), {}, cpu.advantages, cpu.groups, &cpu.summary).ok());
  EXPECT_EQ(gpu.advantages, cpu.advantages);
  small.rewards[6] = std::nan("");
  const absl::StatusOr<std::string_view> nan =
      (*b)->Compute(small.batch(), {}, gpu.advantages, gpu.groups, &gpu.summary);
  EXPECT_EQ(nan.status(),
            advantage::Compute(small.batch(), {}, cpu.advantages, cpu.groups, &cpu.summary));
#endif
}

TEST(DispatchingBackend, WithoutAnAcceleratorEverythingGoesToTheCpu) {
  DispatchingBackend backend(advantage::NewCpuBackend(), nullptr,
                             {.min_rewards = 1, .on_fallback = nullptr});
  EXPECT_EQ(backend.Name(), "cpu");
  SmallBatch small;
  Outputs out(small);
  const absl::StatusOr<std::string_view> served =
      backend.Compute(small.batch(), {}, out.advantages, out.groups, &out.summary);
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(*served, "cpu");
}

TEST(DispatchingBackend, SmallBatchesStayOnTheCpuLargeOnesGoToTheAccelerator) {
  auto accelerated = std::make_unique<ScriptedBackend>(absl::OkStatus());
  ScriptedBackend* seen = accelerated.get();
  DispatchingBackend backend(advantage::NewCpuBackend(), std::move(accelerated),
                             {.min_rewards = 12, .on_fallback = nullptr});
  EXPECT_EQ(backend.Name(), "cuda");
  SmallBatch small;
  Outputs out(small);
  EXPECT_EQ(*backend.Compute(small.batch(), {}, out.advantages, out.groups, &out.summary), "cuda");
  EXPECT_EQ(seen->calls, 1);
  small.rewards.pop_back();
  small.sizes.back() = 3;
  Outputs fewer(small);
  EXPECT_EQ(*backend.Compute(small.batch(), {}, fewer.advantages, fewer.groups, &fewer.summary),
            "cpu");
  EXPECT_EQ(seen->calls, 1);
}

TEST(DispatchingBackend, EstimatorsWithoutAKernelGoToTheCpuWhateverTheSize) {
  int fallbacks = 0;
  auto accelerated = std::make_unique<ScriptedBackend>(absl::OkStatus());
  ScriptedBackend* seen = accelerated.get();
  DispatchingBackend backend(
      advantage::NewCpuBackend(), std::move(accelerated),
      {.min_rewards = 1, .on_fallback = [&](const absl::Status&) { ++fallbacks; }});
  SmallBatch small;
  // GDPO's components: the rewards and a constant second component.
  std::vector<double> components;
  for (double r : small.rewards) components.insert(components.end(), {r, 0.5});
  const std::vector<double> weights = {1.0, 1.0};
  for (advantage::Estimator e : {advantage::Estimator::kReinforcePlusPlusBaseline,
                                 advantage::Estimator::kGrpoPassK, advantage::Estimator::kGdpo}) {
    SCOPED_TRACE(static_cast<int>(e));
    advantage::Options options;
    options.estimator = e;
    options.keep_band = {.enabled = true, .lo = 0.0, .hi = 0.5};
    advantage::Batch batch = small.batch();
    if (e == advantage::Estimator::kGdpo) {
      batch.components = components;
      batch.num_components = 2;
      batch.component_weights = weights;
    }
    Outputs out(small), want(small);
    const absl::StatusOr<std::string_view> served =
        backend.Compute(batch, options, out.advantages, out.groups, &out.summary);
    ASSERT_TRUE(served.ok()) << served.status();
    EXPECT_EQ(*served, "cpu");
    ASSERT_TRUE(
        advantage::Compute(batch, options, want.advantages, want.groups, &want.summary).ok());
    EXPECT_EQ(out.advantages, want.advantages);
    for (size_t g = 0; g < out.groups.size(); ++g) {
      EXPECT_EQ(out.groups[g].keep(), want.groups[g].keep()) << g;
    }
  }
  EXPECT_EQ(seen->calls, 0);
  EXPECT_EQ(fallbacks, 0);
  // The kernels' estimators still go to the accelerator.
  Outputs out(small);
  EXPECT_EQ(*backend.Compute(small.batch(), {}, out.advantages, out.groups, &out.summary), "cuda");
  EXPECT_EQ(seen->calls, 1);
}

TEST(DispatchingBackend, AFailingAcceleratorFallsBackToTheCpuAndReportsIt) {
  std::vector<absl::Status> reported;
  DispatchingBackend backend(
      advantage::NewCpuBackend(),
      std::make_unique<ScriptedBackend>(absl::UnavailableError("cudaMemcpyAsync: out of memory")),
      {.min_rewards = 1, .on_fallback = [&](const absl::Status& s) { reported.push_back(s); }});
  SmallBatch small;
  Outputs out(small), want(small);
  const absl::StatusOr<std::string_view> served =
      backend.Compute(small.batch(), {}, out.advantages, out.groups, &out.summary);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(*served, "cpu");
  ASSERT_TRUE(
      advantage::Compute(small.batch(), {}, want.advantages, want.groups, &want.summary).ok());
  EXPECT_EQ(out.advantages, want.advantages);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_THAT(std::string(reported[0].message()), HasSubstr("out of memory"));
}

TEST(DispatchingBackend, TheCallersOwnErrorsAreNotFallenBackFrom) {
  int fallbacks = 0;
  DispatchingBackend backend(
      advantage::NewCpuBackend(),
      std::make_unique<ScriptedBackend>(absl::InvalidArgumentError("reward at group 0 is NaN")),
      {.min_rewards = 1, .on_fallback = [&](const absl::Status&) { ++fallbacks; }});
  SmallBatch small;
  Outputs out(small);
  const absl::StatusOr<std::string_view> served =
      backend.Compute(small.batch(), {}, out.advantages, out.groups, &out.summary);
  EXPECT_EQ(served.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fallbacks, 0);
}

}  // namespace
}  // namespace rlscore::gpu
