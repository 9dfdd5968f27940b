// The text-level pass of the AST repetition detector: the reasoning split into lines, the lines
// grouped into blocks as Markdown groups them, fenced code located, and each block's content
// normalised and hashed. It is linear and runs on every completion; the tree-sitter parses (a
// hundred times slower) run only when it shows that something could repeat (ast_repetition.h).
// Normalising is the dear part (a few ns a byte), so it is done per block, on demand: a cheap
// fingerprint of each block's raw text, equal whenever the normalised contents are, tells which
// blocks could share a key at all.
//
//   LineScan scan = ScanStructure(reasoning);           // lines, fences, blocks, fingerprints
//   KeyBlock(reasoning, 3, &scan);                      // scan.blocks[3].key and its lines' keys
//   LineScan all = ScanLines(reasoning);                // every block keyed
//   for (const Fence& f : all.fences) f.language;       // kPython for ```py
//
// Normalisation (docs/DESIGN.md §3, "the same step with different numbers"): leading block markers
// dropped (indentation, `>`, list bullets and numbers, `#` heading marks); ASCII case folded; runs
// of whitespace folded to one space, trailing whitespace dropped; every number (a digit run, with
// `.` or `,` between digits) replaced by `0`; `*` emphasis dropped; inside math (`$..$`, `$$..$$`,
// `\(..\)`, `\[..\]`) and inline code (`..`), identifiers — letter runs not preceded by `\` — are
// replaced by `v`, so a step that comes back with renamed variables normalises the same. LaTeX
// commands (`\frac`) are kept. Math state carries across the lines of a block and starts afresh
// with each block. Lines inside a fence get the code normalisation: case, whitespace and numbers
// (not digits inside identifiers) only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "scorers/ast/grammars.h"

namespace rlscore::scorers::ast {

struct Line {
  size_t begin = 0;  // byte offset of the line's first character
  size_t end = 0;    // offset of its '\n' (or of the end of the text); a '\r' before it is content
  uint64_t key = 0;  // hash of the normalised content; equal for equal normalised content
  // Where the content starts: after the block markers on a prose line; at `begin` on any other.
  size_t content_begin = 0;
  // LineFingerprint of the content from content_begin (a code line's as code); 0 for a line
  // without content.
  uint64_t fingerprint = 0;
  uint32_t normalized_size = 0;  // bytes of normalised content; 0 for a blank line
  bool in_fence = false;         // a fence's delimiter or content line
  // No content: whitespace only, or (outside fences) whitespace and `*` after the block markers;
  // a fence's delimiters. Blank prose lines separate blocks.
  bool blank = false;
};

// A fenced code block (``` or ~~~, three or more, at any indentation). One left open runs to the
// end of the text, as CommonMark says.
struct Fence {
  size_t open_line = 0;   // index of the opening delimiter's line
  size_t end_line = 0;    // one past the closing delimiter's line (or past the last line)
  size_t code_begin = 0;  // byte range of the code between the delimiters
  size_t code_end = 0;
  std::string_view info;                 // the opening line's info string, trimmed
  std::optional<CodeLanguage> language;  // CodeLanguageFromInfoString(info)
};

// The seed of a block's key: a block's key is MixHash folded over its non-blank lines' keys.
inline constexpr uint64_t kBlockKeySeed = 0x626c6f636bULL;

// Lines grouped as Markdown groups them into leaf blocks, from the text alone: a block ends at a
// blank line and before a line that starts a list item, an ATX heading, a block quote or a
// thematic break; an ATX heading is one line; a fence is one block. Where Markdown's grouping
// differs (HTML blocks, lazy continuations in quotes) a block may not match tree-sitter's.
struct TextBlock {
  size_t first_line = 0;
  size_t end_line = 0;           // one past the last line
  uint64_t key = kBlockKeySeed;  // set by KeyBlock
  uint32_t normalized_size = 0;  // set by KeyBlock
  bool fenced = false;
  // Cheap and raw: equal for blocks whose keys are equal (not conversely), so a key can recur
  // only where a fingerprint does; and raw_size >= normalized_size.
  uint64_t fingerprint = 0;
  uint64_t raw_size = 0;
  bool keyed = false;
};

struct LineScan {
  std::vector<Line> lines;  // lines[i] is row i as tree-sitter counts rows (split at '\n')
  std::vector<Fence> fences;
  std::vector<TextBlock> blocks;  // in text order; blank lines belong to none
};

// Mixes `value` into the running hash `h` (order-sensitive, 64-bit).
uint64_t MixHash(uint64_t h, uint64_t value);

// Which code scans: AVX-512 where the CPU has it (with VBMI; CpuHasVectorScan), else AVX2 where
// it has that, else the portable code (kBest); or the portable code always. All give exactly the
// same results; tests compare them (under each RLSCORE_MAX_CPU_ISA, common/cpu_features.h).
enum class ScanIsa { kBest, kPortable };
bool CpuHasVectorScan();

// The lines, fences and blocks with their fingerprints and raw sizes, no keys: one cheap pass.
// Pure; O(text.size()). Offsets are relative to `text`.
LineScan ScanStructure(std::string_view text, ScanIsa isa = ScanIsa::kBest);

// Normalises the lines of blocks[block] (math state starts afresh: spans never cross blocks) and
// sets their keys and sizes and the block's. Does nothing the second time.
void KeyBlock(std::string_view text, size_t block, LineScan* scan);

// ScanStructure and every block keyed.
LineScan ScanLines(std::string_view text);

// The fingerprint of one line's content after its markers (`code`: a line inside a fence), as
// ScanStructure mixes it into its block's; and the same computed a byte at a time, which the
// first must always equal (it takes 64 bytes at a time). `readable` (at least content.size())
// bytes from content.data() may be read, as ScanStructure reads a line inside its text: the
// bytes past the content are read but never counted. For tests.
uint64_t LineFingerprint(std::string_view content, size_t readable, bool code,
                         ScanIsa isa = ScanIsa::kBest);
uint64_t LineFingerprintBytewise(std::string_view content, bool code);

}  // namespace rlscore::scorers::ast
