// Tests of scorers/tokens.h: the four-bytes-per-token estimate and the proportional offset,
// including products that overflow 64 bits.
#include "scorers/tokens.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rlscore::scorers {
namespace {

constexpr uint32_t kMaxU32 = std::numeric_limits<uint32_t>::max();
constexpr size_t kMaxSize = std::numeric_limits<size_t>::max();

TEST(Tokens, EstimateTokens) {
  struct Case {
    size_t bytes;
    uint32_t expected;
  };
  const Case cases[] = {{0, 0}, {1, 1}, {2, 1}, {3, 1},        {4, 1},
                        {5, 2}, {8, 2}, {9, 3}, {12000, 3000}, {12001, 3001}};
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("bytes=", c.bytes));
    EXPECT_EQ(EstimateTokens(std::string(c.bytes, 'x')), c.expected);
  }
}

TEST(Tokens, EstimateTokensEveryPowerOfTwo) {
  for (int k = 0; k <= 22; ++k) {
    for (int delta : {-1, 0, 1}) {
      const size_t bytes = (size_t{1} << k) + static_cast<size_t>(delta);
      if (k == 0 && delta == -1) continue;
      SCOPED_TRACE(absl::StrCat("bytes=", bytes));
      const uint32_t t = EstimateTokens(std::string(bytes, 'a'));
      EXPECT_GE(size_t{t} * 4, bytes);      // ceil: covers every byte
      EXPECT_LT(size_t{t} * 4, bytes + 4);  // and no more
      if (bytes > 0) {
        EXPECT_GE(t, 1u);
      }
    }
  }
}

TEST(Tokens, EstimateTokenOffset) {
  struct Case {
    size_t offset;
    size_t text_bytes;
    uint32_t num_tokens;
    uint32_t expected;
  };
  const Case cases[] = {
      {0, 0, 0, 0},
      {5, 0, 10, 0},  // empty text
      {0, 100, 25, 0},
      {50, 100, 25, 12},  // 12.5 floors
      {99, 100, 25, 24},
      {100, 100, 25, 25},   // the end maps to the count
      {1000, 100, 25, 25},  // clamped
      {3, 4, 1, 0},
      {7, 10, 3, 2},  // 2.1
      {1, 3, 3, 1},   // exact thirds
      {2, 3, 3, 2},
      {50, 100, 0, 0},
      // offset · num_tokens overflows 64 bits.
      {kMaxSize - 1, kMaxSize, kMaxU32, kMaxU32 - 1},
      {kMaxSize / 2, kMaxSize, kMaxU32, kMaxU32 / 2},
      {kMaxSize, kMaxSize, kMaxU32, kMaxU32},
      {uint64_t{1} << 40, uint64_t{1} << 41, kMaxU32, kMaxU32 / 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(
        absl::StrCat("offset=", c.offset, " bytes=", c.text_bytes, " tokens=", c.num_tokens));
    EXPECT_EQ(EstimateTokenOffset(c.offset, c.text_bytes, c.num_tokens), c.expected);
  }
}

TEST(Tokens, EstimateTokenOffsetIsMonotoneAndConsistent) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t bytes = 1 + rng() % 5000;
    const uint32_t tokens = static_cast<uint32_t>(rng() % 3000);
    SCOPED_TRACE(absl::StrCat("bytes=", bytes, " tokens=", tokens));
    uint32_t previous = 0;
    for (size_t offset = 0; offset <= bytes + 2; ++offset) {
      const uint32_t t = EstimateTokenOffset(offset, bytes, tokens);
      ASSERT_GE(t, previous);
      ASSERT_LE(t, tokens);
      // floor(offset · tokens / bytes), checked with the division identity.
      if (offset <= bytes) {
        ASSERT_LE(uint64_t{t} * bytes, uint64_t{offset} * tokens);
        ASSERT_GT((uint64_t{t} + 1) * bytes, uint64_t{offset} * tokens);
      }
      previous = t;
    }
    EXPECT_EQ(EstimateTokenOffset(bytes, bytes, tokens), tokens);
  }
}

TEST(Tokens, EstimatedCountAndOffsetAgree) {
  const std::string text(12345, 'q');
  const uint32_t n = EstimateTokens(text);
  EXPECT_EQ(EstimateTokenOffset(text.size(), text.size(), n), n);
  EXPECT_EQ(EstimateTokenOffset(0, text.size(), n), 0u);
}

}  // namespace
}  // namespace rlscore::scorers
