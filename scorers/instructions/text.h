// The text units IFEval's checkers count, written as rules rather than delegated to NLTK and
// Python's `re`: words (`\w+` runs), sentences (the Punkt sentence tokenizer's decisions for
// English), Treebank word tokens in upper case, and the Unicode character classes and case
// mappings Python's `str` methods use.
//
//   CountWords("Hyphenated-word has two word counts.");   // 6
//   CountSentences("It costs 3.5 dollars. Mr. Smith paid.");  // 2
//   CountUpperCaseWords("DON'T stop");                     // 2: "DO" and "N'T"
//
// Text is UTF-8; a malformed byte reads as U+FFFD, one byte at a time, so any input has a
// result. Every function is linear in the input, allocates at most a copy of it, and is pure and
// thread-safe. docs/INSTRUCTIONS.md states each rule, where it departs from NLTK, and why.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rlscore::scorers::instructions {

// The code point at `*pos`, advancing `*pos` past it. REQUIRES: *pos < text.size().
char32_t NextCodePointSlow(std::string_view text, size_t* pos);
inline char32_t NextCodePoint(std::string_view text, size_t* pos) {
  const unsigned char lead = static_cast<unsigned char>(text[*pos]);
  if (lead < 0x80) {
    ++*pos;
    return lead;
  }
  return NextCodePointSlow(text, pos);
}

// Python's `\w` in a str pattern: Unicode letters and numbers (categories L*, N*) and '_'.
bool IsWordChar(char32_t c);
// Python's `\d` in a str pattern: Unicode decimal digits (category Nd).
bool IsDecimalDigit(char32_t c);
// Python's `str.isspace()` and `\s`: the Unicode white space `str.split()` and `str.strip()` use.
inline bool IsSpace(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's `str.lower()` (simple case mapping) on UTF-8.
std::string Lower(std::string_view text);
// Lowered code points, for case-insensitive search that keeps word boundaries checkable.
std::vector<char32_t> LowerCodePoints(std::string_view text);

// Python's `str.isupper()` / `str.islower()`: at least one cased character and none of the other
// case.
bool IsUpper(std::string_view text);
bool IsLower(std::string_view text);

// Python's `str.strip()`: Unicode white space off both ends.
std::string_view Strip(std::string_view text);
std::string_view StripLeft(std::string_view text);
std::string_view StripRight(std::string_view text);

// IFEval's count_words: the number of maximal `\w+` runs.
size_t CountWords(std::string_view text);

// IFEval's count_sentences: the number of sentences NLTK's Punkt tokenizer (English) finds.
// A candidate boundary is the last '.', '?' or '!' of a white-space-delimited chunk that is
// followed by white space and another chunk, or by closing punctuation. '?' and '!' always end a
// sentence. A word ending in '.' ends one unless it is a known abbreviation ("Dr.", "e.g.",
// "etc."), an initial ("J.") or a number ("3.") followed by a word that does not start a
// sentence; an ellipsis ends one only before such a word. Empty text has none.
size_t CountSentences(std::string_view text);

// IFEval's capital_word_frequency: the number of tokens of NLTK's word_tokenize (Treebank rules:
// punctuation split off, contractions split as "DO" + "N'T", hyphenated words kept whole) for
// which Python's `str.isupper()` holds.
size_t CountUpperCaseWords(std::string_view text);

}  // namespace rlscore::scorers::instructions
