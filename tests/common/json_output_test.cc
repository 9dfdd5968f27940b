#include "common/json_output.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace rlscore {
namespace {

std::string Dumped(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Written(std::string_view text) {
  std::string out;
  AppendJsonString(&out, text);
  return out;
}

std::string Written(double value) {
  std::string out;
  AppendJsonNumber(&out, value);
  return out;
}

TEST(JsonOutput, EscapesAsNlohmannDoes) {
  EXPECT_EQ(Written("plain"), "\"plain\"");
  EXPECT_EQ(Written("q\"b\\s/"), R"("q\"b\\s/")");
  EXPECT_EQ(Written("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(Written(std::string_view("\x00\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(Written("é中😀"), "\"é中😀\"");
  EXPECT_EQ(Written("\xff"), "\"\xEF\xBF\xBD\"");
}

TEST(JsonOutput, EveryByteAndPairOfBytesAsNlohmann) {
  for (int a = 0; a < 256; ++a) {
    const std::string one(1, static_cast<char>(a));
    ASSERT_EQ(Written(one), Dumped(one)) << a;
    for (int b = 0; b < 256; ++b) {
      const std::string two = {static_cast<char>(a), static_cast<char>(b), 'x'};
      ASSERT_EQ(Written(two), Dumped(two)) << a << " " << b;
    }
  }
}

// Random strings biased towards UTF-8 lead and continuation bytes, valid and broken, of every
// length up to 40: the replacement of broken sequences must match too.
TEST(JsonOutput, RandomUtf8LikeBytesAsNlohmann) {
  std::mt19937_64 random(17);
  const unsigned char interesting[] = {'a',  '"',  '\\', '\n', 0x01, 0x7f, 0x80, 0xbf,
                                       0xc0, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4,
                                       0xf5, 0xff, 0xa0, 0x9f, 0x90, 0x8f};
  for (int i = 0; i < 200000; ++i) {
    std::string s(random() % 41, '\0');
    for (char& c : s) {
      c = static_cast<char>(random() % 3 == 0 ? random() % 256
                                              : interesting[random() % std::size(interesting)]);
    }
    ASSERT_EQ(Written(s), Dumped(s)) << i;
  }
}

TEST(JsonOutput, NumbersAsNlohmann) {
  const double cases[] = {0.0,
                          -0.0,
                          1.0,
                          -0.5,
                          0.1,
                          1.1,
                          0.35,
                          1e-5,
                          1e-4,
                          123456789012345.0,
                          1234567890123456.0,
                          1e21,
                          1e300,
                          std::numeric_limits<double>::denorm_min(),
                          std::numeric_limits<double>::min(),
                          std::numeric_limits<double>::max(),
                          std::numeric_limits<double>::lowest()};
  for (double x : cases) EXPECT_EQ(Written(x), Dumped(x)) << x;
  EXPECT_EQ(Written(std::nan("")), "null");
  EXPECT_EQ(Written(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(Written(-std::numeric_limits<double>::infinity()), "null");
  std::mt19937_64 random(5);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::bit_cast<double>(random());
    if (!std::isfinite(x)) continue;
    ASSERT_EQ(Written(x), Dumped(x)) << i;
  }
  EXPECT_EQ(Written(0.1), "0.1");
  EXPECT_EQ(Written(2.0), "2.0");
}

}  // namespace
}  // namespace rlscore
