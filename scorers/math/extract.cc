#include "scorers/math/extract.h"

#include <algorithm>
#include <cstddef>
#include <optional>

namespace rlscore::scorers::math {
namespace {

using std::string_view;

constexpr size_t kMaxParts = 16;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

string_view Trim(string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Strips what surrounds an answer but is not part of it: spaces, '$', markdown bold, and
// trailing sentence punctuation (not '!': "5!" is a factorial).
string_view Clean(string_view s) {
  for (;;) {
    const size_t before = s.size();
    s = Trim(s);
    while (!s.empty() && (s.front() == '$' || s.front() == '*')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == '$' || s.back() == '*' || s.back() == '.' ||
                          s.back() == ',' || s.back() == ';')) {
      s.remove_suffix(1);
    }
    if (s.size() == before) return s;
  }
}

// The index of the '}' that closes the '{' at `open`, or npos. "\{" and "\}" are literal braces
// (set notation) and do not count.
size_t MatchBrace(string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size() && (s[i + 1] == '{' || s[i + 1] == '}')) {
      ++i;
      continue;
    }
    if (c == '{') ++depth;
    if (c == '}' && --depth == 0) return i;
  }
  return string_view::npos;
}

struct Box {
  size_t begin;         // of the command
  size_t end;           // one past the closing brace
  string_view content;  // inside the braces
};

// Every \boxed{…} / \fbox{…} in order; `cut` when the last one never closes.
std::vector<Box> FindBoxes(string_view s, bool* cut) {
  std::vector<Box> boxes;
  *cut = false;
  size_t i = 0;
  while ((i = s.find('\\', i)) != string_view::npos) {
    size_t name_end = 0;
    if (s.compare(i, 6, "\\boxed") == 0) {
      name_end = i + 6;
    } else if (s.compare(i, 5, "\\fbox") == 0) {
      name_end = i + 5;
    } else {
      ++i;
      continue;
    }
    size_t j = name_end;
    while (j < s.size() && IsSpace(s[j])) ++j;
    if (j < s.size() && s[j] == '{') {
      const size_t close = MatchBrace(s, j);
      if (close == string_view::npos) {
        *cut = true;  // everything after it is inside the unterminated box
        return boxes;
      }
      boxes.push_back({i, close + 1, s.substr(j + 1, close - j - 1)});
      i = close + 1;
    } else if (j < s.size() && j > name_end && !IsSpace(s[j]) && s[j] != '$') {
      // "\boxed 5": one token.
      size_t k = j;
      while (k < s.size() && !IsSpace(s[k]) && s[k] != '$') ++k;
      boxes.push_back({i, k, s.substr(j, k - j)});
      i = k;
    } else {
      i = name_end;
    }
  }
  return boxes;
}

bool IsLabelStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsLabelChar(char c) { return IsLabelStart(c) || IsDigit(c) || c == '_'; }

// True when `between` only separates parts of one answer: commas, "and", spaces, '$', \quad.
bool OnlySeparators(string_view between) {
  size_t i = 0;
  while (i < between.size()) {
    const char c = between[i];
    if (IsSpace(c) || c == ',' || c == '$' || c == ';') {
      ++i;
    } else if (between.compare(i, 3, "and") == 0) {
      i += 3;
    } else if (between.compare(i, 5, "\\quad") == 0) {
      i += 5;
    } else if (between.compare(i, 7, "\\text{ ") == 0 || between.compare(i, 6, "\\text{") == 0) {
      i += between.compare(i, 7, "\\text{ ") == 0 ? 7 : 6;
    } else if (c == '}' || c == '\\' || c == ' ' || c == '=') {
      ++i;
    } else if (IsLabelStart(c)) {
      // A short label before '=' ("x = \boxed{3}, y = \boxed{5}"): letters, digits, '_'.
      size_t j = i;
      while (j < between.size() && j - i < 4 && IsLabelChar(between[j])) ++j;
      size_t k = j;
      while (k < between.size() && IsSpace(between[k])) ++k;
      if (k >= between.size() || between[k] != '=') return false;
      i = k + 1;
    } else {
      return false;
    }
  }
  return true;
}

size_t FindLastCaseless(string_view s, string_view needle) {
  if (needle.size() > s.size()) return string_view::npos;
  for (size_t i = s.size() - needle.size() + 1; i-- > 0;) {
    bool match = true;
    for (size_t k = 0; k < needle.size() && match; ++k) match = Lower(s[i + k]) == needle[k];
    if (match) return i;
  }
  return string_view::npos;
}

// From `i` to the end of the sentence: a '.' followed by a space or the end (a decimal point is
// followed by a digit), or a line break.
string_view SentenceFrom(string_view s, size_t i) {
  size_t j = i;
  int dollars = 0;
  for (; j < s.size(); ++j) {
    const char c = s[j];
    if (c == '$') ++dollars;
    if (c == '\n' && dollars % 2 == 0) break;
    if (c == '.' && dollars % 2 == 0 && (j + 1 == s.size() || IsSpace(s[j + 1]))) break;
  }
  return s.substr(i, j - i);
}

// The content of the last complete math environment.
std::optional<string_view> LastMathEnvironment(string_view s) {
  std::optional<string_view> last;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '$') {
      const bool display = i + 1 < s.size() && s[i + 1] == '$';
      const size_t open = i + (display ? 2 : 1);
      const size_t close = s.find(display ? "$$" : "$", open);
      if (close == string_view::npos) break;
      last = s.substr(open, close - open);
      i = close + (display ? 2 : 1);
    } else if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '(' || s[i + 1] == '[')) {
      const char* closer = s[i + 1] == '(' ? "\\)" : "\\]";
      const size_t close = s.find(closer, i + 2);
      if (close == string_view::npos) break;
      last = s.substr(i + 2, close - i - 2);
      i = close + 2;
    } else {
      ++i;
    }
  }
  return last;
}

// The last number of the section's final sentence: digits with decimal points, separators in
// groups of three, a fraction bar, and a leading sign.
std::optional<string_view> LastNumberOfFinalSentence(string_view s) {
  s = Trim(s);
  // The final sentence: after the last sentence break that is not at the very end.
  string_view body = s;
  while (!body.empty() && (body.back() == '.' || IsSpace(body.back()))) body.remove_suffix(1);
  size_t start = 0;
  for (size_t j = body.size(); j-- > 0;) {
    if (body[j] == '\n' || (body[j] == '.' && j + 1 < body.size() && IsSpace(body[j + 1]))) {
      start = j + 1;
      break;
    }
  }
  const string_view sentence = body.substr(start);
  for (size_t end = sentence.size(); end-- > 0;) {
    if (!IsDigit(sentence[end])) continue;
    size_t begin = end;
    while (begin > 0) {
      const char c = sentence[begin - 1];
      const bool inner = begin >= 2 && IsDigit(sentence[begin - 2]);
      if (IsDigit(c) || ((c == '.' || c == '/' || c == ',') && inner)) {
        --begin;
      } else {
        break;
      }
    }
    if (begin > 0 && (sentence[begin - 1] == '-' || sentence[begin - 1] == '+')) --begin;
    return sentence.substr(begin, end + 1 - begin);
  }
  return std::nullopt;
}

}  // namespace

ExtractedAnswer ExtractAnswer(string_view s) {
  ExtractedAnswer out;
  bool cut = false;
  const std::vector<Box> boxes = FindBoxes(s, &cut);
  if (cut) {
    out.detail = "unterminated \\boxed{: the generation was cut";
    return out;
  }
  if (!boxes.empty()) {
    size_t first = boxes.size() - 1;
    while (
        first > 0 && boxes.size() - first < kMaxParts &&
        OnlySeparators(s.substr(boxes[first - 1].end, boxes[first].begin - boxes[first - 1].end))) {
      --first;
    }
    for (size_t b = first; b < boxes.size(); ++b) {
      out.parts.emplace_back(Clean(boxes[b].content));
    }
    out.detail = boxes.size() - first > 1 ? "boxes (multi-part)" : "last \\boxed{}";
    return out;
  }
  if (const size_t open = s.rfind("<answer>"); open != string_view::npos) {
    const size_t close = s.find("</answer>", open);
    if (close != string_view::npos) {
      out.parts.emplace_back(Clean(s.substr(open + 8, close - open - 8)));
      out.detail = "<answer> tags";
      return out;
    }
  }
  size_t best = string_view::npos;
  size_t best_len = 0;
  for (string_view phrase : {"answer is", "answer:", "answer :"}) {
    const size_t at = FindLastCaseless(s, phrase);
    if (at != string_view::npos && (best == string_view::npos || at > best)) {
      best = at;
      best_len = phrase.size();
    }
  }
  if (best != string_view::npos) {
    string_view sentence = SentenceFrom(s, best + best_len);
    if (const std::optional<string_view> env = LastMathEnvironment(sentence)) sentence = *env;
    sentence = Clean(sentence);
    if (!sentence.empty()) {
      out.parts.emplace_back(sentence);
      out.detail = "answer phrase";
      return out;
    }
  }
  if (const std::optional<string_view> env = LastMathEnvironment(s)) {
    const string_view content = Clean(*env);
    if (!content.empty()) {
      out.parts.emplace_back(content);
      out.detail = "last math environment";
      return out;
    }
  }
  if (const std::optional<string_view> number = LastNumberOfFinalSentence(s)) {
    out.parts.emplace_back(*number);
    out.detail = "last number of the final sentence";
    return out;
  }
  out.detail = "no answer in the answer section";
  return out;
}

}  // namespace rlscore::scorers::math
