// The AST repetition detector (docs/REPETITION.md): the loops that exact n-grams miss. Two rules,
// both firing on the occurrence that crosses the threshold, as the n-gram rule does:
//
//   block      the text parsed as Markdown (tree-sitter); each leaf block — paragraph, list
//              item, heading, fenced or indented code, table — normalised (markdown_lines.h:
//              case and whitespace folded, numbers and math variables abstracted) and hashed. A
//              block of at least `min_block_chars` normalised characters that occurs more than
//              `block_max_occurrences` times fires: "the same step with different numbers".
//   code clone fenced code in an enabled language parsed with its grammar; every subtree of at
//              least `min_code_nodes` nodes hashed with identifiers and literals abstracted
//              (structural_hash.h). One that occurs more than `code_max_occurrences` times, in
//              one fence or across several, fires: the same function re-emitted with renamed
//              variables.
//
//   AstReport r = FindAstRepetition(completion, /*base_offset=*/0, AstOptions{});
//   if (r.kind != AstKind::kNone) { r.char_offset; r.first_char_offset; r.detail; }
//   if (r.skipped != AstBudget::kNone) { ... "skipped: budget"; the n-gram rule still applies }
//
// Cost. tree-sitter parses 2-3 MB/s here: parsing every completion would cost a hundred times the
// rest of scoring. A linear text pass screens first and the parsers run only when something could
// recur: for blocks, the text's own grouping of lines into blocks, fingerprinted cheaply and, where
// fingerprints recur, keyed exactly as the block rule keys tree-sitter's blocks
// (markdown_lines.h); for code, windows of max(4, 2 min_code_nodes / 5) token shapes
// (code_shape.h), and only the fences holding a recurring window are parsed. The Markdown parse
// first reads the text only up to the line after the block where the screen's count crossed, and
// the whole text only if no block settled there fires (ast_repetition.cc, BlockRule). The screens
// are necessary conditions with documented gaps: a block that Markdown groups differently from the
// text-level grouping (HTML blocks, lazy continuation lines in quotes) may be missed, and so may a
// clone of min_code_nodes nodes that spans fewer shape tokens than the window (mostly
// single-child chains, or template strings, which are one shape token).
//
// Budgets, per completion, all counted in work so that the same text gets the same report on any
// machine under any load: bytes handed to tree-sitter, parse work (metered_parse.h: bytes
// tree-sitter allocates plus 64 per character its lexer reads, all of the completion's parses
// together) and syntax-tree nodes visited. When one runs out the report says which, nothing
// fires, and the caller's n-gram rule still applies. The work budget is the completion's, not
// each parse's, because text that is not code parses slowly (tree-sitter's error recovery: prose
// in a ```cpp fence can cost 20 times as much as Markdown of the same size), and a completion can
// hold many fences. Beside them a wall-clock safety net (parse_timeout_micros) stops parses that
// the work budget failed to bound; when it fires the report says kTime and the completion must be
// reported unscorable (reward.h), never scored as if the detector had found nothing.
//
// Thread-safety: safe to call concurrently.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "scorers/ast/grammars.h"

namespace rlscore::scorers::ast {

struct AstOptions {
  bool enabled = true;
  uint32_t block_max_occurrences = 3;  // fires when a block occurs more than this many times
  uint32_t min_block_chars = 64;       // normalised characters of a block, at least
  uint32_t code_max_occurrences = 3;   // fires when a code subtree occurs more than this
  uint32_t min_code_nodes = 50;        // nodes of a code subtree, at least
  std::array<bool, kNumCodeLanguages> languages = {true, true, true, true};  // by CodeLanguage
  uint64_t max_parse_bytes = 256 * 1024;     // bytes handed to tree-sitter per completion
  uint64_t max_parse_work = 64 << 20;        // work units (metered_parse.h), all parses together
  uint64_t parse_timeout_micros = 10000000;  // the wall-clock safety net, all parses together
  uint64_t max_nodes = 1000000;              // syntax-tree nodes visited per completion
};

enum class AstKind : uint8_t { kNone, kBlock, kCodeClone };
// kTime is the wall-clock safety net: the only budget whose outcome depends on the machine.
enum class AstBudget : uint8_t { kNone, kBytes, kWork, kNodes, kTime };

std::string_view AstBudgetName(AstBudget budget);  // "bytes", "work", "nodes", "time"

struct AstReport {
  AstKind kind = AstKind::kNone;
  // Offsets (plus the base offset given) of the occurrence that crossed the threshold and of the
  // first occurrence; meaningful when kind != kNone.
  size_t char_offset = 0;
  size_t first_char_offset = 0;
  uint32_t occurrences = 0;              // threshold + 1 when fired
  std::string detail;                    // what recurred, or which budget ran out and by how much
  AstBudget skipped = AstBudget::kNone;  // set only when nothing fired

  // The work done, for metrics: nothing is parsed when the screens rule repetition out.
  bool parsed_markdown = false;
  uint32_t code_blocks_parsed = 0;
  uint64_t bytes_parsed = 0;
  uint64_t parse_work = 0;  // units charged, metered_parse.h
  uint64_t nodes_visited = 0;
  double parse_seconds = 0.0;  // only when a clock was given
};

// Runs both rules over `text` (the scorer passes the whole completion with its tags blanked),
// whose first byte is at `base_offset` in the completion.
// `clock`, when given, times the parses (AstReport::parse_seconds); it never changes a result.
// REQUIRES: options.max_parse_bytes <= UINT32_MAX.
AstReport FindAstRepetition(std::string_view text, size_t base_offset, const AstOptions& options,
                            const Clock* clock = nullptr);

// For tests: FindAstRepetition with the block rule's Markdown parse always over the whole text,
// never a prefix first (ast_repetition.cc, BlockRule). Where no budget runs out, the two report
// the same firing: kind, offsets, occurrences and detail.
AstReport FindAstRepetitionParsingWholeText(std::string_view text, size_t base_offset,
                                            const AstOptions& options);

}  // namespace rlscore::scorers::ast
