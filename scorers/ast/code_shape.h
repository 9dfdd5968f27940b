// The cheap screen of the code-clone rule: fenced code reduced to its token shape — identifiers
// and keywords become `w`, numbers `0`, strings `s`, comments and whitespace vanish, every other
// character stays — and a rolling window of shape tokens counted. A structural clone (the same
// syntax tree with identifiers and literals renamed) has the same token shape, so when no window
// recurs more than the threshold, no clone of that many tokens can, and the code is not parsed.
//
//   std::vector<uint32_t> shape;
//   AppendShapeTokens("def f(a):\n  return a + 1  # one\n", CodeLanguage::kPython, &shape);
//   // shape: w w ( w ) : w w + 0
//   std::vector<bool> parse = SequencesWithRecurringWindow({&shape, 1}, /*window=*/16,
//                                                          /*max_occurrences=*/3);
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "scorers/ast/grammars.h"

namespace rlscore::scorers::ast {

// Appends the shape tokens of `code` (one per token; values are characters or 'w', '0', 's').
// Comments follow the language: `#` in Python, `//` and `/* */` in the C family and JavaScript.
// Unterminated strings and comments end at the end of their line (strings) or of the code.
void AppendShapeTokens(std::string_view code, CodeLanguage language, std::vector<uint32_t>* out);

// Which sequences hold a run of `window` consecutive tokens that occurs more than
// `max_occurrences` times over all `sequences` without overlapping itself (windows never span two
// sequences; of overlapping occurrences, the first of each overlapping run counts, as a greedy
// left-to-right scan finds the most disjoint ones). Occurrences of a clone are disjoint and each
// lies in one sequence, so every occurrence of a clone of at least `window` tokens is in a marked
// sequence. All false when nothing recurs. Hash collisions can only mark more.
std::vector<bool> SequencesWithRecurringWindow(std::span<const std::vector<uint32_t>> sequences,
                                               uint32_t window, uint32_t max_occurrences);

}  // namespace rlscore::scorers::ast
