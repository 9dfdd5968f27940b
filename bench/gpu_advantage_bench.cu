// The CUDA advantage path measured (docs/DESIGN.md §7: at 10^8 rewards, at least 60 % of the
// device's measured device-to-device copy bandwidth; faster than PyTorch's vectorised GRPO
// advantage).
//
//   gpu_advantage_bench [--data-dir DIR]
//   gpu_advantage_bench --profile     one untimed launch of each kernel path, for ncu
//
// Prints three tables:
//   1. kernels on device-resident data vs cudaMemcpy device-to-device of the same 8·N bytes (both
//      read 8·N and write 8·N bytes), each kernel path on the same batch (kernels.h: a tile per
//      group, a thread per group in shared memory, tiles and threads in shared memory; the last
//      two again with the largest shared-memory carveout, "t-max" and "s-max"; the default path
//      finding uniform groups from their index, "uniform"), and cuBLAS
//      group sums (dgemv with a ones vector) where the groups are uniform — the alternative the
//      design considered;
//   2. the whole module call (host -> device -> host) vs the CPU path the server runs below
//      --gpu-min-rewards (reference::ComputeInterleaved, what advantage::Compute calls), per batch
//      size: where the GPU starts to pay; the plain reference beside it for scale;
//   3. the host and bus transfers of 256 MiB that bound the module call;
// and, with --data-dir, writes the 10^8-reward batch as raw doubles for bench/torch_grpo_bench.py.
//
// Needs only the C++ standard library and CUDA (+ cuBLAS): a plain main(), not Google Benchmark,
// because GPU machines may lack Debian's libraries. Times are medians of repetitions with CUDA
// events (device) or steady_clock (host).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "advantage/reference.h"
#include "gpu/kernels.h"
#include "gpu/module_abi.h"

namespace rlscore::gpu {
namespace {

#define CHECK_CUDA(expr)                                                                         \
  do {                                                                                           \
    const cudaError_t e_ = (expr);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<double> Rewards(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> r(n);
  for (double& x : r) {
    x = (u(rng) < 0.4 ? 1.0 : 0.0) + (u(rng) < 0.9 ? 0.1 : 0.0) - 0.5 * u(rng) * u(rng);
  }
  return r;
}

std::vector<uint32_t> Sizes(size_t n, int layout, std::mt19937_64& rng) {
  std::vector<uint32_t> sizes;
  size_t left = n;
  while (left > 0) {
    uint32_t s = layout > 0 ? static_cast<uint32_t>(layout) : static_cast<uint32_t>(1 + rng() % 64);
    s = static_cast<uint32_t>(std::min<size_t>(s, left));
    sizes.push_back(s);
    left -= s;
  }
  return sizes;
}

// Median milliseconds of `reps` runs of `body` on the host's clock, after one warm-up.
template <typename Body>
double TimeHost(int reps, Body body) {
  body();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return Median(ms);
}

// Median milliseconds of `reps` runs of `body` on `stream`, after one warm-up.
template <typename Body>
double TimeDevice(cudaStream_t stream, int reps, Body body) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  body();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    body();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return Median(ms);
}

// A group layout on the device, around device-resident rewards and advantages: the sizes, and
// the outputs LaunchAdvantages writes besides the advantages.
class DeviceLayout {
 public:
  DeviceLayout(const std::vector<uint32_t>& sizes, const double* rewards, double* advantages) {
    const size_t g = sizes.size();
    CHECK_CUDA(cudaMalloc(&sizes_, g * sizeof(uint32_t)));
    CHECK_CUDA(cudaMalloc(&groups_, g * sizeof(advantage::GroupStats)));
    CHECK_CUDA(cudaMalloc(&root_, sizeof(advantage::reference::Moments)));
    CHECK_CUDA(cudaMalloc(&counters_, sizeof(DeviceCounters)));
    CHECK_CUDA(cudaMemcpy(sizes_, sizes.data(), g * sizeof(uint32_t), cudaMemcpyHostToDevice));
    batch.rewards = rewards;
    batch.group_sizes = sizes_;
    batch.num_rewards = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
    batch.num_groups = g;
    batch.max_group_size = *std::max_element(sizes.begin(), sizes.end());
    output = DeviceOutput{advantages, groups_, root_, counters_};
  }
  DeviceLayout(const DeviceLayout&) = delete;
  DeviceLayout& operator=(const DeviceLayout&) = delete;
  ~DeviceLayout() {
    CHECK_CUDA(cudaFree(sizes_));
    CHECK_CUDA(cudaFree(groups_));
    CHECK_CUDA(cudaFree(root_));
    CHECK_CUDA(cudaFree(counters_));
  }

  DeviceBatch batch;
  DeviceOutput output;

 private:
  uint32_t* sizes_ = nullptr;
  advantage::GroupStats* groups_ = nullptr;
  advantage::reference::Moments* root_ = nullptr;
  DeviceCounters* counters_ = nullptr;
};

void DeviceTable(const std::string& data_dir) {
  std::printf("\n1. Kernels on device data vs a device-to-device copy of the same bytes\n");
  std::printf("%11s %-11s %10s %10s %10s %9s %9s %9s %9s %9s %9s %9s %12s\n", "N", "layout",
              "ours ms", "copy ms", "ours GB/s", "of copy", "tile ms", "thread ms", "t-max ms",
              "s-tile ms", "s-max ms", "uniform", "cublas sums");
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cublasHandle_t cublas;
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) std::exit(1);
  cublasSetStream(cublas, stream);
  std::mt19937_64 rng(1);
  for (size_t n : {1000000ul, 10000000ul, 100000000ul}) {
    const std::vector<double> rewards = Rewards(n, rng);
    double *d_rewards, *d_adv, *d_copy, *d_ones, *d_sums;
    CHECK_CUDA(cudaMalloc(&d_rewards, n * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&d_adv, n * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&d_copy, n * sizeof(double)));
    CHECK_CUDA(cudaMemcpy(d_rewards, rewards.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    if (n == 100000000ul && !data_dir.empty()) {
      const std::string path = data_dir + "/rewards_1e8.f64";
      if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(rewards.data(), sizeof(double), n, f);
        std::fclose(f);
      }
    }
    const int reps = n >= 100000000ul ? 10 : 30;
    const double copy_ms = TimeDevice(stream, reps, [&] {
      CHECK_CUDA(
          cudaMemcpyAsync(d_copy, d_rewards, n * sizeof(double), cudaMemcpyDeviceToDevice, stream));
    });
    for (int layout : {16, 64, 0}) {
      const std::vector<uint32_t> sizes = Sizes(n, layout, rng);
      const size_t g = sizes.size();
      const DeviceLayout device(sizes, d_rewards, d_adv);
      const DeviceBatch& batch = device.batch;
      const DeviceOutput& output = device.output;
      Workspace workspace;
      const double ours_ms = TimeDevice(
          stream, reps, [&] { CHECK_CUDA(LaunchAdvantages(batch, output, &workspace, stream)); });
      // Each kernel path on the same batch (kernels.h: Workspace::staged_group_max and
      // staged_tile_max choose among them).
      auto time_path = [&](uint32_t staged_group_max, uint32_t staged_tile_max,
                           int carveout = cudaSharedmemCarveoutDefault, bool uniform = false) {
        Workspace w;
        w.staged_group_max = staged_group_max;
        w.staged_tile_max = staged_tile_max;
        w.shared_carveout = carveout;
        w.uniform_offsets = uniform;
        const cudaError_t e = LaunchAdvantages(batch, output, &w, stream);
        if (e != cudaSuccess) {
          std::fprintf(stderr, "path (%u, %u): %s\n", staged_group_max, staged_tile_max,
                       cudaGetErrorString(e));
          return -1.0;
        }
        return TimeDevice(stream, reps,
                          [&] { CHECK_CUDA(LaunchAdvantages(batch, output, &w, stream)); });
      };
      const double tile_ms = time_path(0, 0);
      const double thread_ms = time_path(64, 0);
      const double staged_tile_ms = time_path(0, 64);
      // The staged paths again with all of L1 as shared memory (Workspace::shared_carveout).
      const double thread_max_ms = time_path(64, 0, cudaSharedmemCarveoutMaxShared);
      const double staged_tile_max_ms = time_path(0, 64, cudaSharedmemCarveoutMaxShared);
      // The default path finding uniform groups from their index (Workspace::uniform_offsets).
      const double uniform_ms =
          time_path(Workspace::kDefaultStagedGroupMax, Workspace::kDefaultStagedTileMax,
                    cudaSharedmemCarveoutDefault, /*uniform=*/true);
      std::string cublas_col = "-";
      if (layout > 0 && n % layout == 0) {
        // Group sums as a matrix-vector product: the rewards are a column-major layout x g
        // matrix; y = A^T · 1.
        CHECK_CUDA(cudaMalloc(&d_ones, layout * sizeof(double)));
        CHECK_CUDA(cudaMalloc(&d_sums, g * sizeof(double)));
        const std::vector<double> ones(layout, 1.0);
        CHECK_CUDA(
            cudaMemcpy(d_ones, ones.data(), layout * sizeof(double), cudaMemcpyHostToDevice));
        const double one = 1.0, zero = 0.0;
        const double gemv_ms = TimeDevice(stream, reps, [&] {
          cublasDgemv(cublas, CUBLAS_OP_T, layout, static_cast<int>(g), &one, d_rewards, layout,
                      d_ones, 1, &zero, d_sums, 1);
        });
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f ms", gemv_ms);
        cublas_col = buf;
        CHECK_CUDA(cudaFree(d_ones));
        CHECK_CUDA(cudaFree(d_sums));
      }
      const double gbs = 2.0 * 8.0 * static_cast<double>(n) / (ours_ms * 1e6);
      std::printf(
          "%11zu %-11s %10.3f %10.3f %10.1f %8.0f%% %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %12s\n", n,
          layout == 16   ? "groups 16"
          : layout == 64 ? "groups 64"
                         : "ragged 1-64",
          ours_ms, copy_ms, gbs, 100.0 * copy_ms / ours_ms, tile_ms, thread_ms, thread_max_ms,
          staged_tile_ms, staged_tile_max_ms, uniform_ms, cublas_col.c_str());
    }
    CHECK_CUDA(cudaFree(d_rewards));
    CHECK_CUDA(cudaFree(d_adv));
    CHECK_CUDA(cudaFree(d_copy));
  }
  cublasDestroy(cublas);
  CHECK_CUDA(cudaStreamDestroy(stream));
}

// One launch of each kernel path per layout at 10^7 rewards, untimed: what `ncu` profiles
// (gpu/run_device_checks.sh).
void ProfileRuns() {
  const size_t n = 10000000;
  std::mt19937_64 rng(3);
  const std::vector<double> rewards = Rewards(n, rng);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  double *d_rewards, *d_adv;
  CHECK_CUDA(cudaMalloc(&d_rewards, n * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&d_adv, n * sizeof(double)));
  CHECK_CUDA(cudaMemcpy(d_rewards, rewards.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  for (int layout : {16, 64, 0}) {
    const DeviceLayout device(Sizes(n, layout, rng), d_rewards, d_adv);
    for (auto [threads, tiles] : {std::pair{0u, 0u}, {64u, 0u}, {0u, 64u}}) {
      Workspace w;
      w.staged_group_max = threads;
      w.staged_tile_max = tiles;
      CHECK_CUDA(LaunchAdvantages(device.batch, device.output, &w, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    }
  }
  CHECK_CUDA(cudaFree(d_rewards));
  CHECK_CUDA(cudaFree(d_adv));
  CHECK_CUDA(cudaStreamDestroy(stream));
}

// What bounds the module call: the host copies into and out of pinned staging (module.cu) and
// the DMA over the bus, each on 256 MiB.
void TransferTable() {
  std::printf("\n3. Transfers of 256 MiB: what bounds the module call\n");
  const size_t bytes = 256u << 20;
  std::vector<char> pageable(bytes, 1), other(bytes, 2);
  char* pinned = nullptr;
  void* device = nullptr;
  CHECK_CUDA(cudaMallocHost(reinterpret_cast<void**>(&pinned), bytes));
  CHECK_CUDA(cudaMalloc(&device, bytes));
  std::memset(pinned, 3, bytes);
  auto report = [&](const char* what, auto body) {
    const double t = TimeHost(5, body);
    std::printf("  %-34s %8.2f ms %8.1f GB/s\n", what, t, static_cast<double>(bytes) / (t * 1e6));
  };
  report("host memcpy, pageable to pinned", [&] { std::memcpy(pinned, pageable.data(), bytes); });
  report("host memcpy, pageable to pageable",
         [&] { std::memcpy(other.data(), pageable.data(), bytes); });
  report("host to device, pinned",
         [&] { CHECK_CUDA(cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice)); });
  report("device to host, pinned",
         [&] { CHECK_CUDA(cudaMemcpy(pinned, device, bytes, cudaMemcpyDeviceToHost)); });
  report("host memcpy to pinned, 4 threads", [&] {
    std::vector<std::thread> threads;
    const size_t part = bytes / 4;
    for (size_t t = 0; t < 4; ++t) {
      threads.emplace_back(
          [&, t] { std::memcpy(pinned + t * part, pageable.data() + t * part, part); });
    }
    for (std::thread& t : threads) t.join();
  });
  report("cudaHostRegister + unregister", [&] {
    CHECK_CUDA(cudaHostRegister(pageable.data(), bytes, cudaHostRegisterDefault));
    CHECK_CUDA(cudaHostUnregister(pageable.data()));
  });
  report("host to device, pageable",
         [&] { CHECK_CUDA(cudaMemcpy(device, pageable.data(), bytes, cudaMemcpyHostToDevice)); });
  report("device to host, pageable",
         [&] { CHECK_CUDA(cudaMemcpy(other.data(), device, bytes, cudaMemcpyDeviceToHost)); });
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(device));
}

void ThresholdTable() {
  std::printf(
      "\n2. The whole module call (host -> device -> host) vs the server's CPU path, groups of "
      "16\n");
  std::printf("%11s %12s %12s %8s %12s\n", "N", "module ms", "cpu ms", "faster", "plain ref ms");
  char error[512] = {};
  RlscoreGpu* gpu = rlscore_gpu_open(0, error, sizeof error);
  if (gpu == nullptr) {
    std::printf("cannot open the module's device: %s\n", error);
    return;
  }
  std::mt19937_64 rng(2);
  for (size_t n : {1000ul, 4000ul, 16000ul, 64000ul, 256000ul, 384000ul, 512000ul, 768000ul,
                   1000000ul, 4000000ul, 16000000ul, 64000000ul}) {
    const std::vector<double> rewards = Rewards(n, rng);
    const std::vector<uint32_t> sizes = Sizes(n, 16, rng);
    std::vector<double> adv(n);
    std::vector<advantage::GroupStats> groups(sizes.size());
    advantage::BatchSummary summary;
    RlscoreGpuBatch in{};
    in.rewards = rewards.data();
    in.num_rewards = n;
    in.group_sizes = sizes.data();
    in.num_groups = sizes.size();
    in.zero_variance_threshold = advantage::kDefaultZeroVarianceThreshold;
    RlscoreGpuOutput out{adv.data(), groups.data(), &summary};
    auto time_host = [](auto body) { return TimeHost(15, body); };
    if (rlscore_gpu_compute(gpu, &in, &out, error, sizeof error) != RLSCORE_GPU_OK) {
      std::printf("%11zu module call failed: %s\n", n, error);
      continue;
    }
    const double module_ms =
        time_host([&] { rlscore_gpu_compute(gpu, &in, &out, error, sizeof error); });
    const double cpu_ms = time_host([&] {
      advantage::reference::ComputeInterleaved({rewards, sizes, {}}, advantage::Options{}, adv,
                                               groups, &summary);
    });
    const double reference_ms = time_host([&] {
      advantage::reference::ComputeReference({rewards, sizes, {}}, advantage::Options{}, adv,
                                             groups, &summary);
    });
    std::printf("%11zu %12.3f %12.3f %8s %12.3f\n", n, module_ms, cpu_ms,
                module_ms < cpu_ms ? "gpu" : "cpu", reference_ms);
  }
  rlscore_gpu_close(gpu);
}

}  // namespace
}  // namespace rlscore::gpu

int main(int argc, char** argv) {
  std::string data_dir;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--data-dir") == 0 && i + 1 < argc) data_dir = argv[++i];
    if (std::strcmp(argv[i], "--profile") == 0) profile = true;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp props;
  CHECK_CUDA(cudaGetDeviceProperties(&props, 0));
  std::printf("device: %s, %d SMs\n", props.name, props.multiProcessorCount);
  if (profile) {
    rlscore::gpu::ProfileRuns();
    return 0;
  }
  rlscore::gpu::DeviceTable(data_dir);
  rlscore::gpu::ThresholdTable();
  rlscore::gpu::TransferTable();
  return 0;
}
