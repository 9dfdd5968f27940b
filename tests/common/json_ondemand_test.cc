#include "common/json_ondemand.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/cpu_features.h"

namespace rlscore {
namespace {

bool HasControlByteBytewise(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) return true;
  }
  return false;
}

// Every byte value at every place of texts of 0 to 200 bytes and around 256 and 512, so that
// each of the scan's strides (256 bytes and 64 with AVX-512; 128 with AVX2, then 64, 8 and single
// bytes as without either) meets every byte, and its edges too. ctest runs it under each
// RLSCORE_MAX_CPU_ISA.
TEST(JsonOndemand, HasControlByteAgreesWithItsDefinitionEverywhere) {
  std::vector<size_t> sizes;
  for (size_t size = 0; size <= 200; ++size) sizes.push_back(size);
  for (size_t size : {255, 256, 257, 320, 511, 512, 513, 575}) sizes.push_back(size);
  for (const size_t size : sizes) {
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

// The string "s" of the object `json` as ReadString reads it; nullopt when it refuses it.
std::optional<std::string> ReadField(const std::string& json) {
  static simdjson::ondemand::parser parser = json_ondemand::NewParser();
  const simdjson::padded_string padded(json);
  simdjson::ondemand::document doc;
  simdjson::ondemand::value value;
  if (parser.iterate(padded).get(doc) || doc.find_field("s").get(value)) return std::nullopt;
  std::string out = "left from before";
  if (!json_ondemand::ReadString(value, &out)) return std::nullopt;
  return out;
}

// ReadString unescapes as nlohmann does: every escape of one byte, runs of backslashes of every
// length, \u escapes and UTF-8, each ending at every place around the 64-byte steps (a run that
// crosses a step carries its parity over); and it refuses what nlohmann refuses.
TEST(JsonOndemand, ReadStringUnescapesAsTheReference) {
  std::mt19937_64 rng(5);
  static const char* const kPieces[] = {
      "a",   "word ", "\\n",      "\\\\",    "\\\"",           "\\/",          "\\b", "\\f",
      "\\r", "\\t",   "\xc3\xa9", "\\u00e9", "\\ud83d\\ude00", "\\\\\\\\frac", "$",   "}"};
  for (int k = 0; k < 20000; ++k) {
    std::string body(rng() % 130, 'p');
    const size_t pieces = rng() % 30;
    for (size_t i = 0; i < pieces; ++i) {
      body += kPieces[rng() % (sizeof(kPieces) / sizeof(kPieces[0]))];
      if (rng() % 4 == 0) body += std::string(rng() % 70, 'q');
    }
    const std::string json = "{\"s\": \"" + body + "\", \"t\": 1}";
    const std::string want = nlohmann::json::parse(json)["s"].get<std::string>();
    const std::optional<std::string> got = ReadField(json);
    ASSERT_TRUE(got.has_value()) << json;
    ASSERT_EQ(*got, want) << json;
  }
  for (const char* bad : {"\\x", "\\u12", "\\u12zz", "\\\xc3\xa9", "a\\ b"}) {
    const std::string json = std::string("{\"s\": \"") + std::string(70, 'p') + bad + "\"}";
    EXPECT_FALSE(ReadField(json).has_value()) << json;
    EXPECT_TRUE(nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false).is_discarded());
  }
}

// The parsers keep simdjson's kernels within RLSCORE_MAX_CPU_ISA as ours keep theirs (ctest runs
// this file under each cap): none past AVX2 under avx2, the portable ones under sse2.
TEST(JsonOndemand, NewParserKeepsSimdjsonWithinTheCap) {
  simdjson::ondemand::parser parser = json_ondemand::NewParser();
  const simdjson::padded_string json(std::string("{\"s\": \"x\"}"));
  simdjson::ondemand::document doc;
  ASSERT_FALSE(parser.iterate(json).get(doc));
  const std::string kernels(simdjson::get_active_implementation()->name());
  const std::optional<CpuIsa> cap = CpuIsaFromEnvironment();
  ASSERT_TRUE(cap.has_value());
  if (*cap == CpuIsa::kSse2) {
    EXPECT_EQ(kernels, "fallback");
  } else if (*cap == CpuIsa::kAvx2) {
    EXPECT_NE(kernels, "icelake");
  }
}

}  // namespace
}  // namespace rlscore
