#include "scorers/ast/grammars.h"

#include <array>
#include <mutex>
#include <string>

#include "scorers/ast/dense_parse_table.h"
#include "tree_sitter/api.h"

extern "C" {
const TSLanguage* tree_sitter_markdown();
const TSLanguage* tree_sitter_markdown_inline();
const TSLanguage* tree_sitter_python();
const TSLanguage* tree_sitter_cpp();
const TSLanguage* tree_sitter_c();
const TSLanguage* tree_sitter_javascript();
}

namespace rlscore::scorers::ast {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

const TSLanguage* GeneratedLanguageOf(Grammar grammar) {
  switch (grammar) {
    case Grammar::kMarkdown:
      return tree_sitter_markdown();
    case Grammar::kMarkdownInline:
      return tree_sitter_markdown_inline();
    case Grammar::kPython:
      return tree_sitter_python();
    case Grammar::kCpp:
      return tree_sitter_cpp();
    case Grammar::kC:
      return tree_sitter_c();
    case Grammar::kJavaScript:
      return tree_sitter_javascript();
  }
  return tree_sitter_markdown();
}

const TSLanguage* LanguageOf(Grammar grammar) {
  // Built on first use: a process that never parses C++ never pays for its 9.3 MB.
  static std::once_flag once[kNumGrammars];
  static const TSLanguage* dense[kNumGrammars];
  const auto i = static_cast<size_t>(grammar);
  std::call_once(once[i], [&] { dense[i] = WithDenseParseTable(GeneratedLanguageOf(grammar)); });
  return dense[i];
}

Grammar GrammarOf(CodeLanguage language) {
  switch (language) {
    case CodeLanguage::kPython:
      return Grammar::kPython;
    case CodeLanguage::kCpp:
      return Grammar::kCpp;
    case CodeLanguage::kC:
      return Grammar::kC;
    case CodeLanguage::kJavaScript:
      return Grammar::kJavaScript;
  }
  return Grammar::kPython;
}

std::string_view GrammarName(Grammar grammar) {
  switch (grammar) {
    case Grammar::kMarkdown:
      return "markdown";
    case Grammar::kMarkdownInline:
      return "markdown_inline";
    case Grammar::kPython:
      return "python";
    case Grammar::kCpp:
      return "cpp";
    case Grammar::kC:
      return "c";
    case Grammar::kJavaScript:
      return "javascript";
  }
  return "?";
}

std::string_view CodeLanguageName(CodeLanguage language) {
  return GrammarName(GrammarOf(language));
}

std::optional<CodeLanguage> CodeLanguageFromName(std::string_view name) {
  for (int i = 0; i < kNumCodeLanguages; ++i) {
    const auto language = static_cast<CodeLanguage>(i);
    if (name == CodeLanguageName(language)) return language;
  }
  return std::nullopt;
}

std::optional<CodeLanguage> CodeLanguageFromInfoString(std::string_view info) {
  size_t begin = info.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return std::nullopt;
  // The first word; "{.python}" and "python{...}" attribute forms keep only the name.
  if (info[begin] == '{') ++begin;
  if (begin < info.size() && info[begin] == '.') ++begin;
  size_t end = begin;
  while (end < info.size() && info[end] != ' ' && info[end] != '\t' && info[end] != '{' &&
         info[end] != '}' && info[end] != ',') {
    ++end;
  }
  if (end - begin > 16) return std::nullopt;
  std::string word;
  for (size_t i = begin; i < end; ++i) word += Lower(info[i]);
  static constexpr struct {
    std::string_view alias;
    CodeLanguage language;
  } kAliases[] = {
      {"python", CodeLanguage::kPython},
      {"py", CodeLanguage::kPython},
      {"python3", CodeLanguage::kPython},
      {"py3", CodeLanguage::kPython},
      {"cpp", CodeLanguage::kCpp},
      {"c++", CodeLanguage::kCpp},
      {"cc", CodeLanguage::kCpp},
      {"cxx", CodeLanguage::kCpp},
      {"hpp", CodeLanguage::kCpp},
      {"hh", CodeLanguage::kCpp},
      {"h++", CodeLanguage::kCpp},
      {"c", CodeLanguage::kC},
      {"h", CodeLanguage::kC},
      {"javascript", CodeLanguage::kJavaScript},
      {"js", CodeLanguage::kJavaScript},
      {"jsx", CodeLanguage::kJavaScript},
      {"mjs", CodeLanguage::kJavaScript},
      {"cjs", CodeLanguage::kJavaScript},
      {"node", CodeLanguage::kJavaScript},
      {"nodejs", CodeLanguage::kJavaScript},
  };
  for (const auto& a : kAliases) {
    if (word == a.alias) return a.language;
  }
  return std::nullopt;
}

}  // namespace rlscore::scorers::ast
