// The normalising lexer of the answer parser (docs/DESIGN.md §2, docs/VERIFIER.md): one linear pass
// from an answer as a model writes it (LaTeX, plain text, Unicode) to tokens, with the
// normalisation that does not need a tree done on the way:
//
//   - dropped: `$`, `\(` `\)` `\[` `\]`, `\left` `\right` `\big`..., spacing (`\,` `\;` `\:` `\!`
//     `\quad` `~`), `\displaystyle`, degrees (`^\circ`, `^{\circ}`, `\circ`, `°`, "degrees"),
//     currency (`\$`, `€`, `£`, "dollars", "USD");
//   - unwrapped: `\text{}` `\mathrm{}` `\textbf{}` `\mbox{}` `\operatorname{}` (their letters
//   become
//     words with `text_mode` set), `\boxed{}` `\mathbf{}` `\hat{}` `\overline{}`... (transparent);
//   - aliases: `\dfrac` `\tfrac` `\cfrac` → frac, `\dbinom` → binom, `\varnothing` → emptyset,
//     `\times` `\cdot` `×` `·` → '*', `\div` `÷` → '/', `−` (U+2212) and dashes → '-', `≤` →
//     relation 'l', "percent" `\%` → '%', `²` → '^' 2;
//   - numbers: thousands separators inside proper groups of three (`1,000`, `1\,000`, `1{,}000`;
//     a bare ',' only outside brackets, so "(1,100)" stays a pair), decimals, scientific `3.1e8`,
//     repeating decimals `0.\overline{3}`.
//
//   std::vector<Token> tokens;
//   absl::Status s = Lex("\\dfrac{1}{2}\\,\\text{cm}", budget, tokens);
//   // tokens: frac { 1 } { 2 } cm(word, text_mode)
//
// Internal to scorers/math; the parser is its only client.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "scorers/math/big_rational.h"

namespace rlscore::scorers::math {

enum class TokenKind : uint8_t {
  kNumber,    // `digits`: the literal without separators ("1000", "3.25", "3.1e8"); a
              // repeating decimal 0.1\overline{6} is "0.1r6".
  kWord,      // a run of ASCII letters (text mode: with inner apostrophes); `text`
  kCommand,   // a LaTeX command the parser interprets; `text` is its canonical name ("frac")
  kOp,        // `op`: + - * / ^ _ ! , ; ( ) [ ] { } | & % ' and: 'P' \pm, 'M' \mp, 'U' \cup,
              // 'S' \{, 'T' \}, 'N' \\ (row break)
  kRelation,  // `op`: '=', '!' (≠), '<', 'l' (≤), '>', 'g' (≥), '~' (≈)
  kBeginEnv,  // \begin{name}; `text` is the name (array's column spec is dropped)
  kEndEnv,    // \end{name}
  kPunct,     // `op`: '.', ':', '?', '"' — sentence punctuation
  kEnd,       // never produced by Lex(); the parser's end sentinel
};

struct Token {
  TokenKind kind = TokenKind::kPunct;
  char op = 0;
  bool space_before = false;  // whitespace (or dropped spacing) separates it from the previous
  bool text_mode = false;     // inside \text{} and friends
  bool split = false;         // the rest of a token whose first character was one argument
                              // ("\frac123": the "3" after 1 and 2)
  std::string_view text;      // points into the lexed input or a static table
  std::string digits;         // kNumber only
};

// Appends the tokens of `text` to `tokens`. Spends one step of `budget` per token.
// INVALID_ARGUMENT for unbalanced braces, characters outside the grammar and malformed
// environments; RESOURCE_EXHAUSTED when `budget` runs out. Linear in text.size().
absl::Status Lex(std::string_view text, Budget& budget, std::vector<Token>& tokens);

// Tables shared with the parser. Lower-case ASCII comparisons unless noted.
// The canonical unit name of `word` ("kilometers" → "km"), or "" when it is not a unit.
std::string_view UnitName(std::string_view word);
// 0..99 for number words ("seven", "twenty-one"), -1 otherwise.
int NumberWordValue(std::string_view word);
// Function names accepted with or without a backslash ("sin", "log", "arctan", ...).
bool IsFunctionName(std::string_view word);
// Greek letter names ("theta", "Omega"); case-sensitive as in LaTeX.
bool IsGreekName(std::string_view word);

}  // namespace rlscore::scorers::math
