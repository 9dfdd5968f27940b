// Parsing JSON that arrives from outside (an HTTP body, a line of a rollouts file) without letting
// it crash, hang or exhaust the process: syntax errors, NUL bytes, numbers out of range and
// nesting deeper than kMaxJsonDepth become INVALID_ARGUMENT naming where, with at most a few
// hundred bytes of the input quoted; nothing throws past this function. Time is linear in the
// text, whatever its shape.
//
//   absl::StatusOr<nlohmann::json> body = ParseJsonObject(text, "byte");
//   if (!body.ok()) return body.status();   // "invalid JSON at byte 13: ..."
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rlscore {

// Arrays and objects nested deeper than this are refused: the protocols need three levels, and
// recursive code over the parsed value (destruction, dump()) must stay shallow.
inline constexpr int kMaxJsonDepth = 32;

// Parses `text`, which must hold one JSON object. Errors say "invalid JSON at <unit> N: ..." where
// N is the 1-based byte offset of the problem and <unit> is what the caller calls it ("column"
// for a line, "byte" for a body).
absl::StatusOr<nlohmann::json> ParseJsonObject(std::string_view text, std::string_view unit);

// The value of the top-level member `key` of the object `text` (its last such member, the one
// ParseJsonObject keeps), as the text writes it less the whitespace between its tokens. nlohmann's
// dump() would round a number past 64 bits (123456789012345678901234567890 and ...891 are the
// same double), drop a fraction's trailing zeros (1.50) and sort an object's keys; this keeps
// what the text says, to echo it or to read it as an answer. nullopt where the member is absent.
// `text` must be one that ParseJsonObject read without error.
//
//   MemberText(R"({"id": {"b": [1.50, 2], "a": "x y"}})", "id")  ->  {"b":[1.50,2],"a":"x y"}
std::optional<std::string> MemberText(std::string_view text, std::string_view key);

// The elements of `array`, a JSON array as MemberText gives it, each as its text.
std::vector<std::string_view> ElementTexts(std::string_view array);

// What a JSON text holds outside its strings, counted without parsing it (malformed text is
// counted as far as it goes), in one pass that skips through strings with memchr.
struct JsonShape {
  uint64_t strings = 0;     // quoted strings, object keys included
  uint64_t containers = 0;  // '{' and '['
  uint64_t values = 0;      // ',' separators: values beyond the first of each container
};
JsonShape CountJsonShape(std::string_view text);

// At most what ParseJsonObject's tree of `text` holds in memory, the peak of its growing arrays
// included: about 80 bytes an empty object and 17 a number measured, 20 to 27 times the text for
// input made of them (`{}` and `[0]` repeated), against 1 to 2 times for text that is mostly
// strings. Charged: each byte of the text once (strings' bytes), 64 bytes a string, 128 a
// container and 48 a value.
uint64_t JsonTreeBytes(std::string_view text, const JsonShape& shape);

}  // namespace rlscore
