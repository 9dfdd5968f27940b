#include "gpu/parallel_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace rlscore::gpu {
namespace {

// Eight bytes per draw: the test's own code is unoptimised under the sanitizers
// (tests/CMakeLists.txt), where a draw per byte made the patterns most of the test's time.
std::vector<uint8_t> Pattern(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> v(bytes);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < bytes; i += sizeof(uint64_t)) {
    const uint64_t draw = rng();
    std::memcpy(v.data() + i, &draw, std::min(sizeof draw, bytes - i));
  }
  return v;
}

// Every byte arrives, none outside the destination is touched, for sizes around the parallel
// threshold and the part boundaries, at unaligned offsets, with 1 to 5 threads.
TEST(ParallelCopierTest, CopiesEveryByteAndNothingElse) {
  const size_t big = ParallelCopier::kParallelBytes;
  for (unsigned threads : {1u, 2u, 3u, 4u, 5u}) {
    ParallelCopier copier(threads);
    EXPECT_EQ(copier.threads(), threads);
    for (size_t bytes :
         {size_t{0}, size_t{1}, size_t{4095}, big - 1, big, big + 1, 3 * big + 17, 16 * big}) {
      for (size_t shift : {size_t{0}, size_t{3}}) {
        const std::vector<uint8_t> src = Pattern(bytes + shift, bytes * 31 + threads);
        std::vector<uint8_t> dst(bytes + 2 * 64, 0xAB);
        copier.Copy(dst.data() + 64, src.data() + shift, bytes);
        for (size_t i = 0; i < 64; ++i) {
          ASSERT_EQ(dst[i], 0xAB) << "before, byte " << i;
          ASSERT_EQ(dst[64 + bytes + i], 0xAB) << "after, byte " << i;
        }
        ASSERT_TRUE(
            std::equal(src.begin() + static_cast<ptrdiff_t>(shift), src.end(), dst.begin() + 64))
            << threads << " threads, " << bytes << " bytes, shift " << shift;
      }
    }
  }
}

// The helpers pick up one job after another: many copies in a row, each checked.
TEST(ParallelCopierTest, ManyCopiesInARow) {
  ParallelCopier copier(4);
  const size_t bytes = 2 * ParallelCopier::kParallelBytes + 4096;
  // Round r copies the bytes from offset r: each round's content differs from the last's.
  const std::vector<uint8_t> pattern = Pattern(bytes + 200, 7);
  std::vector<uint8_t> dst(bytes);
  for (size_t round = 0; round < 200; ++round) {
    const uint8_t* src = pattern.data() + round;
    copier.Copy(dst.data(), src, bytes);
    ASSERT_TRUE(std::equal(dst.begin(), dst.end(), src)) << "round " << round;
  }
}

}  // namespace
}  // namespace rlscore::gpu
