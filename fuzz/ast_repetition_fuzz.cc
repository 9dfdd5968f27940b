// The AST repetition detector (scorers/ast/ast_repetition.h): Markdown block structure and code
// clones parsed with tree-sitter, on any reasoning text, with the thresholds from the first byte
// (low ones reach the clone comparison on small inputs). It must end within its byte, work and
// node budgets, report offsets inside the text and, where no budget ran out, the firing that a
// parse of the whole text finds; and its text pass (ScanStructure) must find the same with
// AVX-512 as with the portable code.
#include <cstddef>
#include <cstdint>
#include <tuple>

#include "fuzz/fuzz_input.h"
#include "scorers/ast/ast_repetition.h"
#include "scorers/ast/markdown_lines.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  const uint8_t flags = in.Byte();
  scorers::ast::AstOptions options;
  if ((flags & 1) != 0) {
    options.block_max_occurrences = 1 + (flags >> 1) % 3;
    options.min_block_chars = 8;
    options.code_max_occurrences = 1 + (flags >> 3) % 3;
    options.min_code_nodes = 4;
  }
  if ((flags & 0x20) != 0) options.max_parse_bytes = 512;
  if ((flags & 0x40) != 0) options.max_nodes = 200;
  if ((flags & 0x80) != 0) options.max_parse_work = 1 << 16;
  const std::string_view reasoning = in.Rest();

  const scorers::ast::AstReport report = scorers::ast::FindAstRepetition(reasoning, 100, options);
  if (report.kind != scorers::ast::AstKind::kNone) {
    RLSCORE_FUZZ_CHECK(report.first_char_offset <= report.char_offset);
    RLSCORE_FUZZ_CHECK(report.first_char_offset >= 100 &&
                       report.char_offset < 100 + reasoning.size());
    RLSCORE_FUZZ_CHECK(report.skipped == scorers::ast::AstBudget::kNone);
  }
  RLSCORE_FUZZ_CHECK(report.bytes_parsed <= options.max_parse_bytes);
  // Work is charged as it is spent: a parse stops on the charge that crosses the budget, so a
  // report within budget spent no more than it.
  RLSCORE_FUZZ_CHECK((report.skipped == scorers::ast::AstBudget::kWork) ==
                     (report.parse_work > options.max_parse_work));
  // The block rule's prefix parse fires where the whole text's parse does (the prefix can use up
  // a budget that the whole parse alone would not: compare where neither ran out).
  const scorers::ast::AstReport whole =
      scorers::ast::FindAstRepetitionParsingWholeText(reasoning, 100, options);
  if (report.skipped == scorers::ast::AstBudget::kNone &&
      whole.skipped == scorers::ast::AstBudget::kNone) {
    RLSCORE_FUZZ_CHECK(report.kind == whole.kind && report.occurrences == whole.occurrences &&
                       report.char_offset == whole.char_offset &&
                       report.first_char_offset == whole.first_char_offset &&
                       report.detail == whole.detail);
  }

  using scorers::ast::ScanIsa;
  const scorers::ast::LineScan best = scorers::ast::ScanStructure(reasoning, ScanIsa::kBest);
  const scorers::ast::LineScan portable =
      scorers::ast::ScanStructure(reasoning, ScanIsa::kPortable);
  RLSCORE_FUZZ_CHECK(best.lines.size() == portable.lines.size() &&
                     best.fences.size() == portable.fences.size() &&
                     best.blocks.size() == portable.blocks.size());
  for (size_t i = 0; i < best.lines.size(); ++i) {
    const scorers::ast::Line& a = best.lines[i];
    const scorers::ast::Line& b = portable.lines[i];
    RLSCORE_FUZZ_CHECK(std::tie(a.begin, a.end, a.content_begin, a.fingerprint, a.blank) ==
                       std::tie(b.begin, b.end, b.content_begin, b.fingerprint, b.blank));
  }
  for (size_t i = 0; i < best.blocks.size(); ++i) {
    const scorers::ast::TextBlock& a = best.blocks[i];
    const scorers::ast::TextBlock& b = portable.blocks[i];
    RLSCORE_FUZZ_CHECK(std::tie(a.first_line, a.end_line, a.fingerprint, a.raw_size) ==
                       std::tie(b.first_line, b.end_line, b.fingerprint, b.raw_size));
  }
  return 0;
}
