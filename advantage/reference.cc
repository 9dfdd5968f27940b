#include "advantage/reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

namespace rlscore::advantage::reference {
namespace {

// Σ term(x[i]) in the canonical order, with one code path for every n (no branch on the size
// beyond the loop): whole rows of kLanes, then the last partial row with its missing lanes adding
// +0.0, which is what a lane that received nothing holds anyway. A group smaller than kLanes thus
// folds all kLanes lanes, the empty ones adding nothing.
template <typename Term>
double CanonicalSum(const double* x, size_t n, Term term) {
  double v[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 8
    for (size_t l = 0; l < kLanes; ++l) v[l] += term(x[i + l]);
  }
  if (i < n) {
#pragma GCC unroll 8
    for (size_t l = 0; l < kLanes; ++l) {
      const double t = term(x[std::min(i + l, n - 1)]);  // always in bounds
      v[l] += i + l < n ? t : 0.0;
    }
  }
#pragma GCC unroll 8
  for (size_t w = kLanes / 2; w >= 1; w /= 2) {
#pragma GCC unroll 8
    for (size_t j = 0; j < w; ++j) v[j] += v[j + w];
  }
  return v[0];
}

bool IsScorable(const Batch& batch, size_t index) {
  return batch.outcomes.empty() || batch.outcomes[index] != Outcome::kUnscorable;
}

// The cause from the outcomes of the scorable entries of one group.
ZeroVarianceCause CauseFromOutcomes(const Batch& batch, size_t offset, size_t size) {
  if (batch.outcomes.empty()) return ZeroVarianceCause::kNone;
  uint32_t present = 0;
  for (size_t i = offset; i < offset + size; ++i) {
    if (batch.outcomes[i] != Outcome::kUnscorable) {
      present |= 1u << static_cast<int>(batch.outcomes[i]);
    }
  }
  return CauseFromOutcomeSet(present);
}

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
  const double scaled = CanonicalSumSquaredScaled(x, n, mean, scale);
  *m2 = scaled * scale * scale;
  return scale * StdFromM2(scaled, n, kind);
}

// Writes the advantages of one group whose statistics and cause are final: +0.0 for a
// zero-variance group and for unscorable entries.
void WriteGroup(const Batch& batch, const Options& options, const GroupStats& stats,
                double batch_std, size_t offset, size_t size, double* out) {
  if (stats.zero_variance()) {
    std::fill(out, out + size, 0.0);
    return;
  }
  const double* r = batch.rewards.data() + offset;
  const double mean = stats.mean;
  const double factor = Factor(options.estimator, stats.std, stats.scorable, batch_std);
  if (stats.scorable == size) {
    for (size_t i = 0; i < size; ++i) out[i] = (r[i] - mean) * factor;
  } else {
    for (size_t i = 0; i < size; ++i) {
      out[i] = IsScorable(batch, offset + i) ? (r[i] - mean) * factor : 0.0;
    }
  }
}

}  // namespace

SumAndIdentity CanonicalSumAndIdentity(const double* x, size_t n) {
  const uint64_t first = std::bit_cast<uint64_t>(x[0]);
  uint64_t diff = 0;  // in the same pass (the sum's clamped reads only repeat x[n - 1])
  const double sum = CanonicalSum(x, n, [&diff, first](double v) {
    diff |= std::bit_cast<uint64_t>(v) ^ first;
    return v;
  });
  return {sum, diff == 0};
}

double CanonicalSumSquaredDeviations(const double* x, size_t n, double mean) {
  return CanonicalSum(x, n, [mean](double v) {
    const double d = v - mean;
    return d * d;
  });
}

double CanonicalSumSquaredScaled(const double* x, size_t n, double mean, double scale) {
  return CanonicalSum(x, n, [mean, scale](double v) {
    const double d = (v - mean) / scale;
    return d * d;
  });
}

Moments MergeTree(std::span<Moments> m) {
  const size_t count = m.size();
  if (count == 0) return Moments{};
  for (size_t w = 1; w < count; w *= 2) {
    for (size_t j = 0; j + w < count; j += 2 * w) m[j] = Merge(m[j], m[j + w]);
  }
  return m[0];
}

void MomentStack::Push(const Moments& m) {
  // Adding one to the counter: each trailing one bit is a complete left sibling to merge with.
  Moments carry = m;
  int k = 0;
  for (uint64_t c = count_; c & 1; c >>= 1, ++k) carry = Merge(slots_[k], carry);
  slots_[k] = carry;
  ++count_;
}

Moments MomentStack::Root() const {
  // The incomplete right edge of the tree: each smaller run is the right child of the next
  // larger one, so fold from the smallest up.
  Moments root;
  bool have = false;
  for (int k = 0; k < 64; ++k) {
    if (!((count_ >> k) & 1)) continue;
    root = have ? Merge(slots_[k], root) : slots_[k];
    have = true;
  }
  return root;
}

Failure ComputeReference(const Batch& batch, const Options& options, std::span<double> advantages,
                         std::span<GroupStats> groups, BatchSummary* summary) {
  const double tau = options.zero_variance_threshold;
  const bool batch_normalized = options.estimator == Estimator::kBatchNormalized;

  BatchSummary s;
  s.groups = batch.group_sizes.size();
  s.rewards = batch.rewards.size();
  MomentStack moments;
  std::vector<double> scratch;  // scorable rewards of a group that has unscorable entries

  size_t offset = 0;
  for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
    const size_t size = batch.group_sizes[g];
    GroupStats& st = groups[g];
    st = GroupStats{};

    // The scorable rewards of the group, contiguous: the caller's memory in the common case.
    const double* values = batch.rewards.data() + offset;
    size_t n = size;
    if (!batch.outcomes.empty()) {
      bool has_unscorable = false;
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
      const SumAndIdentity first = CanonicalSumAndIdentity(values, n);
      if (!std::isfinite(first.sum)) return {Failure::Kind::kGroupNotFinite, g};
      identical = first.identical;
      // The mean of identical values is the value itself, exactly.
      st.mean = identical ? values[0] : first.sum / static_cast<double>(n);
      m2 = identical ? 0.0 : CanonicalSumSquaredDeviations(values, n, st.mean);
      if (!std::isfinite(m2)) return {Failure::Kind::kGroupNotFinite, g};
      st.std = !identical && m2 < kTinySumOfSquares
                   ? TinySpreadStd(values, n, st.mean, options.deviation, &m2)
                   : StdFromM2(m2, n, options.deviation);
    }
    moments.Push(Moments{n, st.mean, m2});

    if (n == 0) {
      st.cause = ZeroVarianceCause::kAllUnscorable;
    } else if (n == 1) {
      st.cause = ZeroVarianceCause::kSingleton;
    } else if (identical || BelowThreshold(st.std, tau)) {
      // Even with τ = 0: σ == 0 without bit-identity (+0.0 beside -0.0) or a subnormal σ.
      st.cause = CauseFromOutcomes(batch, offset, size);
      if (st.cause == ZeroVarianceCause::kNone) {
        st.cause =
            identical ? ZeroVarianceCause::kIdenticalRewards : ZeroVarianceCause::kBelowThreshold;
      }
    }
    if (!batch_normalized) {
      ++s.groups_by_cause[static_cast<size_t>(st.cause)];
      WriteGroup(batch, options, st, 0.0, offset, size, advantages.data() + offset);
    }
    offset += size;
  }

  const Moments all = moments.Root();
  if (!std::isfinite(all.m2)) return {Failure::Kind::kBatchOverflow, 0};
  s.reward_mean = all.mean;
  s.reward_std = StdFromM2(all.m2, all.n, options.deviation);

  if (batch_normalized) {
    // σ_batch is known only now: a second sweep writes the advantages.
    offset = 0;
    for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
      const size_t size = batch.group_sizes[g];
      GroupStats& st = groups[g];
      if (!st.zero_variance() && BelowThreshold(s.reward_std, tau)) {
        st.cause = ZeroVarianceCause::kBelowThreshold;
      }
      ++s.groups_by_cause[static_cast<size_t>(st.cause)];
      WriteGroup(batch, options, st, s.reward_std, offset, size, advantages.data() + offset);
      offset += size;
    }
  }

  s.zero_variance_groups = s.groups - s.groups_by_cause[0];
  s.zero_variance_fraction =
      s.groups == 0 ? 0.0
                    : static_cast<double>(s.zero_variance_groups) / static_cast<double>(s.groups);
  *summary = s;
  return {};
}

}  // namespace rlscore::advantage::reference
