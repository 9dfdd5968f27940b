#include "scorers/ast/dense_parse_table.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scorers/ast/grammars.h"
#include "tests/scorers/ast/adversarial_text.h"
#include "tree_sitter/api.h"

namespace rlscore::scorers::ast {
namespace {

constexpr Grammar kGrammars[] = {Grammar::kMarkdown, Grammar::kMarkdownInline,
                                 Grammar::kPython,   Grammar::kCpp,
                                 Grammar::kC,        Grammar::kJavaScript};

// The tree's S-expression with every node's byte range, so trees that differ only in where a
// node starts or ends differ here too.
void Describe(TSNode node, std::string* out) {
  *out += '(';
  *out += ts_node_is_missing(node) ? "MISSING " : "";
  *out += ts_node_type(node);
  *out += ' ';
  *out += std::to_string(ts_node_start_byte(node));
  *out += '-';
  *out += std::to_string(ts_node_end_byte(node));
  const uint32_t children = ts_node_child_count(node);
  for (uint32_t i = 0; i < children; ++i) {
    *out += ' ';
    Describe(ts_node_child(node, i), out);
  }
  *out += ')';
}

std::string TreeOf(const TSLanguage* language, const std::string& text) {
  TSParser* parser = ts_parser_new();
  EXPECT_TRUE(ts_parser_set_language(parser, language));
  TSTree* tree =
      ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size()));
  std::string out;
  Describe(ts_tree_root_node(tree), &out);
  ts_tree_delete(tree);
  ts_parser_delete(parser);
  return out;
}

// Texts for every grammar: the detector's corpora (Markdown with prose, LaTeX and code: to a code
// grammar mostly error recovery, the path the dense table speeds up), code in each language,
// prose in fences, and each of those with bytes flipped by a seeded generator.
std::vector<std::string> Texts() {
  std::vector<std::string> texts = {
      "def f(x):\n    return [y * 2 for y in x if y > 0]\n",
      "#include <vector>\ntemplate <class T> T Sum(const std::vector<T>& v) {\n"
      "  T s{};\n  for (const T& x : v) s += x;\n  return s;\n}\n",
      "int main(void) { int a[3] = {1, 2, 3}; return a[1] ? 0 : 1; }\n",
      "const f = async (xs) => xs.map((x) => ({ x, y: `${x}!` }));\n",
      testing::ProseInCodeFences(3, 400),
  };
  for (const auto& entry : std::filesystem::recursive_directory_iterator(RLSCORE_AST_CORPUS)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    texts.push_back(text.str().substr(0, 3000));  // error recovery costs: keep it to the start
  }
  uint64_t state = 42;
  const size_t originals = texts.size();
  for (size_t i = 0; i < originals; ++i) {
    std::string mutated = texts[i];
    for (size_t k = 0; k < 1 + mutated.size() / 64; ++k) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      mutated[(state >> 33) % mutated.size()] = static_cast<char>(" {}()[];:=\"'`#*\n"[state % 16]);
    }
    texts.push_back(std::move(mutated));
  }
  return texts;
}

TEST(DenseParseTable, EveryGrammarParsesEveryTextToTheSameTree) {
  const std::vector<std::string> texts = Texts();
  ASSERT_GT(texts.size(), 100u);  // the corpora were found
  for (const Grammar grammar : kGrammars) {
    SCOPED_TRACE(std::string(GrammarName(grammar)));
    const TSLanguage* generated = GeneratedLanguageOf(grammar);
    const TSLanguage* dense = LanguageOf(grammar);
    ASSERT_NE(dense, generated);
    EXPECT_EQ(ts_language_version(dense), ts_language_version(generated));
    EXPECT_EQ(ts_language_symbol_count(dense), ts_language_symbol_count(generated));
    int with_errors = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      SCOPED_TRACE(i);
      const std::string want = TreeOf(generated, texts[i]);
      ASSERT_EQ(TreeOf(dense, texts[i]), want);
      if (want.find("(ERROR ") != std::string::npos) ++with_errors;
    }
    // Error recovery, what the dense table is for, was exercised, not only clean parses (the
    // Markdown grammars accept any text).
    if (grammar != Grammar::kMarkdown && grammar != Grammar::kMarkdownInline) {
      EXPECT_GT(with_errors, 10);
    }
  }
}

TEST(DenseParseTable, LanguageOfBuildsEachCopyOnce) {
  for (const Grammar grammar : kGrammars) {
    EXPECT_EQ(LanguageOf(grammar), LanguageOf(grammar));
  }
}

}  // namespace
}  // namespace rlscore::scorers::ast
