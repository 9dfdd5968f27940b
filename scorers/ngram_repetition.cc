// N-gram repetition rules and open-r1 smooth penalty (see ngram_repetition.h).
//
// Every n-token window gets a polynomial rolling hash of its (mixed) token values, so a scan is
// one pass of O(1) work per position. Windows are interned in an open-addressing table keyed by
// that hash; a hit is confirmed by comparing the n tokens, and a different window that merely
// shares the hash becomes an entry of its own further along the probe sequence. Collisions are
// therefore never counted as repetitions, they only cost a probe. A comparison happens only on a
// hash hit, at most one succeeds per position, so the scan does O(n) work per repeated window and
// O(1) per fresh one. The loop rule's window is a ring of one byte per position and a running
// count, so its share costs O(1) per position too.
#include "scorers/ngram_repetition.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RLSCORE_VECTOR_WORDS 1
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cpu_features.h"
#include "common/strings.h"

namespace rlscore::scorers {
namespace {

using ngram_internal::kBase;
using ngram_internal::Mix;

// The loop rule keeps near chains (NgramStream::NearChains) while recurrence_distance is below
// this: up to 2.5 MiB of them. A longer reach counts from the first token instead.
constexpr uint32_t kMaxNearDistance = uint32_t{1} << 15;
// Buckets of the near chains per start within reach, so that a chain rarely holds another
// window: 8 (20 KiB for the default reach of 400) ran 5 % faster than 4 on the benchmark
// corpus's derivations; 16 gained 2 % more for a table that no longer fits the L1 cache beside
// the scan.
constexpr size_t kNearBucketsPerStart = 8;
// Buckets of the bound: a window shares one with about 400 / 4096 of the windows in reach, so
// a clean text's bounded share stays a few points above its exact one, far below the minimum.
constexpr size_t kBoundBuckets = 4096;

uint32_t MixedTop(uint64_t hash) { return static_cast<uint32_t>(Mix(hash) >> 32); }

}  // namespace

NgramStream::NgramStream(const NgramOptions& options) : NgramStream(options, Storage{}) {}

NgramStream::NgramStream(const NgramOptions& options, Storage storage)
    : options_(options),
      tokens_(std::move(storage.tokens)),
      slots_(std::move(storage.slots)),
      recent_(std::move(storage.recent)),
      near_head_(std::move(storage.near_head)),
      near_ring_(std::move(storage.near_ring)),
      bound_(std::move(storage.bound)) {
  for (uint32_t i = 1; i < options_.n; ++i) top_ *= kBase;
  tokens_.clear();
  const bool loop = options_.rule == NgramRule::kLoop;
  counting_ = !loop || options_.recurrence_distance >= kMaxNearDistance;
  if (counting_) {
    Grow(16);
  } else {
    // The ring holds the start being added and the recurrence_distance before it.
    const size_t reach = size_t{options_.recurrence_distance} + 1;
    near_head_.resize(std::bit_ceil(kNearBucketsPerStart * reach));  // emptied by LeaveBound
    near_ring_.resize(2 * std::bit_ceil(reach));                     // read only where written
    // Every bucket's latest start out of reach of the first 2^16 - reach starts; past them, one
    // not written since is as good as any other bucket-mate.
    bound_.assign(kBoundBuckets, static_cast<uint16_t>(0 - reach));
    bounded_ = true;
  }
  if (loop) {
    recent_.assign(std::max<uint32_t>(1, options_.window), 0);
  } else {
    recent_.clear();
  }
}

NgramStream::Storage NgramStream::Release() && {
  tokens_.clear();
  return Storage{std::move(tokens_),    std::move(slots_),     std::move(recent_),
                 std::move(near_head_), std::move(near_ring_), std::move(bound_)};
}

void NgramStream::Reserve(size_t tokens) {
  tokens_.reserve(tokens);
  if (!counting_) return;  // CountFrom sizes the table
  // Load factor at most 1/2 keeps linear probing short.
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, 2 * tokens));
  if (capacity > slots_.size()) Grow(capacity);
}

size_t NgramStream::MemoryBytes() const {
  return tokens_.capacity() * sizeof(uint64_t) + slots_.capacity() * sizeof(Slot) +
         recent_.capacity() + (near_head_.capacity() + near_ring_.capacity()) * sizeof(uint32_t) +
         bound_.capacity() * sizeof(uint16_t);
}

void NgramStream::Grow(size_t capacity) {
  if (distinct_ == 0) {  // nothing to move: keep the memory (assign never shrinks it)
    slots_.assign(capacity, Slot{0, 0, 0, 0});
    return;
  }
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{0, 0, 0, 0});
  const size_t mask = capacity - 1;
  for (const Slot& slot : old) {
    if (slot.count == 0) continue;
    size_t i = slot.mixed & mask;
    while (slots_[i].count != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

bool NgramStream::SameWindow(size_t a, size_t b) const {
  return std::equal(tokens_.begin() + static_cast<std::ptrdiff_t>(a),
                    tokens_.begin() + static_cast<std::ptrdiff_t>(a + options_.n),
                    tokens_.begin() + static_cast<std::ptrdiff_t>(b));
}

// Counts one more occurrence of the window that starts at `start` and has rolling hash `hash`.
// Windows are interned by hash; a hit is confirmed by comparing the n tokens, and a different
// window that merely shares the hash becomes an entry of its own further along the probe
// sequence, so collisions are never counted as repetitions.
NgramStream::Slot& NgramStream::Add(size_t start, uint64_t hash) {
  if (2 * (distinct_ + 1) > slots_.size()) Grow(2 * slots_.size());
  const uint32_t mixed = MixedTop(hash);
  const size_t mask = slots_.size() - 1;
  for (size_t i = mixed & mask;; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.count == 0) {
      slot = Slot{mixed, static_cast<uint32_t>(start), static_cast<uint32_t>(start), 0};
      ++distinct_;
      return slot;
    }
    if (slot.mixed == mixed && SameWindow(slot.first, start)) return slot;
  }
}

void NgramStream::CountFrom(size_t end) {
  counting_ = true;
  // For the windows so far, at load factor 1/2; Add doubles it as counting goes on, so a text
  // that starts counting early zeroes no more table than it fills.
  Grow(std::bit_ceil(std::max<size_t>(16, 2 * tokens_.size())));
  const size_t n = options_.n;
  uint64_t hash = 0;
  for (size_t i = 0; i < n; ++i) hash = hash * kBase + tokens_[i];
  // The rolling hash of every window as Push computed it.
  for (size_t start = 0; start < end; ++start) {
    if (start > 0) hash = Roll(hash, top_, tokens_[start - 1], tokens_[start - 1 + n]);
    Slot& slot = Add(start, hash);
    ++slot.count;
    slot.last = static_cast<uint32_t>(start);
  }
}

uint32_t NgramStream::RecurringPercent() const {
  // Integer percent, rounded down: the same on every machine.
  return static_cast<uint32_t>(window_.recurring * 100 /
                               std::min(window_.positions, recent_.size()));
}

bool NgramStream::Fire(size_t token_offset, size_t first, uint32_t occurrences) {
  report_.fired = true;
  report_.token_offset = token_offset;
  report_.first_token_offset = first;
  report_.occurrences = occurrences;
  return true;
}

bool NgramStream::Push(uint64_t token, bool number) { return PushMixed(Mix(token), number); }

// hash = Σ m[start + i] · kBase^(n - 1 - i) mod 2^64 over the window of mixed tokens m, rolled in
// O(1).
bool NgramStream::PushMixedSlow(uint64_t mixed, bool number) {
  const size_t n = options_.n;
  // Window starts are kept in 32 bits: a generation of 2^32 tokens stops being checked.
  if (report_.fired || n == 0 || tokens_.size() >= std::numeric_limits<uint32_t>::max()) {
    return false;
  }
  // Kept mixed: the window leaving the hash needs its first token mixed again, and mixing is a
  // bijection, so comparing mixed tokens compares the tokens.
  tokens_.push_back(mixed);
  const size_t count = tokens_.size();
  const bool loop = options_.rule == NgramRule::kLoop;
  number_run_ = number ? number_run_ + 1 : 0;
  if (loop && options_.max_number_run != 0 && number_run_ > options_.max_number_run) {
    report_.number_run = true;
    return Fire(count - 1, count - number_run_, static_cast<uint32_t>(number_run_));
  }
  if (count <= n) {
    hash_ = hash_ * kBase + mixed;
    if (count < n) return false;
  } else {
    hash_ = Roll(hash_, top_, tokens_[count - 1 - n], mixed);
  }
  const size_t start = count - n;
  if (!counting_) {
    window_.Add(recent_, bounded_ ? Bound().MayRecur(start, hash_) : Chains().Recurs(start, hash_));
    if (!window_.Reached(recent_.size(), options_.min_recurring_percent)) return false;
    if (bounded_ && !LeaveBound(start)) return false;
    return StartCounting(start);
  }
  return CountWindow(start, /*recorded=*/false);
}

namespace {

// The runs of words NgramStream::PushRun takes.
struct WordRun {
  std::span<const Word> words;
  size_t size() const { return words.size(); }
  uint64_t hash(size_t i) const { return words[i].hash; }
  bool number(size_t i) const { return words[i].number; }
};
struct KeyRun {
  std::span<const uint64_t> hashes;
  const uint8_t* numbers;
  size_t size() const { return hashes.size(); }
  uint64_t hash(size_t i) const { return hashes[i]; }
  bool number(size_t i) const { return numbers[i] != 0; }
};

}  // namespace

bool NgramStream::PushWords(std::span<const Word> words) { return PushRun(WordRun{words}); }

bool NgramStream::PushWordKeys(std::span<const uint64_t> hashes, const uint8_t* numbers) {
  return PushRun(KeyRun{hashes, numbers});
}

template <typename Run>
bool NgramStream::PushRun(const Run words) {
  const size_t n = options_.n;
  const size_t max_run = options_.max_number_run != 0 ? size_t{options_.max_number_run}
                                                      : std::numeric_limits<size_t>::max();
  size_t i = 0;
  while (i < words.size()) {
    // PushMixed's inline path, for as many words as take it; the others one at a time.
    if (counting_ || report_.fired || n == 0 || tokens_.size() < n ||
        tokens_.size() + (words.size() - i) >= std::numeric_limits<uint32_t>::max()) {
      if (PushMixed(words.hash(i), words.number(i))) return true;
      ++i;
      continue;
    }
    size_t count = tokens_.size();
    // Room for every word, written through a pointer and cut back to the words taken: push_back
    // would store the vector's end and load it again for every word, as the window's byte stores
    // may alias it. The chains' view of the tokens stays valid meanwhile.
    tokens_.resize(count + (words.size() - i));
    uint64_t* const tokens = tokens_.data();
    const std::span<uint8_t> recent(recent_);
    const size_t size = recent.size();
    const uint64_t top = top_;
    const uint64_t top_base = top_ * kBase;
    const uint32_t min_percent = options_.min_recurring_percent;
    // Once the window is full, the share has reached its minimum where `need` of its positions
    // recur: a comparison a word rather than a multiplication and a minimum.
    const size_t need = (size_t{min_percent} * size + 99) / 100;
    uint64_t hash = hash_;
    Window window = window_;
    size_t number_run = number_run_;
    bool reached = false;
    // The loop over the words before `end`, with the window's flags from `recurs(start, hash)`,
    // until `reached_now()`; false where a number run stopped it.
    const auto push_until = [&](size_t end, const auto& recurs, const auto& reached_now) {
      for (; i < end; ++i) {
        const size_t run = words.number(i) ? number_run + 1 : 0;
        if (run > max_run) return false;  // fires, one at a time
        number_run = run;
        const uint64_t token = words.hash(i);
        tokens[count] = token;
        ++count;
        hash = Roll(hash, top, tokens[count - 1 - n], token);
        window.Add(recent, recurs(count - n, hash));
        if (reached_now()) {
          reached = true;
          ++i;
          return false;
        }
      }
      return true;
    };
    // The same once the window is full, where the share has reached its minimum when `need` of
    // its positions recur, over stretches of words that fill the ring up to its end: a position
    // then costs no test of the ring's end, and the loop keeps all it needs in registers.
    const auto push_full = [&](const auto& recurs) {
      while (i < words.size()) {
        const size_t first = i;
        const size_t stretch = std::min(words.size() - i, size - window.at);
        const size_t last = first + stretch;
        size_t w = first;
        uint64_t* next = tokens + count;  // where the next token goes
        size_t start = count + 1 - n;     // of the window the next token completes
        uint8_t* slot = recent.data() + window.at;
        size_t recurring = window.recurring;
        size_t run = number_run;
        bool stopped = false;
        // Where the run of number words cannot pass its limit within the stretch, it is counted
        // after the loop rather than word by word.
        const bool count_runs = run + stretch > max_run;
        for (; w != last; ++w) {
          if (count_runs) {
            const size_t longer = words.number(w) ? run + 1 : 0;
            if (longer > max_run) {  // fires, one at a time
              stopped = true;
              break;
            }
            run = longer;
          }
          const uint64_t token = words.hash(w);
          *next = token;
          // Roll, with the window's leaving token taken out after the multiplication rather than
          // before: the same hash mod 2^64, with a multiply and an add from one word's hash to
          // the next instead of two of each.
          hash = hash * kBase + (token - next[-static_cast<std::ptrdiff_t>(n)] * top_base);
          ++next;
          const auto flag = static_cast<uint8_t>(recurs(start++, hash));
          recurring -= *slot;
          recurring += flag;
          *slot++ = flag;
          if (recurring >= need) {
            reached = stopped = true;
            ++w;
            break;
          }
        }
        if (!count_runs) {
          size_t v = w;
          while (v != first && words.number(v - 1)) --v;
          run = (v == first ? run : 0) + (w - v);
        }
        const size_t took = w - first;
        i += took;
        count += took;
        window.at += took;
        if (window.at == size) window.at = 0;
        window.positions += took;
        window.recurring = recurring;
        number_run = run;
        if (stopped) return;
      }
    };
    const auto push = [&](const auto& recurs) {
      if (window.positions < size) {  // the window fills: its share is of the positions so far
        const size_t end = std::min(words.size(), i + (size - window.positions));
        if (!push_until(end, recurs, [&] { return window.Reached(size, min_percent); })) return;
      }
      push_full(recurs);
    };
    if (bounded_) {
      const BoundTable bound = Bound();
      push([&bound](size_t start, uint64_t h) { return bound.MayRecur(start, h); });
    } else {
      const NearChains chains = Chains();
      push([&chains](size_t start, uint64_t h) { return chains.Recurs(start, h); });
    }
    tokens_.resize(count);
    hash_ = hash;
    window_ = window;
    number_run_ = number_run;
    if (reached && (!bounded_ || LeaveBound(count - n)) && StartCounting(count - n)) return true;
    if (!reached && i < words.size()) {  // the number run
      if (PushMixed(words.hash(i), words.number(i))) return true;
      ++i;
    }
  }
  return false;
}

bool NgramStream::LeaveBound(size_t start) {
  bounded_ = false;
  std::fill(near_head_.begin(), near_head_.end(), kNoStart);
  const size_t n = options_.n;
  const size_t size = recent_.size();
  // The window's positions, and the starts within reach of its first: their windows go into the
  // chains in order, and the window's own get their flags again, exactly.
  const size_t held = std::min(window_.positions, size);
  const size_t first = start + 1 - held;
  const size_t from = first - std::min<size_t>(first, options_.recurrence_distance);
  const NearChains chains = Chains();
  uint64_t hash = 0;
  for (size_t k = 0; k < n; ++k) hash = hash * kBase + tokens_[from + k];
  size_t recurring = 0;
  for (size_t s = from; s <= start; ++s) {
    if (s > from) hash = Roll(hash, top_, tokens_[s - 1], tokens_[s - 1 + n]);
    const bool recurs = chains.Recurs(s, hash);
    if (s < first) continue;
    // Position s went into the ring (start - s) places before the latest.
    recent_[(window_.at + size - 1 - (start - s)) % size] = recurs ? 1 : 0;
    recurring += recurs ? 1 : 0;
  }
  window_.recurring = recurring;
  return window_.Reached(size, options_.min_recurring_percent);
}

bool NgramStream::StartCounting(size_t start) {
  CountFrom(start);
  return CountWindow(start, /*recorded=*/true);
}

bool NgramStream::CountWindow(size_t start, bool recorded) {
  const bool loop = options_.rule == NgramRule::kLoop;
  Slot& slot = Add(start, hash_);
  const bool recurs = slot.count > 0 && start - slot.last <= options_.recurrence_distance;
  ++slot.count;
  slot.last = static_cast<uint32_t>(start);
  if (loop && !recorded) window_.Add(recent_, recurs);
  if (slot.count <= options_.max_occurrences) return false;
  // The share is divided out only for an n-gram past its threshold, not for every token.
  const uint32_t percent = loop ? RecurringPercent() : 0;
  if (loop && percent < options_.min_recurring_percent) return false;
  report_.recurring_percent = percent;
  return Fire(start, slot.first, slot.count);
}

namespace {

// The batch scans' NgramStream::Storage, one per thread. A scan that grew it past kKeptBytes
// gives it up, so a thread keeps at most that much between scans.
constexpr size_t kKeptBytes = size_t{4} << 20;
NgramStream::Storage& ThreadStorage() {
  thread_local NgramStream::Storage storage;
  return storage;
}
NgramStream ThreadStream(const NgramOptions& options) {
  return NgramStream(options, std::move(ThreadStorage()));
}
void KeepStorage(NgramStream&& stream) {
  if (stream.MemoryBytes() <= kKeptBytes) ThreadStorage() = std::move(stream).Release();
}

}  // namespace

NgramReport FindRepeatedNgram(std::span<const uint64_t> tokens, const NgramOptions& options) {
  // Runs of this many tokens between checks for a firing, each mixed as Push mixes it and taken
  // by PushWordKeys, which keeps the stream's state in registers over a run.
  constexpr size_t kRun = 1024;
  NgramStream stream = ThreadStream(options);
  // Room in the table for the first runs only: a loop fires within a few of them, and the table
  // doubles as a long clean sequence needs. Sized for every token, a looping completion of
  // 20,000 ids would zero a megabyte of table for the few thousand read before it fires.
  stream.Reserve(std::min(tokens.size(), 4 * kRun));
  thread_local std::vector<uint64_t> run;
  static constexpr std::array<uint8_t, kRun> kNoNumbers{};  // token ids are never number words
  run.reserve(kRun);
  for (size_t at = 0; at < tokens.size() && !stream.fired(); at += kRun) {
    run.clear();
    for (const uint64_t token : tokens.subspan(at, std::min(kRun, tokens.size() - at))) {
      run.push_back(Mix(token));
    }
    stream.PushWordKeys(run, kNoNumbers.data());
  }
  const NgramReport report = stream.report();
  KeepStorage(std::move(stream));
  return report;
}

NgramReport FindRepeatedWords(std::span<const Word> words, const NgramOptions& options) {
  NgramStream stream = ThreadStream(options);
  stream.Reserve(words.size());
  stream.PushWords(words);
  const NgramReport report = stream.report();
  KeepStorage(std::move(stream));
  return report;
}

std::string DescribeNgramFiring(const NgramReport& report, const NgramOptions& options,
                                std::string_view unit, uint64_t first) {
  const std::string_view where = unit == "words" ? "character" : "token";
  if (report.number_run) {
    return absl::StrCat(report.occurrences, " number words in a row from ", Sv(where), " ", first,
                        ": counting");
  }
  std::string text = absl::StrCat("a ", options.n, "-gram of ", Sv(unit), " first at ", Sv(where),
                                  " ", first, " occurs ", report.occurrences, " times");
  if (options.rule == NgramRule::kLoop) {
    absl::StrAppend(&text, ", in a loop: ", report.recurring_percent, "% of the last ",
                    options.window, " ", options.n, "-grams recur");
  }
  return text;
}

#if defined(__SSE2__)
namespace {

// Bit k: whether byte k of `v` lies in [lo, hi] (unsigned), from a signed compare of the bytes
// shifted so that lo becomes -128.
uint32_t InRange(__m128i v, unsigned char lo, unsigned char hi) {
  const __m128i shifted = _mm_add_epi8(v, _mm_set1_epi8(static_cast<char>(-128 - lo)));
  const __m128i limit = _mm_set1_epi8(static_cast<char>(-128 + (hi - lo + 1)));
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmplt_epi8(shifted, limit)));
}

}  // namespace
#endif

void WordSplitter::BlockOf(const char* bytes, Block* block) {
  std::memset(block->folded + 64, 0, 16);
#if defined(__SSE2__)
  // kFold, 16 bytes at a time: letters, digits and bytes from 0x80 are word bytes; A-Z fold.
  uint64_t word = 0;
  uint64_t digit = 0;
  uint64_t leads = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 16 * k));
    const __m128i upper =
        _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8(static_cast<char>(-128 - 'A'))),
                       _mm_set1_epi8(static_cast<char>(-128 + 26)));
    const uint32_t letters = static_cast<uint32_t>(_mm_movemask_epi8(upper)) | InRange(v, 'a', 'z');
    const uint32_t high = static_cast<uint32_t>(_mm_movemask_epi8(v));
    const uint32_t digits = InRange(v, '0', '9');
    word |= static_cast<uint64_t>(letters | digits | high) << (16 * k);
    digit |= static_cast<uint64_t>(digits) << (16 * k);
    leads |= static_cast<uint64_t>(InRange(v, 0xE0, 0xEF)) << (16 * k);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(block->folded + 16 * k),
                     _mm_add_epi8(v, _mm_and_si128(upper, _mm_set1_epi8(0x20))));
  }
  block->word = word;
  block->digit = digit;
  block->leads = leads;
  block->plain = leads == 0;
#else
  block->word = 0;
  block->digit = 0;
  block->leads = 0;
  for (unsigned k = 0; k < 64; ++k) {
    const auto c = static_cast<unsigned char>(bytes[k]);
    if (c >= 0xE0 && c <= 0xEF) block->leads |= uint64_t{1} << k;
    block->folded[k] = Fold(c);
    if (block->folded[k] != 0) block->word |= uint64_t{1} << k;
    if (c >= '0' && c <= '9') block->digit |= uint64_t{1} << k;
  }
  block->plain = block->leads == 0;
#endif
}

bool WordSplitter::CpuHasVectorWords() {
#if defined(RLSCORE_VECTOR_WORDS)
  const CpuFeatures& cpu = Cpu();
  // Every extension RLSCORE_AVX512 names: the compiler may use any of them.
  return cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl && cpu.avx512vbmi &&
         cpu.avx512vbmi2;
#else
  return false;
#endif
}

Word WordSplitter::WordInBlock(const Block& block, unsigned begin, unsigned length, size_t offset) {
  using ngram_internal::FirstBytes;
  using ngram_internal::Mix;
  // Begin, then Add of each byte (a Flush every eight), then End.
  uint64_t hash = ngram_internal::kWordSeed;
  unsigned at = begin;
  for (; at + 8 <= begin + length; at += 8) {
    uint64_t chunk;
    std::memcpy(&chunk, block.folded + at, 8);
    hash = Mix(hash ^ chunk);
  }
  uint64_t rest;
  std::memcpy(&rest, block.folded + at, 8);
  rest &= FirstBytes(begin + length - at);
  const bool number = (~block.digit >> begin & ((uint64_t{1} << length) - 1)) == 0;
  return Word{Mix(hash ^ rest ^ (static_cast<uint64_t>(length) << 56)), offset + begin, number};
}

#if defined(RLSCORE_VECTOR_WORDS)
// GCC 12's AVX-512 intrinsics start some results from an undefined vector, which it then warns
// may be used uninitialised; none is.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace {

#define RLSCORE_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,avx512vbmi2")))

// Mix in each 64-bit lane.
RLSCORE_AVX512 inline __m512i MixLanes(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 30));
  x = _mm512_mullo_epi64(x, _mm512_set1_epi64(static_cast<int64_t>(0xbf58476d1ce4e5b9ULL)));
  x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 27));
  x = _mm512_mullo_epi64(x, _mm512_set1_epi64(static_cast<int64_t>(0x94d049bb133111ebULL)));
  return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}

}  // namespace

// BlockOf's classes as compare masks of the whole block: a class is a range of bytes, so the
// bytes shifted down to its start fall below its width.
RLSCORE_AVX512 void WordSplitter::VectorBlockOf(const char* bytes, Block* block) {
  const __m512i v = _mm512_loadu_si512(bytes);
  const auto in_range = [v](unsigned char lo, unsigned char width) RLSCORE_AVX512 {
    return _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(static_cast<char>(lo))),
                                  _mm512_set1_epi8(static_cast<char>(width)));
  };
  const __mmask64 upper = in_range('A', 26);
  const __mmask64 digits = in_range('0', 10);
  block->word = upper | in_range('a', 26) | digits | _mm512_movepi8_mask(v);
  block->digit = digits;
  block->leads = in_range(0xE0, 16);
  block->plain = block->leads == 0;
  _mm512_storeu_si512(block->folded, _mm512_mask_add_epi8(v, upper, v, _mm512_set1_epi8(0x20)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(block->folded + 64), _mm_setzero_si128());
}

namespace {

// Writes each eight words HashInnerWords hashes as Words, 24 bytes each (hash, offset, number),
// laid out in three vectors.
static_assert(sizeof(Word) == 24 && offsetof(Word, offset) == 8 && offsetof(Word, number) == 16);
struct WordsOut {
  // Qword l of vector v of eight Words is field (8v + l) % 3 of word (8v + l) / 3: its lane in
  // the hashes (0-7) or offsets (8-15), or, where number_lanes has its bit, in the numbers.
  struct Layout {
    alignas(64) std::array<int64_t, 8> hash_offset[3];
    alignas(64) std::array<int64_t, 8> word[3];
    __mmask8 number_lanes[3];
  };
  static constexpr Layout kLayout = [] {
    Layout layout{};
    for (int v = 0; v < 3; ++v) {
      layout.number_lanes[v] = 0;
      for (int l = 0; l < 8; ++l) {
        const int q = 8 * v + l;
        layout.word[v][l] = q / 3;
        layout.hash_offset[v][l] = q % 3 == 1 ? 8 + q / 3 : q / 3;
        if (q % 3 == 2) layout.number_lanes[v] |= static_cast<__mmask8>(1 << l);
      }
    }
    return layout;
  }();

  Word* out;
  size_t offset;

  RLSCORE_AVX512 void Eight(size_t g, __m512i hashes, __m512i begin, __mmask8 numbers) {
    const __m512i fields[3] = {
        hashes, _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(offset)), begin),
        _mm512_maskz_mov_epi64(numbers, _mm512_set1_epi64(1))};
    auto* const bytes = reinterpret_cast<char*>(out + g);
    for (int v = 0; v < 3; ++v) {
      const __m512i taken = _mm512_permutex2var_epi64(
          fields[0], _mm512_load_si512(kLayout.hash_offset[v].data()), fields[1]);
      _mm512_storeu_si512(
          bytes + 64 * v,
          _mm512_mask_permutexvar_epi64(taken, kLayout.number_lanes[v],
                                        _mm512_load_si512(kLayout.word[v].data()), fields[2]));
    }
  }
  void One(size_t i, const Word& word) { out[i] = word; }
};

// Writes each eight words' hashes and number flags only: one vector store and eight bytes.
struct KeysOut {
  WordSplitter::KeyRoom out;

  RLSCORE_AVX512 void Eight(size_t g, __m512i hashes, __m512i, __mmask8 numbers) {
    _mm512_storeu_si512(out.hashes + g, hashes);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out.numbers + g),
                     _mm_maskz_mov_epi8(numbers, _mm_set1_epi8(1)));
  }
  void One(size_t i, const Word& word) {
    out.hashes[i] = word.hash;
    out.numbers[i] = word.number ? 1 : 0;
  }
};

}  // namespace

// Eight words at a time, a word to a 64-bit lane, as ShortWord does one: its first eight bytes
// and the up to eight after them are picked from the block's folded bytes by a byte permutation
// (the indices past a word's end are masked out, so they may wrap), then hashed in the lanes.
// `emit` writes each eight (Eight: the hashes, the first bytes' indices and the number flags;
// lanes past the last word hold garbage that may be written, as the room allows) and then any of
// them of 16 bytes or more, rare in text, hashed again on its own (One, WordInBlock).
template <typename Emit>
RLSCORE_AVX512 size_t WordSplitter::HashInnerWords(const Block& block, uint64_t starts,
                                                   uint64_t ends, size_t offset, Emit& emit) {
  alignas(64) static constexpr std::array<uint8_t, 64> kIota = [] {
    std::array<uint8_t, 64> iota{};
    for (int k = 0; k < 64; ++k) iota[k] = static_cast<uint8_t>(k);
    return iota;
  }();
  const __m512i iota = _mm512_load_si512(kIota.data());
  alignas(64) uint8_t first_bytes[64];
  alignas(64) uint8_t last_bytes[64];
  _mm512_store_si512(first_bytes, _mm512_maskz_compress_epi8(starts, iota));
  _mm512_store_si512(last_bytes, _mm512_maskz_compress_epi8(ends, iota));
  const auto count = static_cast<size_t>(std::popcount(starts));
  const __m512i folded = _mm512_loadu_si512(block.folded);
  // Byte k of each lane: k, for the first chunk; a lane's byte 0 copied to all eight.
  const __m512i within = _mm512_set1_epi64(0x0706050403020100LL);
  const __m512i spread =
      _mm512_set_epi8(8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8, 0, 0,
                      0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8,
                      8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i eight = _mm512_set1_epi8(8);
  const __m512i seed = _mm512_set1_epi64(static_cast<int64_t>(ngram_internal::kWordSeed));
  const __m512i ones = _mm512_set1_epi64(-1);
  const __m512i not_digits = _mm512_set1_epi64(static_cast<int64_t>(~block.digit));
  for (size_t g = 0; g < count; g += 8) {
    const __m512i begin =
        _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(first_bytes + g)));
    const __m512i last =
        _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(last_bytes + g)));
    const __m512i length = _mm512_add_epi64(_mm512_sub_epi64(last, begin), _mm512_set1_epi64(1));
    const __m512i index = _mm512_add_epi8(_mm512_shuffle_epi8(begin, spread), within);
    const __m512i lengths = _mm512_shuffle_epi8(length, spread);
    const __m512i first =
        _mm512_maskz_permutexvar_epi8(_mm512_cmplt_epu8_mask(within, lengths), index, folded);
    const __m512i second = _mm512_maskz_permutexvar_epi8(
        _mm512_cmplt_epu8_mask(_mm512_add_epi8(within, eight), lengths),
        _mm512_add_epi8(index, eight), folded);
    const __mmask8 two = _mm512_cmpge_epu64_mask(length, _mm512_set1_epi64(8));
    const __m512i hash = _mm512_mask_mov_epi64(seed, two, MixLanes(_mm512_xor_si512(seed, first)));
    const __m512i tail = _mm512_mask_mov_epi64(first, two, second);
    const __m512i words =
        MixLanes(_mm512_xor_si512(_mm512_xor_si512(hash, tail), _mm512_slli_epi64(length, 56)));
    const __mmask8 numbers =
        _mm512_testn_epi64_mask(_mm512_srlv_epi64(not_digits, begin),
                                _mm512_andnot_si512(_mm512_sllv_epi64(ones, length), ones));
    emit.Eight(g, words, begin, numbers);
    const size_t lanes = std::min<size_t>(8, count - g);
    for (unsigned long_words =
             _mm512_cmpge_epu64_mask(length, _mm512_set1_epi64(16)) & ((1u << lanes) - 1);
         long_words != 0; long_words &= long_words - 1) {
      const auto k = static_cast<size_t>(std::countr_zero(long_words));
      emit.One(g + k, WordInBlock(block, first_bytes[g + k],
                                  last_bytes[g + k] - first_bytes[g + k] + 1u, offset));
    }
  }
  return count;
}

RLSCORE_AVX512 size_t WordSplitter::InnerWords(const Block& block, uint64_t starts, uint64_t ends,
                                               size_t offset, Word* out) {
  WordsOut emit{out, offset};
  return HashInnerWords(block, starts, ends, offset, emit);
}

RLSCORE_AVX512 size_t WordSplitter::InnerWordKeys(const Block& block, uint64_t starts,
                                                  uint64_t ends, KeyRoom out) {
  KeysOut emit{out};
  return HashInnerWords(block, starts, ends, 0, emit);
}
#undef RLSCORE_AVX512
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#else
size_t WordSplitter::InnerWords(const Block&, uint64_t, uint64_t, size_t, Word*) { return 0; }
size_t WordSplitter::InnerWordKeys(const Block&, uint64_t, uint64_t, KeyRoom) { return 0; }
void WordSplitter::VectorBlockOf(const char* bytes, Block* block) { BlockOf(bytes, block); }
#endif

unsigned WordSplitter::TakeThreeByteCharacters(Block* block, const char* bytes, size_t available) {
  // FeedBytes reads each lead byte with the two bytes after it when both continue it, else keeps
  // the lead (and a continuation byte) as word bytes and reads the next byte as usual. Leads and
  // continuation bytes are disjoint, so each lead is settled on its own.
  unsigned take = 64;
  block->breaks = 0;
  block->break_at_end = false;
  for (uint64_t leads = block->leads; leads != 0; leads &= leads - 1) {
    const auto k = static_cast<unsigned>(std::countr_zero(leads));
    if (k + 2 >= available) return 0;  // FeedBytes holds it for the next piece
    const auto* c = reinterpret_cast<const unsigned char*>(bytes + k);
    if ((c[1] & 0xC0) != 0x80 || (c[2] & 0xC0) != 0x80) continue;  // broken: word bytes
    const uint32_t code_point = (static_cast<uint32_t>(c[0] & 0x0F) << 12) |
                                (static_cast<uint32_t>(c[1] & 0x3F) << 6) | (c[2] & 0x3F);
    const CharClass type = Classify(code_point);
    if (k > 61) {
      // Its last bytes are in the next block. A word cannot be cut inside it, but one ends
      // before a separator or a word of its own: the block stops there, and the next one starts
      // with the character.
      if (type == CharClass::kWordBytes) return 0;
      block->word &= ~(~uint64_t{0} << k);
      take = k;
      break;
    }
    switch (type) {
      case CharClass::kWordBytes:
        break;
      case CharClass::kSeparator:
        block->word &= ~(uint64_t{7} << k);
        break;
      case CharClass::kOwnWord:
        block->breaks |= uint64_t{1} << k;
        if (k + 3 < 64) {
          block->breaks |= uint64_t{1} << (k + 3);
        } else {
          block->break_at_end = true;
        }
        break;
    }
  }
  return take;
}

WordSplitter::CharClass WordSplitter::Classify(uint32_t c) {
  // Kana, CJK ideographs (extension A, unified, compatibility): a word each.
  if ((c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) ||
      (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF)) {
    return CharClass::kOwnWord;
  }
  // General punctuation (dashes, curly quotes, ellipsis, invisible operators), CJK symbols and
  // punctuation, and the fullwidth forms' punctuation (not their letters and digits).
  if ((c >= 0x2000 && c <= 0x206F) || (c >= 0x3000 && c <= 0x303F) ||
      (c >= 0xFF00 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
      (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65)) {
    return CharClass::kSeparator;
  }
  return CharClass::kWordBytes;
}

std::vector<Word> NormalizedWords(std::string_view text, size_t base_offset) {
  // Bytes are folded and packed eight to a 64-bit chunk, and each chunk is mixed into the hash:
  // one multiply chain per eight bytes rather than per byte (FNV), which is most of the cost of
  // a long reasoning span.
  std::vector<Word> words;
  words.reserve(text.size() / 5 + 1);
  WordSplitter splitter(base_offset);
  const auto keep = [&words](const Word& w) { words.push_back(w); };
  splitter.Feed(text, keep);
  splitter.Finish(keep);
  return words;
}

TextNgramReport FindRepeatedWordsInText(std::string_view text, const NgramOptions& options) {
  // Pieces of this many bytes between checks for a firing: small beside a completion, large
  // beside the per-piece cost.
  constexpr size_t kPiece = 4096;
  NgramStream stream = ThreadStream(options);
  // Room for a word every four bytes (English prose has one every five or six, so a clean text
  // rarely regrows the table) in the first pieces only: a loop fires within a few of them, and
  // the table doubles as a long clean text needs.
  stream.Reserve(std::min(text.size(), 4 * kPiece) / 4);
  // A piece's words, split before they are pushed: the split and the rule each run in a loop of
  // their own, which keeps each one's state in registers. Only what the rule reads of each word,
  // its hash and number flag (no offset: a firing splits again below). Written through pointers
  // into room for the most a piece can hold (a word ending at each of its bytes or at the
  // character the piece before ended inside, and one that Finish ends) and a block's room past
  // them: a vector's push_back would store its end and load it again for every word. Kept from
  // call to call.
  constexpr size_t kRoom = kPiece + 4 + WordSplitter::kBlockWords;
  thread_local std::vector<uint64_t> hashes(kRoom);
  thread_local std::vector<uint8_t> numbers(kRoom);
  struct Sink {
    uint64_t* hashes;
    uint8_t* numbers;
    size_t count = 0;
    void operator()(const Word& w) {
      hashes[count] = w.hash;
      numbers[count] = w.number ? 1 : 0;
      ++count;
    }
    WordSplitter::KeyRoom Keys() const { return {hashes + count, numbers + count}; }
    void Took(size_t taken) { count += taken; }
  } sink{hashes.data(), numbers.data()};
  const auto push = [&stream, &sink] {
    stream.PushWordKeys(std::span<const uint64_t>(sink.hashes, sink.count), sink.numbers);
    sink.count = 0;
  };
  WordSplitter splitter;
  for (size_t at = 0; at < text.size() && !stream.fired(); at += kPiece) {
    splitter.Feed(text.substr(at, kPiece), sink);
    push();
  }
  if (!stream.fired()) {
    splitter.Finish(sink);
    push();
  }
  TextNgramReport out{.report = stream.report()};
  KeepStorage(std::move(stream));
  if (out.report.fired) {
    // Only a firing needs word offsets: split again the part that was read. The words it names
    // have ended inside it, and a prefix splits into the same words as the whole up to its end.
    const std::vector<Word> words = NormalizedWords(text.substr(0, splitter.offset()));
    out.char_offset = words[out.report.token_offset].offset;
    out.first_char_offset = words[out.report.first_token_offset].offset;
  }
  return out;
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
  NgramOptions never;  // counts distinct windows, never fires
  never.n = n;
  never.max_occurrences = std::numeric_limits<uint32_t>::max();
  never.rule = NgramRule::kLiteral;
  NgramStream stream = ThreadStream(never);
  stream.Reserve(tokens.size());
  for (const uint64_t token : tokens) stream.Push(token);
  const size_t unique = stream.distinct();
  KeepStorage(std::move(stream));
  // Same operations in the same order as open-r1's `(1 - len(ngrams) / total) * max_penalty`, so
  // the doubles agree bit for bit; `+ 0.0` turns the -0.0 of a repetition-free text into +0.0.
  const double scaling = 1.0 - static_cast<double>(unique) / static_cast<double>(total);
  return scaling * max_penalty + 0.0;
}

}  // namespace rlscore::scorers
