#include "scorers/ast/ast_repetition.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "scorers/ast/code_shape.h"
#include "scorers/ast/markdown_lines.h"
#include "scorers/ast/metered_parse.h"
#include "scorers/ast/structural_hash.h"
#include "tree_sitter/api.h"

namespace rlscore::scorers::ast {
namespace {

// One recurring unit: how often it was seen, and where first.
struct Tally {
  uint32_t count = 0;
  size_t first = 0;  // the smallest offset seen
  size_t last = 0;   // the largest
  void Add(size_t offset) {
    first = count == 0 ? offset : std::min(first, offset);
    last = count == 0 ? offset : std::max(last, offset);
    ++count;
  }
};

// The earliest firing found so far.
struct Firing {
  AstKind kind = AstKind::kNone;
  size_t offset = 0;
  size_t first = 0;
  uint32_t occurrences = 0;
  std::string detail;

  uint64_t size = 0;  // of the unit: normalised characters or syntax nodes

  // True when a firing at `at` of a unit of `unit_size` comes before this one; a larger unit wins
  // a tie (the enclosing function rather than its loop body).
  bool Earlier(size_t at, uint64_t unit_size) const {
    return kind == AstKind::kNone || at < offset || (at == offset && unit_size > size);
  }
};

bool TypeIs(const char* type, const char* name) { return std::strcmp(type, name) == 0; }

bool IsLeafBlock(const char* type) {
  static const char* const kLeafBlocks[] = {
      "paragraph",           "atx_heading", "setext_heading", "fenced_code_block",
      "indented_code_block", "html_block",  "pipe_table",     "link_reference_definition"};
  for (const char* name : kLeafBlocks) {
    if (TypeIs(type, name)) return true;
  }
  return false;
}

bool IsContainerBlock(const char* type) {
  return TypeIs(type, "document") || TypeIs(type, "section") || TypeIs(type, "list") ||
         TypeIs(type, "list_item") || TypeIs(type, "block_quote");
}

std::string_view BlockName(const char* type, bool in_list_item) {
  if (TypeIs(type, "paragraph")) return in_list_item ? "list item" : "paragraph";
  if (TypeIs(type, "atx_heading") || TypeIs(type, "setext_heading")) return "heading";
  if (TypeIs(type, "fenced_code_block")) return "fenced code block";
  if (TypeIs(type, "indented_code_block")) return "indented code block";
  if (TypeIs(type, "pipe_table")) return "table";
  return "block";
}

class Detector {
 public:
  Detector(std::string_view reasoning, size_t base, const AstOptions& options, const Clock* clock,
           bool whole_text)
      : text_(reasoning), base_(base), options_(options), clock_(clock), whole_text_(whole_text) {}

  AstReport Run() {
    LineScan scan = ScanStructure(text_);
    const std::optional<size_t> crossing = BlockScreen(&scan);
    const bool blocks = crossing.has_value();
    const std::vector<const Fence*> code = CodeScreen(scan);
    if (!blocks && code.empty()) return std::move(report_);

    uint64_t bytes = blocks ? text_.size() : 0;
    for (const Fence* f : code) bytes += f->code_end - f->code_begin;
    if (bytes > options_.max_parse_bytes) {
      Stop(AstBudget::kBytes,
           absl::StrCat(bytes, " bytes to parse, budget ", options_.max_parse_bytes));
      return std::move(report_);
    }
    nodes_left_ = options_.max_nodes;
    allowance_ =
        ParseAllowance{.work = options_.max_parse_work, .micros = options_.parse_timeout_micros};
    const std::optional<absl::Time> start =
        clock_ != nullptr ? std::optional<absl::Time>(clock_->Now()) : std::nullopt;
    if (!blocks || BlockRule(&scan, *crossing, bytes)) CodeRule(code);
    // Timed whether or not a budget stopped it: the parses that time out are the slow ones.
    if (start.has_value()) report_.parse_seconds = absl::ToDoubleSeconds(clock_->Now() - *start);
    if (best_.kind != AstKind::kNone) {  // a firing stands even if a later parse ran out
      report_.kind = best_.kind;
      report_.char_offset = base_ + best_.offset;
      report_.first_char_offset = base_ + best_.first;
      report_.occurrences = best_.occurrences;
      report_.detail = std::move(best_.detail);
      report_.skipped = AstBudget::kNone;
    }
    return std::move(report_);
  }

 private:
  // Records a parse's work; false, for "stop", when a budget ran out (`what` names the parse).
  bool Spent(const MeteredParse& parse, std::string_view what) {
    report_.parse_work += parse.work;
    switch (parse.outcome) {
      case ParseOutcome::kParsed:
        return true;
      case ParseOutcome::kOutOfWork:
        return Stop(AstBudget::kWork,
                    absl::StrCat(Sv(what), " ran out of the ", options_.max_parse_work,
                                 " units of parse work a completion may spend"));
      case ParseOutcome::kOutOfTime:
        return Stop(AstBudget::kTime,
                    absl::StrCat(Sv(what), " ran past the ", options_.parse_timeout_micros,
                                 " µs wall-clock safety net for all parses of a completion"));
    }
    return false;
  }

  // Records that `budget` ran out; returns false, for "stop".
  bool Stop(AstBudget budget, std::string_view detail) {
    report_.skipped = budget;
    report_.detail =
        absl::StrCat("skipped: budget (", Sv(AstBudgetName(budget)), ": ", Sv(detail), ")");
    return false;
  }

  // Could some block recur? Blocks that could reach min_block_chars are grouped by fingerprint;
  // only those whose fingerprint recurs are normalised, and their keys counted. The keys are
  // those the block rule gives tree-sitter's blocks. Returns the text block whose key crossed
  // the threshold first, if one did.
  std::optional<size_t> BlockScreen(LineScan* scan) const {
    absl::flat_hash_map<uint64_t, uint32_t> fingerprints;
    fingerprints.reserve(scan->blocks.size());  // sized once, not grown a block at a time
    for (const TextBlock& b : scan->blocks) {
      if (b.raw_size >= options_.min_block_chars) ++fingerprints[b.fingerprint];
    }
    absl::flat_hash_map<uint64_t, uint32_t> keys;
    for (size_t i = 0; i < scan->blocks.size(); ++i) {
      const TextBlock& b = scan->blocks[i];
      if (b.raw_size < options_.min_block_chars ||
          fingerprints[b.fingerprint] <= options_.block_max_occurrences) {
        continue;
      }
      KeyBlock(text_, i, scan);
      if (b.normalized_size < options_.min_block_chars) continue;
      if (++keys[b.key] > options_.block_max_occurrences) return i;
    }
    return std::nullopt;
  }

  // The fences in an enabled language that hold a recurring window of token shapes: the only
  // ones a clone can be in.
  std::vector<const Fence*> CodeScreen(const LineScan& scan) const {
    std::vector<const Fence*> fences;
    std::vector<std::vector<uint32_t>> shapes;
    for (const Fence& f : scan.fences) {
      if (!f.language.has_value() || !options_.languages[static_cast<size_t>(*f.language)] ||
          f.code_end <= f.code_begin) {
        continue;
      }
      fences.push_back(&f);
      shapes.emplace_back();
      shapes.back().reserve((f.code_end - f.code_begin) / 3);
      AppendShapeTokens(text_.substr(f.code_begin, f.code_end - f.code_begin), *f.language,
                        &shapes.back());
    }
    // A subtree of n nodes spans about 0.55-0.7 n tokens (tree-sitter's leaves per node over the
    // subtrees of 40+ nodes in tests/scorers/ast/corpus: minimum 0.55, median 0.68); strings
    // are one shape token but three leaves, hence the margin.
    const uint32_t window = std::max<uint32_t>(4, options_.min_code_nodes * 2 / 5);
    const std::vector<bool> marked =
        SequencesWithRecurringWindow(shapes, window, options_.code_max_occurrences);
    std::vector<const Fence*> parse;
    for (size_t i = 0; i < fences.size(); ++i) {
      if (marked[i]) parse.push_back(fences[i]);
    }
    return parse;
  }

  // The block rule over the Markdown tree; false when a budget stopped it. `crossing` is the text
  // block where the screen crossed the threshold; `bytes` those already counted against
  // max_parse_bytes (the whole text and the screened fences).
  //
  // The rule fires on the earliest block to cross, so when the screen's grouping agrees with
  // Markdown's, nothing after the crossing block matters: the parse first reads only the text up to
  // the first line with content after that block (in a loop that runs to the token limit, a
  // fraction of the text). tree-sitter's Markdown scanner decides a block's extent line by line,
  // from the lines so far, so a leaf block that ends before the last line of the prefix is the
  // block the whole text's parse has, and so is every block before it, as long as no parse error
  // reshapes the tree (the Markdown grammar accepts any text but a NUL byte). A firing on such a
  // block is the rule's answer; if none fires there (the groupings disagree), the whole text is
  // parsed. Both parses count against the one allowance of work and time, and the prefix is tried
  // only where it fits max_parse_bytes beside the whole text.
  bool BlockRule(LineScan* scan, size_t crossing, uint64_t bytes) {
    // A NUL is where tree-sitter's lexer sees the input end: the parse goes into error recovery,
    // which can wrap everything before it in an ERROR node. Only text without one is prefix-stable.
    if (!whole_text_ && text_.find('\0') == std::string_view::npos) {
      size_t row = scan->blocks[crossing].end_line;
      while (row < scan->lines.size() && scan->lines[row].blank) ++row;
      if (row < scan->lines.size() && scan->lines[row].end < text_.size()) {
        const size_t length = scan->lines[row].end + 1;  // through the line's '\n'
        if (bytes + length <= options_.max_parse_bytes) {
          for (size_t b = 0; b < scan->blocks.size() && scan->blocks[b].first_line < row; ++b) {
            KeyBlock(text_, b, scan);
          }
          switch (BlockParse(*scan, length, /*settled_rows=*/row)) {
            case BlockParseOutcome::kFired:
              return true;
            case BlockParseOutcome::kStopped:
              return false;
            case BlockParseOutcome::kUnsettled:
              break;
          }
        }
      }
    }
    // The rule reads the keys of every line: normalise the blocks the screen did not.
    for (size_t b = 0; b < scan->blocks.size(); ++b) KeyBlock(text_, b, scan);
    return BlockParse(*scan, text_.size(), std::numeric_limits<size_t>::max()) !=
           BlockParseOutcome::kStopped;
  }

  enum class BlockParseOutcome { kFired, kUnsettled, kStopped };

  // Parses the text's first `length` bytes as Markdown and tallies its leaf blocks in document
  // order, up to the first that fires (kFired), a budget running out (kStopped), or the first
  // block that reaches row `settled_rows`, or the end of the tree (kUnsettled: nothing fired).
  BlockParseOutcome BlockParse(const LineScan& scan, size_t length, size_t settled_rows) {
    const std::string_view text = text_.substr(0, length);
    const MeteredParse parse = ParseMetered(Grammar::kMarkdown, text, &allowance_);
    report_.parsed_markdown = true;
    report_.bytes_parsed += text.size();
    if (!Spent(parse, absl::StrCat("the Markdown parse of ", text.size(), " bytes"))) {
      return BlockParseOutcome::kStopped;
    }
    const TSNode root = ts_tree_root_node(parse.tree.get());
    // A prefix that needed error recovery settles nothing: the recovery may go otherwise on more.
    if (length < text_.size() && ts_node_has_error(root)) return BlockParseOutcome::kUnsettled;
    absl::flat_hash_map<uint64_t, Tally> tallies;
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    BlockParseOutcome outcome = BlockParseOutcome::kUnsettled;
    bool descend = true;
    for (;;) {
      if (nodes_left_ == 0) {
        Stop(AstBudget::kNodes, absl::StrCat("visited ", options_.max_nodes, " nodes"));
        outcome = BlockParseOutcome::kStopped;
        break;
      }
      --nodes_left_;
      ++report_.nodes_visited;
      const TSNode node = ts_tree_cursor_current_node(&cursor);
      const char* type = ts_node_type(node);
      descend = false;
      if (IsLeafBlock(type)) {
        if (LastRow(node) >= settled_rows) break;
        if (CountBlock(scan, node, type, &tallies)) {  // the earliest block firing
          outcome = BlockParseOutcome::kFired;
          break;
        }
      } else if (IsContainerBlock(type)) {
        descend = true;
      }
      if (descend && ts_tree_cursor_goto_first_child(&cursor)) continue;
      bool done = false;
      while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
        if (!ts_tree_cursor_goto_parent(&cursor)) {
          done = true;
          break;
        }
      }
      if (done) break;
    }
    ts_tree_cursor_delete(&cursor);
    return outcome;
  }

  // The last row holding a node's text: its end row, or the row before where it ends at a
  // line's start (after the '\n').
  static size_t LastRow(TSNode node) {
    const TSPoint begin = ts_node_start_point(node);
    const TSPoint end = ts_node_end_point(node);
    return end.column == 0 && end.row > begin.row ? end.row - 1 : end.row;
  }

  // Tallies one leaf block; true when it fired.
  bool CountBlock(const LineScan& scan, TSNode node, const char* type,
                  absl::flat_hash_map<uint64_t, Tally>* tallies) {
    const TSPoint begin = ts_node_start_point(node);
    const size_t last_row = LastRow(node);
    uint64_t key = kBlockKeySeed;
    uint64_t size = 0;
    for (size_t row = begin.row; row <= last_row && row < scan.lines.size(); ++row) {
      const Line& line = scan.lines[row];
      if (line.normalized_size == 0) continue;
      key = MixHash(key, line.key);
      size += line.normalized_size;
    }
    if (size < options_.min_block_chars) return false;
    const size_t offset = ts_node_start_byte(node);
    Tally& t = (*tallies)[key];
    t.Add(offset);  // leaf blocks come in document order
    if (t.count <= options_.block_max_occurrences) return false;
    const TSNode parent = ts_node_parent(node);
    const bool in_list_item = !ts_node_is_null(parent) && TypeIs(ts_node_type(parent), "list_item");
    best_.kind = AstKind::kBlock;
    best_.offset = offset;
    best_.first = t.first;
    best_.occurrences = t.count;
    best_.size = size;
    best_.detail =
        absl::StrCat("a ", Sv(BlockName(type, in_list_item)), " of ", size,
                     " normalised characters first at character ", base_ + t.first, " occurs ",
                     t.count, " times (case, whitespace, numbers and math variables folded)");
    return true;
  }

  // The code-clone rule over each fence's syntax tree; false when a budget stopped it.
  bool CodeRule(const std::vector<const Fence*>& fences) {
    absl::flat_hash_map<uint64_t, Tally> tallies;
    for (const Fence* f : fences) {
      // Fences after the one where a clone fired cannot fire earlier.
      if (best_.kind != AstKind::kNone && f->code_begin > best_.offset) break;
      const std::string_view code = text_.substr(f->code_begin, f->code_end - f->code_begin);
      const CodeLanguage language = *f->language;
      const MeteredParse parse = ParseMetered(GrammarOf(language), code, &allowance_);
      ++report_.code_blocks_parsed;
      report_.bytes_parsed += code.size();
      if (!Spent(parse,
                 absl::StrCat("the parse of code block ", report_.code_blocks_parsed, " (",
                              Sv(CodeLanguageName(language)), ", ", code.size(), " bytes)"))) {
        return false;
      }
      const uint64_t seed = MixHash(0xc0de, static_cast<uint64_t>(language));
      const uint64_t before = nodes_left_;
      const bool complete = VisitSubtrees(
          parse.tree.get(), seed, options_.min_code_nodes, &nodes_left_, [&](const Subtree& s) {
            // Subtrees are visited children first, so an occurrence can start before one
            // counted earlier (when error recovery or a dropped comment gives a node and its
            // descendant the same shape): the firing spans the smallest to the largest offset.
            Tally& t = tallies[s.hash];
            t.Add(f->code_begin + s.start_byte);
            if (t.count != options_.code_max_occurrences + 1) return;
            if (!best_.Earlier(t.last, s.nodes)) return;
            best_.kind = AstKind::kCodeClone;
            best_.offset = t.last;
            best_.first = t.first;
            best_.occurrences = t.count;
            best_.size = s.nodes;
            best_.detail =
                absl::StrCat(s.is_root ? "a whole " : "a ", Sv(CodeLanguageName(language)), " ",
                             Sv(s.is_root ? std::string_view("code block") : s.kind), " of ",
                             s.nodes, " syntax nodes first at character ", base_ + t.first,
                             " occurs ", t.count, " times (identifiers and literals abstracted)");
          });
      report_.nodes_visited += before - nodes_left_;
      if (!complete) {
        return Stop(AstBudget::kNodes, absl::StrCat("visited ", options_.max_nodes, " nodes"));
      }
    }
    return true;
  }

  const std::string_view text_;
  const size_t base_;
  const AstOptions& options_;
  const Clock* const clock_;
  const bool whole_text_;  // the block rule parses the whole text, never a prefix first
  AstReport report_;
  Firing best_;
  uint64_t nodes_left_ = 0;
  ParseAllowance allowance_;  // parse work and time left to this completion
};

}  // namespace

std::string_view AstBudgetName(AstBudget budget) {
  switch (budget) {
    case AstBudget::kNone:
      return "none";
    case AstBudget::kBytes:
      return "bytes";
    case AstBudget::kWork:
      return "work";
    case AstBudget::kTime:
      return "time";
    case AstBudget::kNodes:
      return "nodes";
  }
  return "?";
}

AstReport FindAstRepetition(std::string_view reasoning, size_t base_offset,
                            const AstOptions& options, const Clock* clock) {
  if (!options.enabled) return AstReport{};
  return Detector(reasoning, base_offset, options, clock, /*whole_text=*/false).Run();
}

AstReport FindAstRepetitionParsingWholeText(std::string_view text, size_t base_offset,
                                            const AstOptions& options) {
  if (!options.enabled) return AstReport{};
  return Detector(text, base_offset, options, nullptr, /*whole_text=*/true).Run();
}

}  // namespace rlscore::scorers::ast
