#include "scorers/unbroken_run.h"

#include <bit>

#include "absl/strings/str_cat.h"

namespace rlscore::scorers {
namespace {

// Whether the `size` bytes at `p` are one run: all of the first byte's class, which is not 0.
// Prose changes class within the first few bytes.
bool OneRun(const char* p, size_t size) {
  const int run_class = RunClass(p[0]);
  if (run_class == 0) return false;
  for (size_t k = 1; k < size; ++k) {
    if (RunClass(p[k]) != run_class) return false;
  }
  return true;
}

}  // namespace

UnbrokenRunReport FindUnbrokenRun(std::string_view text, uint32_t max_bytes) {
  // A run of more than max_bytes holds a whole tile of `tile` bytes however the text is tiled
  // (2 tile - 1 <= max_bytes + 1): only a tile that is one run can be in one, and the run around
  // it is then measured byte by byte. Tiles of 1 KiB for the default limit: one look at the first
  // bytes of each is the whole cost on prose.
  const size_t tile = std::bit_floor((size_t{max_bytes} + 2) / 2);
  if (tile < 64) {  // 0 (off), or a limit too small to skip anything
    UnbrokenRunScanner scanner(max_bytes);
    for (size_t i = 0; i < text.size(); ++i) {
      if (scanner.Push(text[i], i)) break;
    }
    return scanner.report();
  }
  const size_t n = text.size();
  for (size_t i = 0; i + tile <= n;) {
    if (!OneRun(text.data() + i, tile)) {
      i += tile;
      continue;
    }
    const int run_class = RunClass(text[i]);
    size_t start = i;  // back to the run's first byte: within the tile before (not one run)
    while (start > 0 && RunClass(text[start - 1]) == run_class) --start;
    size_t j = i;
    for (; j < n && RunClass(text[j]) == run_class; ++j) {
      if (j - start >= max_bytes) {
        return {
            .fired = true, .char_offset = j, .first_char_offset = start, .letters = run_class == 1};
      }
    }
    i = j;  // text[j] begins something else: a run of another class, or a non-ASCII byte
  }
  return {};
}

std::string DescribeUnbrokenRun(const UnbrokenRunReport& report, uint32_t max_bytes) {
  return absl::StrCat("unbroken run: more than ", max_bytes, " bytes in a row of ",
                      report.letters ? "ASCII letters and digits (one endless word)"
                                     : "ASCII punctuation and white space (no word)",
                      ", from character ", report.first_char_offset);
}

}  // namespace rlscore::scorers
