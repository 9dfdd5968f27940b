#include "scorers/ast/structural_hash.h"

#include <vector>

#include "scorers/ast/markdown_lines.h"
#include "tree_sitter/api.h"

namespace rlscore::scorers::ast {
namespace {

struct Frame {
  TSNode node;
  uint64_t hash;
  uint32_t nodes;
};

}  // namespace

bool VisitSubtrees(const TSTree* tree, uint64_t seed, uint32_t min_nodes, uint64_t* node_budget,
                   absl::FunctionRef<void(const Subtree&)> visit) {
  const TSNode root = ts_tree_root_node(tree);
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  std::vector<Frame> stack;
  const auto enter = [&](TSNode node) {
    stack.push_back({node, MixHash(seed, ts_node_symbol(node)), 1});
  };
  // Finishes the top frame: reports it and folds it into its parent.
  const auto leave = [&]() {
    Frame f = stack.back();
    stack.pop_back();
    const bool extra = ts_node_is_extra(f.node);
    if (extra) return;  // comments do not change a clone
    f.hash = MixHash(f.hash, f.nodes);
    if (f.nodes >= min_nodes) {
      visit(Subtree{f.hash, ts_node_start_byte(f.node), ts_node_end_byte(f.node), f.nodes,
                    ts_node_type(f.node), stack.empty()});
    }
    if (!stack.empty()) {
      Frame& parent = stack.back();
      parent.hash = MixHash(parent.hash, f.hash);
      parent.nodes += f.nodes;
    }
  };
  bool complete = true;
  enter(root);
  for (;;) {
    if (*node_budget == 0) {
      complete = false;
      break;
    }
    --*node_budget;
    if (ts_tree_cursor_goto_first_child(&cursor)) {
      enter(ts_tree_cursor_current_node(&cursor));
      continue;
    }
    // A leaf: leave it and every ancestor that has no next sibling.
    bool done = false;
    for (;;) {
      leave();
      if (ts_tree_cursor_goto_next_sibling(&cursor)) {
        enter(ts_tree_cursor_current_node(&cursor));
        break;
      }
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        done = true;
        break;
      }
    }
    if (done) break;
  }
  ts_tree_cursor_delete(&cursor);
  return complete;
}

}  // namespace rlscore::scorers::ast
