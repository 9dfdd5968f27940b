// tree-sitter parses bounded by the work they do, so that whether a parse fits its budget is a
// function of the text alone: never of the machine's load, the thread count or the clock.
//
//   ParseAllowance allowance{.work = 64 << 20, .micros = 10'000'000};  // a completion's
//   MeteredParse md = ParseMetered(Grammar::kMarkdown, reasoning, &allowance);
//   if (md.outcome == ParseOutcome::kOutOfWork) { ... deterministic: the same text always is }
//   if (md.outcome == ParseOutcome::kOutOfTime) { ... the safety net: the completion is unscorable
//   } ts_tree_root_node(md.tree.get());
//
// Work. A parse is charged the bytes tree-sitter allocates plus kLexerReadWork units per
// character its lexer reads (through a TSInput that hands it one character at a time, so a
// re-read after error recovery backtracks is charged again). tree-sitter 0.20 exposes no step
// counter, and neither its parse actions nor its lexer's reads track its cost alone: GLR error
// recovery in the C++ grammar spends up to 18 µs per character read copying and releasing subtree
// arrays when stack versions split. Those arrays are what it allocates, so the sum tracks time
// closely: over the 20,000 parses of the AST detector's test and fuzz corpora with every grammar
// (prose parsed as code included), 1.1-2.3 ns per unit on one core here, median 1.3, where
// characters read alone vary 130-fold and bytes of text 76-fold.
//
// Each parse runs on a parser of its own: tree-sitter keeps pools and array capacities in a
// parser between parses, and a reused parser would allocate less the second time, making the
// charge depend on what the thread parsed before. A new parser costs a few microseconds.
//
// Time. The allowance's micros is a last-resort wall-clock limit for when the work bound is
// wrong by orders of magnitude (a grammar or runtime the measurement above did not see); the
// budgets that decide results are counted in work. kOutOfTime depends on the machine and must
// never be reported as if the parse had simply found nothing.
//
// Thread-safety: safe to call concurrently. The first call replaces tree-sitter's allocator
// (ts_set_allocator, process-wide) with one that counts for the calling thread's parse and
// otherwise behaves as the default (malloc, calloc, realloc, free; abort when out of memory).
#pragma once

#include <cstdint>
#include <string_view>

#include "scorers/ast/grammars.h"

struct TSTree;

namespace rlscore::scorers::ast {

// Work units per character tree-sitter's lexer reads; one unit per byte it allocates.
inline constexpr uint64_t kLexerReadWork = 64;

// What parses may still spend; each ParseMetered() call takes its share.
struct ParseAllowance {
  uint64_t work = 0;    // units
  uint64_t micros = 0;  // the wall-clock safety net
};

enum class ParseOutcome : uint8_t {
  kParsed,
  kOutOfWork,  // the work allowance ran out: deterministic
  kOutOfTime,  // the safety net fired: depends on the machine
};

// Owns a tree and deletes it.
class Tree {
 public:
  Tree() = default;
  explicit Tree(TSTree* tree) : tree_(tree) {}
  ~Tree();
  Tree(Tree&& other) noexcept : tree_(other.tree_) { other.tree_ = nullptr; }
  Tree& operator=(Tree&& other) noexcept;
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;
  const TSTree* get() const { return tree_; }

 private:
  TSTree* tree_ = nullptr;
};

struct MeteredParse {
  ParseOutcome outcome = ParseOutcome::kParsed;
  Tree tree;            // non-null exactly when outcome is kParsed
  uint64_t work = 0;    // units charged, up to a little past the allowance when it ran out
  uint64_t micros = 0;  // wall-clock time spent, for metrics only
};

// Parses `text` with `grammar` within `*allowance`, and takes what it spent from it (a parse that
// ran out leaves that part of the allowance at 0; with no micros left it does not start).
// REQUIRES: text.size() <= UINT32_MAX.
MeteredParse ParseMetered(Grammar grammar, std::string_view text, ParseAllowance* allowance);

}  // namespace rlscore::scorers::ast
