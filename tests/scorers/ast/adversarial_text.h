// Completions built to be slow for the AST detector (scorers/ast/ast_repetition.h), shared by its
// unit tests and by bench/ast_bench.cc, which times what the tests only assert the shape of.
#ifndef RLSCORE_TESTS_SCORERS_AST_ADVERSARIAL_TEXT_H_
#define RLSCORE_TESTS_SCORERS_AST_ADVERSARIAL_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"

namespace rlscore::scorers::ast::testing {

// A time budget for all of a completion's parses (AstOptions::parse_timeout_micros) that no
// sanitizer build on a loaded two-core machine spends, for tests that check what fires rather
// than how fast: CI's ASan run once saw four threads on two cores spend the default 100 ms.
inline constexpr uint64_t kUnhurriedParseMicros = 30'000'000;

// `fences` JavaScript fences of prose (words, numbers and punctuation from a fixed generator),
// each after one shared line of code. The shared line makes the code screen send every fence to
// the parser; prose is what tree-sitter parses slowest (error recovery, about 1 MB/s against
// 2-3 MB/s for code).
inline std::string ProseInCodeFences(int fences, size_t prose_bytes) {
  static const char* const kWords[] = {"so",    "the", "value", "of",    "each", "term",
                                       "then",  "we",  "add",   "check", "that", "it",
                                       "holds", "for", "every", "case",  "sum",  "over",
                                       "pairs", "but", "wait",  "one",   "more", "step"};
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return state >> 33;
  };
  std::string text = "Let me try it in code.\n\n";
  for (int f = 0; f < fences; ++f) {
    text += "```javascript\nconst total = items.reduce((sum, x) => sum + x.value * 2, 0);\n";
    const size_t end = text.size() + prose_bytes;
    while (text.size() < end) {
      const uint64_t r = next() % 10;
      if (r == 2) {
        absl::StrAppend(&text, next() % 1000, " ");
      } else {
        absl::StrAppend(&text, kWords[next() % std::size(kWords)],
                        r == 0   ? ", "
                        : r == 1 ? ". "
                                 : " ");
      }
    }
    text += "\n```\n\nAnother attempt.\n\n";
  }
  return text;
}

}  // namespace rlscore::scorers::ast::testing

#endif  // RLSCORE_TESTS_SCORERS_AST_ADVERSARIAL_TEXT_H_
