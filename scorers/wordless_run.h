// The wordless-run rule (docs/REPETITION.md): more than `max_bytes` (default 2,048) bytes in a row
// of ASCII punctuation, symbols and white space — no letter, no digit, nothing outside ASCII — is
// a degenerate generation ("!!!!…", endless line breaks, "))))…", "……" typed as dots). The word
// rules cannot see it: it holds no word. Honest text never comes close: the longest such run in
// 210 real reasoning outputs is 16 bytes, in the project's clean corpora 66 (code indentation).
//
//   WordlessRunReport r = FindWordlessRun(text, 2048);
//   if (r.fired) penalise(r.char_offset);
//
// Causal (a byte decides alone whether it continues the run), so the stream stops where the batch
// scan reports. O(1) work per byte and O(1) memory. Pure and thread-safe (the scanner: one per
// text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlscore::scorers {

struct WordlessRunReport {
  bool fired = false;
  size_t char_offset = 0;        // the byte that made the run longer than the limit
  size_t first_char_offset = 0;  // the run's first byte
};

// Whether `byte` continues a wordless run: ASCII, and neither a letter nor a digit.
constexpr bool IsWordlessByte(char byte) {
  const auto c = static_cast<unsigned char>(byte);
  return c < 0x80 && !(c >= '0' && c <= '9') && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

// The rule fed one byte at a time: after each Push, report() is exactly FindWordlessRun of the
// bytes pushed so far. `max_bytes` 0 never fires.
class WordlessRunScanner {
 public:
  explicit WordlessRunScanner(uint32_t max_bytes) : max_bytes_(max_bytes) {}

  // The next byte, at byte offset `offset` of the text. Returns true when it makes the rule fire;
  // once fired, later bytes are ignored.
  bool Push(char byte, size_t offset) {
    if (report_.fired || max_bytes_ == 0) return false;
    if (!IsWordlessByte(byte)) {
      run_ = 0;
      return false;
    }
    if (run_++ == 0) start_ = offset;
    if (run_ <= max_bytes_) return false;
    report_ = {.fired = true, .char_offset = offset, .first_char_offset = start_};
    return true;
  }

  bool fired() const { return report_.fired; }
  const WordlessRunReport& report() const { return report_; }

 private:
  uint32_t max_bytes_;
  uint64_t run_ = 0;
  size_t start_ = 0;
  WordlessRunReport report_;
};

WordlessRunReport FindWordlessRun(std::string_view text, uint32_t max_bytes);

// What fired, in words, for a report that fired: shared by the batch scorer and the stream.
std::string DescribeWordlessRun(const WordlessRunReport& report, uint32_t max_bytes);

}  // namespace rlscore::scorers
