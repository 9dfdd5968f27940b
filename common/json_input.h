// Parsing JSON that arrives from outside (an HTTP body, a line of a rollouts file) without letting
// it crash, hang or exhaust the process: syntax errors, NUL bytes, numbers out of range and
// nesting deeper than kMaxJsonDepth become INVALID_ARGUMENT naming where, with at most a few
// hundred bytes of the input quoted; nothing throws past this function. Time is linear in the
// text, whatever its shape.
//
//   absl::StatusOr<nlohmann::json> body = ParseJsonObject(text, "byte");
//   if (!body.ok()) return body.status();   // "invalid JSON at byte 13: ..."
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "absl/status/statusor.h"

namespace rlscore {

// Arrays and objects nested deeper than this are refused: the protocols need three levels, and
// recursive code over the parsed value (destruction, dump()) must stay shallow.
inline constexpr int kMaxJsonDepth = 32;

// Parses `text`, which must hold one JSON object. Errors say "invalid JSON at <unit> N: ..." where
// N is the 1-based byte offset of the problem and <unit> is what the caller calls it ("column"
// for a line, "byte" for a body).
absl::StatusOr<nlohmann::json> ParseJsonObject(std::string_view text, std::string_view unit);

}  // namespace rlscore
