// The tree-sitter grammars the AST repetition detector parses with (docs/REPETITION.md):
// Markdown (block structure; its inline grammar is built beside it) and the code languages whose
// fences are parsed — Python, C++, C and JavaScript. metered_parse.h runs them.
//
//   std::optional<CodeLanguage> lang = CodeLanguageFromInfoString("py title=\"a.py\"");  // kPython
//   ts_parser_set_language(parser, LanguageOf(GrammarOf(*lang)));
//
// The grammars are generated C fetched at set-up time at pinned ABI-14 versions
// (scripts/fetch_sources.sh); Debian 12's runtime loads ABI 13-14 only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

struct TSLanguage;

namespace rlscore::scorers::ast {

enum class Grammar : uint8_t { kMarkdown, kMarkdownInline, kPython, kCpp, kC, kJavaScript };
inline constexpr int kNumGrammars = 6;

// The languages of fenced code that the code-clone rule parses.
enum class CodeLanguage : uint8_t { kPython, kCpp, kC, kJavaScript };
inline constexpr int kNumCodeLanguages = 4;

// The grammar's language with a dense parse table (dense_parse_table.h: error recovery, the cost
// of text that is not code, runs 2.3-2.8 times as fast), built on first use; never null.
// Thread-safe.
const TSLanguage* LanguageOf(Grammar grammar);
// The grammar's language as generated, with its compressed parse table; never null.
const TSLanguage* GeneratedLanguageOf(Grammar grammar);
Grammar GrammarOf(CodeLanguage language);
std::string_view GrammarName(Grammar grammar);

// "python", "cpp", "c", "javascript": the names profiles use.
std::string_view CodeLanguageName(CodeLanguage language);
std::optional<CodeLanguage> CodeLanguageFromName(std::string_view name);

// The language a fence's info string names: its first word, case-insensitive, with the usual
// aliases (py, python3, c++, cc, cxx, hpp, h, js, jsx, mjs, node, ...). nullopt for anything
// else, including an empty info string.
std::optional<CodeLanguage> CodeLanguageFromInfoString(std::string_view info);

}  // namespace rlscore::scorers::ast
