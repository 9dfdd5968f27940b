#include "scorers/instructions/instructions.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_input.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "scorers/instructions/text.h"

namespace rlscore::scorers::instructions {
namespace {

using Json = nlohmann::json;

struct Registered {
  std::string_view id;
  Kind kind;
};

constexpr Registered kRegistry[] = {
    {"keywords:existence", Kind::kKeywordsExistence},
    {"keywords:frequency", Kind::kKeywordsFrequency},
    {"keywords:forbidden_words", Kind::kKeywordsForbiddenWords},
    {"keywords:letter_frequency", Kind::kKeywordsLetterFrequency},
    {"length_constraints:number_sentences", Kind::kNumberSentences},
    {"length_constraints:number_paragraphs", Kind::kNumberParagraphs},
    {"length_constraints:number_words", Kind::kNumberWords},
    {"length_constraints:nth_paragraph_first_word", Kind::kNthParagraphFirstWord},
    {"detectable_content:number_placeholders", Kind::kNumberPlaceholders},
    {"detectable_content:postscript", Kind::kPostscript},
    {"detectable_format:number_bullet_lists", Kind::kNumberBulletLists},
    {"detectable_format:constrained_response", Kind::kConstrainedResponse},
    {"detectable_format:number_highlighted_sections", Kind::kNumberHighlightedSections},
    {"detectable_format:multiple_sections", Kind::kMultipleSections},
    {"detectable_format:json_format", Kind::kJsonFormat},
    {"detectable_format:title", Kind::kTitle},
    {"combination:two_responses", Kind::kTwoResponses},
    {"combination:repeat_prompt", Kind::kRepeatPrompt},
    {"startend:end_checker", Kind::kEndChecker},
    {"change_case:capital_word_frequency", Kind::kCapitalWordFrequency},
    {"change_case:english_capital", Kind::kEnglishCapital},
    {"change_case:english_lowercase", Kind::kEnglishLowercase},
    {"punctuation:no_comma", Kind::kNoComma},
    {"startend:quotation", Kind::kQuotation},
};

constexpr std::array<std::string_view, std::size(kRegistry)> MakeIds() {
  std::array<std::string_view, std::size(kRegistry)> ids{};
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = kRegistry[i].id;
  return ids;
}
constexpr std::array<std::string_view, std::size(kRegistry)> kIds = MakeIds();

// ---- Arguments -------------------------------------------------------------------------------

// Reads one instruction's kwargs object, remembering which keys were read so that an argument the
// instruction does not take is an error rather than silently ignored.
class Args {
 public:
  explicit Args(const Json* kwargs) : kwargs_(kwargs) {}

  // Present and not null.
  const Json* Find(std::string_view name) {
    read_.emplace_back(name);
    if (kwargs_ == nullptr) return nullptr;
    const auto it = kwargs_->find(std::string(name));
    return it == kwargs_->end() || it->is_null() ? nullptr : &*it;
  }

  absl::StatusOr<uint64_t> Count(std::string_view name) {
    const Json* v = Find(name);
    if (v == nullptr) return Missing(name);
    if (v->is_number_unsigned()) return v->get<uint64_t>();
    if (v->is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument \"", Sv(name), "\" is ", v->get<int64_t>(), ": it must be >= 0"));
    }
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (d >= 0 && d < 1e15 && std::floor(d) == d) return static_cast<uint64_t>(d);
      return absl::InvalidArgumentError(absl::StrCat("argument \"", Sv(name), "\" is ", v->dump(),
                                                     ": it must be an integer >= 0"));
    }
    return WrongType(name, "an integer", *v);
  }

  absl::StatusOr<std::string> Text(std::string_view name) {
    const Json* v = Find(name);
    if (v == nullptr) return Missing(name);
    if (!v->is_string()) return WrongType(name, "a string", *v);
    return v->get<std::string>();
  }

  absl::StatusOr<std::vector<std::string>> Words(std::string_view name) {
    const Json* v = Find(name);
    if (v == nullptr) return Missing(name);
    if (!v->is_array()) return WrongType(name, "an array of strings", *v);
    std::vector<std::string> words;
    for (const Json& w : *v) {
      if (!w.is_string()) return WrongType(name, "an array of strings", *v);
      if (Strip(w.get_ref<const std::string&>()).empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument \"", Sv(name), "\" holds an empty word"));
      }
      words.push_back(w.get<std::string>());
    }
    if (words.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("argument \"", Sv(name), "\" is empty"));
    }
    return words;
  }

  absl::StatusOr<Relation> Rel(std::string_view name) {
    RLSCORE_ASSIGN_OR_RETURN(std::string r, Text(name));
    if (r == "less than") return Relation::kLessThan;
    if (r == "at least") return Relation::kAtLeast;
    return absl::InvalidArgumentError(absl::StrCat("argument \"", Sv(name), "\" is \"", r,
                                                   "\": it must be \"less than\" or \"at least\""));
  }

  // An error for a non-null argument that was never read.
  absl::Status CheckNoOthers() const {
    if (kwargs_ == nullptr) return absl::OkStatus();
    for (const auto& [key, value] : kwargs_->items()) {
      if (value.is_null()) continue;
      if (std::find(read_.begin(), read_.end(), key) == read_.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "takes no argument \"", key, "\"",
            read_.empty() ? "" : absl::StrCat(" (it takes ", absl::StrJoin(read_, ", "), ")")));
      }
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status Missing(std::string_view name) {
    return absl::InvalidArgumentError(absl::StrCat("argument \"", Sv(name), "\" is required"));
  }
  static absl::Status WrongType(std::string_view name, std::string_view want, const Json& v) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument \"", Sv(name), "\" must be ", Sv(want), ", got ", v.type_name()));
  }

  const Json* kwargs_;
  std::vector<std::string> read_;
};

absl::Status NonEmpty(std::string_view name, std::string_view value) {
  if (!value.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("argument \"", Sv(name), "\" is empty"));
}

absl::Status ReadArgs(Args& args, Instruction* in) {
  switch (in->kind) {
    case Kind::kKeywordsExistence: {
      RLSCORE_ASSIGN_OR_RETURN(in->words, args.Words("keywords"));
      break;
    }
    case Kind::kKeywordsForbiddenWords: {
      RLSCORE_ASSIGN_OR_RETURN(in->words, args.Words("forbidden_words"));
      break;
    }
    case Kind::kKeywordsFrequency: {
      RLSCORE_ASSIGN_OR_RETURN(std::string keyword, args.Text("keyword"));
      in->text = std::string(Strip(keyword));
      RLSCORE_RETURN_IF_ERROR(NonEmpty("keyword", in->text));
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("frequency"));
      RLSCORE_ASSIGN_OR_RETURN(in->relation, args.Rel("relation"));
      break;
    }
    case Kind::kKeywordsLetterFrequency: {
      RLSCORE_ASSIGN_OR_RETURN(std::string letter, args.Text("letter"));
      size_t pos = 0;
      if (!letter.empty()) NextCodePoint(letter, &pos);
      if (letter.empty() || pos != letter.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument \"letter\" is \"", letter, "\": it must be one character"));
      }
      in->text = Lower(letter);
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("let_frequency"));
      RLSCORE_ASSIGN_OR_RETURN(in->relation, args.Rel("let_relation"));
      break;
    }
    case Kind::kNumberSentences: {
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("num_sentences"));
      RLSCORE_ASSIGN_OR_RETURN(in->relation, args.Rel("relation"));
      break;
    }
    case Kind::kNumberWords: {
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("num_words"));
      RLSCORE_ASSIGN_OR_RETURN(in->relation, args.Rel("relation"));
      break;
    }
    case Kind::kNumberParagraphs: {
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("num_paragraphs"));
      break;
    }
    case Kind::kNthParagraphFirstWord: {
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("num_paragraphs"));
      RLSCORE_ASSIGN_OR_RETURN(in->nth, args.Count("nth_paragraph"));
      if (in->nth == 0 || in->nth > in->count) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument \"nth_paragraph\" is ", in->nth,
                         ": it must be in [1, num_paragraphs = ", in->count, "]"));
      }
      RLSCORE_ASSIGN_OR_RETURN(std::string word, args.Text("first_word"));
      in->text = Lower(word);
      RLSCORE_RETURN_IF_ERROR(NonEmpty("first_word", in->text));
      break;
    }
    case Kind::kNumberPlaceholders: {
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("num_placeholders"));
      break;
    }
    case Kind::kPostscript: {
      RLSCORE_ASSIGN_OR_RETURN(std::string marker, args.Text("postscript_marker"));
      in->text = std::string(Strip(marker));
      RLSCORE_RETURN_IF_ERROR(NonEmpty("postscript_marker", in->text));
      break;
    }
    case Kind::kNumberBulletLists: {
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("num_bullets"));
      break;
    }
    case Kind::kNumberHighlightedSections: {
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("num_highlights"));
      break;
    }
    case Kind::kMultipleSections: {
      RLSCORE_ASSIGN_OR_RETURN(std::string splitter, args.Text("section_spliter"));
      in->text = std::string(Strip(splitter));
      RLSCORE_RETURN_IF_ERROR(NonEmpty("section_spliter", in->text));
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("num_sections"));
      break;
    }
    case Kind::kRepeatPrompt: {
      RLSCORE_ASSIGN_OR_RETURN(std::string prompt, args.Text("prompt_to_repeat"));
      in->text = Lower(Strip(prompt));
      RLSCORE_RETURN_IF_ERROR(NonEmpty("prompt_to_repeat", in->text));
      break;
    }
    case Kind::kEndChecker: {
      RLSCORE_ASSIGN_OR_RETURN(std::string phrase, args.Text("end_phrase"));
      in->text = Lower(Strip(phrase));
      RLSCORE_RETURN_IF_ERROR(NonEmpty("end_phrase", in->text));
      break;
    }
    case Kind::kCapitalWordFrequency: {
      RLSCORE_ASSIGN_OR_RETURN(in->count, args.Count("capital_frequency"));
      RLSCORE_ASSIGN_OR_RETURN(in->relation, args.Rel("capital_relation"));
      break;
    }
    case Kind::kConstrainedResponse:
    case Kind::kJsonFormat:
    case Kind::kTitle:
    case Kind::kTwoResponses:
    case Kind::kEnglishCapital:
    case Kind::kEnglishLowercase:
    case Kind::kNoComma:
    case Kind::kQuotation:
      break;
  }
  return args.CheckNoOthers();
}

// ---- Matching --------------------------------------------------------------------------------

bool Compare(uint64_t n, Relation relation, uint64_t threshold) {
  return relation == Relation::kLessThan ? n < threshold : n >= threshold;
}

// Non-overlapping occurrences of `needle` in `hay`, left to right (`re.findall` of a literal).
// With `whole_words`, an occurrence also needs `\b` at both ends.
size_t CountOccurrences(const std::vector<char32_t>& hay, const std::vector<char32_t>& needle,
                        bool whole_words, size_t stop_after) {
  if (needle.empty() || needle.size() > hay.size()) return 0;
  size_t found = 0;
  size_t i = 0;
  while (i + needle.size() <= hay.size() && found < stop_after) {
    const auto it = std::search(hay.begin() + static_cast<ptrdiff_t>(i), hay.end(), needle.begin(),
                                needle.end());
    if (it == hay.end()) break;
    const size_t at = static_cast<size_t>(it - hay.begin());
    const size_t end = at + needle.size();
    const auto boundary = [&](size_t p) {
      const bool before = p > 0 && IsWordChar(hay[p - 1]);
      const bool after = p < hay.size() && IsWordChar(hay[p]);
      return before != after;
    };
    if (!whole_words || (boundary(at) && boundary(end))) {
      ++found;
      i = end;
    } else {
      i = at + 1;
    }
  }
  return found;
}

// `re.split(r"\s?\*\*\*\s?", value)` into pieces judged only on emptiness after strip, which
// the optional single white space around each divider does not change; the same for
// "******" and "\n\n".
std::vector<std::string_view> SplitOn(std::string_view text, std::string_view divider) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(divider, start);
    if (at == std::string_view::npos) break;
    pieces.push_back(text.substr(start, at - start));
    start = at + divider.size();
  }
  pieces.push_back(text.substr(start));
  return pieces;
}

bool ParagraphsFollow(std::string_view response, uint64_t expected) {
  const std::vector<std::string_view> pieces = SplitOn(response, "***");
  uint64_t paragraphs = pieces.size();
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!Strip(pieces[i]).empty()) continue;
    if (i != 0 && i + 1 != pieces.size()) return false;
    --paragraphs;
  }
  return paragraphs == expected;
}

bool NthParagraphFollows(std::string_view response, const Instruction& in) {
  const std::vector<std::string_view> pieces = SplitOn(response, "\n\n");
  uint64_t paragraphs = 0;
  for (std::string_view p : pieces) paragraphs += !Strip(p).empty();
  // IFEval indexes every piece, empty ones included, after counting only the non-empty ones.
  if (in.nth > paragraphs) return false;
  const std::string_view paragraph = Strip(pieces[in.nth - 1]);
  if (paragraph.empty()) return false;
  // The first white-space-delimited word, quotes off its front, up to its first punctuation.
  size_t end = 0;
  size_t pos = 0;
  while (pos < paragraph.size()) {
    size_t next = pos;
    if (IsSpace(NextCodePoint(paragraph, &next))) break;
    end = pos = next;
  }
  std::string_view word = paragraph.substr(0, end);
  while (!word.empty() && word.front() == '\'') word.remove_prefix(1);
  while (!word.empty() && word.front() == '"') word.remove_prefix(1);
  const size_t cut = word.find_first_of(".,?!'\"");
  const std::string first_word = Lower(word.substr(0, cut));
  return paragraphs == in.count && first_word == in.text;
}

// `re.findall(r"\[.*?\]", value)`: a '[' and the first ']' after it on the same line.
size_t CountPlaceholders(std::string_view s) {
  size_t count = 0;
  size_t i = 0;
  while ((i = s.find('[', i)) != std::string_view::npos) {
    const size_t close = s.find_first_of("]\n", i + 1);
    if (close != std::string_view::npos && s[close] == ']') {
      ++count;
      i = close + 1;
    } else {
      ++i;
    }
  }
  return count;
}

bool PostscriptFollows(std::string_view response, std::string_view marker) {
  const std::vector<char32_t> text = LowerCodePoints(response);
  // IFEval's patterns for its two markers allow one white space between the letters
  // (r"\s*p\.\s?p\.\s?s.*$" and r"\s*p\.\s?s\..*$"), found anywhere: \s* needs no line start.
  const auto match_at = [&](size_t i, std::u32string_view pattern) {
    for (char32_t want : pattern) {
      if (want == U' ') {  // \s?
        if (i < text.size() && IsSpace(text[i])) ++i;
        continue;
      }
      if (i >= text.size() || text[i] != want) return false;
      ++i;
    }
    return true;
  };
  std::u32string pattern;
  if (marker == "P.P.S") {
    pattern = U"p. p. s";
  } else if (marker == "P.S.") {
    pattern = U"p. s.";
  } else {
    const std::vector<char32_t> lowered = LowerCodePoints(marker);
    return CountOccurrences(text, lowered, /*whole_words=*/false, 1) > 0;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == 'p' && match_at(i, pattern)) return true;
  }
  return false;
}

// `re.findall(r"^\s*\*[^\*].*$", value, re.MULTILINE)` plus the same with '-' and no
// following character: `^\s*` may run over blank lines, and `[^\*]` may be a newline.
size_t CountBullets(std::string_view s, char marker) {
  size_t count = 0;
  size_t p = 0;
  while (p < s.size()) {
    // p is at a line start.
    size_t q = p;
    while (q < s.size()) {
      size_t next = q;
      if (!IsSpace(NextCodePoint(s, &next))) break;
      q = next;
    }
    bool matched = false;
    if (q < s.size() && s[q] == marker) {
      size_t after = q + 1;
      if (marker == '-') {
        matched = true;
      } else if (after < s.size() && s[after] != '*') {
        matched = true;
        NextCodePoint(s, &after);
      }
      if (matched) {
        ++count;
        const size_t eol = s.find('\n', marker == '-' ? q + 1 : after);
        if (eol == std::string_view::npos) break;
        // The match ends before this newline; the next line start is after it.
        p = eol + 1;
        continue;
      }
    }
    const size_t eol = s.find('\n', p);
    if (eol == std::string_view::npos) break;
    p = eol + 1;
  }
  return count;
}

size_t CountHighlights(std::string_view s) {
  size_t count = 0;
  // r"\*[^\n\*]*\*": a non-empty (after strip) run between two stars on one line.
  for (size_t i = s.find('*'); i != std::string_view::npos;) {
    const size_t close = s.find_first_of("*\n", i + 1);
    if (close == std::string_view::npos) break;
    if (s[close] == '\n') {
      i = s.find('*', close);
      continue;
    }
    count += !Strip(s.substr(i + 1, close - i - 1)).empty();
    i = s.find('*', close + 1);
  }
  // r"\*\*[^\n\*]*\*\*": the same between double stars, counted again.
  for (size_t i = s.find("**"); i != std::string_view::npos;) {
    const size_t close = s.find_first_of("*\n", i + 2);
    if (close == std::string_view::npos) break;
    if (s[close] == '*' && close + 1 < s.size() && s[close + 1] == '*') {
      count += !Strip(s.substr(i + 2, close - i - 2)).empty();
      i = s.find("**", close + 2);
    } else {
      i = s.find("**", i + 1);
    }
  }
  return count;
}

// Matches of r"\s?" + splitter + r"\s?\d+\s?", counted as `re.split` would cut.
size_t CountSections(std::string_view s, std::string_view splitter) {
  size_t count = 0;
  size_t i = 0;
  while ((i = s.find(splitter, i)) != std::string_view::npos) {
    size_t p = i + splitter.size();
    if (p < s.size()) {
      size_t next = p;
      if (IsSpace(NextCodePoint(s, &next))) {
        // \s? is optional: a digit may also follow directly (checked below via `p`).
        size_t digit = next;
        if (digit < s.size() && IsDecimalDigit(NextCodePoint(s, &digit))) p = next;
      }
    }
    size_t digits_end = p;
    while (digits_end < s.size()) {
      size_t next = digits_end;
      if (!IsDecimalDigit(NextCodePoint(s, &next))) break;
      digits_end = next;
    }
    if (digits_end > p) {
      ++count;
      i = digits_end;
    } else {
      i += 1;
    }
  }
  return count;
}

// ---- JSON as Python's json.loads reads it ----------------------------------------------------

class PythonJson {
 public:
  explicit PythonJson(std::string_view s) : s_(s) {}

  bool Valid() {
    SkipSpace();
    if (!Value()) return false;
    SkipSpace();
    return pos_ == s_.size();
  }

 private:
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool Digits() {
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }
  bool Number() {
    if (pos_ < s_.size() && s_[pos_] == '-') {
      ++pos_;
      if (Literal("Infinity")) return true;
    }
    if (pos_ >= s_.size()) return false;
    if (s_[pos_] == '0') {
      ++pos_;
    } else if (!Digits()) {
      return false;
    }
    if (pos_ + 1 < s_.size() && s_[pos_] == '.' && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9') {
      ++pos_;
      Digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
      if (p < s_.size() && s_[p] >= '0' && s_[p] <= '9') {
        pos_ = p;
        Digits();
      }
    }
    return true;
  }
  bool String() {
    ++pos_;  // the opening quote
    while (pos_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++pos_ >= s_.size()) return false;
        const char e = s_[pos_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k) {
            if (pos_ + k >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[pos_ + k]))) {
              return false;
            }
          }
          pos_ += 4;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return false;
        }
      }
      ++pos_;
    }
    return false;
  }
  // Iterative over nesting, so depth costs memory, not stack.
  bool Value() {
    std::vector<char> open;  // '[' or '{'
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size()) return false;
      const char c = s_[pos_];
      bool scalar = true;
      if (c == '{' || c == '[') {
        ++pos_;
        SkipSpace();
        const char close = c == '{' ? '}' : ']';
        if (pos_ < s_.size() && s_[pos_] == close) {
          ++pos_;
        } else {
          open.push_back(c);
          if (c == '{' && !Key()) return false;
          scalar = false;
        }
      } else if (c == '"') {
        if (!String()) return false;
      } else if (c == 't') {
        if (!Literal("true")) return false;
      } else if (c == 'f') {
        if (!Literal("false")) return false;
      } else if (c == 'n') {
        if (!Literal("null")) return false;
      } else if (c == 'N') {
        if (!Literal("NaN")) return false;
      } else if (c == 'I') {
        if (!Literal("Infinity")) return false;
      } else if (!Number()) {
        return false;
      }
      if (!scalar) continue;
      // After a complete value: close containers or move to the next element.
      while (true) {
        if (open.empty()) return true;
        SkipSpace();
        if (pos_ >= s_.size()) return false;
        const char close = open.back() == '{' ? '}' : ']';
        if (s_[pos_] == close) {
          ++pos_;
          open.pop_back();
          continue;
        }
        if (s_[pos_] != ',') return false;
        ++pos_;
        if (open.back() == '{') {
          SkipSpace();
          if (!Key()) return false;
        }
        break;
      }
    }
  }
  // A key and its colon; the value follows.
  bool Key() {
    if (pos_ >= s_.size() || s_[pos_] != '"' || !String()) return false;
    SkipSpace();
    if (pos_ >= s_.size() || s_[pos_] != ':') return false;
    ++pos_;
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::string_view RemovePrefix(std::string_view s, std::string_view prefix) {
  if (s.starts_with(prefix)) s.remove_prefix(prefix.size());
  return s;
}

bool JsonFollows(std::string_view response) {
  std::string_view v = Strip(response);
  v = RemovePrefix(v, "```json");
  v = RemovePrefix(v, "```Json");
  v = RemovePrefix(v, "```JSON");
  v = RemovePrefix(v, "```");
  if (v.ends_with("```")) v.remove_suffix(3);
  v = Strip(v);
  return PythonJson(v).Valid();
}

// r"<<[^\n]+>>" anywhere, with something other than brackets and white space inside.
bool TitleFollows(std::string_view s) {
  size_t line_start = 0;
  while (line_start <= s.size()) {
    size_t line_end = s.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = s.size();
    const std::string_view line = s.substr(line_start, line_end - line_start);
    // The first "<<" and the last ">>" of the line, with at least one character between: the
    // greedy match; no other match fits on the line after it.
    const size_t open = line.find("<<");
    const size_t close = line.rfind(">>");
    if (open != std::string_view::npos && close != std::string_view::npos && close >= open + 3) {
      std::string_view title = line.substr(open, close + 2 - open);
      while (!title.empty() && title.front() == '<') title.remove_prefix(1);
      while (!title.empty() && title.back() == '>') title.remove_suffix(1);
      if (!Strip(title).empty()) return true;
    }
    line_start = line_end + 1;
  }
  return false;
}

bool TwoResponsesFollow(std::string_view response) {
  const std::vector<std::string_view> pieces = SplitOn(response, "******");
  std::vector<std::string_view> answers;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (Strip(pieces[i]).empty()) {
      if (i != 0 && i + 1 != pieces.size()) return false;
    } else {
      answers.push_back(pieces[i]);
    }
  }
  return answers.size() == 2 && Strip(answers[0]) != Strip(answers[1]);
}

// Whether Lower(text) starts with `lowered`, reading only as much of `text` as that takes.
bool StartsWithLowered(std::string_view text, std::string_view lowered) {
  size_t t = 0;
  size_t l = 0;
  while (l < lowered.size()) {
    if (t >= text.size()) return false;
    const std::string one = Lower(text.substr(t, [&] {
      size_t next = t;
      NextCodePoint(text, &next);
      return next - t;
    }()));
    if (lowered.substr(l, one.size()) != one) return false;
    l += one.size();
    NextCodePoint(text, &t);
  }
  return true;
}

bool EndFollows(std::string_view response, std::string_view phrase) {
  std::string_view v = Strip(response);
  while (!v.empty() && v.front() == '"') v.remove_prefix(1);
  while (!v.empty() && v.back() == '"') v.remove_suffix(1);
  return std::string_view(Lower(v)).ends_with(phrase);
}

bool QuotationFollows(std::string_view response) {
  const std::string_view v = Strip(response);
  return v.size() > 1 && v.front() == '"' && v.back() == '"';
}

}  // namespace

std::span<const std::string_view> SupportedIds() { return kIds; }

absl::StatusOr<std::vector<Instruction>> ParseInstructions(std::string_view reference) {
  absl::StatusOr<Json> parsed = ParseJsonObject(reference, "byte");
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("IF reference: ", parsed.status().message()));
  }
  const Json& root = *parsed;
  const auto ids = root.find("instruction_id_list");
  if (ids == root.end() || !ids->is_array() || ids->empty()) {
    return absl::InvalidArgumentError(
        "IF reference: \"instruction_id_list\" must be a non-empty array of instruction ids");
  }
  const auto kwargs = root.find("kwargs");
  const bool has_kwargs = kwargs != root.end() && !kwargs->is_null();
  if (has_kwargs && (!kwargs->is_array() || kwargs->size() != ids->size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("IF reference: \"kwargs\" must be an array of ", ids->size(),
                     " objects, one per instruction",
                     kwargs->is_array() ? absl::StrCat(", got ", kwargs->size())
                                        : absl::StrCat(", got ", kwargs->type_name())));
  }
  std::vector<Instruction> out;
  out.reserve(ids->size());
  for (size_t i = 0; i < ids->size(); ++i) {
    const Json& id = (*ids)[i];
    const std::string where = absl::StrCat("IF reference: instruction ", i + 1);
    if (!id.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the id must be a string, got ", id.type_name()));
    }
    const std::string& name = id.get_ref<const std::string&>();
    const auto* entry = std::find_if(std::begin(kRegistry), std::end(kRegistry),
                                     [&](const Registered& r) { return r.id == name; });
    if (entry == std::end(kRegistry)) {
      if (name == "language:response_language") {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " (", name, "): needs a language detector, which rlscore does not have"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": unknown instruction id \"", name, "\""));
    }
    const Json* args_json = nullptr;
    if (has_kwargs) {
      const Json& a = (*kwargs)[i];
      if (!a.is_null() && !a.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " (", name, "): kwargs must be an object, got ", a.type_name()));
      }
      if (a.is_object()) args_json = &a;
    }
    Instruction in;
    in.kind = entry->kind;
    in.id = name;
    Args args(args_json);
    if (absl::Status s = ReadArgs(args, &in); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " (", name, "): ", s.message()));
    }
    out.push_back(std::move(in));
  }
  return out;
}

bool Follows(const Instruction& in, std::string_view response) {
  // IFEval's evaluation: an empty or white-space response follows no instruction.
  if (Strip(response).empty()) return false;
  switch (in.kind) {
    case Kind::kKeywordsExistence: {
      const std::vector<char32_t> text = LowerCodePoints(response);
      return std::all_of(in.words.begin(), in.words.end(), [&](const std::string& w) {
        return CountOccurrences(text, LowerCodePoints(w), /*whole_words=*/false, 1) > 0;
      });
    }
    case Kind::kKeywordsForbiddenWords: {
      const std::vector<char32_t> text = LowerCodePoints(response);
      return std::none_of(in.words.begin(), in.words.end(), [&](const std::string& w) {
        return CountOccurrences(text, LowerCodePoints(w), /*whole_words=*/true, 1) > 0;
      });
    }
    case Kind::kKeywordsFrequency: {
      // Counting stops once the answer is known.
      const size_t n = CountOccurrences(LowerCodePoints(response), LowerCodePoints(in.text),
                                        /*whole_words=*/false, in.count);
      return Compare(n, in.relation, in.count);
    }
    case Kind::kKeywordsLetterFrequency: {
      const std::vector<char32_t> text = LowerCodePoints(response);
      size_t p = 0;
      const char32_t letter = NextCodePoint(in.text, &p);
      return Compare(static_cast<uint64_t>(std::count(text.begin(), text.end(), letter)),
                     in.relation, in.count);
    }
    case Kind::kNumberSentences:
      return Compare(CountSentences(response), in.relation, in.count);
    case Kind::kNumberWords:
      return Compare(CountWords(response), in.relation, in.count);
    case Kind::kNumberParagraphs:
      return ParagraphsFollow(response, in.count);
    case Kind::kNthParagraphFirstWord:
      return NthParagraphFollows(response, in);
    case Kind::kNumberPlaceholders:
      return CountPlaceholders(response) >= in.count;
    case Kind::kPostscript:
      return PostscriptFollows(response, in.text);
    case Kind::kNumberBulletLists:
      return CountBullets(response, '*') + CountBullets(response, '-') == in.count;
    case Kind::kConstrainedResponse: {
      const std::string_view v = Strip(response);
      for (std::string_view option :
           {"My answer is yes.", "My answer is no.", "My answer is maybe."}) {
        if (v.find(option) != std::string_view::npos) return true;
      }
      return false;
    }
    case Kind::kNumberHighlightedSections:
      return CountHighlights(response) >= in.count;
    case Kind::kMultipleSections:
      return CountSections(response, in.text) >= in.count;
    case Kind::kJsonFormat:
      return JsonFollows(response);
    case Kind::kTitle:
      return TitleFollows(response);
    case Kind::kTwoResponses:
      return TwoResponsesFollow(response);
    case Kind::kRepeatPrompt:
      return StartsWithLowered(StripLeft(response), in.text);
    case Kind::kEndChecker:
      return EndFollows(response, in.text);
    case Kind::kCapitalWordFrequency:
      return Compare(CountUpperCaseWords(response), in.relation, in.count);
    case Kind::kEnglishCapital:
      return IsUpper(response);
    case Kind::kEnglishLowercase:
      return IsLower(response);
    case Kind::kNoComma:
      return response.find(',') == std::string_view::npos;
    case Kind::kQuotation:
      return QuotationFollows(response);
  }
  return false;
}

std::vector<InstructionOutcome> CheckAll(std::span<const Instruction> instructions,
                                         std::string_view response) {
  std::vector<InstructionOutcome> out(instructions.size());
  bool all_strict = true;
  for (size_t i = 0; i < instructions.size(); ++i) {
    out[i].strict = out[i].loose = Follows(instructions[i], response);
    all_strict &= out[i].strict;
  }
  if (all_strict) return out;

  // IFEval's loose variants: the response without its first line, its last, or both (lines are
  // split on '\n' only; each variant stripped), and each of the four with every '*' removed.
  const size_t first_nl = response.find('\n');
  const size_t last_nl = response.rfind('\n');
  const bool one_line = first_nl == std::string_view::npos;
  const std::string_view remove_first = one_line ? "" : Strip(response.substr(first_nl + 1));
  const std::string_view remove_last = one_line ? "" : Strip(response.substr(0, last_nl));
  const std::string_view remove_both =
      one_line || first_nl == last_nl
          ? ""
          : Strip(response.substr(first_nl + 1, last_nl - first_nl - 1));
  const auto no_stars = [](std::string_view s) {
    std::string starless;
    starless.reserve(s.size());
    for (char c : s) {
      if (c != '*') starless.push_back(c);
    }
    return starless;
  };
  const std::array<std::string, 4> starless = {no_stars(response), no_stars(remove_first),
                                               no_stars(remove_last), no_stars(remove_both)};
  // The variants in IFEval's order, each tried once: without '*' in the response the starless
  // ones repeat the others, and of a one-line response only the response is left.
  const bool has_stars = response.find('*') != std::string_view::npos;
  const std::array<std::string_view, 7> all = {starless[0], remove_first, remove_last, remove_both,
                                               starless[1], starless[2],  starless[3]};
  const std::array<bool, 7> distinct = {has_stars,
                                        !one_line,
                                        !one_line,
                                        !one_line,
                                        has_stars && !one_line,
                                        has_stars && !one_line,
                                        has_stars && !one_line};
  for (size_t i = 0; i < instructions.size(); ++i) {
    if (out[i].loose) continue;
    for (size_t k = 0; k < all.size(); ++k) {
      if (!distinct[k]) continue;
      const std::string_view v = all[k];
      if (Follows(instructions[i], v)) {
        out[i].loose = true;
        break;
      }
    }
  }
  return out;
}

}  // namespace rlscore::scorers::instructions
