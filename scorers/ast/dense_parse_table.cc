#include "scorers/ast/dense_parse_table.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "tree_sitter/parser.h"  // Debian's: TSLanguage as its runtime reads it

namespace rlscore::scorers::ast {

const TSLanguage* WithDenseParseTable(const TSLanguage* language) {
  const size_t symbols = language->symbol_count;
  const size_t states = language->state_count;
  const size_t large = language->large_state_count;
  // Zero is "no action" in both forms of the table.
  auto table = std::make_unique<uint16_t[]>(states * symbols);
  std::copy(language->parse_table, language->parse_table + large * symbols, table.get());
  // A small state's entry: a group count, then per group a value and the symbols that have it.
  for (size_t state = large; state < states; ++state) {
    const uint16_t* data =
        &language->small_parse_table[language->small_parse_table_map[state - large]];
    uint16_t* row = &table[state * symbols];
    const uint16_t groups = *data++;
    for (uint16_t g = 0; g < groups; ++g) {
      const uint16_t value = *data++;
      const uint16_t count = *data++;
      for (uint16_t i = 0; i < count; ++i) row[*data++] = value;
    }
  }
  auto dense = std::make_unique<TSLanguage>(*language);
  dense->large_state_count = language->state_count;
  dense->parse_table = table.release();
  // small_parse_table and its map stay: nothing indexes them for a state below state_count.
  return dense.release();
}

}  // namespace rlscore::scorers::ast
