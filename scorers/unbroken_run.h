// The unbroken-run rule (docs/REPETITION.md): more than `max_bytes` (default 2,048) ASCII bytes in
// a row of one class — all punctuation, symbols and white space ("!!!!…", endless line breaks,
// "))))…", dots), or all letters and digits (an endless digit string, "aaaa…") — is a degenerate
// generation. The word rules cannot see it: the first holds no word, the second one endless word.
// Honest text never comes close: over 210 real reasoning outputs the longest punctuation run is 16
// bytes and the longest word 17; in the project's clean corpora, 66 (code indentation) and 31.
//
//   UnbrokenRunReport r = FindUnbrokenRun(text, 2048);
//   if (r.fired) penalise(r.char_offset);
//
// Causal (a byte and the one before it decide whether the run goes on), so the stream stops where
// the batch scan reports. O(1) work per byte and O(1) memory. Pure and thread-safe (the scanner:
// one per text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlscore::scorers {

// The default profile's limit.
inline constexpr uint32_t kDefaultMaxRunBytes = 2048;

struct UnbrokenRunReport {
  bool fired = false;
  size_t char_offset = 0;        // the byte that made the run longer than the limit
  size_t first_char_offset = 0;  // the run's first byte
  bool letters = false;          // a run of letters and digits, not of punctuation and space
};

// The class of a byte for this rule: 0 for a non-ASCII byte (never in a run, so Chinese reasoning,
// with no ASCII for pages, never fires), 1 for an ASCII letter or digit, 2 for any other ASCII.
constexpr int RunClass(char byte) {
  const auto c = static_cast<unsigned char>(byte);
  if (c >= 0x80) return 0;
  if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) return 1;
  return 2;
}

// The rule fed one byte at a time: after each Push, report() is exactly FindUnbrokenRun of the
// bytes pushed so far. `max_bytes` 0 never fires.
class UnbrokenRunScanner {
 public:
  explicit UnbrokenRunScanner(uint32_t max_bytes) : max_bytes_(max_bytes) {}

  // The next byte, at byte offset `offset` of the text. Returns true when it makes the rule fire;
  // once fired, later bytes are ignored.
  bool Push(char byte, size_t offset) {
    if (report_.fired || max_bytes_ == 0) return false;
    const int run_class = RunClass(byte);
    if (run_class != class_) {
      class_ = run_class;
      run_ = 0;
      start_ = offset;
    }
    if (class_ == 0 || ++run_ <= max_bytes_) return false;
    report_ = {
        .fired = true, .char_offset = offset, .first_char_offset = start_, .letters = class_ == 1};
    return true;
  }

  bool fired() const { return report_.fired; }
  const UnbrokenRunReport& report() const { return report_; }

 private:
  uint32_t max_bytes_;
  int class_ = 0;
  uint64_t run_ = 0;
  size_t start_ = 0;
  UnbrokenRunReport report_;
};

UnbrokenRunReport FindUnbrokenRun(std::string_view text, uint32_t max_bytes);

// What fired, in words, for a report that fired: shared by the batch scorer and the stream.
std::string DescribeUnbrokenRun(const UnbrokenRunReport& report, uint32_t max_bytes);

}  // namespace rlscore::scorers
