// Token counts when the caller gives none (docs/DESIGN.md §1: the response then says the count is
// an estimate). About four bytes of English or LaTeX per token for BPE vocabularies of 32k–150k.
#pragma once

#include <cstdint>
#include <string_view>

namespace rlscore::scorers {

// ceil(bytes / 4), at least 1 for a non-empty text, 0 for an empty one.
uint32_t EstimateTokens(std::string_view text);

// The estimated token index at byte `offset` of a text of `text_bytes` bytes that has
// `num_tokens` tokens: proportional, so it is consistent with a caller-given count.
uint32_t EstimateTokenOffset(size_t offset, size_t text_bytes, uint32_t num_tokens);

}  // namespace rlscore::scorers
