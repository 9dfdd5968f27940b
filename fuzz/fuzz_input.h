// Splits one libFuzzer input into the pieces a target needs, so one byte string drives several
// arguments. Every accessor is total: past the end it yields zeros and empty strings.
//
//   FuzzInput in(data, size);
//   const uint8_t flags = in.Byte();
//   const std::string_view reference = in.Until('\0');  // up to the first NUL (consumed)
//   const std::string_view answer = in.Rest();
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace rlscore::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : text_(reinterpret_cast<const char*>(data), size) {}

  uint8_t Byte() {
    if (pos_ >= text_.size()) return 0;
    return static_cast<uint8_t>(text_[pos_++]);
  }

  // The bytes up to `separator` (not included; the separator is consumed), or the rest.
  std::string_view Until(char separator) {
    const std::string_view rest = text_.substr(pos_);
    const size_t end = rest.find(separator);
    if (end == std::string_view::npos) {
      pos_ = text_.size();
      return rest;
    }
    pos_ += end + 1;
    return rest.substr(0, end);
  }

  std::string_view Rest() {
    const std::string_view rest = text_.substr(pos_);
    pos_ = text_.size();
    return rest;
  }

  bool empty() const { return pos_ >= text_.size(); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

// A property the code promises was broken: report it and abort, so libFuzzer saves the input.
[[noreturn]] inline void Fail(const char* what) {
  std::fprintf(stderr, "fuzz property broken: %s\n", what);
  std::abort();
}

#define RLSCORE_FUZZ_CHECK(condition)                    \
  do {                                                   \
    if (!(condition)) ::rlscore::fuzz::Fail(#condition); \
  } while (false)

}  // namespace rlscore::fuzz
