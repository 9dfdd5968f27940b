#include "scorers/instructions/text.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <span>
#include <string_view>

#include "absl/container/flat_hash_set.h"

namespace rlscore::scorers::instructions {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

utf8proc_category_t Category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

void AppendUtf8(char32_t c, std::string* out) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buffer);
  out->append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

char32_t ToLower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}

bool IsUpperChar(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_LU; }
bool IsLowerChar(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_LL; }
bool IsTitleChar(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_LT; }

// ---- Punkt ----------------------------------------------------------------------------------
//
// NLTK's Punkt model for English was trained on a corpus; what it learned enters the decisions
// in two places, both approximated by word lists here. Abbreviations: a word before a period
// that does not end a sentence. Common words: words seen both lower-case mid-sentence and
// capitalised at sentence starts, so that after an abbreviation, initial, number or ellipsis a
// capitalised one starts a new sentence while an unknown capitalised word (a name) does not.

constexpr std::string_view kAbbreviations[] = {
    "mr",    "mrs",  "ms",   "dr",     "prof", "sr",     "jr",   "st",   "mt",    "ft",   "rev",
    "hon",   "gen",  "col",  "lt",     "sgt",  "capt",   "cmdr", "adm",  "gov",   "sen",  "rep",
    "pres",  "mme",  "mlle", "messrs", "inc",  "corp",   "co",   "ltd",  "llc",   "bros", "assn",
    "dept",  "univ", "jan",  "feb",    "mar",  "apr",    "jun",  "jul",  "aug",   "sep",  "sept",
    "oct",   "nov",  "dec",  "mon",    "tue",  "tues",   "thu",  "thur", "thurs", "fri",  "e.g",
    "i.e",   "etc",  "vs",   "cf",     "al",   "approx", "est",  "fig",  "figs",  "eq",   "eqs",
    "vol",   "vols", "pp",   "ch",     "sec",  "secs",   "a.m",  "p.m",  "u.s",   "u.k",  "u.n",
    "u.s.a", "d.c",  "ph.d", "b.a",    "m.a",  "m.d",    "b.s",  "m.s",  "ave",   "blvd", "rd",
    "hwy",   "no.s", "viz",  "ibid",   "op",   "ed",     "eds",  "repr", "cal",   "lbs",
};

constexpr std::string_view kCommonWords[] = {
    "the",       "a",       "an",      "and",       "but",     "or",     "so",       "yet",
    "for",       "nor",     "in",      "on",        "at",      "to",     "of",       "by",
    "with",      "from",    "as",      "into",      "about",   "after",  "before",   "during",
    "since",     "until",   "while",   "when",      "where",   "why",    "how",      "what",
    "which",     "who",     "whom",    "whose",     "this",    "that",   "these",    "those",
    "there",     "here",    "then",    "now",       "it",      "its",    "he",       "she",
    "we",        "they",    "you",     "his",       "her",     "our",    "their",    "your",
    "my",        "me",      "him",     "us",        "them",    "is",     "are",      "was",
    "were",      "be",      "been",    "being",     "have",    "has",    "had",      "do",
    "does",      "did",     "will",    "would",     "can",     "could",  "should",   "may",
    "might",     "must",    "shall",   "not",       "no",      "yes",    "if",       "because",
    "although",  "though",  "however", "therefore", "thus",    "also",   "moreover", "furthermore",
    "finally",   "first",   "second",  "third",     "next",    "last",   "all",      "some",
    "many",      "most",    "more",    "each",      "every",   "both",   "either",   "neither",
    "one",       "two",     "three",   "other",     "another", "such",   "only",     "even",
    "still",     "just",    "let",     "consider",  "note",    "once",   "instead",  "otherwise",
    "meanwhile", "overall", "today",   "several",   "any",     "few",    "much",     "very",
    "well",      "good",    "great",   "new",       "time",    "people", "way",      "day",
    "year",      "things",  "life",    "world",     "please",  "thank",  "thanks",   "sure",
    "okay",      "oh",      "hello",   "hi",
};

bool IsAbbreviation(std::string_view word) {
  static const absl::flat_hash_set<std::string_view>* const set =
      new absl::flat_hash_set<std::string_view>(std::begin(kAbbreviations),
                                                std::end(kAbbreviations));
  return set->contains(word);
}

bool IsCommonWord(std::string_view word) {
  static const absl::flat_hash_set<std::string_view>* const set =
      new absl::flat_hash_set<std::string_view>(std::begin(kCommonWords), std::end(kCommonWords));
  return set->contains(word);
}

// Punkt's non-word punctuation: a word ends before one of these.
bool IsNonWordPunct(char32_t c) {
  switch (c) {
    case '?':
    case '!':
    case ')':
    case '"':
    case ';':
    case '}':
    case ']':
    case '*':
    case ':':
    case '@':
    case '\'':
    case '(':
    case '{':
    case '[':
      return true;
    default:
      return false;
  }
}

// Characters that cannot start a Punkt word token.
bool IsNonWordStart(char32_t c) {
  switch (c) {
    case '(':
    case '"':
    case '`':
    case '{':
    case '[':
    case ':':
    case ';':
    case '&':
    case '#':
    case '*':
    case '@':
    case ')':
    case '}':
    case ']':
    case '-':
    case ',':
      return true;
    default:
      return false;
  }
}

bool IsEndChar(char c) { return c == '.' || c == '?' || c == '!'; }

// Length of a multi-character punctuation mark ("--", "...") at `pos`, or 0.
size_t MultiCharAt(std::string_view s, size_t pos) {
  if (pos + 1 >= s.size()) return 0;
  const char c = s[pos];
  if ((c != '-' && c != '.') || s[pos + 1] != c) return 0;
  size_t end = pos + 2;
  while (end < s.size() && s[end] == c) ++end;
  return end - pos;
}

// Punkt's word tokenizer on a string without white space.
std::vector<std::string_view> PunktWords(std::string_view s) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < s.size()) {
    if (const size_t multi = MultiCharAt(s, pos)) {
      words.push_back(s.substr(pos, multi));
      pos += multi;
      continue;
    }
    size_t next = pos;
    const char32_t first = NextCodePoint(s, &next);
    if (IsNonWordStart(first)) {
      words.push_back(s.substr(pos, next - pos));
      pos = next;
      continue;
    }
    // A word: at least one character, up to a word end.
    size_t end = next;
    while (end < s.size()) {
      size_t after = end;
      const char32_t c = NextCodePoint(s, &after);
      if (IsNonWordPunct(c) || MultiCharAt(s, end) != 0) break;
      if (c == ',') {
        if (after >= s.size() || MultiCharAt(s, after) != 0) break;
        size_t peek = after;
        if (IsNonWordPunct(NextCodePoint(s, &peek))) break;
      }
      end = after;
    }
    words.push_back(s.substr(pos, end - pos));
    pos = end;
  }
  return words;
}

bool IsNumberToken(std::string_view tok) {
  // ^-?[\.,]?\d[\d,\.-]*\.?$
  size_t pos = 0;
  if (pos < tok.size() && tok[pos] == '-') ++pos;
  if (pos < tok.size() && (tok[pos] == '.' || tok[pos] == ',')) ++pos;
  if (pos >= tok.size()) return false;
  if (!IsDecimalDigit(NextCodePoint(tok, &pos))) return false;
  while (pos < tok.size()) {
    size_t next = pos;
    const char32_t c = NextCodePoint(tok, &next);
    if (!(IsDecimalDigit(c) || c == ',' || c == '.' || c == '-')) return false;
    pos = next;
  }
  return true;
}

enum class Ortho { kStarter, kNotStarter, kUnknown };

struct PunktToken {
  std::string_view text;
  bool sentbreak = false;
  bool abbr = false;
  bool ellipsis = false;
  bool period_final = false;
  bool initial = false;
  bool number = false;
  bool first_upper = false;
  bool first_lower = false;
};

PunktToken Annotate(std::string_view tok) {
  PunktToken t;
  t.text = tok;
  size_t pos = 0;
  const char32_t first = NextCodePoint(tok, &pos);
  t.first_upper = IsUpperChar(first);
  t.first_lower = IsLowerChar(first);
  t.period_final = tok.back() == '.';
  t.ellipsis = tok.size() >= 2 && tok.find_first_not_of('.') == std::string_view::npos;
  t.initial =
      pos + 1 == tok.size() && tok[pos] == '.' && IsWordChar(first) && !IsDecimalDigit(first);
  t.number = IsNumberToken(tok);
  if (tok == "." || tok == "?" || tok == "!") {
    t.sentbreak = true;
  } else if (t.ellipsis) {
    // Decided by the next word.
  } else if (t.period_final && !tok.ends_with("..")) {
    const std::string stem = Lower(tok.substr(0, tok.size() - 1));
    const std::string_view last_part = std::string_view(stem).substr(stem.rfind('-') + 1);
    if (IsAbbreviation(stem) || IsAbbreviation(last_part)) {
      t.abbr = true;
    } else {
      t.sentbreak = true;
    }
  }
  return t;
}

// Whether `next` starts a sentence, judged by its case against what Punkt learned of the word.
Ortho OrthoHeuristic(const PunktToken& next) {
  if (next.text.size() == 1 &&
      std::string_view(";:,.!?").find(next.text[0]) != std::string_view::npos) {
    return Ortho::kNotStarter;
  }
  std::string_view word = next.text;
  if (word.size() > 1 && word.back() == '.') word.remove_suffix(1);
  const bool common = IsCommonWord(Lower(word));
  if (next.first_upper && common) return Ortho::kStarter;
  // Lower case: a common word is known capitalised elsewhere, and an unknown one was never seen
  // lower case at a sentence start.
  if (next.first_lower) return Ortho::kNotStarter;
  return Ortho::kUnknown;
}

// Punkt's second pass over a pair of tokens.
void SecondPass(PunktToken* tok, const PunktToken& next) {
  if (!tok->period_final) return;
  if ((tok->abbr || tok->ellipsis) && !tok->initial) {
    if (OrthoHeuristic(next) == Ortho::kStarter) tok->sentbreak = true;
    return;
  }
  if (tok->initial || tok->number) {
    const Ortho ortho = OrthoHeuristic(next);
    if (ortho == Ortho::kNotStarter ||
        (ortho == Ortho::kUnknown && tok->initial && next.first_upper)) {
      tok->sentbreak = false;
      tok->abbr = true;
    }
  }
}

// Whether Punkt breaks a sentence in `context`: a break on any token but the last.
bool ContainsSentenceBreak(std::string_view prefix, std::string_view after) {
  std::vector<PunktToken> tokens;
  for (std::string_view w : PunktWords(prefix)) tokens.push_back(Annotate(w));
  const std::vector<std::string_view> after_words = PunktWords(after);
  if (!after_words.empty()) tokens.push_back(Annotate(after_words.front()));
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    SecondPass(&tokens[i], tokens[i + 1]);
    if (tokens[i].sentbreak) return true;
  }
  return false;
}

bool IsClosing(char c) { return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}'; }

// Punkt's boundary realignment: closing quotes and brackets that open the next slice, followed by
// white space, "--" or the end of a line, belong to the sentence before. Returns their length
// with the white space after them, or 0.
size_t RealignedPrefix(std::string_view slice) {
  size_t n = 0;
  while (n < slice.size() && IsClosing(slice[n])) {
    ++n;
    if (n == slice.size() || slice[n] == '\n' || slice.substr(n).starts_with("--")) return n;
    size_t pos = n;
    size_t end = n;
    while (end < slice.size() && IsSpace(NextCodePoint(slice, &pos))) end = pos;
    if (end > n) return end;
  }
  return 0;
}

// ---- Treebank --------------------------------------------------------------------------------

bool EndsWithIgnoringCase(std::string_view s, std::string_view ascii_suffix) {
  if (s.size() < ascii_suffix.size()) return false;
  const std::string_view tail = s.substr(s.size() - ascii_suffix.size());
  for (size_t i = 0; i < tail.size(); ++i) {
    char c = tail[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    if (c != ascii_suffix[i]) return false;
  }
  return true;
}

void CountUpperPiece(std::string_view piece, size_t* count) {
  // Most words have no capital at all: no token of theirs can be upper case.
  if (std::none_of(piece.begin(), piece.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || static_cast<unsigned char>(c) >= 0x80;
      })) {
    return;
  }
  // Contractions split into two tokens: "DON'T" -> "DO" "N'T", "CANNOT" -> "CAN" "NOT".
  static constexpr std::string_view kSuffixes[] = {"n't", "'ll", "'re", "'ve",
                                                   "'s",  "'m",  "'d",  "'"};
  const bool apostrophe = piece.find('\'') != std::string_view::npos;
  for (std::string_view suffix :
       apostrophe ? std::span(kSuffixes) : std::span<const std::string_view>()) {
    if (piece.size() > suffix.size() && EndsWithIgnoringCase(piece, suffix) &&
        piece[piece.size() - suffix.size() - 1] != '\'') {
      const size_t split = piece.size() - suffix.size();
      *count += IsUpper(piece.substr(0, split)) + IsUpper(piece.substr(split));
      return;
    }
  }
  static constexpr std::pair<std::string_view, size_t> kFused[] = {
      {"cannot", 3}, {"gimme", 3}, {"gonna", 3}, {"gotta", 3}, {"lemme", 3}, {"wanna", 3}};
  for (const auto& [word, split] : kFused) {
    if (piece.size() == word.size() && EndsWithIgnoringCase(piece, word)) {
      *count += IsUpper(piece.substr(0, split)) + IsUpper(piece.substr(split));
      return;
    }
  }
  *count += IsUpper(piece);
}

}  // namespace

char32_t NextCodePointSlow(std::string_view text, size_t* pos) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data()) + *pos;
  utf8proc_int32_t c = 0;
  const utf8proc_ssize_t n =
      utf8proc_iterate(bytes, static_cast<utf8proc_ssize_t>(text.size() - *pos), &c);
  if (n <= 0) {
    ++*pos;
    return kReplacement;
  }
  *pos += static_cast<size_t>(n);
  return static_cast<char32_t>(c);
}

bool IsWordChar(char32_t c) {
  if (c < 0x80) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

bool IsDecimalDigit(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return Category(c) == UTF8PROC_CATEGORY_ND;
}

std::string Lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const unsigned char b = static_cast<unsigned char>(text[pos]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b >= 'A' && b <= 'Z' ? b + ('a' - 'A') : b));
      ++pos;
      continue;
    }
    AppendUtf8(ToLower(NextCodePoint(text, &pos)), &out);
  }
  return out;
}

std::vector<char32_t> LowerCodePoints(std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) out.push_back(ToLower(NextCodePoint(text, &pos)));
  return out;
}

namespace {

// Python's str.isupper() (want_upper) or str.islower(): something cased, and nothing of the other
// case or title case.
bool AllCased(std::string_view text, bool want_upper) {
  bool cased = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const unsigned char b = static_cast<unsigned char>(text[pos]);
    if (b < 0x80) {
      const bool upper = b >= 'A' && b <= 'Z';
      const bool lower = b >= 'a' && b <= 'z';
      if (want_upper ? lower : upper) return false;
      cased |= want_upper ? upper : lower;
      ++pos;
      continue;
    }
    const char32_t c = NextCodePointSlow(text, &pos);
    if (IsTitleChar(c) || (want_upper ? IsLowerChar(c) : IsUpperChar(c))) return false;
    cased |= want_upper ? IsUpperChar(c) : IsLowerChar(c);
  }
  return cased;
}

}  // namespace

bool IsUpper(std::string_view text) { return AllCased(text, /*want_upper=*/true); }

bool IsLower(std::string_view text) { return AllCased(text, /*want_upper=*/false); }

std::string_view StripLeft(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = pos;
    if (!IsSpace(NextCodePoint(text, &next))) break;
    pos = next;
  }
  return text.substr(pos);
}

std::string_view StripRight(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    // The start of the last code point: back over continuation bytes (at most three).
    size_t start = end - 1;
    while (start > 0 && end - start < 4 &&
           (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
      --start;
    }
    size_t pos = start;
    const char32_t c = NextCodePoint(text.substr(0, end), &pos);
    // A malformed tail decodes byte by byte: only a whole code point ending at `end` counts.
    if (pos != end || !IsSpace(c)) break;
    end = start;
  }
  return text.substr(0, end);
}

std::string_view Strip(std::string_view text) { return StripRight(StripLeft(text)); }

size_t CountWords(std::string_view text) {
  size_t words = 0;
  bool in_word = false;
  size_t pos = 0;
  while (pos < text.size()) {
    const bool word = IsWordChar(NextCodePoint(text, &pos));
    words += word && !in_word;
    in_word = word;
  }
  return words;
}

size_t CountSentences(std::string_view text) {
  // White-space-delimited chunks.
  struct Chunk {
    size_t begin, end;
  };
  std::vector<Chunk> chunks;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = pos;
    if (IsSpace(NextCodePoint(text, &next))) {
      pos = next;
      continue;
    }
    const size_t begin = pos;
    while (pos < text.size()) {
      next = pos;
      if (IsSpace(NextCodePoint(text, &next))) break;
      pos = next;
    }
    chunks.push_back({begin, pos});
  }

  // Sentence slices [start, end): a break ends one at the end of its candidate; the next starts
  // at the next chunk, or just after the candidate when closing punctuation followed it.
  std::vector<std::pair<size_t, size_t>> slices;
  size_t start = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    const std::string_view chunk = text.substr(chunks[k].begin, chunks[k].end - chunks[k].begin);
    const bool has_next = k + 1 < chunks.size();
    // The last end character whose successor is closing punctuation, or the chunk's last
    // character when another chunk follows.
    size_t e = std::string_view::npos;
    for (size_t i = chunk.size(); i-- > 0;) {
      if (!IsEndChar(chunk[i])) continue;
      if (i + 1 == chunk.size() ? has_next
                                : IsNonWordPunct(static_cast<unsigned char>(chunk[i + 1]))) {
        e = i;
        break;
      }
    }
    if (e == std::string_view::npos) continue;
    std::string_view after;
    size_t next_start;
    if (e + 1 < chunk.size()) {
      after = chunk.substr(e + 1, 1);
      next_start = chunks[k].begin + e + 1;
    } else {
      after = text.substr(chunks[k + 1].begin, chunks[k + 1].end - chunks[k + 1].begin);
      next_start = chunks[k + 1].begin;
    }
    if (!ContainsSentenceBreak(chunk.substr(0, e + 1), after)) continue;
    slices.emplace_back(start, chunks[k].begin + e + 1);
    start = next_start;
  }
  slices.emplace_back(start, std::max(start, StripRight(text).size()));

  size_t sentences = 0;
  size_t realign = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const size_t begin = std::min(slices[i].first + realign, slices[i].second);
    realign = 0;
    if (i + 1 < slices.size()) {
      const auto& [next_begin, next_end] = slices[i + 1];
      realign = RealignedPrefix(text.substr(next_begin, next_end - next_begin));
    }
    sentences += slices[i].second > begin || realign > 0;
  }
  return sentences;
}

size_t CountUpperCaseWords(std::string_view text) {
  // What an ASCII byte is to the Treebank split, looked up rather than tested: this loop runs
  // over every variant of a response that the loose rules try.
  enum : uint8_t { kKeep, kSplit, kDigitSeparator, kDash, kNonAscii };
  static constexpr auto kClass = [] {
    std::array<uint8_t, 256> table{};
    for (int b = 0x80; b < 0x100; ++b) table[static_cast<size_t>(b)] = kNonAscii;
    for (unsigned char b : std::string_view(";@#$%&?!*()[]{}<>\"")) table[b] = kSplit;
    for (int b = 0x09; b <= 0x0D; ++b) table[static_cast<size_t>(b)] = kSplit;
    for (int b = 0x1C; b <= 0x20; ++b) table[static_cast<size_t>(b)] = kSplit;
    table[','] = table[':'] = kDigitSeparator;
    table['-'] = kDash;
    return table;
  }();
  size_t count = 0;
  size_t pos = 0;
  size_t piece_begin = 0;
  bool in_piece = false;
  while (pos < text.size()) {
    const size_t here = pos;
    const unsigned char byte = static_cast<unsigned char>(text[pos]);
    bool separator = false;
    switch (kClass[byte]) {
      case kKeep:
        ++pos;
        break;
      case kSplit:
        ++pos;
        separator = true;
        break;
      case kDigitSeparator: {
        // Kept inside numbers ("3,000", "10:30"), split elsewhere.
        ++pos;
        const bool digit_before = here > 0 && text[here - 1] >= '0' && text[here - 1] <= '9';
        const bool digit_after = pos < text.size() && text[pos] >= '0' && text[pos] <= '9';
        separator = !(digit_before && digit_after);
        break;
      }
      case kDash:
        ++pos;
        separator = pos < text.size() && text[pos] == '-';  // "--" splits; one dash joins
        break;
      default: {
        const char32_t c = NextCodePointSlow(text, &pos);
        separator = IsSpace(c);
        break;
      }
    }
    if (separator) {
      if (in_piece) CountUpperPiece(text.substr(piece_begin, here - piece_begin), &count);
      in_piece = false;
    } else if (!in_piece) {
      in_piece = true;
      piece_begin = here;
    }
  }
  if (in_piece) CountUpperPiece(text.substr(piece_begin), &count);
  return count;
}

}  // namespace rlscore::scorers::instructions
