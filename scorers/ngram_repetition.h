// The n-gram repetition rules (docs/REPETITION.md), over tokens — token ids when the caller has
// them, else normalised words. Two rules share one scan:
//
//   - loop (the default): an occurrence of an n-gram (default 8) that is at least its 4th
//     (more than `max_occurrences`) fires when the text just before it is a loop: of the last
//     `window` n-gram positions (200; fewer at the start of the text), at least
//     `min_recurring_percent` (60 %) start an n-gram that already occurred within
//     `recurrence_distance` (400) positions. Phrases that an honest text reuses recur far apart
//     or among new text; a loop recurs and fills the window. For words, a run of more than
//     `max_number_run` (512) number words in a row also fires: numbers are the one vocabulary
//     that never repeats, so counting escapes the n-gram test.
//   - literal (the first version's, kept by name): any n-gram that occurs more than
//     `max_occurrences` times fires, however far apart.
//
// The report says where the occurrence that fired begins: the point where a stop hook would
// have halted generation. Both rules are causal (they read nothing after that occurrence), so
// the stream below stops exactly where the batch scan reports. O(1) amortised work per token
// (each hash match is confirmed by comparing n tokens), O(length) memory.
//
// The loop rule can fire only where the recurring share has reached its minimum, and whether a
// position recurs depends on the last `recurrence_distance` positions alone. So until the share
// first reaches the minimum (in honest text, rarely), the stream keeps only those positions'
// n-grams, in hash chains of about 20 KiB that stay in the L1 cache; there it counts every n-gram
// from the start of the text and goes on counting. The counts are the same as if it had counted
// all along. Before even the chains, it bounds the share from above: a position may recur when
// some window of the last `recurrence_distance` positions fell in the same bucket of a small
// table as its own, a load and a store per position where the chains take a walk that the branch
// predictor misses. Only where that bound reaches the minimum (in honest text, rarely) does the
// stream rebuild the chains for the positions the window holds, take the exact share, and check
// exactly from then on.
//
//   std::vector<Word> words = NormalizedWords(text);
//   NgramReport r = FindRepeatedWords(words, NgramOptions{});
//   if (r.fired) char_offset = words[r.token_offset].offset;
//
// Also the open-r1 / TRL smooth penalty `(1 - unique/total) × max_penalty` for parity with peers.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlscore::scorers {

namespace ngram_internal {

// Odd base of the rolling hash (the golden-ratio constant); arithmetic is mod 2^64.
inline constexpr uint64_t kBase = 0x9e3779b97f4a7c15ULL;

// The splitmix64 / murmur3 finaliser: a bijection of uint64 with full avalanche.
constexpr uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// The mask of the first `bytes` (0 to 7) bytes of a chunk.
constexpr uint64_t FirstBytes(unsigned bytes) { return (uint64_t{1} << (8 * bytes)) - 1; }

// Whether the first `bytes` (at most 8) bytes of a chunk are ASCII digits, eight at once: a byte
// is a digit when its high nibble is 3 and its low nibble plus 6 does not carry into the high one
// (no carry crosses bytes: 15 + 6 < 256).
constexpr bool AllDigits(uint64_t chunk, unsigned bytes) {
  if (bytes == 0) return true;
  const uint64_t mask = bytes >= 8 ? ~uint64_t{0} : FirstBytes(bytes);
  constexpr uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ULL;
  constexpr uint64_t kLow = 0x0F0F0F0F0F0F0F0FULL;
  return (chunk & kHigh & mask) == (0x3030303030303030ULL & mask) &&
         (((chunk & kLow) + 0x0606060606060606ULL) & kHigh & mask) == 0;
}

// Where a word's hash starts (WordSplitter).
inline constexpr uint64_t kWordSeed = 0x243f6a8885a308d3ULL;

}  // namespace ngram_internal

enum class NgramRule : uint8_t {
  kLoop,     // recurrences that fill a recent window (the default)
  kLiteral,  // any n-gram more than max_occurrences times
};

struct NgramOptions {
  uint32_t n = 8;                // n == 0 never fires
  uint32_t max_occurrences = 3;  // an n-gram fires from its (max_occurrences + 1)th occurrence
  NgramRule rule = NgramRule::kLoop;
  // The loop rule's window (n-gram positions), the share of it that must recur, and how close
  // the previous occurrence must be for a position to count as recurring.
  uint32_t window = 200;
  uint32_t min_recurring_percent = 60;
  uint32_t recurrence_distance = 400;
  // Loop rule on words: more than this many number words in a row fire; 0 turns it off.
  uint32_t max_number_run = 512;
};

struct NgramReport {
  bool fired = false;
  bool number_run = false;  // fired by the run of number words, not by an n-gram
  // Index (in the sequence given) of the first token of the occurrence that fired, and of the
  // first occurrence of the same n-gram (for a number run: the number that crossed the limit,
  // and the first of the run). Meaningful only when fired.
  size_t token_offset = 0;
  size_t first_token_offset = 0;
  uint32_t occurrences = 0;  // of the n-gram so far; for a number run, its length
  // Loop rule: the recurring share of the window when it fired, in percent (0 for the others).
  uint32_t recurring_percent = 0;
};

// Scans `tokens` left to right and stops at the first occurrence that fires, so the report is
// the earliest point where the rule fires (occurrences may overlap: 11 identical tokens hold four
// 8-grams). Hash collisions are ruled out by comparing the n tokens. Token ids carry no number
// flag, so the number-run part of the loop rule does not apply. Pure and thread-safe. (It is
// NgramStream fed every token: the two never disagree.)
NgramReport FindRepeatedNgram(std::span<const uint64_t> tokens, const NgramOptions& options);

// A normalised word: ASCII letters folded to lower case; runs of letters, digits and non-ASCII
// bytes are words; everything else separates words and is dropped. Scripts written without
// spaces are split as their readers split them: each Chinese or Japanese character (CJK
// ideographs, kana) is a word of its own, and CJK, fullwidth and general punctuation ("，", "。",
// "“", "—") separates words, so a loop of a Chinese sentence is a loop of 8-grams too.
struct Word {
  uint64_t hash;  // of the normalised word
  size_t offset;  // byte offset of its first character, plus the base offset given
  bool number;    // ASCII digits only
};

// The same over normalised words, with their number flags.
NgramReport FindRepeatedWords(std::span<const Word> words, const NgramOptions& options);

// What fired, in words, for a report that fired: which rule, the n-gram's first occurrence (or
// the run's first number) as `first` — a character offset when `unit` is "words", a token index
// for "token ids" — and how often it occurred. Shared by the batch scorer and the stream, so the
// two describe a firing alike.
std::string DescribeNgramFiring(const NgramReport& report, const NgramOptions& options,
                                std::string_view unit, uint64_t first);

// The same rule fed one token at a time, for a generation that is still being produced
// (MonitorGeneration): after each Push, report() is exactly what FindRepeatedNgram returns for
// the tokens pushed so far. O(1) amortised work per token; memory grows with the tokens pushed
// (8 bytes each, and 50-80 once the rule counts: the tokens and a hash table at most half full),
// so a caller bounds it by bounding the tokens.
//
//   NgramStream stream(NgramOptions{});
//   for (uint64_t token : generated) {
//     if (stream.Push(token)) return Stop(stream.report().token_offset);
//   }
//
// Not thread-safe; one per generation.
class NgramStream {
 public:
  explicit NgramStream(const NgramOptions& options);

  // A stream's memory, handed from one stream to the next by a caller that scans many texts on
  // one thread (the batch scans above keep one per thread), so that a scan reuses pages already
  // mapped: a 12 kB completion's table is 64-128 KiB, which glibc otherwise maps afresh (or trims
  // and grows again) for every completion, and the page faults cost more than the scan.
  struct Storage;
  NgramStream(const NgramOptions& options, Storage storage);
  // Gives the stream's memory back, emptied, for the next stream.
  Storage Release() &&;

  // Room for `tokens` tokens without regrowing (a hint; FindRepeatedNgram knows its length).
  void Reserve(size_t tokens);

  // Adds the next token (`number`: it is a number word). Returns true when this token makes the
  // rule fire; once fired, later tokens are ignored and the report stays that of the first firing.
  bool Push(uint64_t token, bool number = false);
  // Push for the next word of a text (NormalizedWords, WordSplitter): the same rule, with the
  // word's hash taken as it is, since it is mixed already. A stream takes words or tokens, never
  // both.
  bool PushWord(const Word& word) { return PushMixed(word.hash, word.number); }
  // PushWord of each word in turn, up to the first that makes the rule fire (true) or to the
  // end. Same reports; for a scan that has its words at hand it is faster, since the stream's
  // state stays in registers from one word to the next.
  bool PushWords(std::span<const Word> words);
  // PushWords of words given by what the rule reads of them: `hashes[i]` and `numbers[i]` (1 for
  // a number word, else 0) for each i below hashes.size(). WordSplitter writes words this way
  // into a sink that asks for it, with less to move than whole Words.
  bool PushWordKeys(std::span<const uint64_t> hashes, const uint8_t* numbers);

  bool fired() const { return report_.fired; }
  const NgramReport& report() const { return report_; }
  size_t tokens() const { return tokens_.size(); }
  // Distinct n-token windows counted so far: every window under the literal rule; under the loop
  // rule only once it counts (see the top of this file), 0 before.
  size_t distinct() const { return distinct_; }
  // Whether the n-grams are counted: the literal rule always; the loop rule from the first
  // position where the recurring share reaches its minimum.
  bool counting() const { return counting_; }
  // Whether the loop rule, not counting yet, still bounds recurrences from above rather than
  // checking each exactly (see the top of this file).
  bool bounded() const { return bounded_; }
  size_t MemoryBytes() const;

 private:
  struct Slot {
    // The top half of the window's mixed rolling hash: places the entry (on insertion and on
    // regrowth alike) and filters comparisons. 32 bits keep an entry at 16 bytes; a table of
    // more than 2^32 slots would only cluster, never miss.
    uint32_t mixed;
    uint32_t first;  // start of its first occurrence
    uint32_t last;   // start of its latest occurrence
    uint32_t count;  // 0: empty
  };
  static constexpr uint32_t kNoStart = ~uint32_t{0};

 public:
  struct Storage {
    std::vector<uint64_t> tokens;
    std::vector<Slot> slots;
    std::vector<uint8_t> recent;
    std::vector<uint32_t> near_head;
    std::vector<uint32_t> near_ring;
    std::vector<uint16_t> bound;
  };

 private:
  // Push of a token already mixed (a bijection of the token, with full avalanche). The loop
  // rule's path before it counts, which almost every word of a clean text takes, is inline below;
  // everything else is PushMixedSlow.
  bool PushMixed(uint64_t mixed, bool number);
  bool PushMixedSlow(uint64_t mixed, bool number);
  // PushWords over a run of words that gives each word's `hash(i)` and `number(i)`, `size()` of
  // them. By value: the window's byte stores may alias anything reached through a reference.
  template <typename Run>
  bool PushRun(Run words);
  Slot& Add(size_t start, uint64_t hash);
  void Grow(size_t capacity);
  bool SameWindow(size_t a, size_t b) const;
  // The rolling hash of the window that drops `leaving` and takes `entering`.
  static uint64_t Roll(uint64_t hash, uint64_t top, uint64_t leaving, uint64_t entering) {
    return (hash - leaving * top) * ngram_internal::kBase + entering;
  }
  // Before counting, the near chains (near_head_, near_ring_) and the tokens they point into, as a
  // view that PushWords keeps in registers for a run of words. Valid until tokens_ next grows.
  struct NearChains {
    uint32_t* head;
    size_t head_mask;
    uint32_t* ring;
    size_t ring_mask;  // a start's two words are at 2 * (start & ring_mask)
    size_t distance;
    const uint64_t* tokens;
    size_t n;
    // Whether the window at `start` (rolling hash `hash`) occurred within `distance` positions
    // before it. Adds it to the chains.
    bool Recurs(size_t start, uint64_t hash) const {
      // The rolling hash needs no mixing here: its low bits are those of a sum of mixed tokens.
      // The bucket comes from the low bits, the tag from the high ones.
      const auto tag = static_cast<uint32_t>(hash >> 32);
      uint32_t& bucket = head[hash & head_mask];
      const uint32_t latest = bucket;
      ring[2 * (start & ring_mask)] = tag;
      ring[2 * (start & ring_mask) + 1] = latest;
      bucket = static_cast<uint32_t>(start);
      // Starts within reach, latest first; kNoStart is out of reach. A start's ring words were
      // written when it was added and not since: the ring is longer than the reach.
      for (size_t at = latest; start - at <= distance; at = ring[2 * (at & ring_mask) + 1]) {
        if (ring[2 * (at & ring_mask)] == tag &&
            std::equal(tokens + at, tokens + at + n, tokens + start)) {
          return true;
        }
      }
      return false;
    }
  };
  NearChains Chains() {
    return NearChains{near_head_.data(),
                      near_head_.size() - 1,
                      near_ring_.data(),
                      near_ring_.size() / 2 - 1,
                      options_.recurrence_distance,
                      tokens_.data(),
                      options_.n};
  }
  // Before the loop rule counts, while `bounded_`: for each bucket of window hashes, the latest
  // start (its low 16 bits) whose window fell in it, as a view that PushWords keeps in registers.
  // A window that recurs within `distance` finds its bucket's latest start within `distance` too
  // (its earlier occurrence wrote it, and any later writer is nearer), so MayRecur never misses a
  // recurrence; it also answers true for windows that merely share a bucket with a recent one,
  // or with one 2^16 positions older (16 bits suffice, as the near chains' reach is under 2^15).
  struct BoundTable {
    uint16_t* latest;
    size_t mask;
    size_t distance;
    bool MayRecur(size_t start, uint64_t hash) const {
      uint16_t& slot = latest[hash & mask];
      const bool may = static_cast<uint16_t>(start - slot) <= distance;
      slot = static_cast<uint16_t>(start);
      return may;
    }
  };
  BoundTable Bound() {
    return BoundTable{bound_.data(), bound_.size() - 1, options_.recurrence_distance};
  }
  // Leaves the bound for the near chains at `start`, the position whose bounded share reached the
  // minimum: rebuilds the chains and the window's flags from the tokens of the positions that
  // they need. Returns whether the exact share has reached the minimum.
  bool LeaveBound(size_t start);
  // The loop rule's window: whether each of the last `recent.size()` positions recurs (a ring of
  // one byte each, `recent`), and how many do. A value, so that PushWords keeps it in registers.
  struct Window {
    size_t at = 0;  // where the next position goes in the ring
    size_t positions = 0;
    size_t recurring = 0;
    // Records whether the position just added recurs.
    void Add(std::span<uint8_t> recent, bool recurs) {
      uint8_t& slot = recent[at];
      if (++at == recent.size()) at = 0;  // not `positions % size`: a division per token
      recurring -= slot;                  // the position leaving the window (0 while it fills)
      slot = recurs ? 1 : 0;
      recurring += slot;
      ++positions;
    }
    // Whether the recurring share has reached `min_percent`, without a division: before it has,
    // no position can fire, so nothing needs counting.
    bool Reached(size_t size, uint32_t min_percent) const {
      return recurring * 100 >= size_t{min_percent} * std::min(positions, size);
    }
  };
  // Starts counting: counts the windows that start before `end`, as if counted all along.
  void CountFrom(size_t end);
  // The rest of a push whose position `start` made the recurring share reach its minimum
  // before counting: counts everything so far and this window, and applies the rule.
  bool StartCounting(size_t start);
  // Counts the window at `start` (rolling hash hash_) and applies the rule; `recorded`: the loop
  // rule's window has taken this position already.
  bool CountWindow(size_t start, bool recorded);
  // The share of the window's positions that recur, in percent.
  uint32_t RecurringPercent() const;
  bool Fire(size_t token_offset, size_t first, uint32_t occurrences);

  NgramOptions options_;
  uint64_t top_ = 1;  // kBase^(n - 1)
  uint64_t hash_ = 0;
  std::vector<uint64_t> tokens_;  // each token pushed, mixed
  std::vector<Slot> slots_;
  size_t distinct_ = 0;
  bool counting_ = true;
  // Loop rule: whether each of the last `window` positions recurs (a ring), and how many do.
  std::vector<uint8_t> recent_;
  Window window_;
  size_t number_run_ = 0;
  // Before the loop rule counts, the windows of the last positions in hash chains, as LZ77
  // compressors keep them: near_head_[bucket] is the latest start whose window falls in the
  // bucket (kNoStart: none), and near_ring_ holds two words per start (a ring indexed by start,
  // of a power of two > recurrence_distance): the top half of the window's hash and the previous
  // start of the same bucket. A chain is followed only while it stays within reach, so nothing is
  // deleted.
  std::vector<uint32_t> near_head_;
  std::vector<uint32_t> near_ring_;
  // Before the loop rule counts, recurrences are first bounded from above (BoundTable), in a
  // table of 8 KiB that costs a load and a store a position; the window then holds whether each
  // position may recur. Its share is never below the exact one, so the exact share cannot reach
  // the minimum before this one does; there the stream leaves the bound (LeaveBound) and checks
  // each position exactly with the near chains from then on.
  bool bounded_ = false;
  std::vector<uint16_t> bound_;
  NgramReport report_;
};

inline bool NgramStream::PushMixed(uint64_t mixed, bool number) {
  const size_t n = options_.n;
  const size_t count = tokens_.size() + 1;
  const size_t number_run = number ? number_run_ + 1 : 0;
  if (counting_ || count <= n || n == 0 || report_.fired ||
      count > std::numeric_limits<uint32_t>::max() ||
      (options_.max_number_run != 0 && number_run > options_.max_number_run)) {
    return PushMixedSlow(mixed, number);
  }
  number_run_ = number_run;
  tokens_.push_back(mixed);
  hash_ = Roll(hash_, top_, tokens_[count - 1 - n], mixed);
  const size_t start = count - n;
  window_.Add(recent_, bounded_ ? Bound().MayRecur(start, hash_) : Chains().Recurs(start, hash_));
  if (!window_.Reached(recent_.size(), options_.min_recurring_percent)) return false;
  if (bounded_ && !LeaveBound(start)) return false;
  return StartCounting(start);
}

std::vector<Word> NormalizedWords(std::string_view text, size_t base_offset = 0);

// FindRepeatedWords(NormalizedWords(text), options), without keeping the words: the text is split
// as it is scanned, and the scan stops at the first firing, so a loop is read only up to where it
// fires (a looping completion is mostly loop). Same report; `char_offset` and `first_char_offset`
// are the byte offsets of its words token_offset and first_token_offset (0 when not fired).
struct TextNgramReport {
  NgramReport report;
  size_t char_offset = 0;
  size_t first_char_offset = 0;
};
TextNgramReport FindRepeatedWordsInText(std::string_view text, const NgramOptions& options);

// The words of a text that arrives in pieces, split and hashed exactly as NormalizedWords does
// the whole: Feed() calls on_word(const Word&) for every word whose end it has seen, Finish() for
// the last one. O(1) memory (a word is hashed as its bytes arrive; a three-byte character is held
// until it is complete, so a piece may end inside it). Not thread-safe.
//
//   WordSplitter words;
//   words.Feed("the ans", on_word);   // "the"
//   words.Feed("wer is", on_word);    // "answer"
//   words.Finish(on_word);            // "is"
class WordSplitter {
 public:
  explicit WordSplitter(size_t base_offset = 0)
      : offset_(base_offset), vector_(CpuHasVectorWords()) {}

  // Whether this CPU hashes a block's words eight at a time in vector lanes (AVX-512 with VBMI
  // and VBMI2), which a splitter then does: the same words as one at a time, faster. A test
  // turns it off to check the other way on such a CPU; on others it stays off.
  static bool CpuHasVectorWords();
  void UseVectorWords(bool on) { vector_ = on && CpuHasVectorWords(); }

  // The most words a block can hold, rounded up to a multiple of 8: a word ends at every other
  // byte at most.
  static constexpr size_t kBlockWords = 32;

  // on_word is called with each word. It may also take a block's words at once, as a sink of
  // words in memory does: `Word* Room()`, where kBlockWords may be written, and `Took(count)`,
  // the number written there; or, for a sink that keeps only what the n-gram rule reads
  // (NgramStream::PushWordKeys), `KeyRoom Keys()` and `Took(count)`.
  struct KeyRoom {
    uint64_t* hashes;  // room for kBlockWords each
    uint8_t* numbers;
  };
  template <typename OnWord>
  void Feed(std::string_view piece, OnWord&& on_word) {
    Feed(piece, on_word, /*by_blocks=*/true);
  }

  // Feed's definition, a byte at a time; Feed takes 64 bytes at a time where it can and gives
  // exactly the same words. For tests.
  template <typename OnWord>
  void FeedBytewise(std::string_view piece, OnWord&& on_word) {
    Feed(piece, on_word, /*by_blocks=*/false);
  }

  template <typename OnWord>
  void Finish(OnWord&& on_word) {
    if (held_ != 0) HeldAsWordBytes();
    if (in_word_) on_word(End(offset_));
  }

  // Bytes fed so far, plus the base offset.
  size_t offset() const { return offset_; }

  // 64 bytes classified at once (BlockOf): a bit per byte for the word bytes, and the bytes
  // ASCII-folded, with 16 bytes of slack so that two chunks can be read whole from anywhere in
  // them.
  // `plain`: no byte of the block leads a three-byte character; where one does, `leads` has a
  // bit for each, and TakeThreeByteCharacters settles them and sets `breaks`: bit k, a word ends
  // before byte k even where byte k - 1 is a word byte, as around a character that is a word of
  // its own; `break_at_end`, the same after byte 63. (A plain block leaves those two unset.)
  struct Block {
    uint64_t word = 0;
    uint64_t digit = 0;  // a bit per byte for the ASCII digits
    uint64_t leads = 0;  // a bit per byte from 0xE0 to 0xEF
    uint64_t breaks = 0;
    bool break_at_end = false;
    bool plain = false;
    alignas(8) unsigned char folded[80];
  };
  static void BlockOf(const char* bytes, Block* block);
  // The same in one 64-byte step. Only where CpuHasVectorWords().
  static void VectorBlockOf(const char* bytes, Block* block);
  // Gives the three-byte characters of the block read from `bytes` (of which `available` are
  // readable) the word bits and breaks that FeedBytes would give them: a separator's bytes
  // (dashes, curly quotes, CJK punctuation) leave the word bits; a character that is a word of
  // its own (kana, CJK) gets a break on either side; a character that is word bytes (arrows,
  // math symbols) or a broken sequence changes nothing. Returns how many of the block's bytes
  // the block path takes: 64, or fewer when a separator or a word of its own runs past the block
  // (FeedBlock stops before it), or 0 where the block must take the byte path (a character of
  // word bytes that runs past the block, or one the piece ends inside).
  static unsigned TakeThreeByteCharacters(Block* block, const char* bytes, size_t available);

 private:
  template <typename OnWord>
  void Feed(std::string_view piece, OnWord& on_word, bool by_blocks) {
    const size_t n = piece.size();
    size_t i = 0;
    // A character the previous piece ended inside: complete it, or give up on it.
    while (held_ != 0 && i < n) {
      const auto c = static_cast<unsigned char>(piece[i]);
      if ((c & 0xC0) != 0x80) {
        HeldAsWordBytes();  // a broken sequence: its bytes stay word bytes
        break;
      }
      sequence_[held_++] = c;
      ++offset_;
      ++i;
      if (held_ == 3) Resolve(on_word);
    }
    Block block;
    while (i < n) {
      const size_t end = by_blocks ? std::min(n, i + 64) : n;
      if (end - i == 64 && held_ == 0) {
        if (vector_) {
          VectorBlockOf(piece.data() + i, &block);
        } else {
          BlockOf(piece.data() + i, &block);
        }
        if (block.plain) {
          FeedBlock</*kBreaks=*/false>(block, 64, on_word);
          i = end;
          continue;
        }
        const unsigned take = TakeThreeByteCharacters(&block, piece.data() + i, n - i);
        if (take != 0) {
          FeedBlock</*kBreaks=*/true>(block, take, on_word);
          i += take;
          continue;
        }
      }
      i = FeedBytes(piece, i, end, on_word);
    }
  }

  // The bytes [i, end) of `piece` one at a time (a three-byte character begun before `end` is
  // read to its end); returns where it stopped.
  template <typename OnWord>
  size_t FeedBytes(std::string_view piece, size_t i, size_t end, OnWord& on_word) {
    const size_t n = piece.size();
    for (; i < end; ++i) {
      const auto c = static_cast<unsigned char>(piece[i]);
      if (c >= 0xE0 && c <= 0xEF) [[unlikely]] {  // the lead byte of a three-byte character
        sequence_[0] = c;
        held_ = 1;
        sequence_offset_ = offset_++;
        while (held_ < 3 && i + 1 < n &&
               (static_cast<unsigned char>(piece[i + 1]) & 0xC0) == 0x80) {
          sequence_[held_++] = static_cast<unsigned char>(piece[++i]);
          ++offset_;
        }
        if (held_ == 3) {
          Resolve(on_word);
        } else if (i + 1 < n) {
          HeldAsWordBytes();  // broken; the byte after it is read as usual
        }
        continue;  // else held until the next piece
      }
      const unsigned char folded = Fold(c);
      if (folded == 0) {
        if (in_word_) on_word(End(offset_));
      } else {
        if (!in_word_) Begin(offset_);
        Add(folded);
      }
      ++offset_;
    }
    return i;
  }

  // A block's first `size` bytes: all 64, or fewer where TakeThreeByteCharacters stopped it
  // before a character that the next block starts with (no word byte lies past them). A word
  // that starts and ends inside it with fewer than 16 bytes, which is almost every word, is
  // hashed from the block's folded bytes at once (ShortWord); the others
  // are added a chunk of up to eight bytes at a time, as the byte path would have filled them.
  // Where words begin and end is read from bit masks of the whole block, so that one word's
  // place does not wait on the previous word's: the words of a block are hashed side by side.
  template <bool kBreaks, typename OnWord>
  void FeedBlock(const Block& block, unsigned size, OnWord& on_word) {
    const uint64_t word = block.word;
    // Bit k: a word begins at byte k; its last byte is byte k (a word that runs on to the end
    // of the block has no end here).
    uint64_t starts = word & ~(word << 1);
    uint64_t ends = word & ~(word >> 1) & ~(uint64_t{1} << 63);
    const uint64_t breaks = kBreaks ? block.breaks : 0;
    if constexpr (kBreaks) {
      starts |= word & breaks;
      ends |= word & ((breaks >> 1) | (static_cast<uint64_t>(block.break_at_end) << 63));
    }
    if (in_word_) {
      // The word open from before the block ends at its first byte, at the first break, or goes
      // on into it.
      const auto length =
          static_cast<unsigned>(std::min(std::countr_one(word), std::countr_zero(breaks)));
      AddStretch(block, 0, length);
      if (length < 64) on_word(End(offset_ + length));
      if (length > 0) starts &= ~uint64_t{1};
    }
    if (vector_ && starts != 0) {
      // The words that begin and end in the block, in vector lanes; a word that runs on past its
      // end is left to the loop below. Their ends are the block's from their first start on.
      const unsigned last = 63 - static_cast<unsigned>(std::countl_zero(starts));
      const uint64_t run_on = (ends >> last) == 0 ? uint64_t{1} << last : 0;
      const uint64_t inner = starts & ~run_on;
      if (inner != 0) {
        const uint64_t inner_ends = ends & ~((inner & (~inner + 1)) - 1);
        if constexpr (requires { on_word.Keys(); }) {
          on_word.Took(InnerWordKeys(block, inner, inner_ends, on_word.Keys()));
        } else if constexpr (requires { on_word.Room(); }) {
          on_word.Took(InnerWords(block, inner, inner_ends, offset_, on_word.Room()));
        } else {
          Word words[kBlockWords];
          const size_t count = InnerWords(block, inner, inner_ends, offset_, words);
          for (size_t k = 0; k < count; ++k) on_word(words[k]);
        }
      }
      starts = run_on;
    }
    for (; starts != 0; starts &= starts - 1) {
      const auto begin = static_cast<unsigned>(std::countr_zero(starts));
      const uint64_t after = ends >> begin;
      // 65 for a word that runs on to the end of the block.
      const unsigned length = static_cast<unsigned>(std::countr_zero(after)) + 1;
      if (length < 16) [[likely]] {
        on_word(ShortWord(block, begin, length));
      } else {
        const unsigned stop = after == 0 ? 64 : begin + length;
        Begin(offset_ + begin);
        AddStretch(block, begin, stop);
        if (stop < 64) on_word(End(offset_ + stop));
      }
    }
    offset_ += size;
  }

  // Adds the folded bytes [at, stop) of a plain block to the open word.
  void AddStretch(const Block& block, unsigned at, unsigned stop) {
    while (at < stop) {
      const unsigned take = std::min(stop - at, (64 - shift_) / 8);
      uint64_t bytes;
      std::memcpy(&bytes, block.folded + at, 8);
      if (take < 8) bytes &= ngram_internal::FirstBytes(take);
      chunk_ |= bytes << shift_;
      shift_ += 8 * take;
      if (shift_ == 64) Flush();
      at += take;
    }
  }

  // The word of `length` (1 to 15) bytes at `begin` of a plain block, ending inside it: the
  // hash and number flag of Begin, Add of each byte, and End, with no branch on the length (a
  // branch per word on lengths that vary at random is mispredicted often). A word of 8 bytes or
  // more hashes its first eight, then the `tail` left; the flag comes from the block's digits.
  Word ShortWord(const Block& block, unsigned begin, unsigned length) const {
    using ngram_internal::Mix;
    const bool two = length >= 8;
    uint64_t first, second;
    std::memcpy(&first, block.folded + begin, 8);
    std::memcpy(&second, block.folded + begin + 8, 8);  // a shorter word does not use it
    const unsigned tail = two ? length - 8 : length;
    const uint64_t last = (two ? second : first) & ngram_internal::FirstBytes(tail);
    const uint64_t hash = two ? Mix(ngram_internal::kWordSeed ^ first) : ngram_internal::kWordSeed;
    const bool number = (~block.digit >> begin & ((uint64_t{1} << length) - 1)) == 0;
    return Word{Mix(hash ^ last ^ (static_cast<uint64_t>(length) << 56)), offset_ + begin, number};
  }

  // The words of a block whose starts and ends (bit k: the word's first, or last, byte is byte
  // k) are given, every one inside it, as ShortWord, and Begin, AddStretch and End for a longer
  // one, make them: written to `out` (room for kBlockWords) in order, their number returned.
  // Only where CpuHasVectorWords().
  static size_t InnerWords(const Block& block, uint64_t starts, uint64_t ends, size_t offset,
                           Word* out);
  // The same words' hashes and number flags, written to `out`.
  static size_t InnerWordKeys(const Block& block, uint64_t starts, uint64_t ends, KeyRoom out);
  // InnerWords' work, each eight words' fields handed to `emit` to write (HashedEight, in the
  // definition).
  template <typename Emit>
  static size_t HashInnerWords(const Block& block, uint64_t starts, uint64_t ends, size_t offset,
                               Emit& emit);
  // The word of `length` (1 to 63) bytes at `begin`, inside the block, whatever its length.
  static Word WordInBlock(const Block& block, unsigned begin, unsigned length, size_t offset);

  enum class CharClass : uint8_t { kWordBytes, kOwnWord, kSeparator };
  static CharClass Classify(uint32_t code_point);

  static unsigned char Fold(unsigned char c) { return kFold[c]; }
  // The byte as it enters a word's hash (ASCII letters lower-cased), 0 for separators: letters,
  // digits and non-ASCII bytes are word bytes.
  static constexpr std::array<unsigned char, 256> kFold = [] {
    std::array<unsigned char, 256> fold{};
    for (int c = 0; c < 256; ++c) {
      if (c >= 'A' && c <= 'Z') fold[c] = static_cast<unsigned char>(c - 'A' + 'a');
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80) {
        fold[c] = static_cast<unsigned char>(c);
      }
    }
    return fold;
  }();

  // A complete three-byte character: a word of its own, a separator, or bytes of the word.
  template <typename OnWord>
  void Resolve(OnWord&& on_word) {
    held_ = 0;
    const uint32_t code_point = (static_cast<uint32_t>(sequence_[0] & 0x0F) << 12) |
                                (static_cast<uint32_t>(sequence_[1] & 0x3F) << 6) |
                                (sequence_[2] & 0x3F);
    switch (Classify(code_point)) {
      case CharClass::kSeparator:
        if (in_word_) on_word(End(sequence_offset_));
        break;
      case CharClass::kOwnWord:
        if (in_word_) on_word(End(sequence_offset_));
        Begin(sequence_offset_);
        for (const unsigned char b : sequence_) Add(b);
        on_word(End(offset_));
        break;
      case CharClass::kWordBytes:
        if (!in_word_) Begin(sequence_offset_);
        for (const unsigned char b : sequence_) Add(b);
        break;
    }
  }
  void HeldAsWordBytes() {
    if (!in_word_) Begin(sequence_offset_);
    for (uint8_t i = 0; i < held_; ++i) Add(sequence_[i]);
    held_ = 0;
  }
  void Begin(size_t at) {
    in_word_ = true;
    digits_ = true;
    begin_ = at;
    hash_ = ngram_internal::kWordSeed;
    chunk_ = 0;
    shift_ = 0;
  }
  void Add(unsigned char folded) {
    chunk_ |= static_cast<uint64_t>(folded) << shift_;
    shift_ += 8;
    if (shift_ == 64) Flush();
  }
  // The number flag is read from the chunks as they are flushed and at the word's end, not byte
  // by byte: tracking it per byte cost the whole of scoring a 3k-token completion 40 %. Both are
  // here, inline, so that a caller's splitter can live in registers.
  void Flush() {
    digits_ = digits_ && ngram_internal::AllDigits(chunk_, 8);
    hash_ = ngram_internal::Mix(hash_ ^ chunk_);
    chunk_ = 0;
    shift_ = 0;
  }
  // The word that began at begin_ and ends before byte `end`. Word bytes are never 0, so zero
  // padding cannot make two words equal; the length is mixed in.
  Word End(size_t end) {
    in_word_ = false;
    const bool number = digits_ && ngram_internal::AllDigits(chunk_, shift_ / 8);
    return Word{ngram_internal::Mix(hash_ ^ chunk_ ^ (static_cast<uint64_t>(end - begin_) << 56)),
                begin_, number};
  }

  size_t offset_;
  bool vector_;
  bool in_word_ = false;
  bool digits_ = false;  // every byte of the word's flushed chunks is a digit
  size_t begin_ = 0;
  uint64_t hash_ = 0;
  uint64_t chunk_ = 0;
  unsigned shift_ = 0;
  // A three-byte character being read: its bytes so far and where it began.
  std::array<unsigned char, 3> sequence_{};
  uint8_t held_ = 0;
  size_t sequence_offset_ = 0;
};
std::vector<uint64_t> WordHashes(std::span<const Word> words);

// open-r1's repetition penalty: the fraction of repeated n-grams among all n-grams, scaled by
// `max_penalty` (<= 0): (1 - unique/total) × max_penalty; 0 when there are fewer than n tokens.
// Word 2-grams of "this this this this this": 1 unique of 4 → -0.75 × max_penalty(-1) = -0.75.
double SmoothRepetitionPenalty(std::span<const uint64_t> tokens, uint32_t n, double max_penalty);

}  // namespace rlscore::scorers
