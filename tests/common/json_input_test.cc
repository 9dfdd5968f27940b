#include "common/json_input.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "common/strings.h"

namespace rlscore {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ErrorOf(std::string_view text) {
  const absl::StatusOr<nlohmann::json> parsed = ParseJsonObject(text, "column");
  EXPECT_FALSE(parsed.ok()) << text.substr(0, 200);
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(ParseJsonObject, NamesWhereNestingGoesTooDeep) {
  // The object is level 1; 32 levels are read, the bracket that opens the 33rd is named.
  const auto nested = [](int arrays) {
    return "{\"a\": " + std::string(arrays, '[') + std::string(arrays, ']') + "}";
  };
  EXPECT_TRUE(ParseJsonObject(nested(31), "column").ok());
  EXPECT_EQ(ErrorOf(nested(32)), "invalid JSON at column 38: nested deeper than 32 levels");
  // However deep it goes, and with brackets inside strings before it.
  EXPECT_EQ(ErrorOf(R"({"s": "[[{\"[", "a": )" + std::string(10000, '[')),
            "invalid JSON at column 53: nested deeper than 32 levels");
}

TEST(ParseJsonObject, NamesWhereANumberOverflows) {
  EXPECT_EQ(ErrorOf(R"({"a": 1, "b": 1e400})"),
            "invalid JSON at column 15: number overflow parsing '1e400'");
}

// Python's json.dumps writes NaN and Infinity for such floats (a pandas column's missing
// values): the error says so.
TEST(ParseJsonObject, SaysThatNaNAndInfinityAreNotJson) {
  for (const std::string_view text : {R"({"a": NaN})", R"({"a": [1, Infinity]})",
                                      R"({"a": {"b": -Infinity}})", R"({"a": NaN, "b": 1})"}) {
    SCOPED_TRACE(text);
    const std::string message = ErrorOf(text);
    EXPECT_THAT(message, StartsWith("invalid JSON at column"));
    EXPECT_THAT(message, HasSubstr("(NaN and Infinity are not JSON: Python's json.dumps writes "
                                   "them for such floats unless allow_nan=False; write null or a "
                                   "number)"));
  }
  for (const std::string_view text :
       {R"({"a": nul})", R"({"a": "NaN" x})", R"({"a": -})", R"({"a": Nah})"}) {
    SCOPED_TRACE(text);
    EXPECT_THAT(ErrorOf(text), ::testing::Not(HasSubstr("NaN and Infinity")));
  }
}

TEST(ParseJsonObject, RefusesANulByteAnywhere) {
  using std::string_literals::operator""s;
  // nlohmann's reader would end the input at the NUL and read `{"a": 1}`.
  EXPECT_EQ(ErrorOf("{\"a\": 1}\0{{{"s),
            "invalid JSON at column 9: a NUL byte, which JSON allows nowhere");
  EXPECT_THAT(ErrorOf("{\"a\": \"x\0y\"}"s), StartsWith("invalid JSON at column 9: a NUL byte"));
  EXPECT_THAT(ErrorOf("\0"s), StartsWith("invalid JSON at column 1: a NUL byte"));
  EXPECT_TRUE(ParseJsonObject(R"({"a": "x\u0000y"})", "column").ok());
}

TEST(ParseJsonObject, QuotesAtMostAFewHundredBytesOfTheInput) {
  const std::string unterminated = "{\"a\": \"" + std::string(1 << 20, 'x');
  const std::string message = ErrorOf(unterminated);
  EXPECT_THAT(message, StartsWith("invalid JSON at column"));
  EXPECT_THAT(message, HasSubstr("missing closing quote"));
  EXPECT_LT(message.size(), 400u);
  const std::string long_number = "{\"a\": 1" + std::string(100000, '0') + "}";
  EXPECT_THAT(ErrorOf(long_number), HasSubstr("number overflow"));
  EXPECT_LT(ErrorOf(long_number).size(), 400u);
}

TEST(ParseJsonObject, KeepsTheLastOfAKeyGivenTwice) {
  const absl::StatusOr<nlohmann::json> parsed =
      ParseJsonObject(R"({"a": 1, "b": {"c": [1, {"d": 2}]}, "a": [3]})", "byte");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->dump(), R"({"a":[3],"b":{"c":[1,{"d":2}]}})");
}

TEST(ParseJsonObject, TakesTimeLinearInAnArrayOfObjects) {
  // nlohmann's parser with a callback looks through an object's parent at the end of every
  // object: two million objects in one array took it hours, far past the test's time limit.
  std::string text = "{\"a\": [";
  constexpr int kObjects = 2'000'000;
  text.reserve(3 * kObjects + 16);
  for (int i = 0; i < kObjects; ++i) text += i == 0 ? "{}" : ",{}";
  text += "], \"b\": 1}";
  const absl::StatusOr<nlohmann::json> parsed = ParseJsonObject(text, "byte");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ((*parsed)["a"].size(), static_cast<size_t>(kObjects));
  EXPECT_EQ((*parsed)["b"], 1);
}

TEST(MemberText, IsTheLastMembersValueAsWrittenLessItsSpaces) {
  const std::pair<std::string_view, std::optional<std::string>> cases[] = {
      {R"({"id": 1.50})", "1.50"},
      {R"({"id": -2E-3, "x": 1})", "-2E-3"},
      {R"({"id": 1e2})", "1e2"},
      {R"({"id": 123456789012345678901234567890})", "123456789012345678901234567890"},
      {R"({"id": -9223372036854775809})", "-9223372036854775809"},
      {R"({"id": 7})", "7"},
      {R"({"id": -0})", "-0"},
      {R"({"id": true})", "true"},
      {R"({"id": null})", "null"},
      {R"({"id": "a \" b \\", "x": 1})", R"("a \" b \\")"},
      // lists and objects: in their order, their strings untouched, no space between tokens
      {" \r\n{ \"id\" :\t[ 1.50 , \"x ] y\" , { \"b\" : 1 , \"a\" : [ ] } ] }",
       R"([1.50,"x ] y",{"b":1,"a":[]}])"},
      {R"({"id": {"z": "\u00e9 {", "a": [100000000000000000000]}})",
       R"({"z":"\u00e9 {","a":[100000000000000000000]})"},
      {"\xEF\xBB\xBF{\"id\": [2]}", "[2]"},  // after a byte order mark, which nlohmann skips
      // the last member of the key, at the top level, the key unescaped as nlohmann reads it
      {R"({"x": [1.5, {"id": 2.5}], "id": 3.5})", "3.5"},
      {R"({"id": "a", "id": 2.5})", "2.5"},
      {R"({"id": 1.5, "id": "a"})", R"("a")"},
      {R"({"\u0069d": 4.5})", "4.5"},
      {R"({"x": {"id": 1.5}})", std::nullopt},
      {R"({"idx": 1.5})", std::nullopt},
      {R"({})", std::nullopt},
  };
  for (const auto& [text, value] : cases) {
    SCOPED_TRACE(text);
    ASSERT_TRUE(ParseJsonObject(text, "byte").ok());
    EXPECT_EQ(MemberText(text, "id"), value);
  }
}

TEST(ElementTexts, SplitsAListAsMemberTextGivesIt) {
  EXPECT_THAT(ElementTexts(R"([1.50,"a,]",[2,[3]],{"b":[4,5]},true,null,-1e-7])"),
              ::testing::ElementsAre("1.50", R"("a,]")", "[2,[3]]", R"({"b":[4,5]})", "true",
                                     "null", "-1e-7"));
  EXPECT_THAT(ElementTexts("[]"), ::testing::IsEmpty());
  EXPECT_THAT(ElementTexts("7"), ::testing::IsEmpty());
}

TEST(CountJsonShape, CountsOutsideStringsOnly) {
  const JsonShape shape =
      CountJsonShape(R"({"a,[{": ["x\"],{", "\\", 1, {"b": []}], "c": "\\\"\\"})");
  EXPECT_EQ(shape.strings, 6u);
  EXPECT_EQ(shape.containers, 4u);
  EXPECT_EQ(shape.values, 4u);
  // Malformed text is counted as far as it goes: an unterminated string ends the count.
  const JsonShape cut = CountJsonShape(R"([1, [2, "3, [4)");
  EXPECT_EQ(cut.strings, 1u);
  EXPECT_EQ(cut.containers, 2u);
  EXPECT_EQ(cut.values, 2u);
  EXPECT_EQ(JsonTreeBytes("[1,{}]", CountJsonShape("[1,{}]")), 6u + 2 * 128 + 48);
}

// JsonTreeBytes bounds what the tree holds, for input made of what costs the most beside its text
// and for ordinary input. Measured with glibc's count of the bytes it has handed out (every
// allocation on the heap, none mapped apart); skipped where the allocator is not glibc's (the
// sanitizers' count nothing there).
TEST(JsonTreeBytes, BoundsWhatTheTreeHolds) {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  {
    // Through a volatile pointer, so that the compiler cannot leave the allocation out.
    void* (*volatile allocate)(size_t) = std::malloc;
    const size_t before = mallinfo2().uordblks;
    void* const probe = allocate(1 << 20);
    const bool counted = mallinfo2().uordblks - before >= (1u << 20);
    std::free(probe);
    if (!counted) GTEST_SKIP() << "this allocator's bytes are not counted by mallinfo2";
  }
  for (const std::string item :
       {"{}", "[]", "0", "true", "\"\"", "[0]", "[[]]", "{\"a\":{}}", "{\"a\":0}",
        "\"words of a completion, a few of them\"", "-0.12345"}) {
    SCOPED_TRACE(item);
    std::string text = "{\"x\": [";
    for (int i = 0; i < 100000; ++i) text += (i == 0 ? "" : ",") + item;
    text += "]}";
    const size_t before = mallinfo2().uordblks;
    absl::StatusOr<nlohmann::json> parsed = ParseJsonObject(text, "byte");
    ASSERT_TRUE(parsed.ok());
    const size_t held = mallinfo2().uordblks - before;
    EXPECT_GE(JsonTreeBytes(text, CountJsonShape(text)), held);
    EXPECT_GT(held, text.size() / 2);  // what is measured is the tree
  }
}

TEST(Printable, EscapesControlCharactersOnly) {
  using std::string_literals::operator""s;
  EXPECT_EQ(Printable("unknown task \"\x1b[31mX\r\nfake\""),
            "unknown task \"\\x1b[31mX\\x0d\\x0afake\"");
  EXPECT_EQ(Printable("a\0b\x7f"s), "a\\x00b\\x7f");
  EXPECT_EQ(Printable("é中 \t"), "é中 \\x09");
}

}  // namespace
}  // namespace rlscore
