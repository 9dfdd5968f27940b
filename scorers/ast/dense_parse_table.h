// A copy of a tree-sitter language whose whole parse table is dense: one array entry for every
// (state, symbol) pair, looked up in constant time.
//
//   static const TSLanguage* const cpp = WithDenseParseTable(tree_sitter_cpp());
//   ts_parser_set_language(parser, cpp);  // parses exactly as tree_sitter_cpp() does
//
// Why. A generated grammar keeps a dense row only for its first `large_state_count` states; the
// rest are "small" states, stored as lists of (action, symbols) groups that the runtime searches
// linearly for each lookup. Error recovery asks every small state on its stacks about every token
// of the grammar (tree-sitter's ts_parser__do_all_potential_reductions), so text that is not
// code, the common failure inside a fence, spent 56 % of its parse time in that search
// (`perf record` on ast_repetition_fuzz's corpus, Debian's runtime 0.20.7; 0.25's does the same).
// With every row dense, the detector ran that corpus 2.3 times faster (bench/ast_bench).
//
// Cost: state_count x symbol_count x 2 bytes, once per grammar: 9.3 MB for C++, 1.5 MB for C,
// 1.5 MB for Python, 0.9 MB for JavaScript, 0.7 MB for both Markdown grammars; building the C++
// copy takes about 5 ms.
//
// The copy shares everything else with the original (lexers, scanners, names, actions), so trees
// of either name the same symbols; tests/scorers/ast/dense_parse_table_test.cc parses the same
// texts with both and compares the trees. It depends on the runtime's reading of TSLanguage
// (Debian's tree_sitter/parser.h, the layout ABI 13 and 14 share); the runtime reads the small
// table only for states at or past large_state_count, which the copy sets to state_count.
#pragma once

struct TSLanguage;

namespace rlscore::scorers::ast {

// A new language equal to `language` with a dense parse table; never freed (a grammar's tables
// live as long as the process). Thread-safe; the result is immutable.
// REQUIRES: `language` is ABI 13 or 14 and outlives the result.
const TSLanguage* WithDenseParseTable(const TSLanguage* language);

}  // namespace rlscore::scorers::ast
