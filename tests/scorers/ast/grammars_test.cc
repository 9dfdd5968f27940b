#include "scorers/ast/grammars.h"

#include <string>

#include "gtest/gtest.h"
#include "tree_sitter/api.h"

namespace rlscore::scorers::ast {
namespace {

TEST(Grammars, EveryGrammarLoadsIntoTheRuntime) {
  const struct {
    Grammar grammar;
    const char* source;
    const char* root;
  } cases[] = {
      {Grammar::kMarkdown, "# Title\n\nText.\n", "document"},
      {Grammar::kMarkdownInline, "some *emphasis*", "inline"},
      {Grammar::kPython, "def f():\n    return 1\n", "module"},
      {Grammar::kCpp, "int main() { return 0; }", "translation_unit"},
      {Grammar::kC, "int main(void) { return 0; }", "translation_unit"},
      {Grammar::kJavaScript, "function f() { return 1; }", "program"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(GrammarName(c.grammar)));
    const TSLanguage* language = LanguageOf(c.grammar);
    ASSERT_NE(language, nullptr);
    // The pins are ABI 14, the newest Debian's runtime loads.
    EXPECT_EQ(ts_language_version(language), 14u);
    EXPECT_GE(ts_language_version(language), TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION);
    TSParser* parser = ts_parser_new();
    ASSERT_TRUE(ts_parser_set_language(parser, language));
    TSTree* tree = ts_parser_parse_string(parser, nullptr, c.source,
                                          static_cast<uint32_t>(std::string(c.source).size()));
    ASSERT_NE(tree, nullptr);
    const TSNode root = ts_tree_root_node(tree);
    EXPECT_STREQ(ts_node_type(root), c.root);
    EXPECT_FALSE(ts_node_has_error(root));
    ts_tree_delete(tree);
    ts_parser_delete(parser);
  }
}

TEST(Grammars, InfoStrings) {
  const struct {
    const char* info;
    std::optional<CodeLanguage> language;
  } cases[] = {
      {"python", CodeLanguage::kPython},
      {"Python3", CodeLanguage::kPython},
      {"py title=\"a.py\"", CodeLanguage::kPython},
      {"{.python}", CodeLanguage::kPython},
      {"c++", CodeLanguage::kCpp},
      {"CPP", CodeLanguage::kCpp},
      {"cxx", CodeLanguage::kCpp},
      {"c", CodeLanguage::kC},
      {"h", CodeLanguage::kC},
      {"js", CodeLanguage::kJavaScript},
      {"javascript", CodeLanguage::kJavaScript},
      {"node", CodeLanguage::kJavaScript},
      {"", std::nullopt},
      {"rust", std::nullopt},
      {"typescript", std::nullopt},
      {"pythonic", std::nullopt},
      {"   ", std::nullopt},
      {"c#", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.info);
    EXPECT_EQ(CodeLanguageFromInfoString(c.info), c.language);
  }
}

TEST(Grammars, ProfileNames) {
  for (int i = 0; i < kNumCodeLanguages; ++i) {
    const auto language = static_cast<CodeLanguage>(i);
    EXPECT_EQ(CodeLanguageFromName(CodeLanguageName(language)), language);
  }
  EXPECT_EQ(CodeLanguageFromName("py"), std::nullopt);  // profiles use the canonical names
  EXPECT_EQ(CodeLanguageFromName("markdown"), std::nullopt);
}

}  // namespace
}  // namespace rlscore::scorers::ast
