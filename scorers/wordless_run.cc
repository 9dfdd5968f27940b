#include "scorers/wordless_run.h"

#include <bit>

#include "absl/strings/str_cat.h"

namespace rlscore::scorers {

namespace {

// Whether the `size` bytes at `p` are all wordless; prose has a letter within the first few.
bool AllWordless(const char* p, size_t size) {
  for (size_t k = 0; k < size; ++k) {
    if (!IsWordlessByte(p[k])) return false;
  }
  return true;
}

}  // namespace

WordlessRunReport FindWordlessRun(std::string_view text, uint32_t max_bytes) {
  // A run of more than max_bytes holds a whole tile of `tile` bytes however the text is tiled
  // (2 tile - 1 <= max_bytes + 1): only a tile of wordless bytes can be in one, and the run around
  // it is then measured byte by byte. Tiles of 1 KiB for the default limit: one look at the first
  // byte or two of each is the whole cost on prose.
  const size_t tile = std::bit_floor((size_t{max_bytes} + 2) / 2);
  if (tile < 64) {  // 0 (off), or a limit too small to skip anything
    WordlessRunScanner scanner(max_bytes);
    for (size_t i = 0; i < text.size(); ++i) {
      if (scanner.Push(text[i], i)) break;
    }
    return scanner.report();
  }
  const size_t n = text.size();
  for (size_t i = 0; i + tile <= n;) {
    if (!AllWordless(text.data() + i, tile)) {
      i += tile;
      continue;
    }
    size_t start = i;  // back to the run's first byte: within the tile before (not all wordless)
    while (start > 0 && IsWordlessByte(text[start - 1])) --start;
    size_t j = i;
    for (; j < n && IsWordlessByte(text[j]); ++j) {
      if (j - start >= max_bytes) {
        return {.fired = true, .char_offset = j, .first_char_offset = start};
      }
    }
    i = j + 1;  // text[j] ends the run
  }
  return {};
}

std::string DescribeWordlessRun(const WordlessRunReport& report, uint32_t max_bytes) {
  return absl::StrCat("wordless run: more than ", max_bytes,
                      " bytes of punctuation and white space in a row (no letter, digit or "
                      "non-ASCII character), from character ",
                      report.first_char_offset);
}

}  // namespace rlscore::scorers
