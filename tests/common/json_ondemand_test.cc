#include "common/json_ondemand.h"

#include <gtest/gtest.h>

#include <string>

namespace rlscore {
namespace {

bool HasControlByteBytewise(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) return true;
  }
  return false;
}

// Every byte value at every place of texts of 0 to 200 bytes, so that each of the scan's
// strides (64 bytes, 8 bytes, then single bytes) meets every byte, and its edges too.
TEST(JsonOndemand, HasControlByteAgreesWithItsDefinitionEverywhere) {
  for (size_t size = 0; size <= 200; ++size) {
    std::string text(size, 'a');
    // Bytes at and above 0x80 are not control bytes, though they are negative as signed chars.
    for (size_t i = 0; i < size; i += 3) text[i] = static_cast<char>(0x80 + i % 128);
    ASSERT_FALSE(json_ondemand::HasControlByte(text)) << "size " << size;
    for (size_t at = 0; at < size; ++at) {
      const char kept = text[at];
      for (int byte : {0x00, 0x09, 0x0A, 0x1F, 0x20, 0x7F, 0x80, 0xFF}) {
        text[at] = static_cast<char>(byte);
        ASSERT_EQ(json_ondemand::HasControlByte(text), HasControlByteBytewise(text))
            << "size " << size << ", byte " << byte << " at " << at;
      }
      text[at] = kept;
    }
  }
}

}  // namespace
}  // namespace rlscore
