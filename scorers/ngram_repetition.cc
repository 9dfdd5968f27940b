// N-gram repetition rule and open-r1 smooth penalty (see ngram_repetition.h).
//
// Every n-token window gets a polynomial rolling hash of its (mixed) token values, so a scan is
// one pass of O(1) work per position. Windows are interned in an open-addressing table keyed by
// that hash; a hit is confirmed by comparing the n tokens, and a different window that merely
// shares the hash becomes an entry of its own further along the probe sequence. Collisions are
// therefore never counted as repetitions, they only cost a probe. Comparisons happen only on hash
// hits, and each entry is hit at most max_occurrences times before the rule fires, so the scan
// does O(n) work per repeated window and O(1) per fresh one.
#include "scorers/ngram_repetition.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

namespace rlscore::scorers {
namespace {

// The splitmix64 / murmur3 finaliser: a bijection of uint64 with full avalanche.
constexpr uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Odd base of the rolling hash (the golden-ratio constant); arithmetic is mod 2^64.
constexpr uint64_t kBase = 0x9e3779b97f4a7c15ULL;

// Distinct windows of one sequence, each with the index of its first occurrence and its count,
// in one open-addressing array (the slot is the entry: one cache line touched per window).
// `Index` is uint32_t unless the sequence has 2^32 windows or more; a slot then keeps 32 bits of
// the mixed hash as a tag, which only filters the token comparison. Not thread-safe; one instance
// per scan.
template <typename Index>
class WindowTable {
 public:
  struct Slot {
    Index tag;
    Index first;
    Index count;  // 0: empty
  };

  // REQUIRES: 1 <= n <= tokens.size(), and the window count fits in Index.
  WindowTable(std::span<const uint64_t> tokens, size_t n) : tokens_(tokens), n_(n) {
    const size_t windows = tokens.size() - n + 1;
    // Load factor at most 1/2 keeps linear probing short.
    const size_t capacity = std::bit_ceil(std::max<size_t>(16, 2 * windows));
    slots_.resize(capacity);
    mask_ = capacity - 1;
  }

  // Counts one more occurrence of the window that starts at `start` and has rolling hash `hash`,
  // and returns its slot (valid until the next call).
  const Slot& Add(size_t start, uint64_t hash) {
    const uint64_t mixed = Mix(hash);
    // The probe start uses the low bits, the tag the high ones.
    const Index tag = static_cast<Index>(mixed >> (64 - 8 * sizeof(Index)));
    for (size_t i = mixed & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.count == 0) {
        slot = Slot{tag, static_cast<Index>(start), 1};
        ++distinct_;
        return slot;
      }
      // A different window with the same hash is not this one: keep probing past it.
      if (slot.tag == tag && SameWindow(slot.first, start)) {
        ++slot.count;
        return slot;
      }
    }
  }

  size_t distinct() const { return distinct_; }

 private:
  bool SameWindow(size_t a, size_t b) const {
    return std::equal(tokens_.begin() + static_cast<std::ptrdiff_t>(a),
                      tokens_.begin() + static_cast<std::ptrdiff_t>(a + n_),
                      tokens_.begin() + static_cast<std::ptrdiff_t>(b));
  }

  std::span<const uint64_t> tokens_;
  size_t n_;
  size_t mask_ = 0;
  size_t distinct_ = 0;
  std::vector<Slot> slots_;
};

// Calls visit(start, hash) for every n-token window of `tokens` in order until it returns false.
// hash = Σ Mix(t[start + i]) · kBase^(n - 1 - i) mod 2^64, rolled in O(1) per step.
// REQUIRES: 1 <= n <= tokens.size().
template <typename Visit>
void ForEachWindow(std::span<const uint64_t> tokens, size_t n, Visit visit) {
  uint64_t top = 1;  // kBase^(n - 1): weight of the token that leaves the window
  uint64_t hash = 0;
  for (size_t i = 0; i < n; ++i) {
    hash = hash * kBase + Mix(tokens[i]);
    if (i + 1 < n) top *= kBase;
  }
  const size_t windows = tokens.size() - n + 1;
  for (size_t start = 0;; ++start) {
    if (!visit(start, hash)) return;
    if (start + 1 == windows) return;
    hash = (hash - Mix(tokens[start]) * top) * kBase + Mix(tokens[start + n]);
  }
}

// FindRepeatedNgram with the table's index type chosen. REQUIRES: 1 <= n <= tokens.size().
template <typename Index>
NgramReport Scan(std::span<const uint64_t> tokens, const NgramOptions& options) {
  NgramReport report;
  WindowTable<Index> table(tokens, options.n);
  ForEachWindow(tokens, options.n, [&](size_t start, uint64_t hash) {
    const auto& slot = table.Add(start, hash);
    if (slot.count <= options.max_occurrences) return true;
    report.fired = true;
    report.token_offset = start;
    report.first_token_offset = slot.first;
    report.occurrences = static_cast<uint32_t>(slot.count);  // == max_occurrences + 1
    return false;
  });
  return report;
}

// The number of distinct n-token windows. REQUIRES: 1 <= n <= tokens.size().
template <typename Index>
size_t DistinctWindows(std::span<const uint64_t> tokens, size_t n) {
  WindowTable<Index> table(tokens, n);
  ForEachWindow(tokens, n, [&](size_t start, uint64_t hash) {
    table.Add(start, hash);
    return true;
  });
  return table.distinct();
}

constexpr bool IsWordByteSlow(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

// kFold[c]: the byte as it enters a word's hash (ASCII letters lower-cased), 0 for separators.
constexpr std::array<unsigned char, 256> kFold = [] {
  std::array<unsigned char, 256> fold{};
  for (int c = 0; c < 256; ++c) {
    const auto b = static_cast<unsigned char>(c);
    if (IsWordByteSlow(b)) {
      fold[c] = (b >= 'A' && b <= 'Z') ? static_cast<unsigned char>(b - 'A' + 'a') : b;
    }
  }
  return fold;
}();

bool IsWordByte(unsigned char c) { return kFold[c] != 0; }

}  // namespace

NgramReport FindRepeatedNgram(std::span<const uint64_t> tokens, const NgramOptions& options) {
  if (options.n == 0 || tokens.size() < options.n) return {};  // n == 0 violates REQUIRES
  if (tokens.size() - options.n < std::numeric_limits<uint32_t>::max()) {
    return Scan<uint32_t>(tokens, options);
  }
  return Scan<uint64_t>(tokens, options);
}

std::vector<Word> NormalizedWords(std::string_view text, size_t base_offset) {
  // Bytes are folded and packed eight to a 64-bit chunk, and each chunk is mixed into the hash:
  // one multiply chain per eight bytes rather than per byte (FNV), which is most of the cost of
  // a long reasoning span. Word bytes are never 0, so zero padding cannot make two words equal;
  // the length is mixed in as well.
  std::vector<Word> words;
  words.reserve(text.size() / 5 + 1);
  const size_t size = text.size();
  size_t i = 0;
  while (i < size) {
    if (!IsWordByte(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const size_t begin = i;
    uint64_t h = 0x243f6a8885a308d3ULL;
    uint64_t chunk = 0;
    unsigned shift = 0;
    for (; i < size; ++i) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (!IsWordByte(c)) break;
      chunk |= static_cast<uint64_t>(kFold[c]) << shift;
      shift += 8;
      if (shift == 64) {
        h = Mix(h ^ chunk);
        chunk = 0;
        shift = 0;
      }
    }
    words.push_back(Word{Mix(h ^ chunk ^ (static_cast<uint64_t>(i - begin) << 56)),
                         begin + base_offset});
  }
  return words;
}

std::vector<uint64_t> WordHashes(std::span<const Word> words) {
  std::vector<uint64_t> hashes;
  hashes.reserve(words.size());
  for (const Word& w : words) hashes.push_back(w.hash);
  return hashes;
}

double SmoothRepetitionPenalty(std::span<const uint64_t> tokens, uint32_t n, double max_penalty) {
  if (n == 0 || tokens.size() < n) return 0.0;
  const size_t total = tokens.size() - n + 1;
  const size_t unique = total <= std::numeric_limits<uint32_t>::max()
                            ? DistinctWindows<uint32_t>(tokens, n)
                            : DistinctWindows<uint64_t>(tokens, n);
  // Same operations in the same order as open-r1's `(1 - len(ngrams) / total) * max_penalty`, so
  // the doubles agree bit for bit; `+ 0.0` turns the -0.0 of a repetition-free text into +0.0.
  const double scaling = 1.0 - static_cast<double>(unique) / static_cast<double>(total);
  return scaling * max_penalty + 0.0;
}

}  // namespace rlscore::scorers
