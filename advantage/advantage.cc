#include "advantage/advantage.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace rlscore::advantage {
namespace {

// The first pass over a group: the sum in four interleaved lanes combined in a fixed order, and
// whether every value has the bit pattern of the first. Four lanes give the CPU independent
// dependency chains (and the compiler two SIMD vectors); the order depends only on n, so the
// result is deterministic.
//
// Bit-identity, not σ, is the primary zero-variance test: it is exact whatever residue the mean
// computation leaves.
struct FirstPass {
  double sum;
  bool identical;
};

FirstPass SumAndIdentity(const double* x, size_t n) {
  const uint64_t first = std::bit_cast<uint64_t>(x[0]);
  double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
  uint64_t diff = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += x[i];
    a1 += x[i + 1];
    a2 += x[i + 2];
    a3 += x[i + 3];
    diff |= (std::bit_cast<uint64_t>(x[i]) ^ first) | (std::bit_cast<uint64_t>(x[i + 1]) ^ first) |
            (std::bit_cast<uint64_t>(x[i + 2]) ^ first) |
            (std::bit_cast<uint64_t>(x[i + 3]) ^ first);
  }
  for (; i < n; ++i) {
    a0 += x[i];
    diff |= std::bit_cast<uint64_t>(x[i]) ^ first;
  }
  return {(a0 + a1) + (a2 + a3), diff == 0};
}

// Σ (x - mean)², the second pass of the two-pass variance, in the same fixed lane order.
double SumSquaredDeviations(const double* x, size_t n, double mean) {
  double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const double d0 = x[i] - mean, d1 = x[i + 1] - mean;
    const double d2 = x[i + 2] - mean, d3 = x[i + 3] - mean;
    a0 += d0 * d0;
    a1 += d1 * d1;
    a2 += d2 * d2;
    a3 += d3 * d3;
  }
  for (; i < n; ++i) {
    const double d = x[i] - mean;
    a0 += d * d;
  }
  return (a0 + a1) + (a2 + a3);
}

double StdFromM2(double m2, uint64_t n, Deviation kind) {
  if (n < 2) return 0.0;
  const double denom =
      kind == Deviation::kSample ? static_cast<double>(n - 1) : static_cast<double>(n);
  return std::sqrt(m2 / denom);
}

// A σ below the smallest normal double is treated as zero whatever τ is: 1/σ would overflow.
constexpr double kSmallestUsableStd = std::numeric_limits<double>::min();

// Below this, Σ(x - μ)² has lost bits to subnormal underflow (deviations under about 1e-140).
constexpr double kTinySumOfSquares = 1e-280;

// σ of a group whose Σ(x - μ)² came out tiny: the deviations are rescaled by the largest one
// before squaring, so σ keeps full precision however small the spread (this matters with τ = 0).
// Sets `*m2` to the rescaled sum times scale², which may itself underflow.
double TinySpreadStd(const double* x, size_t n, double mean, Deviation kind, double* m2) {
  double scale = 0.0;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(x[i] - mean));
  if (scale == 0.0) {
    *m2 = 0.0;
    return 0.0;
  }
  double scaled = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = (x[i] - mean) / scale;
    scaled += d * d;
  }
  *m2 = scaled * scale * scale;
  return scale * StdFromM2(scaled, n, kind);
}

bool IsScorable(const Batch& batch, size_t index) {
  return batch.outcomes.empty() || batch.outcomes[index] != Outcome::kUnscorable;
}

const char* DescribeNonFinite(double x) {
  if (std::isnan(x)) return "NaN";
  return x > 0 ? "+Inf" : "-Inf";
}

// The error for group `g` (starting at flat index `offset`, `size` entries) whose scorable
// rewards did not sum to a finite value: names the first NaN/±Inf, or the overflow.
absl::Status NonFiniteError(const Batch& batch, size_t g, size_t offset, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    const double r = batch.rewards[offset + i];
    if (IsScorable(batch, offset + i) && !std::isfinite(r)) {
      return absl::InvalidArgumentError(
          absl::StrCat("reward at group ", g, ", position ", i, " (flat index ", offset + i,
                       ") is ", DescribeNonFinite(r),
                       ": rewards must be finite (mark the entry unscorable to leave it out)"));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "rewards of group ", g, " (flat index ", offset,
      ") overflow double precision: ", "magnitudes above about 1e150 are not supported"));
}

// If every scorable completion of the group has the same known outcome, the cause it names.
ZeroVarianceCause CauseFromOutcomes(const Batch& batch, size_t offset, size_t size) {
  if (batch.outcomes.empty()) return ZeroVarianceCause::kNone;
  Outcome common = Outcome::kUnscorable;
  for (size_t i = offset; i < offset + size; ++i) {
    const Outcome o = batch.outcomes[i];
    if (o == Outcome::kUnscorable) continue;
    if (common == Outcome::kUnscorable) common = o;
    if (o != common) return ZeroVarianceCause::kNone;
  }
  switch (common) {
    case Outcome::kCorrect:
      return ZeroVarianceCause::kAllCorrect;
    case Outcome::kWrong:
      return ZeroVarianceCause::kAllWrong;
    case Outcome::kTruncated:
      return ZeroVarianceCause::kAllTruncated;
    default:
      return ZeroVarianceCause::kNone;
  }
}

// Running (n, mean, M2) of the whole batch, merged group by group in order with the pairwise
// update of Chan, Golub & LeVeque (1979). Each group's M2 is itself two-pass, so σ_batch needs no
// extra pass over memory.
struct BatchMoments {
  uint64_t n = 0;
  double mean = 0.0;
  double m2 = 0.0;

  void Merge(uint64_t nb, double mean_b, double m2_b) {
    if (nb == 0) return;
    if (n == 0) {  // also keeps δ² of a huge first mean out of the sum (∞ · 0 is NaN)
      n = nb;
      mean = mean_b;
      m2 = m2_b;
      return;
    }
    const uint64_t total = n + nb;
    const double delta = mean_b - mean;
    const double nb_over_total = static_cast<double>(nb) / static_cast<double>(total);
    mean += delta * nb_over_total;
    m2 += m2_b + delta * delta * static_cast<double>(n) * nb_over_total;
    n = total;
  }
};

// Every estimator is (r - μ_group) · factor for the scorable entries of a group with signal:
//   GRPO              1/σ            (one division per group, within an ulp of (r - μ)/σ)
//   Dr. GRPO          1              (exact: r - μ)
//   RLOO              n/(n - 1)      (r - (S - r)/(n - 1), without the cancellation in S - r)
//   batch-normalised  1/σ_batch
double Factor(Estimator estimator, const GroupStats& stats, double batch_std) {
  switch (estimator) {
    case Estimator::kGrpo:
      return 1.0 / stats.std;
    case Estimator::kDrGrpo:
      return 1.0;
    case Estimator::kRloo: {
      const double n = stats.scorable;
      return n / (n - 1.0);
    }
    case Estimator::kBatchNormalized:
      return 1.0 / batch_std;
  }
  return 0.0;
}

// Writes the advantages of one group whose statistics and cause are final: +0.0 for a
// zero-variance group and for unscorable entries.
inline void WriteGroup(const Batch& batch, const Options& options, const GroupStats& stats,
                       double batch_std, size_t offset, size_t size, bool has_unscorable,
                       double* out) {
  if (stats.zero_variance()) {
    std::fill(out, out + size, 0.0);
    return;
  }
  const double* r = batch.rewards.data() + offset;
  const double mean = stats.mean;
  const double factor = Factor(options.estimator, stats, batch_std);
  if (!has_unscorable) {
    for (size_t i = 0; i < size; ++i) out[i] = (r[i] - mean) * factor;
  } else {
    for (size_t i = 0; i < size; ++i) {
      out[i] = IsScorable(batch, offset + i) ? (r[i] - mean) * factor : 0.0;
    }
  }
}

}  // namespace

std::string_view CauseName(ZeroVarianceCause cause) {
  switch (cause) {
    case ZeroVarianceCause::kNone:
      return "none";
    case ZeroVarianceCause::kIdenticalRewards:
      return "identical_rewards";
    case ZeroVarianceCause::kBelowThreshold:
      return "below_threshold";
    case ZeroVarianceCause::kAllCorrect:
      return "all_correct";
    case ZeroVarianceCause::kAllWrong:
      return "all_wrong";
    case ZeroVarianceCause::kAllTruncated:
      return "all_truncated";
    case ZeroVarianceCause::kAllUnscorable:
      return "all_unscorable";
    case ZeroVarianceCause::kSingleton:
      return "singleton";
  }
  return "unknown";
}

absl::Status ValidateShape(const Batch& batch, const Options& options) {
  if (!batch.outcomes.empty() && batch.outcomes.size() != batch.rewards.size()) {
    return absl::InvalidArgumentError(absl::StrCat("outcomes has ", batch.outcomes.size(),
                                                   " entries; expected none or one per ",
                                                   "reward (", batch.rewards.size(), ")"));
  }
  uint64_t total = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    if (batch.group_sizes[g] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("group_sizes[", g, "] is 0: every group needs at least one reward"));
    }
    total += batch.group_sizes[g];
  }
  if (total != batch.rewards.size()) {
    return absl::InvalidArgumentError(absl::StrCat("group_sizes sum to ", total, " but there are ",
                                                   batch.rewards.size(), " rewards"));
  }
  if (!std::isfinite(options.zero_variance_threshold) || options.zero_variance_threshold < 0) {
    return absl::InvalidArgumentError(absl::StrCat("zero_variance_threshold must be finite and ",
                                                   ">= 0, got ", options.zero_variance_threshold));
  }
  switch (options.estimator) {
    case Estimator::kGrpo:
    case Estimator::kDrGrpo:
    case Estimator::kRloo:
    case Estimator::kBatchNormalized:
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown estimator ", static_cast<int>(options.estimator)));
  }
  if (options.deviation != Deviation::kSample && options.deviation != Deviation::kPopulation) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown deviation ", static_cast<int>(options.deviation)));
  }
  return absl::OkStatus();
}

absl::Status Compute(const Batch& batch, const Options& options, std::span<double> advantages,
                     std::span<GroupStats> groups, BatchSummary* summary) {
  RLSCORE_RETURN_IF_ERROR(ValidateShape(batch, options));
  const double tau = options.zero_variance_threshold;
  const bool batch_normalized = options.estimator == Estimator::kBatchNormalized;

  BatchSummary s;
  s.groups = batch.group_sizes.size();
  s.rewards = batch.rewards.size();
  BatchMoments moments;
  std::vector<double> scratch;  // scorable rewards of a group that has unscorable entries

  size_t offset = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    const size_t size = batch.group_sizes[g];
    GroupStats& st = groups[g];
    st = GroupStats{};

    // The scorable rewards of the group, contiguous: the caller's memory in the common case.
    const double* values = batch.rewards.data() + offset;
    size_t n = size;
    bool has_unscorable = false;
    if (!batch.outcomes.empty()) {
      for (size_t i = offset; i < offset + size; ++i) {
        has_unscorable |= batch.outcomes[i] == Outcome::kUnscorable;
      }
      if (has_unscorable) {
        scratch.clear();
        for (size_t i = offset; i < offset + size; ++i) {
          if (batch.outcomes[i] != Outcome::kUnscorable) scratch.push_back(batch.rewards[i]);
        }
        values = scratch.data();
        n = scratch.size();
        s.unscorable += size - n;
      }
    }
    st.scorable = static_cast<uint32_t>(n);

    double m2 = 0.0;
    bool identical = true;
    if (n > 0) {
      const FirstPass first = SumAndIdentity(values, n);
      const double sum = first.sum;
      if (!std::isfinite(sum)) return NonFiniteError(batch, g, offset, size);
      identical = first.identical;
      // The mean of identical values is the value itself, exactly.
      st.mean = identical ? values[0] : sum / static_cast<double>(n);
      m2 = identical ? 0.0 : SumSquaredDeviations(values, n, st.mean);
      if (!std::isfinite(m2)) return NonFiniteError(batch, g, offset, size);
      st.std = !identical && m2 < kTinySumOfSquares
                   ? TinySpreadStd(values, n, st.mean, options.deviation, &m2)
                   : StdFromM2(m2, n, options.deviation);
    }
    moments.Merge(n, st.mean, m2);

    if (n == 0) {
      st.cause = ZeroVarianceCause::kAllUnscorable;
    } else if (n == 1) {
      st.cause = ZeroVarianceCause::kSingleton;
    } else if (identical || st.std < std::max(tau, kSmallestUsableStd)) {
      // Even with τ = 0: σ == 0 without bit-identity (+0.0 beside -0.0) or a subnormal σ.
      st.cause = CauseFromOutcomes(batch, offset, size);
      if (st.cause == ZeroVarianceCause::kNone) {
        st.cause =
            identical ? ZeroVarianceCause::kIdenticalRewards : ZeroVarianceCause::kBelowThreshold;
      }
    }
    if (!batch_normalized) {
      ++s.groups_by_cause[static_cast<size_t>(st.cause)];
      WriteGroup(batch, options, st, 0.0, offset, size, has_unscorable, advantages.data() + offset);
    }
    offset += size;
  }

  if (!std::isfinite(moments.m2)) {
    return absl::InvalidArgumentError(
        "rewards of the batch overflow double precision: magnitudes above about 1e150 are not "
        "supported");
  }
  s.reward_mean = moments.mean;
  s.reward_std = StdFromM2(moments.m2, moments.n, options.deviation);

  if (batch_normalized) {
    // σ_batch is known only now: a second sweep writes the advantages.
    offset = 0;
    for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
      const size_t size = batch.group_sizes[g];
      GroupStats& st = groups[g];
      if (!st.zero_variance() && (s.reward_std < std::max(tau, kSmallestUsableStd))) {
        st.cause = ZeroVarianceCause::kBelowThreshold;
      }
      ++s.groups_by_cause[static_cast<size_t>(st.cause)];
      const bool has_unscorable = st.scorable != size;
      WriteGroup(batch, options, st, s.reward_std, offset, size, has_unscorable,
                 advantages.data() + offset);
      offset += size;
    }
  }

  s.zero_variance_groups = s.groups - s.groups_by_cause[0];
  s.zero_variance_fraction =
      s.groups == 0 ? 0.0
                    : static_cast<double>(s.zero_variance_groups) / static_cast<double>(s.groups);
  *summary = s;
  return absl::OkStatus();
}

absl::StatusOr<Result> Compute(const Batch& batch, const Options& options) {
  Result result;
  result.advantages.resize(batch.rewards.size());
  result.groups.resize(batch.group_sizes.size());
  RLSCORE_RETURN_IF_ERROR(
      Compute(batch, options, result.advantages, result.groups, &result.summary));
  return result;
}

namespace {

class CpuBackend final : public Backend {
 public:
  std::string_view Name() const override { return "cpu"; }
  absl::Status Compute(const Batch& batch, const Options& options, std::span<double> advantages,
                       std::span<GroupStats> groups, BatchSummary* summary) override {
    return advantage::Compute(batch, options, advantages, groups, summary);
  }
};

}  // namespace

std::unique_ptr<Backend> NewCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace rlscore::advantage
