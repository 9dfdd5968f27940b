// Throughput of advantage::Compute on the CPU against memcpy of the same bytes, in one run
// (docs/DESIGN.md §7: the CPU path should reach at least half of memcpy bandwidth).
//
//   cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DRLSCORE_WITH_SERVICE=OFF
//         -DRLSCORE_BUILD_TESTS=OFF      (one line)
//   cmake --build build-bench -j2 && ./build-bench/bench/advantage_bench
//
// Every benchmark reports bytes/s over the *input* bytes, 8·N for N rewards, for advantages and
// for memcpy alike: memcpy of 8·N bytes reads 8·N and writes 8·N, and Compute reads the 8·N bytes
// of rewards and writes 8·N bytes of advantages (plus the group statistics), so the ratio of the
// two rates compares the same traffic. After the usual console output, main() prints a table of
// N, advantages GB/s, memcpy GB/s and their ratio, from the median of the repetitions.
//
// Google Benchmark flags work as usual (--benchmark_filter, --benchmark_min_time, ...).
//
// On a shared machine memcpy's rate drifts by a third within minutes, so a ratio of two rates
// measured a minute apart moves with it. `--paired=P` measures the ratio instead, at N = 10^7 only
// and without Google Benchmark: P times per layout, a memcpy of the rewards and then Compute on
// them, each pair giving memcpy's time over Compute's; it prints the median ratio with its
// quartiles (`./build-bench/bench/advantage_bench --paired=25`).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "advantage/advantage.h"

namespace rlscore::advantage {
namespace {

constexpr int64_t kSizes[] = {1'000, 10'000, 100'000, 1'000'000, 10'000'000};

// How the N rewards are cut into groups, and (kSignedGroupsOf16, kUnscorableGroupsOf16) what
// they are. kRaggedNear16 is groups of 16 of which a trainer dropped up to three completions
// (13 to 16 entries): ragged, but every group the same number of rows but for a few.
enum class Layout {
  kGroupsOf16,
  kGroupsOf1024,
  kRagged,
  kRaggedNear16,
  kSignedGroupsOf16,
  kUnscorableGroupsOf16,
};
constexpr Layout kLayouts[] = {Layout::kGroupsOf16,       Layout::kGroupsOf1024,
                               Layout::kRagged,           Layout::kRaggedNear16,
                               Layout::kSignedGroupsOf16, Layout::kUnscorableGroupsOf16};

const char* LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kGroupsOf16:
      return "g16";
    case Layout::kGroupsOf1024:
      return "g1024";
    case Layout::kRagged:
      return "ragged1-64";
    case Layout::kRaggedNear16:
      return "ragged13-16";
    case Layout::kSignedGroupsOf16:
      return "g16-signed";
    case Layout::kUnscorableGroupsOf16:
      return "g16-unscorable";
  }
  return "?";
}

// Inputs and preallocated outputs for one N: nothing is allocated inside the timing loop.
struct Workload {
  std::vector<double> rewards;
  std::vector<uint32_t> sizes;
  std::vector<Outcome> outcomes;  // empty but for kUnscorableGroupsOf16
  std::vector<double> advantages;
  std::vector<GroupStats> groups;
};

// Rewards shaped like docs/DESIGN.md §1 totals: accuracy 0/1, the format reward, and a continuous
// length penalty, so that almost every group has variance and takes the full path (statistics and
// division); zero-variance groups would be cheaper. kSignedGroupsOf16 has a -1/+1 verifier's
// rewards instead, so that about half the groups' sums are negative: the kernels must take them
// as fast as positive ones. kUnscorableGroupsOf16 marks 1 % of the entries unscorable (a
// verifier's timeouts, say), which leaves one group of 16 in seven with an unscorable entry.
Workload MakeWorkload(size_t n, Layout layout) {
  Workload w;
  std::mt19937_64 gen(42);
  std::bernoulli_distribution correct(0.5);
  std::uniform_real_distribution<double> length_penalty(-0.5, 0.0);
  w.rewards.resize(n);
  const bool signed_rewards = layout == Layout::kSignedGroupsOf16;
  for (double& r : w.rewards) {
    r = (correct(gen) ? (signed_rewards ? 1.0 : 1.1) : (signed_rewards ? -1.0 : 0.1)) +
        length_penalty(gen);
  }
  std::uniform_int_distribution<uint32_t> ragged(1, 64);
  std::uniform_int_distribution<uint32_t> near16(13, 16);
  for (size_t left = n; left > 0;) {
    uint32_t size = layout == Layout::kGroupsOf1024   ? 1024
                    : layout == Layout::kRagged       ? ragged(gen)
                    : layout == Layout::kRaggedNear16 ? near16(gen)
                                                      : 16;
    size = static_cast<uint32_t>(std::min<size_t>(size, left));
    w.sizes.push_back(size);
    left -= size;
  }
  if (layout == Layout::kUnscorableGroupsOf16) {
    std::bernoulli_distribution unscorable(0.01);
    w.outcomes.resize(n);
    for (Outcome& o : w.outcomes) o = unscorable(gen) ? Outcome::kUnscorable : Outcome::kUnknown;
  }
  w.advantages.assign(n, 0.0);  // touched, so page faults stay out of the timing
  w.groups.assign(w.sizes.size(), GroupStats{});
  return w;
}

void BM_Advantages(benchmark::State& state, Layout layout) {
  const size_t n = static_cast<size_t>(state.range(0));
  Workload w = MakeWorkload(n, layout);
  const Batch batch{.rewards = w.rewards, .group_sizes = w.sizes, .outcomes = w.outcomes};
  const Options options;  // GRPO, sample deviation, τ = 1e-8
  BatchSummary summary;
  absl::Status status;
  for (auto _ : state) {
    status = Compute(batch, options, w.advantages, w.groups, &summary);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(w.advantages.data());
    benchmark::DoNotOptimize(w.groups.data());
    benchmark::ClobberMemory();  // the outputs count as written every iteration
  }
  if (!status.ok()) {
    state.SkipWithError(std::string(status.message()).c_str());
    return;
  }
  // Input bytes, like the memcpy benchmark: see the top of this file.
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n * sizeof(double)));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

void BM_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<double> src(n), dst(n, 0.0);
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  for (double& x : src) x = dist(gen);
  for (auto _ : state) {
    benchmark::DoNotOptimize(src.data());
    std::memcpy(dst.data(), src.data(), n * sizeof(double));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n * sizeof(double)));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}

// Interleaved by N, so that memcpy and the advantages it is compared with run next to each other.
void RegisterAll() {
  for (int64_t n : kSizes) {
    const auto add = [n](benchmark::internal::Benchmark* b) {
      b->Arg(n)->UseRealTime()->Repetitions(3)->DisplayAggregatesOnly(true);
    };
    add(benchmark::RegisterBenchmark("memcpy", BM_Memcpy));
    for (Layout layout : kLayouts) {
      const std::string name = std::string("advantages/") + LayoutName(layout);
      add(benchmark::RegisterBenchmark(name.c_str(), BM_Advantages, layout));
    }
  }
}

// Passes everything to the console and keeps the median bytes/s of each benchmark.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      const bool single = run.run_type == Run::RT_Iteration && run.repetitions <= 1;
      if (!median && !single) continue;
      const auto it = run.counters.find("bytes_per_second");
      if (it == run.counters.end()) continue;
      rates_[{run.run_name.function_name, std::stoll(run.run_name.args)}] = it->second.value;
    }
  }

  // bytes/s, or 0 when that benchmark did not run (filtered out, or failed).
  double Rate(const std::string& name, int64_t n) const {
    const auto it = rates_.find({name, n});
    return it == rates_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::pair<std::string, int64_t>, double> rates_;
};

void PrintTable(const CollectingReporter& reporter) {
  std::printf(
      "\nAdvantages (GRPO defaults) vs memcpy of the same 8*N input bytes; goal ratio >= 0.5\n");
  std::printf("%-12s %14s %16s %12s %7s  %s\n", "N", "layout", "advantages GB/s", "memcpy GB/s",
              "ratio", "goal");
  for (int64_t n : kSizes) {
    const double copy = reporter.Rate("memcpy", n);
    for (Layout layout : kLayouts) {
      const double adv = reporter.Rate(std::string("advantages/") + LayoutName(layout), n);
      if (adv == 0.0 || copy == 0.0) continue;
      const double ratio = adv / copy;
      std::printf("%-12lld %14s %16.2f %12.2f %7.2f  %s\n", static_cast<long long>(n),
                  LayoutName(layout), adv / 1e9, copy / 1e9, ratio,
                  ratio >= 0.5 ? "met" : "MISSED");
    }
  }
}

// The quantile q of `values` (sorted in place), by nearest rank.
double Quantile(std::vector<double>& values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5)];
}

// --paired: see the top of this file.
void RunPaired(int pairs) {
  constexpr int kWarmup = 2;
  const size_t n = static_cast<size_t>(kSizes[std::size(kSizes) - 1]);
  const double bytes = static_cast<double>(n * sizeof(double));
  std::printf(
      "Advantages (GRPO defaults) vs memcpy of the same 8*N input bytes, N = %zu, in %d "
      "alternating pairs; ratio = memcpy's time / Compute's, goal >= 0.5\n",
      n, pairs);
  std::printf("%14s %7s %7s %7s %16s %12s  %s\n", "layout", "ratio", "q1", "q3", "advantages GB/s",
              "memcpy GB/s", "goal");
  for (Layout layout : kLayouts) {
    Workload w = MakeWorkload(n, layout);
    std::vector<double> copy(n, 0.0);
    const Batch batch{.rewards = w.rewards, .group_sizes = w.sizes, .outcomes = w.outcomes};
    const Options options;
    BatchSummary summary;
    std::vector<double> ratios, compute_rates, copy_rates;
    for (int i = 0; i < kWarmup + pairs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      std::memcpy(copy.data(), w.rewards.data(), n * sizeof(double));
      benchmark::DoNotOptimize(copy.data());
      const auto t1 = std::chrono::steady_clock::now();
      const absl::Status status = Compute(batch, options, w.advantages, w.groups, &summary);
      benchmark::DoNotOptimize(w.advantages.data());
      const auto t2 = std::chrono::steady_clock::now();
      if (!status.ok()) {
        std::printf("%14s failed: %s\n", LayoutName(layout), std::string(status.message()).c_str());
        break;
      }
      if (i < kWarmup) continue;
      const double copy_s = std::chrono::duration<double>(t1 - t0).count();
      const double compute_s = std::chrono::duration<double>(t2 - t1).count();
      ratios.push_back(copy_s / compute_s);
      compute_rates.push_back(bytes / compute_s);
      copy_rates.push_back(bytes / copy_s);
    }
    if (ratios.empty()) continue;
    const double ratio = Quantile(ratios, 0.5);
    std::printf("%14s %7.3f %7.3f %7.3f %16.2f %12.2f  %s\n", LayoutName(layout), ratio,
                Quantile(ratios, 0.25), Quantile(ratios, 0.75), Quantile(compute_rates, 0.5) / 1e9,
                Quantile(copy_rates, 0.5) / 1e9, ratio >= 0.5 ? "met" : "MISSED");
  }
}

// Takes --paired=P out of the arguments: P, or 0 when absent.
int TakePairedFlag(int* argc, char** argv) {
  constexpr std::string_view kFlag = "--paired=";
  int pairs = 0;
  int kept = 0;
  for (int i = 0; i < *argc; ++i) {
    const std::string_view arg = argv[i];
    if (i > 0 && arg.substr(0, kFlag.size()) == kFlag) {
      pairs = std::max(1, std::atoi(argv[i] + kFlag.size()));
      continue;
    }
    argv[kept++] = argv[i];
  }
  *argc = kept;
  return pairs;
}

}  // namespace
}  // namespace rlscore::advantage

int main(int argc, char** argv) {
  const int pairs = rlscore::advantage::TakePairedFlag(&argc, argv);
  if (pairs > 0) {
    rlscore::advantage::RunPaired(pairs);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  rlscore::advantage::RegisterAll();
  rlscore::advantage::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  rlscore::advantage::PrintTable(reporter);
  return 0;  // benchmarks measure; they never gate
}
