#include "advantage/reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/cpu_features.h"

// The AVX2 and AVX-512 variants of ComputeInterleaved, chosen at run time.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RLSCORE_X86_VECTORS 1
#include <immintrin.h>
#else
#define RLSCORE_X86_VECTORS 0
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#endif

// Forces the vector helpers into their caller, so that they are compiled for the caller's
// instruction set (an AVX-512 caller gets AVX-512 code).
#define RLSCORE_VECTOR_INLINE [[gnu::always_inline]] inline
#define RLSCORE_VECTOR_LAMBDA __attribute__((always_inline))

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

void MomentStack::PushRun(const Moments& m, int level) {
  Moments carry = m;
  int k = level;
  for (uint64_t c = count_ >> level; c & 1; c >>= 1, ++k) carry = Merge(slots_[k], carry);
  slots_[k] = carry;
  count_ += uint64_t{1} << level;
}

namespace {

// Why a group with n scorable entries carries no signal, or kNone.
ZeroVarianceCause CauseOf(const Batch& batch, size_t offset, size_t size, size_t n, bool identical,
                          double std, double tau) {
  if (n == 0) return ZeroVarianceCause::kAllUnscorable;
  if (n == 1) return ZeroVarianceCause::kSingleton;
  if (!identical && !BelowThreshold(std, tau)) return ZeroVarianceCause::kNone;
  // Even with τ = 0: σ == 0 without bit-identity (+0.0 beside -0.0) or a subnormal σ.
  const ZeroVarianceCause cause = CauseFromOutcomes(batch, offset, size);
  if (cause != ZeroVarianceCause::kNone) return cause;
  return identical ? ZeroVarianceCause::kIdenticalRewards : ZeroVarianceCause::kBelowThreshold;
}

// The canonical sums of the single-group path, one lane after the other: what ComputeReference
// runs. ComputeInterleaved passes WideSums, the same operations on vectors.
struct ScalarSums {
  static SumAndIdentity Sum(const double* x, size_t n) { return CanonicalSumAndIdentity(x, n); }
  static double SquaredDeviations(const double* x, size_t n, double mean) {
    return CanonicalSumSquaredDeviations(x, n, mean);
  }
};

// The statistics of one group on its own (the single-group path), with `*m2` the Σ(x - μ)² that
// enters the batch's moments. Returns false when the sum or Σ(x - μ)² of its scorable rewards is
// not finite.
template <typename Sums>
RLSCORE_VECTOR_INLINE bool SingleGroupStats(const Batch& batch, const Options& options,
                                            size_t offset, size_t size,
                                            std::vector<double>* scratch, GroupStats* st,
                                            double* m2) {
  *st = GroupStats{};
  // The scorable rewards of the group, contiguous: the caller's memory in the common case.
  const double* values = batch.rewards.data() + offset;
  size_t n = size;
  if (!batch.outcomes.empty()) {
    bool has_unscorable = false;
    for (size_t i = offset; i < offset + size; ++i) {
      has_unscorable |= batch.outcomes[i] == Outcome::kUnscorable;
    }
    if (has_unscorable) {
      scratch->clear();
      for (size_t i = offset; i < offset + size; ++i) {
        if (batch.outcomes[i] != Outcome::kUnscorable) scratch->push_back(batch.rewards[i]);
      }
      values = scratch->data();
      n = scratch->size();
    }
  }
  st->scorable = static_cast<uint32_t>(n);

  *m2 = 0.0;
  bool identical = true;
  if (n > 0) {
    const SumAndIdentity first = Sums::Sum(values, n);
    if (!std::isfinite(first.sum)) return false;
    identical = first.identical;
    // The mean of identical values is the value itself, exactly.
    st->mean = identical ? values[0] : first.sum / static_cast<double>(n);
    *m2 = identical ? 0.0 : Sums::SquaredDeviations(values, n, st->mean);
    if (!std::isfinite(*m2)) return false;
    st->std = !identical && *m2 < kTinySumOfSquares
                  ? TinySpreadStd(values, n, st->mean, options.deviation, m2)
                  : StdFromM2(*m2, n, options.deviation);
  }
  st->cause = CauseOf(batch, offset, size, n, identical, st->std, options.zero_variance_threshold);
  return true;
}

// Everything after the groups' statistics: σ_batch, the advantages of kBatchNormalized (known only
// now) and the summary's totals. `s` holds the counts so far; the groups' causes are already
// counted unless the estimator is kBatchNormalized.
Failure FinishBatch(const Batch& batch, const Options& options, const Moments& all,
                    std::span<double> advantages, std::span<GroupStats> groups, BatchSummary s,
                    BatchSummary* summary) {
  if (!std::isfinite(all.m2)) return {Failure::Kind::kBatchOverflow, 0};
  s.reward_mean = all.mean;
  s.reward_std = StdFromM2(all.m2, all.n, options.deviation);

  if (options.estimator == Estimator::kBatchNormalized) {
    size_t offset = 0;
    for (size_t g = 0; g < batch.group_sizes.size(); ++g) {
      const size_t size = batch.group_sizes[g];
      GroupStats& st = groups[g];
      if (!st.zero_variance() && BelowThreshold(s.reward_std, options.zero_variance_threshold)) {
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

// ---------------------------------------------------------------------------------------------
// ComputeInterleaved.
//
// Groups go through in blocks of kBlockGroups. A block of one small size takes UniformBlock, and a
// block of small groups of different sizes takes RaggedBlock (on AVX-512 also a block with
// unscorable entries). Otherwise the small groups (at most kSmallRows rows) are sorted by number
// of rows into buckets, and each bucket is taken in chunks of W groups, W the number of doubles in
// a vector. A vector holds W consecutive lanes of one group, so a row of kLanes is kLanes / W
// vectors and the group's own vectors accumulate its lanes; the fold then pairs the lanes of the
// chunk's groups so that one vector ends up holding one sum per group (lanes across groups), which
// carries the whole chunk through μ, σ and the factor. Every operation is the scalar one of
// CanonicalSum, StdFromM2, Factor, Merge or WriteGroup, with the same operands, applied to several
// lanes at once; nothing is contracted or reassociated. A group with unscorable entries is read
// from a copy of its scorable rewards, which is what the single-group path sums. What the kernels
// do not finish (large groups, and any group that could be identical, or is clamped, rescaled or
// not finite) takes the single-group path above, with its sums and writes W lanes at a time
// (WideSums, WideWrite).

// A group of at most kSmallRows rows takes the kernels; longer groups keep the lanes busy on the
// single-group path.
constexpr size_t kSmallRows = 8;
// Rewards that are all one value x leave a Σ(x - μ)² of rounding residue only. With u = 2^-53
// and n <= 64 entries (kSmallRows rows), the canonical sum is within γ(n-1)·n·|x| of n·x, so
// |x - μ| <= γ(n)·|x| (γ(k) = ku / (1 - ku)), the subtraction x - μ is exact, and
// Σ(x - μ)² <= n·γ(n)²·x²·(1 + u)·(1 + γ(n-1)) < 1.01·n³·u²·x² < 1.02·n³·u²·μ². A group whose
// Σ(x - μ)² is above kIdenticalSpread·n³·μ² (μ its mean: about twice that bound) is therefore not
// identical, and the kernels need not compare its bits; any other group takes the single-group
// path, which compares them. (Where μ² underflows, an identical group's Σ(x - μ)² is below
// kTinySumOfSquares, and that alone sends it to the single-group path.)
constexpr double kIdenticalSpread = 0x1p-105;  // 2u²
// Groups per block: a power of two, so that a full block is one subtree of the moments' tree.
constexpr int kBlockLevel = 6;
constexpr size_t kBlockGroups = size_t{1} << kBlockLevel;
constexpr uint64_t kAllOnes = ~uint64_t{0};
// How many bytes of the next block's outcomes a block asks for (Interleaved).
constexpr size_t kOutcomesAhead = 2048;
// How far ahead of the chunk they sum (in rewards: 4 KiB) UniformBlock and RaggedBlock ask for the
// lines of the rewards, and ahead of the chunk they write for those of the advantages. Asked for a
// block ahead (16 KiB of each for ragged groups of 1 to 64, beside the block in L1), ragged groups
// ran a sixth slower at 10^7 rewards; 256 and 1,024 were slower than 512 for groups of 16.
constexpr size_t kPrefetchAhead = 512;

// kLastRow.lanes[p]: all ones in the p lanes that a last row of p ∈ [1, kLanes] elements fills.
// A masked-off lane adds +0.0, which is what a lane that received nothing adds in CanonicalSum.
struct LastRowMasks {
  alignas(64) uint64_t lanes[kLanes + 1][kLanes];
};
constexpr LastRowMasks MakeLastRowMasks() {
  LastRowMasks m{};
  for (size_t p = 0; p <= kLanes; ++p) {
    for (size_t l = 0; l < kLanes; ++l) m.lanes[p][l] = l < p ? kAllOnes : 0;
  }
  return m;
}
constexpr LastRowMasks kLastRow = MakeLastRowMasks();

typedef double F2 __attribute__((vector_size(16)));

// GCC and Clang note that passing or returning a 32- or 64-byte vector changes the ABI where AVX
// is not enabled; every such function below is inlined into a caller that enables it. Off to the
// end of the file: GCC places some of these notes there.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// Lane-wise IEEE square root. A correctly rounded square root gives the same bits at every width,
// so the widest instruction is taken: Zen 5 runs one 8-wide square root in 2.1 ns and four 2-wide
// ones in 8.8 ns. GCC gets it through inline assembly, which is compiled for the caller that the
// helper is inlined into (an intrinsic would need the wider target on every function in between);
// Clang checks an assembly operand's size against the function it is written in, so Clang builds
// split wider vectors into 2-wide halves.
typedef double F4 __attribute__((vector_size(32)));
typedef double F8 __attribute__((vector_size(64)));
RLSCORE_VECTOR_INLINE F2 Sqrt(const F2& v) {
#if defined(__SSE2__)
  return _mm_sqrt_pd(v);
#else
  return F2{std::sqrt(v[0]), std::sqrt(v[1])};
#endif
}
#if RLSCORE_X86_VECTORS && !defined(__clang__)
RLSCORE_VECTOR_INLINE F4 Sqrt(const F4& v) {
  F4 r;
  asm("vsqrtpd %1, %0" : "=x"(r) : "x"(v));
  return r;
}
RLSCORE_VECTOR_INLINE F8 Sqrt(const F8& v) {
  F8 r;
  asm("vsqrtpd %1, %0" : "=v"(r) : "v"(v));
  return r;
}
#else
RLSCORE_VECTOR_INLINE F4 Sqrt(const F4& v) {
  const F2 lo = Sqrt(F2(__builtin_shufflevector(v, v, 0, 1)));
  const F2 hi = Sqrt(F2(__builtin_shufflevector(v, v, 2, 3)));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3);
}
RLSCORE_VECTOR_INLINE F8 Sqrt(const F8& v) {
  const F4 lo = Sqrt(F4(__builtin_shufflevector(v, v, 0, 1, 2, 3)));
  const F4 hi = Sqrt(F4(__builtin_shufflevector(v, v, 4, 5, 6, 7)));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}
#endif

// W doubles per vector. A vector holds W consecutive lanes of one group (a row of kLanes is
// kPerRow vectors), or one value for each of W groups (lane h: group h of a chunk).
template <int W>
struct Simd {
  typedef double F __attribute__((vector_size(8 * W)));
  typedef uint64_t U __attribute__((vector_size(8 * W)));
  static constexpr size_t kPerRow = kLanes / W;

  RLSCORE_VECTOR_INLINE static F Load(const double* p) {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  RLSCORE_VECTOR_INLINE static U LoadBits(const uint64_t* p) {
    U v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  RLSCORE_VECTOR_INLINE static void Store(double* p, const F& v) { std::memcpy(p, &v, sizeof v); }
  RLSCORE_VECTOR_INLINE static U Bits(const F& v) { return __builtin_bit_cast(U, v); }
  RLSCORE_VECTOR_INLINE static F FromBits(const U& v) { return __builtin_bit_cast(F, v); }
  template <typename Mask>
  RLSCORE_VECTOR_INLINE static U MaskBits(const Mask& m) {
    return __builtin_bit_cast(U, m);
  }
  // x in every lane, -0.0 included (F{} + x would turn -0.0 into +0.0, and with it SplatBits of
  // the sign bit into 0).
  RLSCORE_VECTOR_INLINE static F Splat(double x) {
    return FromBits(U{} + std::bit_cast<uint64_t>(x));
  }
  RLSCORE_VECTOR_INLINE static U SplatBits(uint64_t x) { return U{} + x; }
  // a where `mask` is all ones, b where it is zero.
  RLSCORE_VECTOR_INLINE static F Select(const U& mask, const F& a, const F& b) {
    return FromBits((Bits(a) & mask) | (Bits(b) & ~mask));
  }
  // All ones where x is finite: x - x is +0.0 for every finite x (exactly, however large), NaN
  // for ±Inf and NaN. (A compare of the magnitude's bits costs several instructions on AVX2,
  // which has no unsigned 64-bit compare.)
  RLSCORE_VECTOR_INLINE static U Finite(const F& x) { return MaskBits(x - x == F{}); }

  // The even lanes of the 2W values lo:hi in `even`, the odd ones in `odd`.
  template <typename V>
  RLSCORE_VECTOR_INLINE static void Deinterleave(const V& lo, const V& hi, V* even, V* odd) {
    if constexpr (W == 8) {
      *even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
      *odd = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
    } else if constexpr (W == 4) {
      *even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6);
      *odd = __builtin_shufflevector(lo, hi, 1, 3, 5, 7);
    } else {
      static_assert(W == 2);
      *even = __builtin_shufflevector(lo, hi, 0, 2);
      *odd = __builtin_shufflevector(lo, hi, 1, 3);
    }
  }

  // The fold of one group's lanes, lane[j] += lane[j + w], for the w that span vectors (w >= W):
  // what remains, in one vector, is folded by ReduceGroups.
  RLSCORE_VECTOR_INLINE static F FoldRow(const F (&v)[kPerRow]) {
    if constexpr (kPerRow == 4) {
      return (v[0] + v[2]) + (v[1] + v[3]);
    } else if constexpr (kPerRow == 2) {
      return v[0] + v[1];
    } else {
      return v[0];
    }
  }

  // The rest of the fold, lane[j] += lane[j + w] for w = W / 2, ..., 1, of W groups at once (or
  // the OR of their lanes, for bit patterns): lane h of the result is group h's lane 0. Each
  // level pairs the lower lanes of its inputs with the upper ones, so that one instruction folds
  // several groups (lanes across groups); the left operand is always lane j, as in CanonicalSum.
  template <typename V>
  RLSCORE_VECTOR_INLINE static V ReduceGroups(const V (&v)[W]) {
    if constexpr (W == 8) {
      V c[4];
      for (int i = 0; i < 4; ++i) {
        c[i] = Combine(__builtin_shufflevector(v[2 * i], v[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11),
                       __builtin_shufflevector(v[2 * i], v[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15));
      }
      V d[2];
      for (int i = 0; i < 2; ++i) {
        d[i] = Combine(__builtin_shufflevector(c[2 * i], c[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13),
                       __builtin_shufflevector(c[2 * i], c[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15));
      }
      return Combine(__builtin_shufflevector(d[0], d[1], 0, 2, 4, 6, 8, 10, 12, 14),
                     __builtin_shufflevector(d[0], d[1], 1, 3, 5, 7, 9, 11, 13, 15));
    } else if constexpr (W == 4) {
      V d[2];
      for (int i = 0; i < 2; ++i) {
        d[i] = Combine(__builtin_shufflevector(v[2 * i], v[2 * i + 1], 0, 1, 4, 5),
                       __builtin_shufflevector(v[2 * i], v[2 * i + 1], 2, 3, 6, 7));
      }
      return Combine(__builtin_shufflevector(d[0], d[1], 0, 2, 4, 6),
                     __builtin_shufflevector(d[0], d[1], 1, 3, 5, 7));
    } else {
      static_assert(W == 2);
      return Combine(__builtin_shufflevector(v[0], v[1], 0, 2),
                     __builtin_shufflevector(v[0], v[1], 1, 3));
    }
  }

 private:
  // + for sums, | for bit patterns.
  template <typename V>
  RLSCORE_VECTOR_INLINE static V Combine(const V& x, const V& y) {
    if constexpr (std::is_floating_point_v<std::remove_cvref_t<decltype(x[0])>>) {
      return x + y;
    } else {
      return x | y;
    }
  }
};

// The groups of one block; index j is group g0 + j. The arrays are left uninitialised (they are
// some 21 KiB, set up per call): a block reads only what it has set.
struct Block {
  // The widest vector: buckets are padded to a multiple of it.
  static constexpr size_t kPad = 8;

  size_t count = 0;
  // The small groups by number of rows (bucket rows - 1), so that the groups of a bucket run
  // kernels unrolled for their number of rows, with no branch on the size. Entries
  // [bucket_size, next multiple of kPad) repeat entry 0, so that every chunk reads W entries.
  size_t bucket_size[kSmallRows] = {};
  uint8_t bucket_j[kSmallRows][kBlockGroups + kPad];
  // Where the kernels read the group's rewards and write its advantages: the caller's arrays,
  // or for a group with unscorable entries (`compacted`) a copy of its scorable rewards, which
  // the write pass overwrites.
  const double* bucket_x[kSmallRows][kBlockGroups + kPad];
  double* bucket_y[kSmallRows][kBlockGroups + kPad];
  const uint64_t* bucket_last[kSmallRows][kBlockGroups + kPad];  // kLastRow of its last row
  double bucket_n[kSmallRows][kBlockGroups + kPad];
  // This block's number of rewards, or 0 when a block as long would run past the batch: how far
  // ahead the kernels may ask for lines. The bucketed kernels ask for the lines of the same
  // groups one block ahead, a group at a time in every pass: the first rows of its rewards in
  // the first pass, the other rows and the block's statistics in the second, its advantages in
  // the last. Asked for all at once, they fill the core's miss buffers and stall the pass that
  // asks; not asked for, the next block's first pass waits on memory, because the hardware
  // prefetcher does not run ahead while the passes stay in cache (and does not follow the order
  // of buckets). UniformBlock and RaggedBlock, which go through the block in address order, ask
  // for lines kPrefetchAhead rewards ahead instead.
  size_t prefetch_distance = 0;
  // Bit j: group j takes the single-group path, statistics and advantages (it is not small, or
  // not normal). The kernels finish the others.
  uint64_t single_path = 0;
  // Bit j: group j has unscorable entries, and the kernels read the copy of its scorable ones.
  // Once they have found it normal, its advantages are written from the caller's rewards, since
  // the copy's places are not the group's.
  uint64_t compacted = 0;
  bool has_empty = false;  // some group has no scorable entry
  size_t offset[kBlockGroups];
  uint32_t size[kBlockGroups];
  // Where RaggedBlock<W, true> reads group j's scorable rewards (b.n[j] of them).
  const double* source[kBlockGroups];
  // Bit k of unscorable[j]: entry k of group j is unscorable, for a group of at most
  // kLanes · kSmallRows entries (FindUnscorable), in a block with an unscorable entry.
  uint64_t unscorable[kBlockGroups];
  // The moments (n, mean, M2) of every group once the block is done.
  alignas(64) double n[kBlockGroups];
  alignas(64) double mean[kBlockGroups];
  alignas(64) double m2[kBlockGroups];
};
static_assert(kBlockGroups <= 64, "Block::single_path has one bit per group");

// What the kernels need from the options.
struct KernelOptions {
  bool sample;
  Estimator estimator;
  double threshold;  // BelowThreshold's: τ, or the smallest normal double
  bool write;        // false for kBatchNormalized, whose factor comes with σ_batch (FinishBatch)
};

// What the passes over a block's chunks hand on to the next pass. The work is split into passes
// over all chunks (sums and μ; Σ(x - μ)², σ and the factor; advantages) because one chunk's chain
// of dependent operations (fold, divide, fold, divide, square root, divide) is long: the other
// chunks' independent work between its steps hides it. σ and the factor follow Σ(x - μ)² in the
// same pass, so that the divider works while the next chunk's squares are loaded and summed,
// rather than alone in a pass of its own.
template <int W>
struct Chunks {
  using F = typename Simd<W>::F;
  using U = typename Simd<W>::U;
  static constexpr size_t kMax = kBlockGroups / W + kSmallRows;

  // Per chunk, lane h for its group h.
  F n[kMax];
  F mean[kMax];
  F factor[kMax];
  // All ones while the group is normal as far as the passes so far can tell: finite, provably
  // not identical (kIdenticalSpread), Σ(x - μ)² not rescaled, two or more entries, σ not below
  // the threshold. Only a normal group is finished by the kernels.
  U normal[kMax];
};

enum class Pass { kSums, kSpreads, kWrite };

// StdFromM2 and Factor of W groups of n entries (n - 1 is exact, n < 2^53), and which of them
// the kernels finish: all ones where the group is normal (Chunks::normal), given `finite_sum`,
// all ones where its sum is finite.
template <int W>
RLSCORE_VECTOR_INLINE typename Simd<W>::U Spreads(const typename Simd<W>::F& n,
                                                  const typename Simd<W>::F& mean,
                                                  const typename Simd<W>::F& m2,
                                                  const typename Simd<W>::U& finite_sum,
                                                  const KernelOptions& o, typename Simd<W>::F* std,
                                                  typename Simd<W>::F* factor) {
  using S = Simd<W>;
  using F = typename S::F;
  using U = typename S::U;
  const F one = S::Splat(1.0);
  const U single = S::MaskBits(n < S::Splat(2.0));
  *std = S::FromBits(S::Bits(Sqrt(m2 / (o.sample ? n - one : n))) & ~single);
  *factor = one;
  switch (o.estimator) {
    case Estimator::kGrpo:
      *factor = one / *std;
      break;
    case Estimator::kRloo:
      *factor = n / (n - one);
      break;
    case Estimator::kDrGrpo:
    case Estimator::kBatchNormalized:
    case Estimator::kReinforcePlusPlusBaseline:
    case Estimator::kGrpoPassK:
    case Estimator::kGdpo:
      break;
  }
  const F identical_bound = S::Splat(kIdenticalSpread) * n * n * n * mean * mean;
  return finite_sum & S::Finite(m2) & S::MaskBits(m2 >= S::Splat(kTinySumOfSquares)) &
         S::MaskBits(m2 > identical_bound) & ~single & ~S::MaskBits(*std < S::Splat(o.threshold));
}

// WriteGroup of a normal group of `size` entries in kRows rows, from x to y: (x - μ) · f. A
// group of one row keeps what y holds past its end (`last`: its kLastRow lanes).
template <int W, size_t kRows>
RLSCORE_VECTOR_INLINE void WriteRows(const double* x, double* y, size_t size,
                                     const typename Simd<W>::F& mu, const typename Simd<W>::F& f,
                                     const uint64_t* last) {
  using S = Simd<W>;
  constexpr size_t kPer = S::kPerRow;
#pragma GCC unroll 8
  for (size_t r = 0; r + 1 < kRows; ++r) {
#pragma GCC unroll 4
    for (size_t k = 0; k < kPer; ++k) {
      S::Store(y + kLanes * r + W * k, (S::Load(x + kLanes * r + W * k) - mu) * f);
    }
  }
  if constexpr (kRows > 1) {
    // The last kLanes entries of the group, which overlap the row before: whole vectors, all
    // inside the group, nothing to mask.
    const size_t tail = size - kLanes;
#pragma GCC unroll 4
    for (size_t k = 0; k < kPer; ++k) {
      S::Store(y + tail + W * k, (S::Load(x + tail + W * k) - mu) * f);
    }
  } else {
#pragma GCC unroll 4
    for (size_t k = 0; k < kPer; ++k) {
      const typename S::F a = (S::Load(x + W * k) - mu) * f;
      S::Store(y + W * k, S::Select(S::LoadBits(last + W * k), a, S::Load(y + W * k)));
    }
  }
}

// Asks for the line kPrefetchAhead rewards past p into L1, to be read or written. The address is
// an integer: it may lie past the array, and a prefetch never faults.
enum PrefetchFor { kRead = 0, kWrite = 1 };
template <PrefetchFor kFor>
RLSCORE_VECTOR_INLINE void PrefetchAhead(const double* p) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) +
                                                   kPrefetchAhead * sizeof(double)),
                     kFor, 3);
}

// CanonicalSum of term over x[0, n), n > 0, W lanes at a time: each vector holds W of a row's
// kLanes lanes, so every lane gets exactly the scalar loop's additions in the same order; the
// last partial row is read from a copy (nothing past x + n is touched) whose missing lanes add
// +0.0, as in CanonicalSum, and the fold is CanonicalSum's. Large groups come from memory: the
// lines kPrefetchAhead rewards ahead are asked for a row at a time, in address order.
template <int W, typename Term>
RLSCORE_VECTOR_INLINE double WideCanonicalSum(const double* x, size_t n, Term term) {
  using S = Simd<W>;
  using F = typename S::F;
  constexpr size_t kPer = S::kPerRow;
  F v[kPer] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    PrefetchAhead<kRead>(x + i);
#pragma GCC unroll 4
    for (size_t k = 0; k < kPer; ++k) v[k] = v[k] + term(S::Load(x + i + W * k));
  }
  if (i < n) {
    // CanonicalSum's clamped reads: the lanes past the end repeat x[n - 1].
    alignas(64) double last[kLanes];
    for (size_t l = 0; l < kLanes; ++l) last[l] = x[std::min(i + l, n - 1)];
#pragma GCC unroll 4
    for (size_t k = 0; k < kPer; ++k) {
      const typename S::U in = S::LoadBits(kLastRow.lanes[n - i] + W * k);
      v[k] = v[k] + S::FromBits(S::Bits(term(S::Load(last + W * k))) & in);
    }
  }
  alignas(64) double lanes[kLanes];
  for (size_t k = 0; k < kPer; ++k) S::Store(lanes + W * k, v[k]);
#pragma GCC unroll 8
  for (size_t w = kLanes / 2; w >= 1; w /= 2) {
#pragma GCC unroll 8
    for (size_t j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  return lanes[0];
}

// The single-group path's sums (ScalarSums) for ComputeInterleaved, W lanes at a time.
template <int W>
struct WideSums {
  using S = Simd<W>;
  using F = typename S::F;
  using U = typename S::U;
  RLSCORE_VECTOR_INLINE static SumAndIdentity Sum(const double* x, size_t n) {
    const U first = S::SplatBits(std::bit_cast<uint64_t>(x[0]));
    U diff{};
    const double sum = WideCanonicalSum<W>(x, n, [&diff, first](const F& v) RLSCORE_VECTOR_LAMBDA {
      diff |= S::Bits(v) ^ first;
      return v;
    });
    bool identical = true;
    for (int k = 0; k < W; ++k) identical &= diff[k] == 0;
    return {sum, identical};
  }
  RLSCORE_VECTOR_INLINE static double SquaredDeviations(const double* x, size_t n, double mean) {
    const F mu = S::Splat(mean);
    return WideCanonicalSum<W>(x, n, [mu](const F& v) RLSCORE_VECTOR_LAMBDA {
      const F d = v - mu;
      return d * d;
    });
  }
};

// WriteGroup of a group with signal and every entry scorable, W entries at a time: (x - μ) · f,
// asking for the lines kPrefetchAhead entries ahead.
template <int W>
RLSCORE_VECTOR_INLINE void WideWrite(const double* x, size_t size, double mean, double factor,
                                     double* y) {
  using S = Simd<W>;
  const typename S::F mu = S::Splat(mean);
  const typename S::F f = S::Splat(factor);
  size_t i = 0;
  for (; i + kLanes <= size; i += kLanes) {
    PrefetchAhead<kWrite>(y + i);
#pragma GCC unroll 4
    for (size_t k = 0; k < S::kPerRow; ++k) {
      S::Store(y + i + W * k, (S::Load(x + i + W * k) - mu) * f);
    }
  }
  for (; i < size; ++i) y[i] = (x[i] - mean) * factor;
}

// One pass over chunk `c`: entries [i, i + valid) of bucket kRows - 1 (the entries past `valid`
// repeat a group of the bucket and are ignored). Sums read a group's last row whole, past its
// end (the bucket's entries are chosen so that this stays inside what they are read from) and
// mask out the lanes past it. Advantages are written for normal groups only.
template <int W, size_t kRows, Pass kPass>
RLSCORE_VECTOR_INLINE void ChunkPass(Block& b, size_t i, size_t valid, size_t c, Chunks<W>& state,
                                     GroupStats* stats, const KernelOptions& o) {
  using S = Simd<W>;
  using F = typename S::F;
  using U = typename S::U;
  constexpr size_t kPer = S::kPerRow;
  constexpr size_t kBucket = kRows - 1;
  constexpr size_t kFirstRows = (kRows + 1) / 2;  // the rows whose next lines the sums ask for
  const uint8_t* js = &b.bucket_j[kBucket][i];
  struct {
    const double* x[W];
    const uint64_t* last[W];
  } g;
  for (size_t h = 0; h < W; ++h) {
    g.x[h] = b.bucket_x[kBucket][i + h];
    g.last[h] = b.bucket_last[kBucket][i + h];
  }

  if constexpr (kPass == Pass::kSums) {
    // CanonicalSumAndIdentity's sum, then μ as for rewards that are not identical: whether they
    // are is told from Σ(x - μ)² (kIdenticalSpread), not from their bits. Without the +0.0 the
    // sum starts from, as in UniformBlock.
    const F n = S::Load(&b.bucket_n[kBucket][i]);
    F lanes[W];
    for (size_t h = 0; h < valid; ++h) {
      F v[kPer];
      const double* next = g.x[h] + b.prefetch_distance;
#pragma GCC unroll 4
      for (size_t r = 0; r < kFirstRows; ++r) __builtin_prefetch(next + kLanes * r, 0, 3);
#pragma GCC unroll 8
      for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
        for (size_t k = 0; k < kPer; ++k) {
          U e = S::Bits(S::Load(g.x[h] + kLanes * r + W * k));
          if (r + 1 == kRows) e &= S::LoadBits(g.last[h] + W * k);
          v[k] = r == 0 ? S::FromBits(e) : v[k] + S::FromBits(e);
        }
      }
      lanes[h] = S::FoldRow(v);
    }
    for (size_t h = valid; h < W; ++h) lanes[h] = lanes[0];  // unused lanes
    const F sum = S::ReduceGroups(lanes);
    state.n[c] = n;
    state.mean[c] = sum / n;
    state.normal[c] = S::Finite(sum);
  } else if constexpr (kPass == Pass::kSpreads) {
    // CanonicalSumSquaredDeviations (a square is never -0.0: the +0.0 start changes nothing).
    const F mean = state.mean[c];
    F squares[W];
    for (size_t h = 0; h < valid; ++h) {
      F v[kPer];
      const double* next = g.x[h] + b.prefetch_distance;
#pragma GCC unroll 4
      for (size_t r = kFirstRows; r < kRows; ++r) __builtin_prefetch(next + kLanes * r, 0, 3);
      const F mu = S::Splat(mean[h]);
#pragma GCC unroll 8
      for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
        for (size_t k = 0; k < kPer; ++k) {
          const F d = S::Load(g.x[h] + kLanes * r + W * k) - mu;
          F t = d * d;
          if (r + 1 == kRows) t = S::FromBits(S::Bits(t) & S::LoadBits(g.last[h] + W * k));
          v[k] = r == 0 ? t : v[k] + t;
        }
      }
      squares[h] = S::FoldRow(v);
    }
    for (size_t h = valid; h < W; ++h) squares[h] = squares[0];  // unused lanes
    const F m2 = S::ReduceGroups(squares);
    if (b.prefetch_distance != 0 && c * W < b.count) {
      const char* next = reinterpret_cast<const char*>(stats + b.count + c * W);
#pragma GCC unroll 4
      for (size_t k = 0; k < W * sizeof(GroupStats); k += 64) __builtin_prefetch(next + k, 1, 3);
    }
    // StdFromM2 and Factor.
    F std, factor;
    const U normal = Spreads<W>(state.n[c], mean, m2, state.normal[c], o, &std, &factor);
    state.factor[c] = factor;
    state.normal[c] = normal;
    for (size_t h = 0; h < valid; ++h) {
      const size_t j = js[h];
      b.mean[j] = mean[h];
      b.m2[j] = m2[h];
      if (normal[h] == 0) {
        b.single_path |= uint64_t{1} << j;
        continue;
      }
      GroupStats& st = stats[j];
      st.mean = mean[h];
      st.std = std[h];
      st.scorable = static_cast<uint32_t>(state.n[c][h]);
      st.cause = ZeroVarianceCause::kNone;
      st.outside_keep_band = false;
    }
  } else {
    // WriteGroup of the normal groups.
    const F mean = state.mean[c];
    const F factor = state.factor[c];
    const U normal = state.normal[c];
    for (size_t h = 0; h < valid; ++h) {
      double* y = b.bucket_y[kBucket][i + h];
#pragma GCC unroll 8
      for (size_t r = 0; r < kRows; ++r) {
        __builtin_prefetch(y + b.prefetch_distance + kLanes * r, 1, 3);
      }
      if (normal[h] == 0) continue;
      WriteRows<W, kRows>(g.x[h], y, static_cast<size_t>(b.bucket_n[kBucket][i + h]),
                          S::Splat(mean[h]), S::Splat(factor[h]), g.last[h]);
    }
  }
}

// One pass over the chunks of every bucket, numbered in the same order by every pass.
template <int W, Pass kPass, size_t... kBuckets>
RLSCORE_VECTOR_INLINE void RunPass(std::index_sequence<kBuckets...>, Block& b, Chunks<W>& state,
                                   GroupStats* stats, const KernelOptions& o) {
  size_t c = 0;
  const auto run_bucket = [&]<size_t kRows>() RLSCORE_VECTOR_LAMBDA {
    const size_t count = b.bucket_size[kRows - 1];
    for (size_t i = 0; i < count; i += W, ++c) {
      ChunkPass<W, kRows, kPass>(b, i, std::min<size_t>(W, count - i), c, state, stats, o);
    }
  };
  (run_bucket.template operator()<kBuckets + 1>(), ...);
}

// A block whose groups all have `size` entries in kRows rows, one after the other from `x`, the
// last group's last row readable whole, every entry scorable but in the groups whose bits are
// set in b.single_path on entry (the kernel writes no advantages for them, and the caller finishes
// them, whatever their statistics here): the arithmetic of ChunkPass with each group's place
// computed instead of looked up, μ and the factor broadcast from the block's arrays. The groups
// past the last whole chunk of W take the single-group path, like every group the kernels do not
// finish.
//
// The chunks go through two stages a chunk apart, in address order: step c sums chunk c, then
// finishes chunk c - 1 (Σ(x - μ)², σ, the factor, the statistics and the advantages). The chain of
// divisions and the square root of chunk c - 1 then runs beside the sums of chunk c + 1, and the
// rewards come from memory at an even pace, asked for kPrefetchAhead rewards ahead. (In three
// passes over the whole block, the bucketed kernels' order, groups of 16 ran at about 0.5 of
// memcpy's rate at 10^7 rewards; this way at about 0.7.)
template <int W, size_t kRows>
RLSCORE_VECTOR_INLINE void UniformBlock(Block& b, uint32_t size, const double* x, double* y,
                                        GroupStats* stats, const KernelOptions& o) {
  using S = Simd<W>;
  using F = typename S::F;
  using U = typename S::U;
  constexpr size_t kPer = S::kPerRow;
  const size_t whole = b.count / W * W;
  const uint64_t in_block = b.count == kBlockGroups ? kAllOnes : (uint64_t{1} << b.count) - 1;
  b.single_path |= whole == kBlockGroups ? 0 : in_block & (kAllOnes << whole);
  const uint64_t* last_lanes = kLastRow.lanes[size - kLanes * (kRows - 1)];
  U last[kPer];
  for (size_t k = 0; k < kPer; ++k) last[k] = S::LoadBits(last_lanes + W * k);
  const F n = S::Splat(static_cast<double>(size));
  U finite_sum[kBlockGroups / W];
  alignas(64) double factor[kBlockGroups];

  const bool prefetch = b.prefetch_distance != 0;
  const size_t ahead = std::min(kPrefetchAhead, b.prefetch_distance);

  // CanonicalSum, without the +0.0 it starts from: that changes only the sign of a zero sum, and
  // only when every reward is -0.0, which leaves Σ(x - μ)² = 0 and the group to the single path.
  // Then μ.
  const auto sums = [&](size_t j) RLSCORE_VECTOR_LAMBDA {
    F lanes[W];
    for (size_t h = 0; h < W; ++h) {
      const double* g = x + (j + h) * size;
      if (prefetch) {
#pragma GCC unroll 8
        for (size_t r = 0; r < kRows; ++r) __builtin_prefetch(g + ahead + kLanes * r, 0, 3);
      }
      F v[kPer];
#pragma GCC unroll 8
      for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
        for (size_t k = 0; k < kPer; ++k) {
          U e = S::Bits(S::Load(g + kLanes * r + W * k));
          if (r + 1 == kRows) e &= last[k];
          v[k] = r == 0 ? S::FromBits(e) : v[k] + S::FromBits(e);
        }
      }
      lanes[h] = S::FoldRow(v);
    }
    const F sum = S::ReduceGroups(lanes);
    S::Store(&b.mean[j], sum / n);
    finite_sum[j / W] = S::Finite(sum);
  };
  // CanonicalSumSquaredDeviations (a square is never -0.0: the +0.0 start changes nothing), then
  // StdFromM2, Factor and every group's statistics (the single path overwrites its own).
  const auto spreads = [&](size_t j) RLSCORE_VECTOR_LAMBDA {
    F squares[W];
    for (size_t h = 0; h < W; ++h) {
      const double* g = x + (j + h) * size;
      const F mu = S::Splat(b.mean[j + h]);
      F v[kPer];
#pragma GCC unroll 8
      for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
        for (size_t k = 0; k < kPer; ++k) {
          const F d = S::Load(g + kLanes * r + W * k) - mu;
          F t = d * d;
          if (r + 1 == kRows) t = S::FromBits(S::Bits(t) & last[k]);
          v[k] = r == 0 ? t : v[k] + t;
        }
      }
      squares[h] = S::FoldRow(v);
    }
    const F m2 = S::ReduceGroups(squares);
    S::Store(&b.m2[j], m2);
    if (prefetch) {
      const char* next = reinterpret_cast<const char*>(stats + b.count + j);
#pragma GCC unroll 4
      for (size_t i = 0; i < W * sizeof(GroupStats); i += 64) __builtin_prefetch(next + i, 1, 3);
    }
    F sd, f;
    const U normal = Spreads<W>(n, S::Load(&b.mean[j]), m2, finite_sum[j / W], o, &sd, &f);
    S::Store(&factor[j], f);
    S::Store(&b.n[j], n);
    for (size_t h = 0; h < W; ++h) {
      if (normal[h] == 0) b.single_path |= uint64_t{1} << (j + h);
      stats[j + h] = GroupStats{.mean = b.mean[j + h], .std = sd[h], .scorable = size};
    }
  };
  // WriteGroup of the normal groups.
  const auto write = [&](size_t j) RLSCORE_VECTOR_LAMBDA {
    for (size_t g = j; g < j + W; ++g) {
      double* out = y + g * size;
      if (prefetch) {
#pragma GCC unroll 8
        for (size_t r = 0; r < kRows; ++r) __builtin_prefetch(out + ahead + kLanes * r, 1, 3);
      }
      if ((b.single_path >> g & 1) != 0) continue;
      WriteRows<W, kRows>(x + g * size, out, size, S::Splat(b.mean[g]), S::Splat(factor[g]),
                          last_lanes);
    }
  };
  for (size_t j = 0; j <= whole; j += W) {
    if (j < whole) sums(j);
    if (j >= W) {
      spreads(j - W);
      if (o.write) write(j - W);
    }
  }
}

// UniformBlock for groups of `rows` rows, 1 to kSmallRows.
template <int W, size_t... kRows>
RLSCORE_VECTOR_INLINE void RunUniform(std::index_sequence<kRows...>, size_t rows, Block& b,
                                      uint32_t size, const double* x, double* y, GroupStats* stats,
                                      const KernelOptions& o) {
  ((rows == kRows + 1 ? UniformBlock<W, kRows + 1>(b, size, x, y, stats, o) : void()), ...);
}

// kLaneBit.bit[l]: 1 << l, the bit of an entry's lane in a row's bits.
struct LaneBits {
  alignas(64) uint64_t bit[kLanes];
};
constexpr LaneBits MakeLaneBits() {
  LaneBits b{};
  for (size_t l = 0; l < kLanes; ++l) b.bit[l] = uint64_t{1} << l;
  return b;
}
constexpr LaneBits kLaneBit = MakeLaneBits();

// kEntryNumbers.row[r]: the numbers of the entries of row r, kLanes · r + lane, as doubles.
struct EntryNumbers {
  alignas(64) double row[kSmallRows][kLanes];
};
constexpr EntryNumbers MakeEntryNumbers() {
  EntryNumbers e{};
  for (size_t r = 0; r < kSmallRows; ++r) {
    for (size_t l = 0; l < kLanes; ++l) e.row[r][l] = static_cast<double>(kLanes * r + l);
  }
  return e;
}
constexpr EntryNumbers kEntryNumbers = MakeEntryNumbers();

template <int W>
struct RaggedState {
  using U = typename Simd<W>::U;
  uint8_t rows[kBlockGroups / W];  // per chunk: its longest group's rows
  U finite_sum[kBlockGroups / W];
  alignas(64) double factor[kBlockGroups];
  // The lines kPrefetchAhead rewards ahead, the same number for every group (`per_group`, 0 for
  // none), so that the block's groups together ask for at least the block's length: the rewards'
  // from next_x when they are summed, the advantages' from next_y when they are written. Addresses
  // as integers: the last lines asked for may lie past the batch (a prefetch never faults).
  size_t per_group;
  uintptr_t next_x;
  uintptr_t next_y;
};

// Copies the entries of x[0, size) whose bit in `unscorable` is clear to `copy`, in order, and
// returns how many. Every reward is stored, and only a scorable one is kept: no branch on the
// outcomes.
size_t CopyScorable(const double* x, size_t size, uint64_t unscorable, double* copy) {
  size_t n = 0;
  for (size_t k = 0; k < size; ++k) {
    copy[n] = x[k];
    n += (~unscorable >> k) & 1;
  }
  return n;
}

#if RLSCORE_X86_VECTORS
// CompactChunk's copies on AVX-512: a row at a time, the scorable entries packed by one
// instruction. Reads only the groups' own rewards (masked loads), and writes up to kLanes doubles
// past what it copies.
__attribute__((target("avx512f"))) double* CopyGroupsAvx512(Block& b, size_t j, uint64_t chunk,
                                                            const double* rewards, double* copy) {
  for (; chunk != 0; chunk &= chunk - 1) {
    const size_t g = j + static_cast<size_t>(std::countr_zero(chunk));
    const double* x = rewards + b.offset[g];
    const size_t size = b.size[g];
    const uint64_t unscorable = b.unscorable[g];
    b.source[g] = copy;
    size_t n = 0;
    for (size_t r = 0; kLanes * r < size; ++r) {
      const size_t left = size - kLanes * r;
      const auto in_row = static_cast<__mmask8>(left >= kLanes ? 0xff : (1u << left) - 1);
      const auto keep = static_cast<__mmask8>(in_row & ~(unscorable >> (kLanes * r)));
      _mm512_storeu_pd(
          copy + n, _mm512_maskz_compress_pd(keep, _mm512_maskz_loadu_pd(in_row, x + kLanes * r)));
      n += static_cast<size_t>(std::popcount(static_cast<unsigned>(keep)));
    }
    b.n[g] = static_cast<double>(n);
    copy += n;
  }
  return copy;
}
#endif

// RaggedBlock<W, true>'s set-up of the chunk of groups [j, j + W) before its sums: b.source and
// b.n of each group, with the scorable rewards of those in b.compacted copied from `copy` on
// (which must have kLanes doubles of room past them). Returns where the next copy goes.
template <int W>
RLSCORE_VECTOR_INLINE double* CompactChunk(Block& b, size_t j, const double* rewards,
                                           [[maybe_unused]] double* copy) {
  using S = Simd<W>;
  using U = typename S::U;
  static_assert(sizeof(size_t) == sizeof(uint64_t) && sizeof(uintptr_t) == sizeof(uint64_t));
  typedef uint32_t Sizes __attribute__((vector_size(4 * W)));
  Sizes sizes;
  std::memcpy(&sizes, &b.size[j], sizeof sizes);
  S::Store(&b.n[j], __builtin_convertvector(sizes, typename S::F));
  U offsets;
  std::memcpy(&offsets, &b.offset[j], sizeof offsets);
  const U source = S::SplatBits(reinterpret_cast<uintptr_t>(rewards)) + offsets * sizeof(double);
  std::memcpy(&b.source[j], &source, sizeof source);
  const uint64_t chunk = b.compacted >> j & ((uint64_t{1} << W) - 1);
#if RLSCORE_X86_VECTORS
  static_assert(W == 8, "RaggedBlock<W, true> is for AVX-512");
  return CopyGroupsAvx512(b, j, chunk, rewards, copy);
#else
  static_assert(W == 0, "RaggedBlock<W, true> is for AVX-512");
#endif
}

// One stage of RaggedBlock for the chunk of groups [j, j + W), reading kRows rows of each.
template <int W, size_t kRows, Pass kPass, bool kCompacted>
RLSCORE_VECTOR_INLINE void RaggedChunk(Block& b, RaggedState<W>& st, size_t j,
                                       const double* rewards, double* out, GroupStats* stats,
                                       const KernelOptions& o) {
  using S = Simd<W>;
  using F = typename S::F;
  using U = typename S::U;
  constexpr size_t kPer = S::kPerRow;
  // True in the lanes of row r, vector k, that a group of n entries fills: the condition of a
  // vector `?:`, which AVX-512 turns into a mask register rather than a vector of ones.
  const auto in_group = [](size_t r, size_t k, const F& n) RLSCORE_VECTOR_LAMBDA {
    return S::Load(&kEntryNumbers.row[r][W * k]) < n;
  };
  if constexpr (kPass == Pass::kSums) {
    // CanonicalSum, without the +0.0 it starts from (UniformBlock says why). The loops over the
    // chunk's groups are unrolled in every stage: the groups' lanes then stay in registers, with
    // no loop between one group's loads and the next's (groups of 13-16 ran a tenth faster).
    F lanes[W];
#pragma GCC unroll 8
    for (size_t h = 0; h < W; ++h) {
      const double* x = kCompacted ? b.source[j + h] : rewards + b.offset[j + h];
      const F n = S::Splat(kCompacted ? b.n[j + h] : static_cast<double>(b.size[j + h]));
      for (size_t i = 0; i < st.per_group; ++i) {
        __builtin_prefetch(
            reinterpret_cast<const void*>(st.next_x + 64 * (st.per_group * (j + h) + i)), 0, 3);
      }
      F v[kPer];
#pragma GCC unroll 8
      for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
        for (size_t k = 0; k < kPer; ++k) {
          const F e = in_group(r, k, n) ? S::Load(x + kLanes * r + W * k) : F{};
          v[k] = r == 0 ? e : v[k] + e;
        }
      }
      lanes[h] = S::FoldRow(v);
    }
    const F sum = S::ReduceGroups(lanes);
    F n;
    if constexpr (kCompacted) {
      n = S::Load(&b.n[j]);
    } else {
      typedef uint32_t Sizes __attribute__((vector_size(4 * W)));  // one conversion for W sizes
      Sizes sizes;
      std::memcpy(&sizes, &b.size[j], sizeof sizes);
      n = __builtin_convertvector(sizes, F);
      S::Store(&b.n[j], n);
    }
    S::Store(&b.mean[j], sum / n);
    st.finite_sum[j / W] = S::Finite(sum);
  } else if constexpr (kPass == Pass::kSpreads) {
    // CanonicalSumSquaredDeviations (a square is never -0.0: the +0.0 start changes nothing),
    // then StdFromM2 and Factor (Chunks says why in one pass).
    const F mean = S::Load(&b.mean[j]);
    F squares[W];
#pragma GCC unroll 8
    for (size_t h = 0; h < W; ++h) {
      const double* x = kCompacted ? b.source[j + h] : rewards + b.offset[j + h];
      const F n = S::Splat(kCompacted ? b.n[j + h] : static_cast<double>(b.size[j + h]));
      const F mu = S::Splat(mean[h]);
      F v[kPer];
#pragma GCC unroll 8
      for (size_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
        for (size_t k = 0; k < kPer; ++k) {
          const F d = S::Load(x + kLanes * r + W * k) - mu;
          const F t = in_group(r, k, n) ? d * d : F{};
          v[k] = r == 0 ? t : v[k] + t;
        }
      }
      squares[h] = S::FoldRow(v);
    }
    const F m2 = S::ReduceGroups(squares);
    S::Store(&b.m2[j], m2);
    if (st.per_group != 0) {
      const char* next = reinterpret_cast<const char*>(stats + b.count + j);
#pragma GCC unroll 4
      for (size_t i = 0; i < W * sizeof(GroupStats); i += 64) __builtin_prefetch(next + i, 1, 3);
    }
    F sd, f;
    const U normal = Spreads<W>(S::Load(&b.n[j]), mean, m2, st.finite_sum[j / W], o, &sd, &f);
    S::Store(&st.factor[j], f);
    // Every group's statistics, which the single path overwrites for its own.
    for (size_t h = 0; h < W; ++h) {
      b.single_path |= uint64_t{normal[h] == 0} << (j + h);
      const uint32_t scorable = kCompacted ? static_cast<uint32_t>(b.n[j + h]) : b.size[j + h];
      stats[j + h] = GroupStats{.mean = mean[h], .std = sd[h], .scorable = scorable};
    }
  } else {
    // WriteGroup of the normal groups, whole rows: what lands past a group's end belongs to the
    // groups after it, which are written later (storing the old values back instead made every
    // group's loads wait on the stores of the one before, which overlap them: 15 % slower). Each
    // group writes only its own rows, not the chunk's: the branch on its size is mispredicted
    // about once a group, which costs less than the rows it skips (ragged groups of 1-64 ran 8 %
    // faster at 10^7 rewards). The sums and squares keep the chunk's rows: with a branch there
    // too, two mispredictions a group cost more than the masked rows.
#pragma GCC unroll 8
    for (size_t h = 0; h < W; ++h) {
      const size_t g = j + h;
      for (size_t i = 0; i < st.per_group; ++i) {
        __builtin_prefetch(reinterpret_cast<const void*>(st.next_y + 64 * (st.per_group * g + i)),
                           1, 3);
      }
      if ((b.single_path >> g & 1) != 0) continue;
      const double* x = rewards + b.offset[g];
      double* y = out + b.offset[g];
      const F mu = S::Splat(b.mean[g]);
      const F f = S::Splat(st.factor[g]);
      const size_t own_rows = (b.size[g] + kLanes - 1) / kLanes;
#pragma GCC unroll 8
      for (size_t r = 0; r < kRows; ++r) {
        if (r > 0 && r >= own_rows) break;
#pragma GCC unroll 4
        for (size_t k = 0; k < kPer; ++k) {
          const F a = (S::Load(x + kLanes * r + W * k) - mu) * f;
          if (kCompacted && (b.compacted >> g & 1) != 0) {
            // A compacted group is written in its own places, from the caller's rewards, with
            // +0.0 for its unscorable entries.
            const U unscorable =
                S::SplatBits(b.unscorable[g] >> (kLanes * r + W * k)) & S::LoadBits(kLaneBit.bit);
            S::Store(y + kLanes * r + W * k,
                     S::FromBits(S::Bits(a) & S::MaskBits(unscorable == U{})));
          } else {
            S::Store(y + kLanes * r + W * k, a);
          }
        }
      }
    }
  }
}

// One stage of RaggedBlock for the chunk of groups [j, j + W), with the kernel for its rows.
template <int W, Pass kPass, bool kCompacted, size_t... kRows>
RLSCORE_VECTOR_INLINE void RaggedStage(std::index_sequence<kRows...>, Block& b, RaggedState<W>& st,
                                       size_t j, const double* rewards, double* out,
                                       GroupStats* stats, const KernelOptions& o) {
  const size_t rows = st.rows[j / W];
  ((rows == kRows + 1
        ? RaggedChunk<W, kRows + 1, kPass, kCompacted>(b, st, j, rewards, out, stats, o)
        : void()),
   ...);
}

// A block whose groups have different sizes, each of at most kLanes · kSmallRows entries, and
// whose last group has kLanes · kSmallRows entries from its start inside the batch: the
// arithmetic of UniformBlock, in two stages a chunk apart, with every group read in place
// instead of being sorted into buckets by rows. W consecutive groups make a chunk, and every group
// of a chunk reads as many rows as the chunk's longest group: the lanes past a group's end are
// masked off in its sums (the masks compare entry numbers with the group's size). A group writes
// its own rows, whole: what lands past its end belongs to the groups after it, which are written
// later (so the advantages must not overlap the rewards). The kernel is chosen once a chunk and
// stage; only the writes branch on a group's size (a branch on random sizes is mispredicted about
// once a group, and the sums and squares are cheaper with the chunk's rows masked). In cache this
// costs about what filing into buckets does; from memory it is faster, because the block is read
// and written in address order, and its lines are asked for in the same order.
//
// Without kCompacted, no group has unscorable entries. With it (AVX-512 only), the groups in
// b.compacted have some (b.unscorable says which): CompactChunk copies each one's scorable rewards
// to `compact` (room for the block's rewards and kLanes · kSmallRows more) as its chunk comes, the
// sums read group j's b.n[j] scorable rewards from b.source[j], and the writes put +0.0 in the
// unscorable places.
template <int W, bool kCompacted>
RLSCORE_VECTOR_INLINE void RaggedBlock(Block& b, const double* rewards, double* out,
                                       GroupStats* stats, const KernelOptions& o,
                                       double* compact = nullptr) {
  const size_t whole = b.count / W * W;
  const uint64_t in_block = b.count == kBlockGroups ? kAllOnes : (uint64_t{1} << b.count) - 1;
  b.single_path |= whole == kBlockGroups ? 0 : in_block & (kAllOnes << whole);
  RaggedState<W> st;
  for (size_t j = 0; j < whole; j += W) {
    uint32_t longest = 0;
    for (size_t h = 0; h < W; ++h) longest = std::max(longest, b.size[j + h]);
    st.rows[j / W] = static_cast<uint8_t>(std::max<size_t>(1, (longest + kLanes - 1) / kLanes));
  }
  st.per_group = (b.prefetch_distance * sizeof(double) + 64 * kBlockGroups - 1) /
                 (64 * kBlockGroups);  // 0 when prefetch_distance is
  const size_t ahead = std::min(kPrefetchAhead, b.prefetch_distance);
  st.next_x = reinterpret_cast<uintptr_t>(rewards + b.offset[0] + ahead);
  st.next_y = reinterpret_cast<uintptr_t>(out + b.offset[0] + ahead);

  constexpr auto kRowCounts = std::make_index_sequence<kSmallRows>();
  // Step c finishes chunk c - 1's statistics before it sums chunk c, and writes chunk c - 1's
  // advantages last: the sums then run while the chain of divisions and the square root that
  // the advantages wait for is still going. (The other way round, a chunk of eight rows holds
  // more instructions than the core looks ahead over, and the next chunk's sums wait behind the
  // writes; ragged groups of 1-64 ran 4-13 % slower.)
  for (size_t j = 0; j <= whole; j += W) {
    if (j >= W) {
      RaggedStage<W, Pass::kSpreads, kCompacted>(kRowCounts, b, st, j - W, rewards, out, stats, o);
    }
    if (j < whole) {
      if constexpr (kCompacted) {
        // Copied as the chunk is summed, when its lines have come (copied for the whole block
        // first, they were waited for a second time).
        compact = CompactChunk<W>(b, j, rewards, compact);
      }
      RaggedStage<W, Pass::kSums, kCompacted>(kRowCounts, b, st, j, rewards, out, stats, o);
    }
    if (j >= W && o.write) {
      RaggedStage<W, Pass::kWrite, kCompacted>(kRowCounts, b, st, j - W, rewards, out, stats, o);
    }
  }
}

// RaggedBlock for each vector width, out of line and at a 64-byte boundary. Inlined into
// Interleaved beside the other kernels, the AVX-512 kernel for unscorable entries made ragged
// groups without them 8 % slower at 10^7 rewards, though it does not touch their code; apart, a
// change to one kernel does not move the other's loops.
[[gnu::noinline, gnu::aligned(64)]] void RaggedBlockPortable(Block& b, const double* rewards,
                                                             double* out, GroupStats* stats,
                                                             const KernelOptions& o) {
  RaggedBlock<2, false>(b, rewards, out, stats, o);
}

#if RLSCORE_X86_VECTORS
[[gnu::noinline, gnu::aligned(64)]] __attribute__((target("avx2"))) void RaggedBlockAvx2(
    Block& b, const double* rewards, double* out, GroupStats* stats, const KernelOptions& o) {
  RaggedBlock<4, false>(b, rewards, out, stats, o);
}

[[gnu::noinline,
  gnu::aligned(64)]] __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) void
RaggedBlockAvx512(Block& b, const double* rewards, double* out, GroupStats* stats,
                  const KernelOptions& o) {
  RaggedBlock<8, false>(b, rewards, out, stats, o);
}

[[gnu::noinline,
  gnu::aligned(64)]] __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) void
RaggedBlockCompactedAvx512(Block& b, const double* rewards, double* out, GroupStats* stats,
                           const KernelOptions& o, double* compact) {
  RaggedBlock<8, true>(b, rewards, out, stats, o, compact);
}
#endif

// Bit k: whether outcome k of the `size` <= 64 at `o` is kUnscorable. `readable`: the 64 bytes
// from `o` lie inside the outcomes, so that they can be compared 16 at a time.
uint64_t UnscorableBits(const Outcome* o, size_t size, [[maybe_unused]] bool readable) {
  uint64_t bits = 0;
#if defined(__SSE2__)
  if (readable) {
    const __m128i unscorable = _mm_set1_epi8(static_cast<char>(Outcome::kUnscorable));
    for (int k = 0; k < 4; ++k) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(o) + k);
      const auto found = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, unscorable)));
      bits |= uint64_t{found} << (16 * k);
    }
    return size == 64 ? bits : bits & ((uint64_t{1} << size) - 1);
  }
#endif
  for (size_t k = 0; k < size; ++k) bits |= uint64_t{o[k] == Outcome::kUnscorable} << k;
  return bits;
}

// Bit k of bits[j]: entry k of group j is unscorable, for each group j of `b` with at most
// kLanes · kSmallRows entries (0 for the others). Returns the groups with such an entry, bit j
// for group j.
uint64_t FindUnscorable(std::span<const Outcome> outcomes, const Block& b, uint64_t* bits) {
  constexpr size_t kSmall = kLanes * kSmallRows;
  uint64_t groups = 0;
  for (size_t j = 0; j < b.count; ++j) {
    bits[j] = b.size[j] > kSmall ? 0
                                 : UnscorableBits(outcomes.data() + b.offset[j], b.size[j],
                                                  b.offset[j] + kSmall <= outcomes.size());
    groups |= uint64_t{bits[j] != 0} << j;
  }
  return groups;
}

#if RLSCORE_X86_VECTORS
// FindUnscorable on AVX-512: each group compares its own outcomes in one masked load, which
// neither reads nor faults on the bytes past the group. Not inlined: in Interleaved's registers
// the bits of `groups` went through memory, a store and a load a group.
[[gnu::noinline]] __attribute__((target("avx512f,avx512bw"))) uint64_t FindUnscorableAvx512(
    const Outcome* outcomes, const Block& b, uint64_t* bits) {
  constexpr size_t kSmall = kLanes * kSmallRows;
  static_assert(kSmall == 64);
  const __m512i unscorable = _mm512_set1_epi8(static_cast<char>(Outcome::kUnscorable));
  for (size_t j = 0; j < b.count; ++j) {
    const uint32_t size = b.size[j];
    const __mmask64 in_group = size >= kSmall ? ~__mmask64{0} : (__mmask64{1} << size) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(in_group, outcomes + b.offset[j]);
    const uint64_t found = _mm512_mask_cmpeq_epi8_mask(in_group, v, unscorable);
    bits[j] = size > kSmall ? 0 : found;
  }
  // Which groups have a bit, 8 at a time: a group at a time, the bits went through one
  // dependent OR each.
  uint64_t groups = 0;
  for (size_t j = 0; j < b.count; j += 8) {
    const __m512i v = _mm512_loadu_si512(bits + j);
    groups |= uint64_t{_mm512_test_epi64_mask(v, v)} << j;
  }
  return b.count == kBlockGroups ? groups : groups & ((uint64_t{1} << b.count) - 1);
}
#endif

// MergeTree of a full block's moments (n, mean, m2), W merges per instruction: Merge with
// n < 2^53, so n as a double and sums of n are exact, and b.n / (a.n + b.n) is b_over_total.
// Level by level, the merged subtrees are packed to the front of the arrays: entry i of a level
// is the subtree that starts at group i·2^level, and the next level merges entries 2i and 2i + 1,
// which is the tree's m[2wk] = Merge(m[2wk], m[2wk + w]) with the same operands.
template <int W>
RLSCORE_VECTOR_INLINE Moments MergeBlock(Block& b) {
  using S = Simd<W>;
  using F = typename S::F;
  size_t count = kBlockGroups;
  for (; count / 2 >= W; count /= 2) {
    for (size_t i = 0; i < count / 2; i += W) {
      // Entries [2i, 2i + 2W) are read before entries [i, i + W) are written.
      F an, bn, am, bm, aq, bq;
      S::Deinterleave(S::Load(&b.n[2 * i]), S::Load(&b.n[2 * i + W]), &an, &bn);
      S::Deinterleave(S::Load(&b.mean[2 * i]), S::Load(&b.mean[2 * i + W]), &am, &bm);
      S::Deinterleave(S::Load(&b.m2[2 * i]), S::Load(&b.m2[2 * i + W]), &aq, &bq);
      const F total = an + bn;
      const F delta = bm - am;
      const F b_over_total = bn / total;
      F rn = total;
      F rm = am + delta * b_over_total;
      F rq = aq + bq + delta * delta * an * b_over_total;
      if (b.has_empty) {
        // Merging an empty side returns the other side as it is.
        const auto b_empty = S::MaskBits(bn == F{});
        const auto a_empty = S::MaskBits(an == F{});
        rn = S::Select(b_empty, an, S::Select(a_empty, bn, rn));
        rm = S::Select(b_empty, am, S::Select(a_empty, bm, rm));
        rq = S::Select(b_empty, aq, S::Select(a_empty, bq, rq));
      }
      S::Store(&b.n[i], rn);
      S::Store(&b.mean[i], rm);
      S::Store(&b.m2[i], rq);
    }
  }
  const auto at = [&b](size_t j) {
    return Moments{static_cast<uint64_t>(b.n[j]), b.mean[j], b.m2[j]};
  };
  for (; count > 1; count /= 2) {
    for (size_t i = 0; i < count / 2; ++i) {
      const Moments m = Merge(at(2 * i), at(2 * i + 1));
      b.n[i] = static_cast<double>(m.n);
      b.mean[i] = m.mean;
      b.m2[i] = m.m2;
    }
  }
  return at(0);
}

template <int W>
RLSCORE_VECTOR_INLINE Failure Interleaved(const Batch& batch, const Options& options,
                                          std::span<double> advantages,
                                          std::span<GroupStats> groups, BatchSummary* summary) {
  const bool batch_normalized = options.estimator == Estimator::kBatchNormalized;
  const double tau = options.zero_variance_threshold;
  const KernelOptions kernel_options{
      .sample = options.deviation == Deviation::kSample,
      .estimator = options.estimator,
      .threshold = tau > kSmallestUsableStd ? tau : kSmallestUsableStd,
      .write = !batch_normalized,
  };
  const double* rewards = batch.rewards.data();
  double* out = advantages.data();
  BatchSummary s;
  s.groups = batch.group_sizes.size();
  s.rewards = batch.rewards.size();
  MomentStack moments;
  std::vector<double> scratch;
  // The scorable rewards of a block's groups that have unscorable entries, and kSmallRows rows
  // more, which RaggedBlock reads (whole rows of the chunk's longest group) and CopyGroupsAvx512
  // writes past the last copy; sized by the first block that needs it.
  std::vector<double> compact;
  Block b;
  Chunks<W> chunks;

  size_t offset = 0;
  for (size_t g0 = 0; g0 < batch.group_sizes.size(); g0 += kBlockGroups) {
    b.count = std::min(kBlockGroups, batch.group_sizes.size() - g0);
    const size_t block_offset = offset;
    const uint32_t first_size = batch.group_sizes[g0];
    uint32_t sizes_differ = 0;
    uint32_t max_size = 0;
    for (size_t j = 0; j < b.count; ++j) {
      b.offset[j] = offset;
      b.size[j] = batch.group_sizes[g0 + j];
      sizes_differ |= b.size[j] ^ first_size;
      max_size = std::max(max_size, b.size[j]);
      offset += b.size[j];
    }

    // A group is small, and goes to the kernels, when it has at most kSmallRows rows of scorable
    // entries and its last row can be read whole inside the rewards. The scorable rewards of a
    // group with unscorable entries are copied to `compact`, one group after the other, and the
    // bucketed kernels read them there, also in a block of one size, whose other groups take the
    // kernel for one size (unscorable entries are looked for per group only in a block that has
    // one at all).
    bool some_unscorable = false;
    if (!batch.outcomes.empty()) {
      // memchr, for its vectors: searching a byte at a time cost groups of 16 a sixth of their
      // time.
      static_assert(sizeof(Outcome) == 1);
      some_unscorable =
          std::memchr(batch.outcomes.data() + block_offset, static_cast<int>(Outcome::kUnscorable),
                      offset - block_offset) != nullptr;
      // The next block's outcomes, taken as long as this block's: the kernels ask for the
      // rewards' lines ahead, but nothing else reads the outcomes before this search does, and
      // it would wait on memory for each of their lines. At most kOutcomesAhead bytes, so that the
      // kernels' own requests still find room.
      const uintptr_t next = reinterpret_cast<uintptr_t>(batch.outcomes.data() + offset);
      const size_t ahead = std::min(offset - block_offset, kOutcomesAhead);
      for (size_t k = 0; k < ahead; k += 64) {
        __builtin_prefetch(reinterpret_cast<const void*>(next + k), 0, 3);
      }
    }
    std::fill(std::begin(b.bucket_size), std::end(b.bucket_size), 0);
    // Zero where the next block, taken as large as this one, would run past the batch.
    b.prefetch_distance =
        2 * offset - block_offset <= s.rewards && g0 + 2 * b.count <= batch.group_sizes.size()
            ? offset - block_offset
            : 0;
    b.single_path = 0;
    b.compacted = 0;
    b.has_empty = false;
    // Bit j of unscorable_groups: group j has an unscorable entry and at most kLanes · kSmallRows
    // entries (b.unscorable[j] says which).
    uint64_t unscorable_groups = 0;
    if (some_unscorable) {
      const size_t room = std::min(offset - block_offset, kBlockGroups * kLanes * kSmallRows);
      // A row more for the bucketed kernels, kSmallRows rows more for RaggedBlock.
      if (compact.size() < room + kLanes * kSmallRows) {
        compact.resize(room + kLanes * kSmallRows, 0.0);
      }
#if RLSCORE_X86_VECTORS
      if constexpr (W == 8) {
        unscorable_groups = FindUnscorableAvx512(batch.outcomes.data(), b, b.unscorable);
      } else {
        unscorable_groups = FindUnscorable(batch.outcomes, b, b.unscorable);
      }
#else
      unscorable_groups = FindUnscorable(batch.outcomes, b, b.unscorable);
#endif
    }
    const size_t first_rows = (first_size + kLanes - 1) / kLanes;
    GroupStats* stats = groups.data() + g0;
    constexpr auto kBuckets = std::make_index_sequence<kSmallRows>();
    // The groups left to the buckets: all of them, or those with unscorable entries when the
    // kernel for one size takes the others.
    uint64_t to_file = b.count == kBlockGroups ? kAllOnes : (uint64_t{1} << b.count) - 1;
    // RaggedBlock takes any block of small groups of different sizes. On AVX-512 it also takes a
    // block with unscorable entries, of one size or not: the compacted groups then stay in the
    // block's pipeline instead of taking the bucketed kernels after it (groups of 16 with 1 % of
    // their entries unscorable ran at about 0.35 of memcpy's rate at 10^7 rewards that way).
    // Narrower vectors leave such a block to the kernel for one size and the buckets.
    const bool ragged_fits = max_size <= kLanes * kSmallRows &&
                             b.offset[b.count - 1] + kLanes * kSmallRows <= s.rewards &&
                             (W == 8 || unscorable_groups == 0);
    if (sizes_differ == 0 && first_rows <= kSmallRows &&
        b.offset[b.count - 1] + kLanes * first_rows <= s.rewards &&
        !(ragged_fits && unscorable_groups != 0)) {
      // The common layout, every group the same small size.
      b.single_path = unscorable_groups;
      RunUniform<W>(kBuckets, first_rows, b, first_size, rewards + block_offset, out + block_offset,
                    stats, kernel_options);
      b.single_path &= ~unscorable_groups;
      to_file = unscorable_groups;
    }
    if constexpr (W == 2) {
      if (to_file != 0 && ragged_fits) {
        RaggedBlockPortable(b, rewards, out, stats, kernel_options);
        to_file = 0;
      }
    }
#if RLSCORE_X86_VECTORS  // W == 4 is AVX2, W == 8 AVX-512
    if constexpr (W == 4) {
      if (to_file != 0 && ragged_fits) {
        RaggedBlockAvx2(b, rewards, out, stats, kernel_options);
        to_file = 0;
      }
    }
    if constexpr (W == 8) {
      if (to_file != 0 && ragged_fits) {
        if (unscorable_groups == 0) {
          RaggedBlockAvx512(b, rewards, out, stats, kernel_options);
        } else {
          b.compacted = unscorable_groups;
          RaggedBlockCompactedAvx512(b, rewards, out, stats, kernel_options, compact.data());
          // The compacted groups the kernel finished, whose advantages it wrote.
          for (uint64_t rest = b.compacted & ~b.single_path; rest != 0; rest &= rest - 1) {
            const size_t j = static_cast<size_t>(std::countr_zero(rest));
            s.unscorable += static_cast<size_t>(std::popcount(b.unscorable[j]));
          }
          b.compacted = 0;
        }
        to_file = 0;
      }
    }
#endif
    if (to_file != 0) {
      // Only near the end of the batch can a group's last row run past it.
      const bool near_end = offset + kLanes * kSmallRows > s.rewards;
      size_t compact_used = 0;
      for (uint64_t rest = to_file; rest != 0; rest &= rest - 1) {
        const size_t j = static_cast<size_t>(std::countr_zero(rest));
        size_t size = b.size[j];
        const double* x = rewards + b.offset[j];
        double* y = out + b.offset[j];
        if (some_unscorable && size <= kLanes * kSmallRows) {
          const uint64_t unscorable = b.unscorable[j];
          if (unscorable != 0) {
            double* copy = compact.data() + compact_used;
            const size_t n = CopyScorable(x, size, unscorable, copy);
            b.compacted |= uint64_t{1} << j;
            compact_used += n;
            size = n;  // 0 leaves the group to the single path
            x = copy;
            y = copy;
          }
        }
        const size_t rows = (size + kLanes - 1) / kLanes;
        const bool small =
            rows >= 1 && rows <= kSmallRows &&
            (!near_end || x != rewards + b.offset[j] || b.offset[j] + kLanes * rows <= s.rewards);
        b.n[j] = static_cast<double>(size);
        if (!small) {
          b.single_path |= uint64_t{1} << j;
          continue;
        }
        const size_t bucket = rows - 1;
        const size_t i = b.bucket_size[bucket]++;
        b.bucket_j[bucket][i] = static_cast<uint8_t>(j);
        b.bucket_x[bucket][i] = x;
        b.bucket_y[bucket][i] = y;
        b.bucket_last[bucket][i] = kLastRow.lanes[size - kLanes * bucket];
        b.bucket_n[bucket][i] = static_cast<double>(size);
      }
      for (size_t bucket = 0; bucket < kSmallRows; ++bucket) {
        for (size_t i = b.bucket_size[bucket]; i % Block::kPad != 0; ++i) {
          b.bucket_j[bucket][i] = b.bucket_j[bucket][0];
          b.bucket_x[bucket][i] = b.bucket_x[bucket][0];
          b.bucket_y[bucket][i] = b.bucket_y[bucket][0];
          b.bucket_last[bucket][i] = b.bucket_last[bucket][0];
          b.bucket_n[bucket][i] = b.bucket_n[bucket][0];
        }
      }
      RunPass<W, Pass::kSums>(kBuckets, b, chunks, stats, kernel_options);
      RunPass<W, Pass::kSpreads>(kBuckets, b, chunks, stats, kernel_options);
      if (kernel_options.write) {
        RunPass<W, Pass::kWrite>(kBuckets, b, chunks, stats, kernel_options);
      }
      // The compacted groups the kernels finished: WriteGroup, with the unscorable entries
      // told from their bits rather than a branch on each outcome.
      for (uint64_t rest = b.compacted & ~b.single_path; rest != 0; rest &= rest - 1) {
        const size_t j = static_cast<size_t>(std::countr_zero(rest));
        const GroupStats& st = stats[j];
        s.unscorable += b.size[j] - st.scorable;
        if (batch_normalized) continue;
        const double* x = rewards + b.offset[j];
        double* y = out + b.offset[j];
        const double mean = st.mean;
        const double factor = Factor(options.estimator, st.std, st.scorable, 0.0);
        const uint64_t unscorable = b.unscorable[j];
        for (size_t k = 0; k < b.size[j]; ++k) {
          const double a = (x[k] - mean) * factor;
          y[k] = (unscorable >> k & 1) != 0 ? 0.0 : a;
        }
      }
    }
    if (!batch_normalized) {
      s.groups_by_cause[0] += b.count - static_cast<size_t>(std::popcount(b.single_path));
    }

    // The rest in group order, so that a failure names the first failing group as
    // ComputeReference does (the kernels' normal groups cannot fail).
    for (uint64_t rest = b.single_path; rest != 0; rest &= rest - 1) {
      const size_t j = static_cast<size_t>(std::countr_zero(rest));
      const size_t size = b.size[j];
      GroupStats& st = stats[j];
      double m2 = 0.0;
      if (!SingleGroupStats<WideSums<W>>(batch, options, b.offset[j], size, &scratch, &st, &m2)) {
        return {Failure::Kind::kGroupNotFinite, g0 + j};
      }
      s.unscorable += size - st.scorable;
      b.has_empty |= st.scorable == 0;
      b.n[j] = static_cast<double>(st.scorable);
      b.mean[j] = st.mean;
      b.m2[j] = m2;
      if (!batch_normalized) {
        ++s.groups_by_cause[static_cast<size_t>(st.cause)];
        if (st.scorable == size && !st.zero_variance()) {
          WideWrite<W>(rewards + b.offset[j], size, st.mean,
                       Factor(options.estimator, st.std, st.scorable, 0.0), out + b.offset[j]);
        } else {
          WriteGroup(batch, options, st, 0.0, b.offset[j], size, out + b.offset[j]);
        }
      }
    }

    // A full block starts at a multiple of kBlockGroups, so it is one subtree of the moments.
    if (b.count == kBlockGroups) {
      moments.PushRun(MergeBlock<W>(b), kBlockLevel);
    } else {
      for (size_t j = 0; j < b.count; ++j) {
        moments.Push(Moments{static_cast<uint64_t>(b.n[j]), b.mean[j], b.m2[j]});
      }
    }
  }
  return FinishBatch(batch, options, moments.Root(), advantages, groups, s, summary);
}

using InterleavedFn = Failure (*)(const Batch&, const Options&, std::span<double>,
                                  std::span<GroupStats>, BatchSummary*);

Failure InterleavedPortable(const Batch& batch, const Options& options,
                            std::span<double> advantages, std::span<GroupStats> groups,
                            BatchSummary* summary) {
  return Interleaved<2>(batch, options, advantages, groups, summary);
}

#if RLSCORE_X86_VECTORS
// Wider vectors change nothing in the arithmetic: IEEE operations round the same in every lane.
// FMA is not enabled (and -ffp-contract=off would not use it). At a 64-byte boundary, so that a
// change elsewhere in the file does not move their loops (a few per cent either way).
[[gnu::aligned(64)]] __attribute__((target("avx2"))) Failure InterleavedAvx2(
    const Batch& batch, const Options& options, std::span<double> advantages,
    std::span<GroupStats> groups, BatchSummary* summary) {
  return Interleaved<4>(batch, options, advantages, groups, summary);
}

[[gnu::aligned(64)]] __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) Failure
InterleavedAvx512(const Batch& batch, const Options& options, std::span<double> advantages,
                  std::span<GroupStats> groups, BatchSummary* summary) {
  return Interleaved<8>(batch, options, advantages, groups, summary);
}
#endif

InterleavedFn InterleavedFor(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kPortable:
      return InterleavedPortable;
#if RLSCORE_X86_VECTORS
    case VectorIsa::kAvx2:
      return InterleavedAvx2;
    case VectorIsa::kAvx512:
      return InterleavedAvx512;
#endif
    default:
      return nullptr;
  }
}

VectorIsa BestIsa() {
  for (VectorIsa isa : {VectorIsa::kAvx512, VectorIsa::kAvx2}) {
    if (IsaAvailable(isa)) return isa;
  }
  return VectorIsa::kPortable;
}

}  // namespace

bool IsaAvailable(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kBest:
    case VectorIsa::kPortable:
      return true;
#if RLSCORE_X86_VECTORS
    case VectorIsa::kAvx2:
      return Cpu().avx2;
    case VectorIsa::kAvx512:
      return Cpu().avx512f && Cpu().avx512dq && Cpu().avx512vl && Cpu().avx512bw;
#endif
    default:
      return false;
  }
}

Failure ComputeReference(const Batch& batch, const Options& options, std::span<double> advantages,
                         std::span<GroupStats> groups, BatchSummary* summary) {
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
    double m2 = 0.0;
    if (!SingleGroupStats<ScalarSums>(batch, options, offset, size, &scratch, &st, &m2)) {
      return {Failure::Kind::kGroupNotFinite, g};
    }
    s.unscorable += size - st.scorable;
    moments.Push(Moments{st.scorable, st.mean, m2});
    if (!batch_normalized) {
      ++s.groups_by_cause[static_cast<size_t>(st.cause)];
      WriteGroup(batch, options, st, 0.0, offset, size, advantages.data() + offset);
    }
    offset += size;
  }
  return FinishBatch(batch, options, moments.Root(), advantages, groups, s, summary);
}

Failure ComputeInterleaved(const Batch& batch, const Options& options, std::span<double> advantages,
                           std::span<GroupStats> groups, BatchSummary* summary, VectorIsa isa) {
  static const InterleavedFn best = InterleavedFor(BestIsa());
  const InterleavedFn fn = isa == VectorIsa::kBest ? best : InterleavedFor(isa);
  return fn(batch, options, advantages, groups, summary);
}

}  // namespace rlscore::advantage::reference
