// Bridges std::string_view to Debian's abseil, whose absl::string_view is its own class
// (ABSL_USES_STD_STRING_VIEW is off in 20220623), so absl::StrCat cannot take a std::string_view.
//
//   absl::StrCat("cause ", Sv(advantage::CauseName(cause)))
//
// Clip() shortens a caller's string before an error message echoes it, so a 100 MB profile name
// costs an error of a few hundred bytes; Printable() makes a message safe to print.
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace rlscore {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view Std(absl::string_view s) { return std::string_view(s.data(), s.size()); }

// `s` when it has at most `max` bytes, else its first `max` bytes and "... (N bytes)".
inline std::string Clip(std::string_view s, size_t max = 128) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max)) + "... (" + std::to_string(s.size()) + " bytes)";
}

// `s` with its control characters (bytes below 0x20, and 0x7F) written as \xNN, for a terminal or
// a log: an escape sequence or a line break that came from the input must not act as one.
inline std::string Printable(std::string_view s) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace rlscore
