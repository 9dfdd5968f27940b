#include "common/json_input.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace rlscore {
namespace {

using Json = nlohmann::json;

// Thrown by the builder at the first container past kMaxJsonDepth.
struct TooDeep {
  size_t depth;
};

// At most this much of what nlohmann quotes from the input ("last read: '...'", "number overflow
// parsing '...'") goes into a message: nlohmann quotes an unterminated string of 30 MB whole.
constexpr size_t kMaxReasonBytes = 256;

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, ".
std::string_view Reason(const Json::exception& e) {
  std::string_view what = e.what();
  if (const size_t bracket = what.find("] "); bracket != std::string_view::npos) {
    what.remove_prefix(bracket + 2);
  }
  if (const size_t colon = what.find(": ");
      colon != std::string_view::npos && what.substr(0, colon).find("parse error") == 0) {
    what.remove_prefix(colon + 2);
  }
  return what;
}

// Builds the value as nlohmann's own DOM parser does (a key given twice keeps its last value),
// and stops at the first array or object nested deeper than kMaxJsonDepth, for
// nlohmann::json::sax_parse. Linear in the text: nlohmann's parser with a callback, the usual way
// to limit depth, looks through an object's parent for discarded values at the end of every
// object, and takes minutes over an array of a million objects.
class LimitedDepthBuilder {
 public:
  explicit LimitedDepthBuilder(Json* root) : root_(root) {}

  bool null() { return Put(nullptr); }
  bool boolean(bool value) { return Put(value); }
  bool number_integer(Json::number_integer_t value) { return Put(value); }
  bool number_unsigned(Json::number_unsigned_t value) { return Put(value); }
  bool number_float(Json::number_float_t value, const Json::string_t&) { return Put(value); }
  bool string(Json::string_t& value) { return Put(std::move(value)); }
  bool binary(Json::binary_t& value) { return Put(Json::binary(std::move(value))); }
  bool start_object(size_t) { return Open(Json::object()); }
  bool key(Json::string_t& name) {
    slot_ = &(*open_.back())[std::move(name)];
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(size_t) { return Open(Json::array()); }
  bool end_array() { return Close(); }
  template <typename Exception>
  bool parse_error(size_t position, const std::string& token, const Exception& e) {
    token_start_ = position >= token.size() ? position - token.size() + 1 : 0;
    throw e;
  }
  // Where the token the parser refused starts (1-based); 0 before an error.
  size_t token_start() const { return token_start_; }

 private:
  // The value's place: the root, the end of the open array, or the slot of the last key.
  template <typename Value>
  Json* Place(Value&& value) {
    if (open_.empty()) {
      *root_ = Json(std::forward<Value>(value));
      return root_;
    }
    Json& container = *open_.back();
    if (container.is_array()) {
      container.push_back(Json(std::forward<Value>(value)));
      return &container.back();
    }
    *slot_ = Json(std::forward<Value>(value));
    return slot_;
  }
  template <typename Value>
  bool Put(Value&& value) {
    Place(std::forward<Value>(value));
    return true;
  }
  // A container stays where it was placed while it is open: nothing is added to its parent
  // until it closes.
  bool Open(Json empty) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth)) throw TooDeep{open_.size() + 1};
    open_.push_back(Place(std::move(empty)));
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  Json* root_;
  std::vector<Json*> open_;
  Json* slot_ = nullptr;
  size_t token_start_ = 0;
};

// MemberText's first pass: which of the top-level members is the last whose key, unescaped,
// is `key`, counting from 0.
class MemberFinder {
 public:
  explicit MemberFinder(std::string_view key) : key_(key) {}

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(Json::number_integer_t) { return true; }
  bool number_unsigned(Json::number_unsigned_t) { return true; }
  bool number_float(Json::number_float_t, const Json::string_t&) { return true; }
  bool string(Json::string_t&) { return true; }
  bool binary(Json::binary_t&) { return true; }
  bool start_object(size_t) { return Open(); }
  bool key(Json::string_t& name) {
    if (depth_ == 1) {
      if (name == key_) found_ = members_;
      ++members_;
    }
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(size_t) { return Open(); }
  bool end_array() { return Close(); }
  template <typename Exception>
  bool parse_error(size_t, const std::string&, const Exception&) {
    found_.reset();
    return false;
  }
  std::optional<size_t> found() const { return found_; }

 private:
  bool Open() {
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }

  std::string_view key_;
  size_t depth_ = 0;
  size_t members_ = 0;
  std::optional<size_t> found_;
};

// The raw walk over text that nlohmann read without error, so every token is known to be whole.
bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipSpace(std::string_view text, size_t at) {
  while (at < text.size() && IsJsonSpace(text[at])) ++at;
  return at;
}

// One past the quote that closes the string whose opening quote is at `at`.
size_t StringEnd(std::string_view text, size_t at) {
  for (size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;  // the escaped character cannot end the string
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return text.size();
}

// One past the end of the value that starts at `at`.
size_t ValueEnd(std::string_view text, size_t at) {
  const char first = text[at];
  if (first == '"') return StringEnd(text, at);
  if (first == '[' || first == '{') {
    size_t open = 0;
    for (size_t i = at; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '"') {
        i = StringEnd(text, i) - 1;
      } else if (c == '[' || c == '{') {
        ++open;
      } else if ((c == ']' || c == '}') && --open == 0) {
        return i + 1;
      }
    }
    return text.size();
  }
  size_t i = at;  // a number or a literal: up to what follows it
  while (i < text.size() && !IsJsonSpace(text[i]) && text[i] != ',' && text[i] != ']' &&
         text[i] != '}') {
    ++i;
  }
  return i;
}

// `value`'s text less the whitespace outside its strings.
std::string WithoutSpace(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    if (value[i] == '"') {
      const size_t end = StringEnd(value, i);
      out.append(value.substr(i, end - i));
      i = end;
    } else {
      if (!IsJsonSpace(value[i])) out.push_back(value[i]);
      ++i;
    }
  }
  return out;
}

// The 1-based offset of the bracket that opens the first container nested `depth` deep in
// `text`, which parsed without error up to it; 0 if there is none.
size_t OffsetOfDepth(std::string_view text, size_t depth) {
  size_t open = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++open == depth) return i + 1;
    } else if (c == ']' || c == '}') {
      --open;
    }
  }
  return 0;
}

// A note for an error at `byte` (1-based, as nlohmann counts) in a NaN, Infinity or -Infinity:
// Python's json module writes them for such floats, so a file of them is common, and nlohmann
// says only "invalid literal". Empty for any other error.
std::string_view NonFiniteNote(std::string_view text, size_t byte) {
  size_t start = std::min(byte, text.size());
  while (start > 0 && (std::isalpha(static_cast<unsigned char>(text[start - 1])) != 0 ||
                       text[start - 1] == '-')) {
    --start;
  }
  for (const std::string_view word : {"NaN", "Infinity", "-Infinity"}) {
    if (text.substr(start, word.size()) == word) {
      return " (NaN and Infinity are not JSON: Python's json.dumps writes them for such floats "
             "unless allow_nan=False; write null or a number)";
    }
  }
  return {};
}

}  // namespace

absl::StatusOr<Json> ParseJsonObject(std::string_view text, std::string_view unit) {
  // nlohmann's reader ends the input at a NUL byte, so `{}` then a NUL and anything at all would
  // read as `{}`. JSON has no place for one (inside a string it is \u0000).
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at ", Sv(unit), " ", nul + 1,
                                                   ": a NUL byte, which JSON allows nowhere"));
  }
  Json parsed;
  LimitedDepthBuilder builder(&parsed);
  // nlohmann reports errors, and where, only by throwing: every exception stops here.
  try {
    Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const Json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at ", Sv(unit), " ", e.byte, ": ",
                                                   Clip(Reason(e), kMaxReasonBytes),
                                                   Sv(NonFiniteNote(text, e.byte))));
  } catch (const Json::exception& e) {  // out_of_range: a number too large for a double
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at ", Sv(unit), " ",
                                                   builder.token_start(), ": ",
                                                   Clip(Reason(e), kMaxReasonBytes)));
  } catch (const TooDeep& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON at ", Sv(unit), " ", OffsetOfDepth(text, e.depth),
                     ": nested deeper than ", kMaxJsonDepth, " levels"));
  }
  if (!parsed.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a JSON object, got ", parsed.type_name()));
  }
  return parsed;
}

std::optional<std::string> MemberText(std::string_view text, std::string_view key) {
  MemberFinder finder(key);
  try {
    if (!Json::sax_parse(text.begin(), text.end(), &finder)) return std::nullopt;
  } catch (const Json::exception&) {  // not text that ParseJsonObject read
    return std::nullopt;
  }
  if (!finder.found().has_value()) return std::nullopt;
  // The object's opening brace: after a byte order mark, which nlohmann skips, and whitespace.
  size_t at = text.find('{');
  if (at == std::string_view::npos) return std::nullopt;
  for (size_t member = 0;; ++member) {
    at = SkipSpace(text, at + 1);                  // past '{' or ','
    at = SkipSpace(text, StringEnd(text, at));     // the key, to its ':'
    const size_t value = SkipSpace(text, at + 1);  // past ':'
    const size_t end = ValueEnd(text, value);
    if (member == *finder.found()) return WithoutSpace(text.substr(value, end - value));
    at = SkipSpace(text, end);  // at the ',' before the next member
    if (at >= text.size()) return std::nullopt;
  }
}

std::vector<std::string_view> ElementTexts(std::string_view array) {
  std::vector<std::string_view> elements;
  if (array.size() < 2 || array.front() != '[') return elements;
  for (size_t at = 1; at < array.size() && array[at] != ']';) {
    const size_t end = ValueEnd(array, at);
    elements.push_back(array.substr(at, end - at));
    at = end + (end < array.size() && array[end] == ',' ? 1 : 0);
  }
  return elements;
}

JsonShape CountJsonShape(std::string_view text) {
  JsonShape shape;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    switch (*p++) {
      case '"': {
        ++shape.strings;
        // To the quote that ends it: one after an even number of backslashes.
        for (;;) {
          const void* quote = std::memchr(p, '"', static_cast<size_t>(end - p));
          if (quote == nullptr) return shape;  // unterminated
          const char* q = static_cast<const char*>(quote);
          const char* b = q;
          while (b > p && b[-1] == '\\') --b;
          p = q + 1;
          if ((q - b) % 2 == 0) break;
        }
        break;
      }
      case '{':
      case '[':
        ++shape.containers;
        break;
      case ',':
        ++shape.values;
        break;
      default:
        break;
    }
  }
  return shape;
}

uint64_t JsonTreeBytes(std::string_view text, const JsonShape& shape) {
  return text.size() + 64 * shape.strings + 128 * shape.containers + 48 * shape.values;
}

}  // namespace rlscore
