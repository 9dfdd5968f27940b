// Structural hashes of a tree-sitter syntax tree: each subtree hashed from its node kinds alone —
// the text of identifiers and literals never enters the hash, keywords and operators do (they are
// node kinds of their own) — so a function that comes back with renamed variables and other
// constants hashes the same (docs/DESIGN.md §3). Comments and other "extra" nodes are left out.
//
//   uint64_t budget = 100000;
//   bool complete = VisitSubtrees(tree, /*seed=*/1, /*min_nodes=*/40, &budget,
//                                 [&](const Subtree& s) { counts[s.hash]++; });
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/functional/function_ref.h"

struct TSTree;

namespace rlscore::scorers::ast {

struct Subtree {
  uint64_t hash = 0;
  uint32_t start_byte = 0;  // in the parsed text
  uint32_t end_byte = 0;
  uint32_t nodes = 0;     // nodes in the subtree, itself included, extras excluded
  std::string_view kind;  // the subtree's node type, e.g. "function_definition"
  bool is_root = false;   // the whole tree ("module", "translation_unit", "program")
};

// Walks `tree` iteratively (no recursion: syntax trees of hostile input can be arbitrarily deep)
// and calls `visit` for every subtree of at least `min_nodes` nodes, in post-order: children
// before parents, earlier siblings first — so equal subtrees, which can never nest, are visited
// in text order. `seed` separates languages. Each node visited decrements `*node_budget`; when it
// reaches 0 the walk stops and returns false. Returns true when the whole tree was visited.
bool VisitSubtrees(const TSTree* tree, uint64_t seed, uint32_t min_nodes, uint64_t* node_budget,
                   absl::FunctionRef<void(const Subtree&)> visit);

}  // namespace rlscore::scorers::ast
