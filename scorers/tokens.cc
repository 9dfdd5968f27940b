// Token estimates when the caller gives no count (see tokens.h).
#include "scorers/tokens.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

namespace rlscore::scorers {
namespace {

__extension__ using Uint128 = unsigned __int128;

constexpr uint32_t kMaxTokens = std::numeric_limits<uint32_t>::max();

}  // namespace

uint32_t EstimateTokens(std::string_view text) {
  const size_t tokens = text.size() / 4 + (text.size() % 4 != 0 ? 1 : 0);
  return static_cast<uint32_t>(std::min<size_t>(tokens, kMaxTokens));
}

uint32_t EstimateTokenOffset(size_t offset, size_t text_bytes, uint32_t num_tokens) {
  if (text_bytes == 0) return 0;
  if (offset >= text_bytes) return num_tokens;
  // offset · num_tokens needs up to 96 bits.
  const Uint128 index = static_cast<Uint128>(offset) * num_tokens / text_bytes;
  return static_cast<uint32_t>(std::min<Uint128>(index, num_tokens));
}

}  // namespace rlscore::scorers
