// ASCII character helpers shared by the lexer and the parser (locale-free, unlike <cctype>).
#pragma once

#include <string_view>

namespace rlscore::scorers::math {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// `word` equals the lower-case `lower`, ignoring the case of `word`.
inline bool EqualsLower(std::string_view word, std::string_view lower) {
  if (word.size() != lower.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (Lower(word[i]) != lower[i]) return false;
  }
  return true;
}

}  // namespace rlscore::scorers::math
