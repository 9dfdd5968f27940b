// The basic accuracy rules of SPEC §2: MULTIPLE_CHOICE, EXACT and NUMERIC (MATH uses NUMERIC until
// scorers/math/ lands). One extraction pipeline for every task, then a comparison per task.
//
// Extraction, in order, over the answer section (the first rule that finds something wins):
//   1. the last \boxed{...} or \fbox{...} (braces balanced, "\{" "\}" escaped). A box that never
//      closes means the generation was cut: kNoAnswer, "unterminated \boxed{". A box inside a box
//      is part of the outer one's content.
//   2. the content of the last complete <answer>...</answer> (an unclosed <answer> is ignored).
//   3. the text after the last "answer:" or "answer is" (any case; this covers "the answer is",
//      "the final answer is", "**Final Answer:**"), up to the end of its sentence or line.
//   4. the task's fallback: NUMERIC/MATH the last standalone number of the section (not an
//      exponent, subscript or part of a non-numeric fraction); MULTIPLE_CHOICE the section's final
//      token when it is a letter or "(X)", else the last "(X)"; EXACT the whole section.
// `extracted` is what was found, trimmed, as written.
//
// Comparison:
//   NUMERIC: exact rationals over arbitrary-precision naturals, so 0.5 == 1/2 == \frac12,
//     1/3 != 0.333, and 30-digit integers compare exactly; there is no tolerance at all. Accepted:
//     signs (also U+2212), thousands separators ",", "{,}", "\," in proper groups of three,
//     decimals, scientific notation ("3.1e8", "3.1\times10^{8}", "\cdot", U+00D7), a/b, \frac,
//     \dfrac, \tfrac with braces or the one-digit shorthand (\frac12, \frac 3 4), signs inside
//     fraction arguments, mixed numbers (1\frac{1}{2}), "x = 5" / "5 = x". Ignored: "$" and "\$"
//     anywhere; wrappers \boxed \text \mathrm \textbf ..., $..$, \(..\), **..**; trailing . , ; !
//     Percent ("%", "\%", "percent"): 40% matches 40 and 0.4. Units (trailing words or \text{}
//     such as "km", "\text{ cm}^2", "^\circ", "degrees") are ignored when one side has one;
//     different units on both sides do not match (3 km != 3 miles). Multipliers, constants and
//     lone variables are not units: "4.2 thousand", "5pi", "5x", "5k" are not numbers. When the
//     whole answer is not a number, its first clause (up to ", " "; " " (") is tried: "42, since
//     ..." grades as 42. Not handled here (the math verifier's job): number words, radicals, π,
//     expressions ("2+3"), sets, intervals, tuples.
//   MULTIPLE_CHOICE: one letter A-Z, any case in the reference ("C", "(C)", "c"). From an
//     extraction: a lone letter, a leading "(X)", a leading capital followed by a non-letter
//     ("B. 7", "B) 7", "B 7"), else the first "(X)" inside it.
//   EXACT: both sides stripped of wrappers and trailing . , ; !, whitespace collapsed, ASCII
//     case-folded, then compared byte for byte.
// Several references: correct when any matches. References that cannot be parsed are skipped;
// when none can, every grade is kUnparseableReference naming them.
//
// Budgets: every pass is O(length of the section) without backtracking. An extracted answer
// longer than kMaxAnswerBytes is graded kWrong unparsed (a completion that can make itself
// unscorable by rambling inside a box would escape the penalty of a wrong answer), so every
// number has at most kMaxAnswerBytes digits, and exponents are capped at kMaxExponent: the
// largest product is ~2,000 by ~2,000 digits. This scorer never returns kBudgetExceeded.
#include "scorers/accuracy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace rlscore::scorers {
namespace {

using std::string_view;
constexpr size_t kNpos = string_view::npos;

// The longest extracted answer (or reference) that is parsed and compared.
constexpr size_t kMaxAnswerBytes = 1024;
// The largest |exponent| of scientific notation evaluated; larger ones are not numbers.
constexpr int64_t kMaxExponent = 1000;
// How much of a reference or answer is quoted in `detail`.
constexpr size_t kMaxQuotedBytes = 64;
// The longest unit kept for comparison ("km", "m/s^2", "°").
constexpr size_t kMaxUnitBytes = 32;

// ASCII classification without <cctype>'s locale and int conversions.
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsAlpha(char c) { return IsUpper(c) || IsLower(c); }
bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }
bool IsNonAscii(char c) { return (static_cast<unsigned char>(c) & 0x80) != 0; }
char ToUpper(char c) { return IsLower(c) ? static_cast<char>(c - 'a' + 'A') : c; }
char ToLower(char c) { return IsUpper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

// True when `p` occurs in `s` at `i` (i may be s.size()).
bool At(string_view s, size_t i, string_view p) {
  return i <= s.size() && s.substr(i, p.size()) == p;
}

bool EqualsIgnoreCase(string_view a, string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ToLower(a[i]) != ToLower(b[i])) return false;
  }
  return true;
}

string_view Trim(string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

size_t SkipSpaces(string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// The longest prefix of `s` of at most `n` bytes that does not split a UTF-8 sequence.
string_view Utf8Prefix(string_view s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// `s` in double quotes for a detail message, shortened with "..." past kMaxQuotedBytes.
std::string Quoted(string_view s) {
  const string_view p = Utf8Prefix(s, kMaxQuotedBytes);
  return absl::StrCat("\"", Sv(p), p.size() < s.size() ? "...\"" : "\"");
}

// The index of the '}' that closes the '{' at `open`, or kNpos. A backslash escapes the next
// byte, so "\{", "\}" and "\\" do not count.
size_t MatchBrace(string_view s, size_t open) {
  size_t depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      ++i;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (depth == 0) return kNpos;  // `open` was not a '{'
      if (--depth == 0) return i;
    }
  }
  return kNpos;
}

// ---------------------------------------------------------------------------------------------
// Extraction

struct BoxScan {
  enum State : uint8_t { kNone, kFound, kUnterminated } state = kNone;
  string_view command;  // "\boxed" or "\fbox"
  string_view content;  // inside the braces, when found
};

// The last top-level \boxed{...} or \fbox{...}; one forward pass.
BoxScan FindLastBox(string_view s) {
  BoxScan last;
  size_t i = 0;
  while (i < s.size()) {
    const void* hit = std::memchr(s.data() + i, '\\', s.size() - i);
    if (hit == nullptr) break;
    i = static_cast<size_t>(static_cast<const char*>(hit) - s.data());
    string_view command;
    if (At(s, i, "\\boxed")) {
      command = s.substr(i, 6);
    } else if (At(s, i, "\\fbox")) {
      command = s.substr(i, 5);
    } else {
      ++i;  // "\\boxed" still counts: the model meant a box
      continue;
    }
    const size_t open = SkipSpaces(s, i + command.size());
    if (open >= s.size() || s[open] != '{') {
      i += command.size();
      continue;
    }
    const size_t close = MatchBrace(s, open);
    if (close == kNpos) return BoxScan{BoxScan::kUnterminated, command, {}};
    last = BoxScan{BoxScan::kFound, command, s.substr(open + 1, close - open - 1)};
    i = close + 1;
  }
  return last;
}

// The content of the last complete <answer>...</answer>.
std::optional<string_view> FindLastAnswerTag(string_view s) {
  constexpr string_view kOpen = "<answer>";
  constexpr string_view kClose = "</answer>";
  const size_t close = s.rfind(kClose);
  if (close == kNpos) return std::nullopt;
  const size_t open = s.rfind(kOpen, close);
  if (open == kNpos) return std::nullopt;
  return s.substr(open + kOpen.size(), close - open - kOpen.size());
}

size_t SkipSpacesAndStars(string_view s, size_t i) {
  while (i < s.size() && (IsSpace(s[i]) || s[i] == '*')) ++i;
  return i;
}

// From `i`, without blanks and markdown stars around it, to the end of the line or sentence: '\n',
// or
// '.', '!', '?' followed by whitespace or the end (so "3.5" and "1,000" stay whole).
string_view SentenceFrom(string_view s, size_t i) {
  const size_t start = SkipSpacesAndStars(s, i);
  size_t end = start;
  for (; end < s.size(); ++end) {
    const char c = s[end];
    if (c == '\n') break;
    if ((c == '.' || c == '!' || c == '?') && (end + 1 == s.size() || IsSpace(s[end + 1]))) break;
  }
  while (end > start && (s[end - 1] == '*' || IsSpace(s[end - 1]))) --end;  // "**C**."
  return s.substr(start, end - start);
}

// The text after the last "answer:" / "answer is" (any case, "answer" starting a word), to the
// end of its sentence. A phrase followed by nothing is skipped. Scans backwards: each candidate
// costs O(1) plus a sentence scan that either returns or stops at the next terminator.
std::optional<string_view> FindLastAnswerPhrase(string_view s) {
  constexpr string_view kWord = "answer";
  if (s.size() < kWord.size()) return std::nullopt;
  for (size_t i = s.size() - kWord.size() + 1; i-- > 0;) {
    if (ToLower(s[i]) != 'a' || !EqualsIgnoreCase(s.substr(i, kWord.size()), kWord)) continue;
    if (i > 0 && IsAlpha(s[i - 1])) continue;
    size_t j = SkipSpacesAndStars(s, i + kWord.size());
    if (At(s, j, ":")) {
      ++j;
    } else if (j + 2 <= s.size() && EqualsIgnoreCase(s.substr(j, 2), "is") &&
               (j + 2 == s.size() || !IsAlpha(s[j + 2]))) {
      j = SkipSpacesAndStars(s, j + 2);
      if (At(s, j, ":")) ++j;
    } else {
      continue;
    }
    const string_view content = SentenceFrom(s, j);
    if (!Trim(content).empty()) return content;
  }
  return std::nullopt;
}

// Commands whose braced argument is the whole answer: "\boxed{5}", "\text{(B)}".
constexpr string_view kWrapperCommands[] = {
    "\\boxed",  "\\fbox",   "\\text",   "\\textbf", "\\textrm",     "\\textit",      "\\texttt",
    "\\mathrm", "\\mathbf", "\\mathit", "\\mbox",   "\\textnormal", "\\operatorname"};

// When `s` is `command{...}` with the brace closing at its very end, the text inside.
std::optional<string_view> Unwrap(string_view s, string_view command) {
  if (!s.starts_with(command)) return std::nullopt;
  const size_t open = SkipSpaces(s, command.size());
  if (open >= s.size() || s[open] != '{' || MatchBrace(s, open) != s.size() - 1) {
    return std::nullopt;
  }
  return s.substr(open + 1, s.size() - open - 2);
}

bool IsTrailingPunctuation(char c) { return c == '.' || c == ',' || c == ';' || c == '!'; }

// Peels what surrounds an answer without being part of it, repeatedly: blanks, trailing
// sentence punctuation, markdown stars, $...$, $$...$$, \(...\), \[...\], {...},
// \displaystyle, and the wrapper commands above. O(length × nesting); inputs are capped.
string_view StripWrappers(string_view s) {
  while (true) {
    const size_t before = s.size();
    s = Trim(s);
    while (!s.empty() &&
           (IsTrailingPunctuation(s.back()) || s.back() == '*' || IsSpace(s.back()))) {
      s.remove_suffix(1);
    }
    while (!s.empty() && (s.front() == '*' || IsSpace(s.front()))) s.remove_prefix(1);
    if (s.starts_with("\\displaystyle") && !(s.size() > 13 && IsAlpha(s[13]))) {
      s.remove_prefix(13);
    } else if (s.size() >= 4 && s.starts_with("$$") && s.ends_with("$$")) {
      s = s.substr(2, s.size() - 4);
    } else if (s.size() >= 2 && s.front() == '$' && s.back() == '$') {
      s = s.substr(1, s.size() - 2);
    } else if (s.size() >= 4 && ((s.starts_with("\\(") && s.ends_with("\\)")) ||
                                 (s.starts_with("\\[") && s.ends_with("\\]")))) {
      s = s.substr(2, s.size() - 4);
    } else if (const std::optional<string_view> inner = Unwrap(s, "")) {
      s = *inner;
    } else {
      for (const string_view command : kWrapperCommands) {
        if (const std::optional<string_view> unwrapped = Unwrap(s, command)) {
          s = *unwrapped;
          break;
        }
      }
    }
    if (s.size() == before) return s;
  }
}

// ---------------------------------------------------------------------------------------------
// Number syntax. Scanners take (text, position) and return the end of what they matched or
// kNpos; they only record views, so scanning a megabyte of digits allocates nothing.

struct DecimalSyntax {
  bool negative = false;  // a sign inside a fraction argument: \frac{-1}{2}
  string_view int_part;   // digits, possibly with thousands separators
  string_view frac_part;  // digits after the point
  bool exp_negative = false;
  string_view exp_digits;  // of "e-3" or "\times 10^{-3}"
};

struct NumberSyntax {
  bool negative = false;
  bool has_whole = false;  // a decimal, or the integer of a mixed number
  DecimalSyntax whole;
  bool has_fraction = false;  // num / den
  DecimalSyntax num;
  DecimalSyntax den;
  bool percent = false;
};

// After an optional sign ('-', '+', U+2212) at `i`: the position past it.
size_t ScanSign(string_view s, size_t i, bool* negative) {
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    *negative = s[i] == '-';
    return i + 1;
  }
  if (At(s, i, "\xE2\x88\x92")) {
    *negative = true;
    return i + 3;
  }
  return i;
}

size_t ScanDigits(string_view s, size_t i) {
  while (i < s.size() && IsDigit(s[i])) ++i;
  return i;
}

// The length of a thousands separator at `i`: ",", "{,}" or "\,"; 0 if none.
size_t SeparatorAt(string_view s, size_t i) {
  if (At(s, i, ",")) return 1;
  if (At(s, i, "{,}")) return 3;
  if (At(s, i, "\\,")) return 2;
  return 0;
}

// "\times 10^{k}", "\cdot 10^k", "× 10^k" after a mantissa ending at `i`; `i` when absent.
size_t ScanTimesTenPower(string_view s, size_t i, DecimalSyntax* d) {
  size_t j = SkipSpaces(s, i);
  if (At(s, j, "\\times")) {
    j += 6;
  } else if (At(s, j, "\\cdot")) {
    j += 5;
  } else if (At(s, j, "\xC3\x97")) {
    j += 2;
  } else {
    return i;
  }
  j = SkipSpaces(s, j);
  if (!At(s, j, "10")) return i;
  j = SkipSpaces(s, j + 2);
  if (!At(s, j, "^")) return i;
  j = SkipSpaces(s, j + 1);
  const bool braced = At(s, j, "{");
  if (braced) j = SkipSpaces(s, j + 1);
  bool negative = false;
  j = ScanSign(s, j, &negative);
  const size_t digits_end = ScanDigits(s, j);
  if (digits_end == j) return i;
  size_t end = digits_end;
  if (braced) {
    end = SkipSpaces(s, end);
    if (!At(s, end, "}")) return i;
    ++end;
  }
  d->exp_negative = negative;
  d->exp_digits = s.substr(j, digits_end - j);
  return end;
}

// An unsigned decimal: digits (with separators only in proper groups of three after a first
// group of one to three digits), an optional fraction ".5", an optional exponent. Never fails
// after consuming input: an improper group just ends the number before its separator.
size_t ScanDecimal(string_view s, size_t i, DecimalSyntax* d) {
  size_t p = ScanDigits(s, i);
  if (p > i && p - i <= 3) {
    while (true) {
      const size_t separator = SeparatorAt(s, p);
      if (separator == 0) break;
      const size_t group_end = ScanDigits(s, p + separator);
      if (group_end - (p + separator) != 3) break;
      p = group_end;
    }
  }
  d->int_part = s.substr(i, p - i);
  if (p + 1 < s.size() && s[p] == '.' && IsDigit(s[p + 1])) {
    const size_t frac_end = ScanDigits(s, p + 1);
    d->frac_part = s.substr(p + 1, frac_end - p - 1);
    p = frac_end;
  }
  if (d->int_part.empty() && d->frac_part.empty()) return kNpos;
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    bool negative = false;
    const size_t digits_start = ScanSign(s, p + 1, &negative);
    const size_t digits_end = ScanDigits(s, digits_start);
    if (digits_end > digits_start) {
      d->exp_negative = negative;
      d->exp_digits = s.substr(digits_start, digits_end - digits_start);
      return digits_end;
    }
  }
  return ScanTimesTenPower(s, p, d);
}

// One \frac argument: "{-3}", "{1,000}", "{0.5}", or a single digit (the \frac12 shorthand).
size_t ScanFracArg(string_view s, size_t i, DecimalSyntax* d) {
  size_t j = SkipSpaces(s, i);
  if (j < s.size() && IsDigit(s[j])) {
    d->int_part = s.substr(j, 1);
    return j + 1;
  }
  if (!At(s, j, "{")) return kNpos;
  j = ScanSign(s, SkipSpaces(s, j + 1), &d->negative);
  j = ScanDecimal(s, j, d);
  if (j == kNpos) return kNpos;
  j = SkipSpaces(s, j);
  return At(s, j, "}") ? j + 1 : kNpos;
}

// \frac, \dfrac or \tfrac with two numeric arguments.
size_t ScanFrac(string_view s, size_t i, DecimalSyntax* num, DecimalSyntax* den) {
  size_t j;
  if (At(s, i, "\\frac")) {
    j = i + 5;
  } else if (At(s, i, "\\dfrac") || At(s, i, "\\tfrac")) {
    j = i + 6;
  } else {
    return kNpos;
  }
  if (j < s.size() && IsAlpha(s[j])) return kNpos;
  j = ScanFracArg(s, j, num);
  return j == kNpos ? kNpos : ScanFracArg(s, j, den);
}

// The longest number starting at `i`: sign, then \frac, or a decimal optionally followed by a
// fraction (mixed number) or "/ decimal"; then an optional percent sign.
size_t ScanNumber(string_view s, size_t i, NumberSyntax* n) {
  *n = NumberSyntax{};
  const size_t start = ScanSign(s, i, &n->negative);
  size_t end = ScanFrac(s, start, &n->num, &n->den);
  if (end != kNpos) {
    n->has_fraction = true;
  } else {
    end = ScanDecimal(s, start, &n->whole);
    if (end == kNpos) return kNpos;
    n->has_whole = true;
    const bool integer = n->whole.frac_part.empty() && n->whole.exp_digits.empty();
    const size_t k = SkipSpaces(s, end);
    DecimalSyntax num;
    DecimalSyntax den;
    const size_t mixed_end = integer ? ScanFrac(s, k, &num, &den) : kNpos;
    if (mixed_end != kNpos && !num.negative && !den.negative) {
      n->has_fraction = true;
      n->num = num;
      n->den = den;
      end = mixed_end;
    } else if (At(s, k, "/")) {
      size_t m = SkipSpaces(s, k + 1);
      m = ScanSign(s, m, &den.negative);
      m = ScanDecimal(s, m, &den);
      if (m != kNpos) {
        n->has_whole = false;
        n->has_fraction = true;
        n->num = n->whole;
        n->whole = DecimalSyntax{};
        n->den = den;
        end = m;
      }
    }
  }
  const size_t k = SkipSpaces(s, end);
  if (At(s, k, "\\%")) {
    n->percent = true;
    end = k + 2;
  } else if (At(s, k, "%")) {
    n->percent = true;
    end = k + 1;
  }
  return end;
}

// ---------------------------------------------------------------------------------------------
// Exact arithmetic

// A natural number in base 10^9 limbs, little-endian, without high zero limbs (zero is empty).
class BigNat {
 public:
  BigNat() = default;
  static BigNat One() {
    BigNat one;
    one.limbs_.push_back(1);
    return one;
  }

  bool IsZero() const { return limbs_.empty(); }

  // *this = *this * m + a. REQUIRES: m <= kBase, a < kBase.
  void MulAdd(uint32_t m, uint32_t a) {
    uint64_t carry = a;
    for (uint32_t& limb : limbs_) {
      const uint64_t t = uint64_t{limb} * m + carry;
      limb = static_cast<uint32_t>(t % kBase);
      carry = t / kBase;
    }
    while (carry != 0) {
      limbs_.push_back(static_cast<uint32_t>(carry % kBase));
      carry /= kBase;
    }
    Normalize();
  }

  // Appends the decimal digits of `text` (other bytes are skipped): *this * 10^d + digits.
  void AppendDigits(string_view text) {
    uint32_t chunk = 0;
    uint32_t scale = 1;
    for (const char c : text) {
      if (!IsDigit(c)) continue;
      chunk = chunk * 10 + static_cast<uint32_t>(c - '0');
      scale *= 10;
      if (scale == kBase) {
        MulAdd(scale, chunk);
        chunk = 0;
        scale = 1;
      }
    }
    if (scale > 1) MulAdd(scale, chunk);
  }

  void MulPow10(size_t k) {
    if (IsZero()) return;
    limbs_.insert(limbs_.begin(), k / 9, 0);
    uint32_t m = 1;
    for (size_t r = 0; r < k % 9; ++r) m *= 10;
    MulAdd(m, 0);
  }

  friend BigNat operator*(const BigNat& a, const BigNat& b) {
    BigNat r;
    if (a.IsZero() || b.IsZero()) return r;
    r.limbs_.assign(a.limbs_.size() + b.limbs_.size(), 0);
    for (size_t i = 0; i < a.limbs_.size(); ++i) {
      uint64_t carry = 0;
      for (size_t j = 0; j < b.limbs_.size(); ++j) {
        const uint64_t t = r.limbs_[i + j] + uint64_t{a.limbs_[i]} * b.limbs_[j] + carry;
        r.limbs_[i + j] = static_cast<uint32_t>(t % kBase);
        carry = t / kBase;
      }
      for (size_t k = i + b.limbs_.size(); carry != 0; ++k) {
        const uint64_t t = r.limbs_[k] + carry;
        r.limbs_[k] = static_cast<uint32_t>(t % kBase);
        carry = t / kBase;
      }
    }
    r.Normalize();
    return r;
  }

  friend BigNat operator+(const BigNat& a, const BigNat& b) {
    const BigNat& longer = a.limbs_.size() >= b.limbs_.size() ? a : b;
    const BigNat& shorter = a.limbs_.size() >= b.limbs_.size() ? b : a;
    BigNat r = longer;
    uint32_t carry = 0;
    for (size_t i = 0; i < r.limbs_.size() && (i < shorter.limbs_.size() || carry != 0); ++i) {
      const uint32_t t = r.limbs_[i] + (i < shorter.limbs_.size() ? shorter.limbs_[i] : 0) + carry;
      r.limbs_[i] = t % kBase;
      carry = t / kBase;
    }
    if (carry != 0) r.limbs_.push_back(carry);
    return r;
  }

  friend bool operator==(const BigNat& a, const BigNat& b) = default;

 private:
  static constexpr uint32_t kBase = 1'000'000'000;

  void Normalize() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }

  std::vector<uint32_t> limbs_;
};

// sign × num / den, den > 0, not reduced; zero is never negative.
struct Rational {
  bool negative = false;
  BigNat num;
  BigNat den = BigNat::One();
};

bool SameValue(const Rational& a, const Rational& b) {
  return a.negative == b.negative && a.num * b.den == b.num * a.den;
}

Rational Hundredth(Rational r) {
  r.den.MulAdd(100, 0);
  return r;
}

std::optional<Rational> DecimalValue(const DecimalSyntax& d) {
  int64_t exponent = 0;
  if (!d.exp_digits.empty()) {
    string_view digits = d.exp_digits;
    while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
    if (digits.size() > 4) return std::nullopt;
    for (const char c : digits) exponent = exponent * 10 + (c - '0');
    if (exponent > kMaxExponent) return std::nullopt;
    if (d.exp_negative) exponent = -exponent;
  }
  Rational r;
  r.negative = d.negative;
  r.num.AppendDigits(d.int_part);
  r.num.AppendDigits(d.frac_part);
  const int64_t shift = exponent - static_cast<int64_t>(d.frac_part.size());
  if (shift >= 0) {
    r.num.MulPow10(static_cast<size_t>(shift));
  } else {
    r.den.MulPow10(static_cast<size_t>(-shift));
  }
  return r;
}

std::optional<Rational> NumberValue(const NumberSyntax& n) {
  Rational r;
  if (n.has_whole) {
    std::optional<Rational> whole = DecimalValue(n.whole);
    if (!whole) return std::nullopt;
    r = std::move(*whole);
  }
  if (n.has_fraction) {
    const std::optional<Rational> num = DecimalValue(n.num);
    const std::optional<Rational> den = DecimalValue(n.den);
    if (!num || !den || den->num.IsZero()) return std::nullopt;
    BigNat f_num = num->num * den->den;
    BigNat f_den = num->den * den->num;
    if (n.has_whole) {  // mixed number: both parts non-negative
      r.num = r.num * f_den + f_num * r.den;
      r.den = r.den * f_den;
    } else {
      r.negative = num->negative != den->negative;
      r.num = std::move(f_num);
      r.den = std::move(f_den);
    }
  }
  if (n.negative) r.negative = !r.negative;
  if (r.num.IsZero()) r.negative = false;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Quantities: a number with an optional percent sign and unit.

struct Quantity {
  Rational value;
  bool percent = false;
  std::string unit;  // normalised, no blanks; empty when none
};

// Commands dropped from a unit: text wrappers and spacing.
constexpr string_view kUnitCommands[] = {"text",         "textrm",       "mathrm", "mbox",
                                         "textnormal",   "operatorname", "quad",   "qquad",
                                         "displaystyle", "mathit",       "textit"};

// Words that make what follows a number something other than a unit: multipliers ("4.2
// thousand" is not 4.2), constants and functions ("5pi"), connectives.
constexpr string_view kNotUnits[] = {
    "pi",       "sqrt",     "ln",       "log",       "sin",     "cos",      "tan",     "exp",
    "hundred",  "hundreds", "thousand", "thousands", "million", "millions", "billion", "billions",
    "trillion", "dozen",    "times",    "plus",      "minus",   "over",     "and",     "or"};
// The single letters that are units on their own; any other lone letter is a variable ("5x"),
// a constant ("5e", "5i") or a multiplier ("5k", "5M").
constexpr string_view kOneLetterUnits = "mgslLAVWJNCFTHh";

// False when a word of a unit, by its leading letters, is in kNotUnits or is a lone letter that
// is not in kOneLetterUnits.
bool UnitWordsAllowed(string_view unit) {
  size_t i = 0;
  while (i < unit.size()) {
    while (i < unit.size() && IsSpace(unit[i])) ++i;
    size_t letters_end = i;
    while (letters_end < unit.size() && IsAlpha(unit[letters_end])) ++letters_end;
    const string_view letters = unit.substr(i, letters_end - i);
    if (letters.size() == 1 && kOneLetterUnits.find(letters[0]) == kNpos) return false;
    for (const string_view word : kNotUnits) {
      if (EqualsIgnoreCase(letters, word)) return false;
    }
    i = letters_end;
    while (i < unit.size() && !IsSpace(unit[i])) ++i;
  }
  return true;
}

// What may follow a number: nothing, a percent sign, or a unit: letters (any non-ASCII byte
// counts as one, for "°", "µ", "Ω") with '/', '^', '.', '*', '-' and digits that do not start
// a word ("m/s^2", "cm^{2}"), subject to UnitWordsAllowed. "apples and 3 pears", "5x" or "+ 1"
// are not units: returns false then.
bool ParseSuffix(string_view s, bool* percent, std::string* unit) {
  std::string t;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '\\') {
      if (i + 1 < s.size() && string_view(",;:! ").find(s[i + 1]) != kNpos) {
        t += ' ';
        i += 2;
        continue;
      }
      if (At(s, i, "\\%")) {
        t += '%';
        i += 2;
        continue;
      }
      size_t j = i + 1;
      while (j < s.size() && IsAlpha(s[j])) ++j;
      const string_view name = s.substr(i + 1, j - i - 1);
      if (name == "circ" || name == "degree") {
        t += "\xC2\xB0";
      } else {
        bool known = false;
        for (const string_view command : kUnitCommands) known = known || name == command;
        if (!known) return false;
        t += ' ';
      }
      i = j;
      continue;
    }
    if (c == '{' || c == '}') {
      ++i;
      continue;
    }
    t += c == '~' ? ' ' : c;
    ++i;
  }
  const string_view trimmed = Trim(t);
  if (trimmed.empty()) return true;
  if (trimmed == "%" || EqualsIgnoreCase(trimmed, "percent")) {
    *percent = true;
    return true;
  }
  if (!(IsAlpha(trimmed.front()) || IsNonAscii(trimmed.front()) || trimmed.front() == '^')) {
    return false;
  }
  std::string compact;
  bool has_letter = false;
  for (size_t i = 0; i < trimmed.size(); ++i) {
    const char c = trimmed[i];
    if (IsSpace(c)) continue;
    if (IsDigit(c)) {
      if (IsSpace(trimmed[i - 1])) return false;  // a separate number, not an exponent
    } else if (IsAlpha(c) || IsNonAscii(c)) {
      has_letter = true;
    } else if (string_view("/^.*-").find(c) == kNpos) {
      return false;
    }
    compact += c;
  }
  if (!has_letter || compact.size() > kMaxUnitBytes || !UnitWordsAllowed(trimmed)) return false;
  if (compact.starts_with("^\xC2\xB0")) compact.erase(0, 1);  // ^\circ
  if (EqualsIgnoreCase(compact, "deg") || EqualsIgnoreCase(compact, "degree") ||
      EqualsIgnoreCase(compact, "degrees")) {
    compact = "\xC2\xB0";
  }
  *unit = std::move(compact);
  return true;
}

std::optional<Quantity> ParseNumberAndSuffix(string_view t) {
  NumberSyntax syntax;
  const size_t end = ScanNumber(t, 0, &syntax);
  if (end == kNpos) return std::nullopt;
  Quantity q;
  bool percent = false;
  if (!ParseSuffix(t.substr(end), &percent, &q.unit)) return std::nullopt;
  q.percent = syntax.percent || percent;
  std::optional<Rational> value = NumberValue(syntax);
  if (!value) return std::nullopt;
  q.value = std::move(*value);
  return q;
}

// "x", "x_1", "\theta", "v_{max}": the side of "x = 5" that names the unknown.
bool IsSimpleVariable(string_view s) {
  if (s.empty() || s.size() > 32 || !(IsAlpha(s.front()) || s.front() == '\\')) return false;
  for (const char c : s) {
    if (!(IsAlnum(c) || c == '_' || c == '{' || c == '}' || c == '\\' || c == ' ')) return false;
  }
  return true;
}

// A whole answer or reference as a quantity. REQUIRES: text.size() <= kMaxAnswerBytes (the
// wrapper stripping is O(length × nesting)).
std::optional<Quantity> ParseQuantity(string_view text) {
  std::string buffer;  // "$" and "\$" dropped: math delimiters and currency alike
  buffer.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (At(text, i, "\\$")) {
      ++i;
    } else if (text[i] != '$') {
      buffer += text[i];
    }
  }
  const string_view t = StripWrappers(buffer);
  if (std::optional<Quantity> q = ParseNumberAndSuffix(t)) return q;
  const size_t eq = t.find('=');
  if (eq == kNpos || t.find('=', eq + 1) != kNpos) return std::nullopt;
  const string_view lhs = Trim(t.substr(0, eq));
  const string_view rhs = Trim(t.substr(eq + 1));
  if (IsSimpleVariable(lhs)) return ParseNumberAndSuffix(StripWrappers(rhs));
  if (IsSimpleVariable(rhs)) return ParseNumberAndSuffix(StripWrappers(lhs));
  return std::nullopt;
}

bool Matches(const Quantity& answer, const Quantity& reference) {
  if (!answer.unit.empty() && !reference.unit.empty() && answer.unit != reference.unit) {
    return false;
  }
  if (SameValue(answer.value, reference.value)) return true;
  if (answer.percent == reference.percent) return false;
  return answer.percent ? SameValue(Hundredth(answer.value), reference.value)
                        : SameValue(answer.value, Hundredth(reference.value));
}

// Where a number may begin in running text; a sign only when it is not a binary minus ("3-5").
bool CanStartNumber(string_view s, size_t i) {
  const char c = s[i];
  if (IsDigit(c)) return true;
  if (c == '.') return i + 1 < s.size() && IsDigit(s[i + 1]);
  if (c == '\\') return At(s, i, "\\frac") || At(s, i, "\\dfrac") || At(s, i, "\\tfrac");
  if (c == '-' || c == '+' || At(s, i, "\xE2\x88\x92")) {
    if (i == 0) return true;
    const char p = s[i - 1];
    return !(IsAlnum(p) || p == ')' || p == ']' || p == '}');
  }
  return false;
}

// False for numbers that are pieces of something else: exponents and subscripts ("x^2", "a_1"),
// the "2" of "\pi/2" or "\frac{\pi}{2}", the base of "2^{10}".
bool IsStandalone(string_view s, size_t begin, size_t end) {
  if (begin > 0) {
    const char p = s[begin - 1];
    if (p == '^' || p == '_' || p == '/') return false;
    if (p == '{' && begin > 1 && string_view("}^_").find(s[begin - 2]) != kNpos) return false;
  }
  if (end < s.size()) {
    const char n = s[end];
    if (n == '^' || n == '/') return false;
    if (n == '}' && end + 1 < s.size() && s[end + 1] == '{') return false;
  }
  return true;
}

// The last standalone number of `s`, as written; empty when none. One forward pass: a scan that
// fails has consumed at most a fraction argument, which is then rescanned once as a number.
string_view LastNumber(string_view s) {
  string_view last;
  size_t i = 0;
  NumberSyntax syntax;
  while (i < s.size()) {
    if (!CanStartNumber(s, i)) {
      ++i;
      continue;
    }
    const size_t end = ScanNumber(s, i, &syntax);
    if (end == kNpos) {
      ++i;
      continue;
    }
    if (IsStandalone(s, i, end)) last = s.substr(i, end - i);
    i = end;
  }
  return Trim(last);
}

// ---------------------------------------------------------------------------------------------
// Choices

// "C", "c", "(C)", "(c)" after StripWrappers; nothing else.
std::optional<char> ExactChoice(string_view t) {
  if (t.size() == 1 && IsAlpha(t[0])) return ToUpper(t[0]);
  if (t.size() == 3 && t[0] == '(' && IsAlpha(t[1]) && t[2] == ')') return ToUpper(t[1]);
  return std::nullopt;
}

// The letter an extracted answer chooses: "B", "(B) 7", "B. 7", "\text{(B)}", "**B**", "option
// (B)". A leading lowercase letter counts only alone or in parentheses ("a bit" is not A).
std::optional<char> ChoiceFromText(string_view text) {
  const string_view t = StripWrappers(text);
  if (std::optional<char> c = ExactChoice(t)) return c;
  if (t.size() >= 3 && t[0] == '(' && IsAlpha(t[1]) && t[2] == ')') return ToUpper(t[1]);
  if (!t.empty() && IsUpper(t[0]) && (t.size() == 1 || !IsAlnum(t[1]))) return t[0];
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i] == '(' && IsUpper(t[i + 1]) && t[i + 2] == ')' && (i == 0 || !IsAlnum(t[i - 1]))) {
      return t[i + 1];
    }
  }
  return std::nullopt;
}

// The multiple-choice fallback: the section's final token when it is "X" or "(X)" (after
// trailing punctuation, markdown and closing braces), else the last "(X)" with X a capital.
string_view LastChoiceToken(string_view s) {
  size_t end = s.size();
  while (end > 0 && string_view(" \t\r\n.,;:!?*$").find(s[end - 1]) != kNpos) --end;
  if (end >= 3 && s[end - 1] == ')' && IsAlpha(s[end - 2]) && s[end - 3] == '(' &&
      (end == 3 || !IsAlnum(s[end - 4]))) {
    return s.substr(end - 3, 3);
  }
  size_t e = end;
  while (e > 0 && s[e - 1] == '}') --e;  // \textbf{C}
  if (e >= 1 && IsUpper(s[e - 1]) && (e == 1 || !(IsAlnum(s[e - 2]) || s[e - 2] == '\\'))) {
    return s.substr(e - 1, 1);
  }
  for (size_t i = end; i-- > 0;) {
    if (i + 2 < end && s[i] == '(' && IsUpper(s[i + 1]) && s[i + 2] == ')' &&
        (i == 0 || !IsAlnum(s[i - 1]))) {
      return s.substr(i, 3);
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// EXACT

std::string NormalizeExact(string_view text) {
  const string_view t = StripWrappers(text);
  std::string out;
  out.reserve(t.size());
  bool pending_space = false;
  for (const char c : t) {
    if (IsSpace(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += ToLower(c);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Judges

class UnparseableJudge final : public Judge {
 public:
  explicit UnparseableJudge(std::string detail) : detail_(std::move(detail)) {}

  AccuracyResult Grade(string_view /*answer_section*/) const override {
    AccuracyResult r;
    r.verdict = Verdict::kUnparseableReference;
    r.detail = detail_;
    return r;
  }

 private:
  const std::string detail_;
};

// The extraction pipeline of the file comment; subclasses supply the fallback and comparison.
class ExtractingJudge : public Judge {
 public:
  AccuracyResult Grade(string_view answer_section) const final {
    AccuracyResult r;
    const string_view s = Trim(answer_section);
    if (s.empty()) {
      r.detail = "empty answer section";
      return r;
    }
    string_view answer;
    const BoxScan box = FindLastBox(s);
    if (box.state == BoxScan::kUnterminated) {
      r.detail = absl::StrCat("unterminated ", Sv(box.command), "{");
      return r;
    }
    if (box.state == BoxScan::kFound) {
      answer = Trim(box.content);
      if (answer.empty()) {
        r.detail = absl::StrCat("empty ", Sv(box.command), "{}");
        return r;
      }
    } else if (const std::optional<string_view> tag = FindLastAnswerTag(s)) {
      answer = Trim(*tag);
      if (answer.empty()) {
        r.detail = "empty <answer></answer>";
        return r;
      }
    } else if (const std::optional<string_view> phrase = FindLastAnswerPhrase(s)) {
      answer = Trim(*phrase);
    } else {
      answer = Trim(Fallback(s));
      if (answer.empty()) {
        r.detail = absl::StrCat("no \\boxed{}, <answer>, answer phrase or ", Sv(FallbackName()));
        return r;
      }
    }
    if (answer.size() > kMaxAnswerBytes) {
      r.verdict = Verdict::kWrong;
      r.extracted = std::string(Utf8Prefix(answer, kMaxAnswerBytes));
      r.detail =
          absl::StrCat("extracted answer longer than ", kMaxAnswerBytes, " bytes; not compared");
      return r;
    }
    r.extracted = std::string(answer);
    r.verdict = Compare(answer, &r.detail) ? Verdict::kCorrect : Verdict::kWrong;
    r.accuracy = r.verdict == Verdict::kCorrect ? 1.0 : 0.0;
    return r;
  }

 protected:
  // The task's last resort over the whole (trimmed) section; empty when it finds nothing.
  virtual string_view Fallback(string_view section) const = 0;
  // What the fallback looks for, for the kNoAnswer detail.
  virtual string_view FallbackName() const = 0;
  // True when `answer` (trimmed, at most kMaxAnswerBytes) matches a reference; may explain a
  // mismatch in `detail`.
  virtual bool Compare(string_view answer, std::string* detail) const = 0;
};

class NumericJudge final : public ExtractingJudge {
 public:
  explicit NumericJudge(std::vector<Quantity> references) : references_(std::move(references)) {}

 protected:
  string_view Fallback(string_view section) const override { return LastNumber(section); }
  string_view FallbackName() const override { return "number"; }

  bool Compare(string_view answer, std::string* detail) const override {
    std::optional<Quantity> q = ParseQuantity(answer);
    if (!q) {  // "42, since 6 × 7 = 42": the first clause
      size_t cut = kNpos;
      for (const string_view boundary : {", ", "; ", " ("})
        cut = std::min(cut, answer.find(boundary));
      if (cut != kNpos) q = ParseQuantity(answer.substr(0, cut));
    }
    if (!q) {
      *detail = "answer is not a number";
      return false;
    }
    for (const Quantity& reference : references_) {
      if (Matches(*q, reference)) return true;
    }
    return false;
  }

 private:
  const std::vector<Quantity> references_;
};

class ChoiceJudge final : public ExtractingJudge {
 public:
  explicit ChoiceJudge(std::string letters) : letters_(std::move(letters)) {}

 protected:
  string_view Fallback(string_view section) const override { return LastChoiceToken(section); }
  string_view FallbackName() const override { return "choice letter"; }

  bool Compare(string_view answer, std::string* detail) const override {
    const std::optional<char> choice = ChoiceFromText(answer);
    if (!choice) {
      *detail = "no choice letter in the answer";
      return false;
    }
    return letters_.find(*choice) != std::string::npos;
  }

 private:
  const std::string letters_;  // upper case
};

class ExactJudge final : public ExtractingJudge {
 public:
  explicit ExactJudge(std::vector<std::string> references) : references_(std::move(references)) {}

 protected:
  string_view Fallback(string_view section) const override { return section; }
  string_view FallbackName() const override { return "text"; }

  bool Compare(string_view answer, std::string* /*detail*/) const override {
    const std::string normalized = NormalizeExact(answer);
    for (const std::string& reference : references_) {
      if (normalized == reference) return true;
    }
    return false;
  }

 private:
  const std::vector<std::string> references_;  // normalised
};

class BasicAccuracyScorer final : public AccuracyScorer {
 public:
  std::unique_ptr<Judge> Prepare(Task task,
                                 std::span<const std::string> references) const override {
    if (references.empty()) return std::make_unique<UnparseableJudge>("no reference");
    std::vector<std::string> problems;  // one per rejected reference, in order
    // The reference if it is short enough to parse; records the problem otherwise.
    auto usable = [&problems](const std::string& reference) {
      if (reference.size() <= kMaxAnswerBytes) return true;
      problems.push_back(
          absl::StrCat(Quoted(reference), " is longer than ", kMaxAnswerBytes, " bytes"));
      return false;
    };
    switch (task) {
      case Task::kMath:
      case Task::kNumeric: {
        std::vector<Quantity> parsed;
        for (const std::string& reference : references) {
          if (!usable(reference)) continue;
          if (std::optional<Quantity> q = ParseQuantity(reference)) {
            parsed.push_back(std::move(*q));
          } else {
            problems.push_back(absl::StrCat(Quoted(reference), " is not a number"));
          }
        }
        if (parsed.empty()) return Unparseable(problems);
        return std::make_unique<NumericJudge>(std::move(parsed));
      }
      case Task::kMultipleChoice: {
        std::string letters;
        for (const std::string& reference : references) {
          if (!usable(reference)) continue;
          if (const std::optional<char> c = ExactChoice(StripWrappers(reference))) {
            letters += *c;
          } else {
            problems.push_back(absl::StrCat(Quoted(reference), " is not a single choice letter"));
          }
        }
        if (letters.empty()) return Unparseable(problems);
        return std::make_unique<ChoiceJudge>(std::move(letters));
      }
      case Task::kExact: {
        std::vector<std::string> normalized;
        for (const std::string& reference : references) {
          if (!usable(reference)) continue;
          std::string n = NormalizeExact(reference);
          if (n.empty()) {
            problems.push_back(absl::StrCat(Quoted(reference), " is empty"));
          } else {
            normalized.push_back(std::move(n));
          }
        }
        if (normalized.empty()) return Unparseable(problems);
        return std::make_unique<ExactJudge>(std::move(normalized));
      }
      case Task::kExternal:
        break;
    }
    return std::make_unique<UnparseableJudge>(
        "EXTERNAL accuracy is supplied by the caller, not graded");
  }

 private:
  // Every reference was rejected, each for the reason in `problems`.
  static std::unique_ptr<Judge> Unparseable(const std::vector<std::string>& problems) {
    std::string detail = problems.size() == 1 ? "reference " : "no usable reference: ";
    for (size_t i = 0; i < problems.size() && i < 4; ++i) {
      absl::StrAppend(&detail, i == 0 ? "" : "; ", problems[i]);
    }
    if (problems.size() > 4) absl::StrAppend(&detail, "; ...");
    return std::make_unique<UnparseableJudge>(std::move(detail));
  }
};

}  // namespace

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kCorrect:
      return "CORRECT";
    case Verdict::kWrong:
      return "WRONG";
    case Verdict::kNoAnswer:
      return "NO_ANSWER";
    case Verdict::kUnparseableReference:
      return "UNPARSEABLE_REFERENCE";
    case Verdict::kBudgetExceeded:
      return "BUDGET_EXCEEDED";
  }
  return "UNKNOWN";
}

std::unique_ptr<AccuracyScorer> NewBasicAccuracyScorer() {
  return std::make_unique<BasicAccuracyScorer>();
}

}  // namespace rlscore::scorers
