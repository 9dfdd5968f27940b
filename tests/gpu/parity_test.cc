// Parity of the CUDA module (gpu/module_abi.h) with the CPU reference (advantage/reference.h) on
// random and adversarial batches. docs/DESIGN.md §4 asks for identical zero-variance decisions and
// values within 1e-12 relative; the canonical order promises more, bit-identical values, and this
// test holds the module to that (a one-ulp difference means a changed summation order or a fused
// multiply-add, which is a bug). The table also shows the largest relative difference.
//
//   gpu_parity_test            every case, 10^3 … 10^8 rewards (a GPU machine, about a minute)
//   gpu_parity_test --quick    10^3 … 10^6 rewards (what ctest runs)
//   gpu_parity_test --small    10^3 and 10^4 rewards (under compute-sanitizer, which is slow)
//
// Needs only the C++ standard library and the module: GPU machines without GoogleTest build it.
// Exits 77 (ctest's "skipped") with the reason when no device can be opened, 1 on any mismatch.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "advantage/reference.h"
#include "advantage/types.h"
#include "gpu/module_abi.h"

namespace rlscore::gpu {
namespace {

using advantage::BatchSummary;
using advantage::Deviation;
using advantage::Estimator;
using advantage::GroupStats;
using advantage::Options;
using advantage::Outcome;

struct Case {
  std::string name;
  std::vector<double> rewards;
  std::vector<uint32_t> sizes;
  std::vector<Outcome> outcomes;
  Options options;
};

// Rewards shaped like docs/DESIGN.md §1 totals: accuracy 0/1, format 0.1, a continuous length
// penalty.
double TypicalReward(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double accuracy = u(rng) < 0.4 ? 1.0 : 0.0;
  const double format = u(rng) < 0.9 ? 0.1 : 0.0;
  const double length = u(rng) < 0.3 ? -0.5 * u(rng) * u(rng) : 0.0;
  return accuracy + format + length;
}

std::vector<uint32_t> UniformSizes(size_t total, uint32_t size) {
  std::vector<uint32_t> sizes(total / size, size);
  if (total % size != 0) sizes.push_back(static_cast<uint32_t>(total % size));
  return sizes;
}

std::vector<uint32_t> RaggedSizes(size_t total, uint32_t max, std::mt19937_64& rng) {
  std::vector<uint32_t> sizes;
  size_t left = total;
  while (left > 0) {
    const uint32_t s = static_cast<uint32_t>(std::min<uint64_t>(left, 1 + rng() % max));
    sizes.push_back(s);
    left -= s;
  }
  return sizes;
}

// Fills every group with `fill(group, position, rng)`.
void Fill(Case& c, const std::function<double(size_t, size_t, std::mt19937_64&)>& fill,
          std::mt19937_64& rng) {
  size_t total = 0;
  for (uint32_t s : c.sizes) total += s;
  c.rewards.resize(total);
  size_t at = 0;
  for (size_t g = 0; g < c.sizes.size(); ++g) {
    for (size_t i = 0; i < c.sizes[g]; ++i) c.rewards[at++] = fill(g, i, rng);
  }
}

struct Comparison {
  size_t values = 0;
  size_t bit_identical = 0;
  double max_relative = 0.0;  // NaN-proof: a NaN on one side only counts as infinitely far
  size_t decision_mismatches = 0;
  std::string first_mismatch;
};

double Relative(double a, double b) {
  if (std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b)) return 0.0;
  if (std::isnan(a) || std::isnan(b)) return INFINITY;
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return scale == 0.0 ? INFINITY : std::fabs(a - b) / scale;  // +0.0 against -0.0 is a mismatch
}

void Compare(const char* what, size_t index, double cpu, double gpu, Comparison* c) {
  ++c->values;
  if (std::bit_cast<uint64_t>(cpu) == std::bit_cast<uint64_t>(gpu)) {
    ++c->bit_identical;
    return;
  }
  const double r = Relative(cpu, gpu);
  c->max_relative = r > c->max_relative ? r : c->max_relative;
  if (c->first_mismatch.empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s[%zu]: cpu %.17g, gpu %.17g", what, index, cpu, gpu);
    c->first_mismatch = buf;
  }
}

bool Run(RlscoreGpu* gpu, const Case& c) {
  advantage::Batch batch{c.rewards, c.sizes, c.outcomes};
  std::vector<double> cpu_adv(c.rewards.size()), gpu_adv(c.rewards.size(), -1.0);
  std::vector<GroupStats> cpu_groups(c.sizes.size()), gpu_groups(c.sizes.size());
  BatchSummary cpu_summary, gpu_summary;
  const advantage::reference::Failure failure =
      advantage::reference::ComputeReference(batch, c.options, cpu_adv, cpu_groups, &cpu_summary);

  RlscoreGpuBatch in{};
  in.rewards = c.rewards.data();
  in.num_rewards = c.rewards.size();
  in.group_sizes = c.sizes.data();
  in.num_groups = c.sizes.size();
  in.outcomes = c.outcomes.empty() ? nullptr : reinterpret_cast<const uint8_t*>(c.outcomes.data());
  in.estimator = static_cast<int32_t>(c.options.estimator);
  in.deviation = static_cast<int32_t>(c.options.deviation);
  in.zero_variance_threshold = c.options.zero_variance_threshold;
  RlscoreGpuOutput out{gpu_adv.data(), gpu_groups.data(), &gpu_summary};
  char error[512] = {};
  const int rc = rlscore_gpu_compute(gpu, &in, &out, error, sizeof error);

  if (failure.kind != advantage::reference::Failure::Kind::kNone) {
    const bool ok = rc == RLSCORE_GPU_NOT_FINITE;
    std::printf("%-34s %11zu %9zu %9s %8s %11s  %s\n", c.name.c_str(), c.rewards.size(),
                c.sizes.size(), "-", "-", "not finite", ok ? "PASS" : "FAIL");
    if (!ok) std::printf("  GPU returned %d: %s\n", rc, error);
    return ok;
  }
  if (rc != RLSCORE_GPU_OK) {
    std::printf("%-34s FAIL: GPU returned %d: %s\n", c.name.c_str(), rc, error);
    return false;
  }

  Comparison cmp;
  size_t zero_variance = 0;
  for (size_t g = 0; g < c.sizes.size(); ++g) {
    cmp.decision_mismatches += cpu_groups[g].cause != gpu_groups[g].cause;
    cmp.decision_mismatches += cpu_groups[g].scorable != gpu_groups[g].scorable;
    zero_variance += cpu_groups[g].zero_variance();
    Compare("mean", g, cpu_groups[g].mean, gpu_groups[g].mean, &cmp);
    Compare("std", g, cpu_groups[g].std, gpu_groups[g].std, &cmp);
  }
  for (size_t i = 0; i < c.rewards.size(); ++i) {
    Compare("advantage", i, cpu_adv[i], gpu_adv[i], &cmp);
  }
  Compare("reward_mean", 0, cpu_summary.reward_mean, gpu_summary.reward_mean, &cmp);
  Compare("reward_std", 0, cpu_summary.reward_std, gpu_summary.reward_std, &cmp);
  cmp.decision_mismatches += cpu_summary.groups_by_cause != gpu_summary.groups_by_cause;
  cmp.decision_mismatches += cpu_summary.unscorable != gpu_summary.unscorable;
  cmp.decision_mismatches += cpu_summary.zero_variance_groups != gpu_summary.zero_variance_groups;

  const bool ok = cmp.decision_mismatches == 0 && cmp.bit_identical == cmp.values;
  std::printf("%-34s %11zu %9zu %9zu %7.3f%% %11.2e  %s\n", c.name.c_str(), c.rewards.size(),
              c.sizes.size(), zero_variance,
              cmp.values == 0 ? 100.0
                              : 100.0 * static_cast<double>(cmp.bit_identical) /
                                    static_cast<double>(cmp.values),
              cmp.max_relative, ok ? "PASS" : "FAIL");
  if (!cmp.first_mismatch.empty())
    std::printf("  first difference: %s\n", cmp.first_mismatch.c_str());
  if (cmp.decision_mismatches != 0) {
    std::printf("  %zu zero-variance decisions or counts differ\n", cmp.decision_mismatches);
  }
  return ok;
}

std::vector<Case> Cases(size_t n, bool everything, std::mt19937_64& rng) {
  std::vector<Case> cases;
  auto add = [&](std::string name, std::vector<uint32_t> sizes,
                 const std::function<double(size_t, size_t, std::mt19937_64&)>& fill,
                 Options options = {}) {
    Case c;
    c.name = std::move(name);
    c.sizes = std::move(sizes);
    c.options = options;
    Fill(c, fill, rng);
    cases.push_back(std::move(c));
    return &cases.back();
  };
  auto typical = [](size_t, size_t, std::mt19937_64& r) { return TypicalReward(r); };

  add("typical, groups of 16", UniformSizes(n, 16), typical);
  add("typical, ragged 1-64", RaggedSizes(n, 64, rng), typical);
  if (!everything) return cases;
  add("typical, groups of 1", UniformSizes(n, 1), typical);
  add("typical, groups of 3", UniformSizes(n, 3), typical);
  add("typical, groups of 64", UniformSizes(n, 64), typical);
  add("typical, groups of 4096", UniformSizes(n, 4096), typical);
  add("typical, ragged 1-4096", RaggedSizes(n, 4096, rng), typical);
  // Identical rewards that arithmetic made differ by float residue (0.1 + 0.2 vs 0.3), and
  // exactly identical ones: the incident's groups.
  add("identical with float residue", UniformSizes(n, 16),
      [](size_t g, size_t i, auto&) { return g % 2 == 0 ? (i % 2 == 0 ? 0.1 + 0.2 : 0.3) : 0.1; });
  add("spread near tau, ulp steps", UniformSizes(n, 8), [](size_t g, size_t i, auto&) {
    // Eight values alternating 0.5 ± s have sample σ = s·√(8/7): s = τ/√(8/7) puts σ at τ, and
    // moving the upper values by -3 … +3 ulps puts it just below, at or just above.
    const double s = 1e-8 / std::sqrt(8.0 / 7.0);
    if (i % 2 == 1) return 0.5 - s;
    double v = 0.5 + s;
    const int steps = static_cast<int>(g % 7) - 3;
    for (int k = 0; k < std::abs(steps); ++k) v = std::nextafter(v, steps > 0 ? 1.0 : 0.0);
    return v;
  });
  add("signed zeros", RaggedSizes(n, 48, rng), [](size_t g, size_t i, auto&) {
    return (g + i) % 3 == 0 ? -0.0 : (g % 5 == 0 ? 0.0 : ((g * 31 + i) % 2 == 0 ? -0.0 : 1e-310));
  });
  Options zero_tau;
  zero_tau.zero_variance_threshold = 0.0;
  add(
      "tiny spreads, tau 0", UniformSizes(n, 32),
      [](size_t g, size_t i, auto&) {
        // Values near 2^-520: M2 under 1e-280, so σ (about 1e-157, a normal number) comes from the
        // rescaled path, and with τ = 0 these groups keep their signal.
        return std::ldexp(1.0 + static_cast<double>((g + i) % 5), -520 + static_cast<int>(g % 40));
      },
      zero_tau);
  add(
      "tiny spreads, ragged 1-64, tau 0", RaggedSizes(n, 64, rng),
      [](size_t g, size_t i, auto&) {
        return std::ldexp(1.0 + static_cast<double>((g + 3 * i) % 7),
                          -530 + static_cast<int>(g % 25));
      },
      zero_tau);
  add("large magnitudes", RaggedSizes(n, 128, rng), [](size_t, size_t, std::mt19937_64& r) {
    return 1e100 * (1.0 + static_cast<double>(r() % 1000) * 1e-3);
  });
  for (Estimator e : {Estimator::kDrGrpo, Estimator::kRloo, Estimator::kBatchNormalized}) {
    Options o;
    o.estimator = e;
    o.deviation = e == Estimator::kRloo ? Deviation::kPopulation : Deviation::kSample;
    const char* name = e == Estimator::kDrGrpo ? "Dr. GRPO, ragged 1-64"
                       : e == Estimator::kRloo ? "RLOO population, ragged 1-64"
                                               : "batch-normalised, ragged 1-64";
    add(name, RaggedSizes(n, 64, rng), typical, o);
  }
  Options bn;
  bn.estimator = Estimator::kBatchNormalized;
  add(
      "batch-normalised, all identical", UniformSizes(n, 16),
      [](size_t, size_t, auto&) { return 0.75; }, bn);
  // Outcomes with unscorable entries, in warp-wide tiles (ragged up to 40) and in narrow ones
  // (groups of 8: the compaction's ballot is relative to the tile).
  for (bool narrow : {false, true}) {
    Case* c = add(narrow ? "outcomes, groups of 8" : "outcomes, ragged 1-40",
                  narrow ? UniformSizes(n, 8) : RaggedSizes(n, 40, rng), typical);
    c->outcomes.resize(c->rewards.size());
    for (size_t i = 0; i < c->outcomes.size(); ++i) {
      const uint64_t pick = rng() % 10;
      c->outcomes[i] = pick < 2   ? Outcome::kUnscorable
                       : pick < 5 ? Outcome::kCorrect
                       : pick < 8 ? Outcome::kWrong
                                  : Outcome::kTruncated;
      if (pick >= 5 && pick < 8) c->rewards[i] = 0.1;  // wrong: format reward only
    }
  }
  // Values the CPU rejects: the module must say "not finite", never compute garbage.
  const size_t last = (n + 15) / 16 - 1;
  add("NaN in the last group", UniformSizes(n, 16), [last](size_t g, size_t i, auto&) {
    return g == last && i == 0 ? std::nan("") : 0.5 + static_cast<double>(i);
  });
  add(
      "+Inf, batch-normalised", UniformSizes(n, 16),
      [](size_t g, size_t i, auto&) {
        return g == 1 && i == 2 ? INFINITY : 0.25 * static_cast<double>(i);
      },
      bn);
  add("batch overflow (means of +-1e200)", UniformSizes(n, 16),
      [](size_t g, size_t, auto&) { return g % 2 == 0 ? 1e200 : -1e200; });
  return cases;
}

int Main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;
  char error[512] = {};
  if (rlscore_gpu_abi_version() != RLSCORE_GPU_ABI_VERSION) {
    std::printf("FAIL: module ABI %d, expected %d\n", rlscore_gpu_abi_version(),
                RLSCORE_GPU_ABI_VERSION);
    return 1;
  }
  RlscoreGpu* gpu = rlscore_gpu_open(0, error, sizeof error);
  if (gpu == nullptr) {
    std::printf("SKIP: no usable CUDA device: %s\n", error);
    return 77;
  }
  std::printf("device: %s\n", rlscore_gpu_device_name(gpu));
  std::printf("%-34s %11s %9s %9s %8s %11s  %s\n", "case", "rewards", "groups", "zero-var",
              "bit-eq", "max rel", "result");
  std::mt19937_64 rng(2026);
  bool ok = true;
  const std::vector<size_t> sizes =
      small   ? std::vector<size_t>{1000, 10000}
      : quick ? std::vector<size_t>{1000, 10000, 100000, 1000000}
              : std::vector<size_t>{1000, 10000, 100000, 1000000, 10000000, 100000000};
  {
    Case empty;
    empty.name = "empty batch";
    ok &= Run(gpu, empty);
  }
  for (size_t n : sizes) {
    // At 10^8 the two typical layouts only: each case holds about 3 GB on the host.
    for (const Case& c : Cases(n, n <= 10000000, rng)) ok &= Run(gpu, c);
  }
  rlscore_gpu_close(gpu);
  std::printf("%s\n", ok ? "PARITY: PASS" : "PARITY: FAIL");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace rlscore::gpu

int main(int argc, char** argv) { return rlscore::gpu::Main(argc, argv); }
