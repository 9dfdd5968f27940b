// The n-gram repetition rule of SPEC §1: an n-gram (default 8) of tokens — token ids when the
// caller has them, else normalised words — that occurs more than `max_occurrences` (default 3)
// times fires the rule, and the report says where its 4th occurrence begins: the point where a
// stop hook would have halted generation. O(n·length) time in the worst case (each hash match is
// confirmed by comparing n tokens), O(length) for the default n; O(length) memory.
//
//   std::vector<Word> words = NormalizedWords(reasoning, /*base_offset=*/reasoning_begin);
//   NgramReport r = FindRepeatedNgram(WordHashes(words), NgramOptions{});
//   if (r.fired) char_offset = words[r.token_offset].offset;
//
// Also the open-r1 / TRL smooth penalty `(1 - unique/total) × max_penalty` for parity with peers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace rlscore::scorers {

struct NgramOptions {
  uint32_t n = 8;                // n == 0 never fires
  uint32_t max_occurrences = 3;  // fires when an n-gram occurs more than this many times
};

struct NgramReport {
  bool fired = false;
  // Index (in the sequence given) of the first token of the occurrence that crossed the
  // threshold, and of the first occurrence of the same n-gram. Meaningful only when fired.
  size_t token_offset = 0;
  size_t first_token_offset = 0;
  uint32_t occurrences = 0;  // max_occurrences + 1 when fired
};

// Scans `tokens` left to right and stops at the first occurrence that crosses the threshold, so
// the report is the earliest point where the rule fires (occurrences may overlap: 11 identical
// tokens hold four 8-grams). Hash collisions are ruled out by comparing the n tokens.
// Pure and thread-safe.
NgramReport FindRepeatedNgram(std::span<const uint64_t> tokens, const NgramOptions& options);

// A normalised word: ASCII letters folded to lower case; runs of letters, digits and non-ASCII
// bytes are words; everything else separates words and is dropped.
struct Word {
  uint64_t hash;  // of the normalised word
  size_t offset;  // byte offset of its first character, plus the base offset given
};

std::vector<Word> NormalizedWords(std::string_view text, size_t base_offset = 0);
std::vector<uint64_t> WordHashes(std::span<const Word> words);

// open-r1's repetition penalty: the fraction of repeated n-grams among all n-grams, scaled by
// `max_penalty` (<= 0): (1 - unique/total) × max_penalty; 0 when there are fewer than n tokens.
// Word 2-grams of "this this this this this": 1 unique of 4 → -0.75 × max_penalty(-1) = -0.75.
double SmoothRepetitionPenalty(std::span<const uint64_t> tokens, uint32_t n, double max_penalty);

}  // namespace rlscore::scorers
