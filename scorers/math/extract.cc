#include "scorers/math/extract.h"

#include <algorithm>
#include <cstddef>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

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
    while (!s.empty() && (s.front() == '$' || s.front() == '*' || s.front() == '`' ||
                          s.front() == '=' || s.front() == ':' || s.front() == '"')) {
      s.remove_prefix(1);  // "= \frac{10}{9}": the rest of a relation whose left side was prose
    }
    if (s.starts_with("\\\"")) s.remove_prefix(2);  // a quote escaped by the JSON it came from
    while (!s.empty() && s.back() == '"') {
      s.remove_suffix(s.size() >= 2 && s[s.size() - 2] == '\\' ? 2 : 1);
    }
    while (!s.empty() && (s.back() == '$' || s.back() == '*' || s.back() == '.' ||
                          s.back() == ',' || s.back() == ';' || s.back() == '`')) {
      // A trailing spacing macro ("\frac{1}{2}\,", "12\;") goes whole, backslash included.
      const bool macro =
          (s.back() == ',' || s.back() == ';') && s.size() >= 2 && s[s.size() - 2] == '\\';
      s.remove_suffix(macro ? 2 : 1);
    }
    if (s.size() >= 2 && s[s.size() - 2] == '\\' && (s.back() == '!' || s.back() == ' ')) {
      s.remove_suffix(2);
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

// Every \boxed{…} / \fbox{…} in order; `cut` names the command ("\fbox") when the last one
// never closes (with `open_to_end`, that one is kept, running to the end of the text).
std::vector<Box> FindBoxes(string_view s, string_view* cut, bool open_to_end) {
  std::vector<Box> boxes;
  *cut = {};
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
        *cut = s.substr(i, name_end - i);  // everything after it is inside the open box
        if (open_to_end) boxes.push_back({i, s.size(), s.substr(j + 1)});
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

// A few words (a unit, "for part (a)") that end with "and" / "or" / ',': no digits, no math.
bool EndsWithConnector(string_view t) {
  while (!t.empty() && (IsSpace(t.back()) || t.back() == '}' || t.back() == '$')) {
    t.remove_suffix(1);
  }
  size_t cut = 0;
  if (t.ends_with(",")) {
    cut = 1;
  } else if (t.ends_with(" and") || t == "and") {
    cut = 3;
  } else if (t.ends_with(" or") || t == "or") {
    cut = 2;
  } else {
    return false;
  }
  t.remove_suffix(cut);
  size_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (t.compare(i, 6, "\\text{") == 0) {
      i += 5;
      in_word = false;
      continue;
    }
    if (IsLabelStart(c)) {
      if (!in_word) ++words;
      in_word = true;
      continue;
    }
    in_word = false;
    if (!(IsSpace(c) || c == '(' || c == ')' || c == '}' || c == '$')) return false;
  }
  return words <= 4;
}

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
    } else if (between.compare(i, 2, "\\(") == 0 || between.compare(i, 2, "\\)") == 0 ||
               between.compare(i, 2, "\\[") == 0 || between.compare(i, 2, "\\]") == 0) {
      i += 2;  // "\(\boxed{1}\) and \(\boxed{-2}\)": one answer typeset in two pieces
    } else if (between.compare(i, 2, "or") == 0 &&
               (i + 2 == between.size() || !IsLabelChar(between[i + 2]))) {
      i += 2;
    } else if (between.compare(i, 7, "\\text{ ") == 0 || between.compare(i, 6, "\\text{") == 0) {
      i += between.compare(i, 7, "\\text{ ") == 0 ? 7 : 6;
    } else if (c == '}' || c == '\\' || c == ' ' || c == '=') {
      ++i;
    } else if (IsLabelStart(c) && EndsWithConnector(between.substr(i))) {
      return true;  // "\boxed{1} papers and \boxed{2}", "\boxed{3} \text{ for part (a) and }"
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

// A '$' that opens or closes inline math, by pandoc's rule: not escaped ("\$" is a dollar sign);
// an opener is followed by a non-space, a closer preceded by a non-space and not followed by a
// digit ("costs $17. She has $5" holds no math).
bool IsEscaped(string_view s, size_t i) { return i > 0 && s[i - 1] == '\\'; }
bool CanOpen(string_view s, size_t i) {
  return !IsEscaped(s, i) && i + 1 < s.size() && !IsSpace(s[i + 1]);
}
bool CanClose(string_view s, size_t i) {
  return !IsEscaped(s, i) && i > 0 && !IsSpace(s[i - 1]) &&
         !(i + 1 < s.size() && IsDigit(s[i + 1]));
}

struct Span {
  size_t begin;  // of the content
  size_t end;
};

// For a '$' at `i` followed by a space: the '$' that closes it when the content begins with a
// LaTeX command ("$ \frac{1}{2} $"), within the paragraph; else npos.
size_t SpacedMathClose(string_view s, size_t i) {
  size_t j = i + 1;
  while (j < s.size() && IsSpace(s[j]) && s[j] != '\n') ++j;
  if (j + 1 >= s.size() || s[j] != '\\' || !IsLabelStart(s[j + 1])) return string_view::npos;
  for (size_t k = j; k < s.size(); ++k) {
    if (s[k] == '\n' && k + 1 < s.size() && s[k + 1] == '\n') return string_view::npos;
    if (s[k] == '$' && !IsEscaped(s, k)) return k;
  }
  return string_view::npos;
}

// Every complete math environment ($…$, $$…$$, \(…\), \[…\]), in order. Linear.
std::vector<Span> MathEnvironments(string_view s) {
  std::vector<Span> envs;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '$' && !IsEscaped(s, i)) {
      if (i + 1 < s.size() && s[i + 1] == '$') {
        const size_t close = s.find("$$", i + 2);
        if (close == string_view::npos) return envs;
        envs.push_back({i + 2, close});
        i = close + 2;
        continue;
      }
      if (!CanOpen(s, i)) {
        // "$ \begin{pmatrix}…\end{pmatrix} $": spaces inside, but a LaTeX command first, which
        // no amount of currency starts with.
        if (const size_t close = SpacedMathClose(s, i); close != string_view::npos) {
          envs.push_back({i + 1, close});
          i = close + 1;
          continue;
        }
        ++i;
        continue;
      }
      size_t close = i + 1;
      while (close < s.size() && !(s[close] == '$' && CanClose(s, close))) {
        if (s[close] == '\n' && close + 1 < s.size() && s[close + 1] == '\n') break;  // paragraph
        ++close;
      }
      if (close >= s.size() || s[close] != '$') {
        ++i;
        continue;
      }
      envs.push_back({i + 1, close});
      i = close + 1;
    } else if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '(' || s[i + 1] == '[')) {
      const char* closer = s[i + 1] == '(' ? "\\)" : "\\]";
      const size_t close = s.find(closer, i + 2);
      if (close == string_view::npos) return envs;
      envs.push_back({i + 2, close});
      i = close + 2;
    } else {
      ++i;
    }
  }
  return envs;
}

// True when one math environment holds both [begin, end): boxes typeset in one formula
// ("$\boxed{3} \text{ for (a) and } \boxed{5}$") are one answer.
bool InOneEnvironment(const std::vector<Span>& envs, size_t begin, size_t end) {
  for (const Span& env : envs) {
    if (env.begin <= begin && end <= env.end) return true;
  }
  return false;
}

// The section up to a chat template's end-of-turn token ("<|im_end|>", "<|im_start|>user",
// "<|endoftext|>", "<|eot_id|>"): what follows one is not the model's answer.
string_view BeforeEndOfTurn(string_view s) {
  size_t from = 0;
  while ((from = s.find("<|", from)) != string_view::npos) {
    const size_t close = s.find("|>", from + 2);
    if (close == string_view::npos || close - from > 32) break;
    const string_view name = s.substr(from + 2, close - from - 2);
    const bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return IsLabelChar(c) || c == '-';
    });
    if (token && !Trim(s.substr(0, from)).empty()) return s.substr(0, from);
    from = close + 2;
  }
  return s;
}

// The sentence that starts at `i`: up to a '.' followed by a space or the end (a decimal point
// is followed by a digit) or a line break, outside math.
string_view SentenceFrom(string_view s, size_t i) {
  const std::vector<Span> envs = MathEnvironments(s.substr(i));
  size_t env = 0;
  size_t j = i;
  for (; j < s.size(); ++j) {
    while (env < envs.size() && i + envs[env].end < j) ++env;
    const bool in_math = env < envs.size() && i + envs[env].begin <= j && j < i + envs[env].end;
    if (in_math) continue;
    const char c = s[j];
    if (c == '\n') break;
    if ((c == '.' || c == '!' || c == '?') && (j + 1 == s.size() || IsSpace(s[j + 1]))) break;
  }
  return s.substr(i, j - i);
}

// A whitespace-separated token that reads as (part of) an expression: it holds a digit, or it
// is an operator on its own.
bool IsMathToken(string_view t) {
  bool digit = false;
  for (char c : t) {
    if (IsDigit(c)) digit = true;
  }
  if (digit) return true;
  // Infinity, union, radicals and pi, in Unicode or LaTeX, carry no digit but belong to it.
  for (string_view symbol :
       {"\xE2\x88\x9E", "\xE2\x88\xAA", "\xE2\x88\x9A", "\\infty", "\\cup", "\\sqrt"}) {
    if (t.find(symbol) != string_view::npos) return true;
  }
  return t == "/" || t == "+" || t == "-" || t == "=" || t == "*" || t == "\\times" ||
         t == "\\cdot" || t == "\xC3\x97" /* × */ || t == "\xE2\x88\x92" /* − */ || t == "\\pi" ||
         t == "\xCF\x80" /* π */;
}

// A closing remark that holds no answer: "I hope it is correct", "Hope this helps".
bool IsSignOff(string_view sentence) {
  for (string_view opener : {"i hope", "hope this", "hope it", "let me know"}) {
    if (sentence.size() >= opener.size()) {
      bool same = true;
      for (size_t k = 0; k < opener.size() && same; ++k) same = Lower(sentence[k]) == opener[k];
      if (same) return true;
    }
  }
  return false;
}

// The whitespace-separated token that ends before `end` (after `start`).
string_view PreviousToken(string_view s, size_t start, size_t end) {
  while (end > start && IsSpace(s[end - 1])) --end;
  size_t b = end;
  while (b > start && !IsSpace(s[b - 1])) --b;
  return s.substr(b, end - b);
}

// The last number or expression of the section's final sentence, and where it starts: the last
// run of math-like tokens ("7 marbles" → "7", "(3, 4)", "4.5 × 10^9", "−8°C", "2√3").
std::optional<Span> LastExpressionOfFinalSentence(string_view s) {
  size_t end = s.size();
  while (end > 0 &&
         (IsSpace(s[end - 1]) || s[end - 1] == '.' || s[end - 1] == '!' || s[end - 1] == '*')) {
    --end;
  }
  size_t start = 0;
  for (size_t j = end; j-- > 0;) {
    if (s[j] == '\n' || (s[j] == '.' && j + 1 < end && IsSpace(s[j + 1]))) {
      start = j + 1;
      // "… is 12. I hope it is correct.": a sign-off is not the final sentence.
      if (IsSignOff(Trim(s.substr(start, end - start)))) {
        end = j;
        start = 0;
        continue;
      }
      break;
    }
  }
  // Tokens of the final sentence, walked from the end.
  std::optional<Span> run;
  size_t j = end;
  while (j > start) {
    while (j > start && IsSpace(s[j - 1])) --j;
    size_t b = j;
    while (b > start && !IsSpace(s[b - 1])) --b;
    if (b == j) break;
    string_view token = s.substr(b, j - b);
    // Trim word characters glued to a number's end ("7th" no; "8°C" keeps its unit to the lexer).
    if (IsMathToken(token)) {
      run = Span{b, run ? run->end : j};
    } else if (run && (token == "and" || token == "or") && b > start &&
               IsMathToken(PreviousToken(s, start, b))) {
      // "12 and 13": one answer of two parts.
    } else if (run) {
      break;  // a word before the run ends it
    }
    j = b;
  }
  if (!run) return std::nullopt;
  // "12.5 percent": the word belongs to the number.
  {
    size_t k = run->end;
    while (k < end && IsSpace(s[k])) ++k;
    if (s.compare(k, 7, "percent") == 0) run->end = k + 7;
  }
  // Drop prose punctuation at the edges: "(3, 4)." keeps its brackets; "is 42," does not keep ','.
  while (run->end > run->begin &&
         (s[run->end - 1] == ',' || s[run->end - 1] == ';' || s[run->end - 1] == ':')) {
    --run->end;
  }
  while (run->begin < run->end && (s[run->begin] == ':' || s[run->begin] == '*')) ++run->begin;
  if (run->begin >= run->end) return std::nullopt;
  return run;
}

// Words a model puts between "the answer is" and the answer.
bool IsLeadingFiller(string_view word) {
  static constexpr string_view kFillers[] = {"thus",   "therefore", "so",      "indeed",
                                             "simply", "exactly",   "about",   "approximately",
                                             "then",   "just",      "clearly", "now"};
  for (string_view f : kFillers) {
    if (word.size() == f.size()) {
      bool same = true;
      for (size_t k = 0; k < f.size() && same; ++k) same = Lower(word[k]) == f[k];
      if (same) return true;
    }
  }
  return false;
}

// "The largest $n$ is 34", "the volume of $ABCD$ is 120": after an answer phrase, a sentence
// that names what it gives before "is" / "are" / "equals" / "was" gives its value after it. What
// precedes the verb must be a name: words and at least one formula that holds a letter, no digit
// and no relation. So "is $5$, which is the least" keeps its 5, and "(B) because it is
// increasing" its (B).
string_view AfterNamingCopula(string_view t) {
  const std::vector<Span> envs = MathEnvironments(t);
  size_t env = 0;
  bool named = false;  // a name in math before the verb: "$n$"
  for (size_t i = 0; i < t.size(); ++i) {
    if (env < envs.size() && i >= envs[env].begin - 1) {
      const string_view math = t.substr(envs[env].begin, envs[env].end - envs[env].begin);
      const bool name = std::any_of(math.begin(), math.end(), IsLabelStart) &&
                        std::none_of(math.begin(), math.end(), [](char c) {
                          return IsDigit(c) || c == '=' || c == '<' || c == '>';
                        });
      if (!name) return t;
      named = true;
      i = envs[env].end;  // the closing delimiter's first byte
      ++env;
      continue;
    }
    if (IsDigit(t[i])) return t;
    for (string_view verb : {" is ", " are ", " equals ", " was "}) {
      if (named && t.compare(i, verb.size(), verb) == 0) {
        const string_view rest = Trim(t.substr(i + verb.size()));
        if (!rest.empty()) return rest;
      }
    }
  }
  return t;
}

// The answer in the sentence after "the answer is": a math environment when there is one, else
// the text up to the first clause break (", because", " (", …), bold and fillers removed.
string_view PhraseAnswer(string_view sentence) {
  string_view t = sentence;
  for (;;) {
    const size_t before = t.size();
    t = Trim(t);
    while (!t.empty() && (t.front() == ':' || t.front() == '*')) t.remove_prefix(1);
    t = Trim(t);
    size_t w = 0;
    while (w < t.size() && !IsSpace(t[w]) && t[w] != ',') ++w;
    if (w > 0 && IsLeadingFiller(t.substr(0, w)))
      t.remove_prefix(w < t.size() && t[w] == ',' ? w + 1 : w);
    if (t.size() == before) break;
  }
  t = AfterNamingCopula(t);
  const std::vector<Span> envs = MathEnvironments(t);
  if (!envs.empty()) return t.substr(envs.front().begin, envs.front().end - envs.front().begin);
  // Bold: "is **12** units" → "12"; "(B)** The other options" → "(B)" (a closing bold ends it).
  if (const size_t bold = t.find("**"); bold != string_view::npos) {
    const size_t close = t.find("**", bold + 2);
    t = close != string_view::npos ? t.substr(bold + 2, close - bold - 2) : t.substr(0, bold);
  }
  size_t cut = t.size();
  for (string_view clause : {" because", " since", " as ", " which", " (", " - ", " — ", " when",
                             " from", " for ", " after", " per "}) {
    size_t at = t.find(clause);
    // "option (C)": a parenthesised capital is the answer, not an aside.
    while (at != string_view::npos && clause == " (" && at + 4 < t.size() + 1 &&
           t.compare(at + 3, 1, ")") == 0 && t[at + 2] >= 'A' && t[at + 2] <= 'Z') {
      at = t.find(clause, at + 2);
    }
    cut = std::min(cut, at);
  }
  for (size_t k = 0; k + 1 < t.size(); ++k) {
    if (t[k] == ',' && IsSpace(t[k + 1]) && k + 2 < t.size() && !IsDigit(t[k + 2]) &&
        t[k + 2] != '-' && t.compare(k + 2, 4, "and ") != 0 && t.compare(k + 2, 3, "or ") != 0) {
      cut = std::min(cut, k);  // ", as computed above" ends the answer; ", 5" continues a list
      break;
    }
  }
  return t.substr(0, cut);
}

// The last answer phrase: where it starts and its length.
std::pair<size_t, size_t> LastAnswerPhrase(string_view s) {
  size_t best = string_view::npos;
  size_t best_len = 0;
  for (string_view phrase :
       {"answer is", "answer:", "answer :", "correct option is", "correct choice is"}) {
    const size_t at = FindLastCaseless(s, phrase);
    if (at != string_view::npos && (best == string_view::npos || at > best)) {
      best = at;
      best_len = phrase.size();
    }
  }
  return {best, best_len};
}

// A phrase answer that is a prose sentence ("Jane started growing Sphere 3 hours ago") gives the
// last number or expression in it; a short one ("12 apples", "all real numbers") stays whole.
string_view ValueOfProse(string_view answer) {
  size_t words = 0;
  for (size_t i = 0; i < answer.size();) {
    size_t j = i;
    while (j < answer.size() && IsLabelStart(answer[j])) ++j;
    const string_view word = answer.substr(i, j - i);
    if (word.size() >= 2 && word != "and" && word != "or") ++words;
    i = j == i ? i + 1 : j;
  }
  if (words < 3 || !MathEnvironments(answer).empty()) return answer;
  const std::optional<Span> last = LastExpressionOfFinalSentence(answer);
  return last ? answer.substr(last->begin, last->end - last->begin) : answer;
}

// The multiple-choice fallback: the section's final token when it is "X" or "(X)" (after
// trailing punctuation, markdown and closing braces), else the last "(X)" with X a capital.
string_view LastChoiceToken(string_view s) {
  auto alnum = [](char c) { return IsLabelStart(c) || IsDigit(c); };
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  size_t end = s.size();
  while (end > 0 && string_view(" \t\r\n.,;:!?*$").find(s[end - 1]) != string_view::npos) --end;
  if (end >= 3 && s[end - 1] == ')' && IsLabelStart(s[end - 2]) && s[end - 3] == '(' &&
      (end == 3 || !alnum(s[end - 4]))) {
    return s.substr(end - 3, 3);
  }
  size_t e = end;
  while (e > 0 && s[e - 1] == '}') --e;  // \textbf{C}
  if (e >= 1 && upper(s[e - 1]) && (e == 1 || !(alnum(s[e - 2]) || s[e - 2] == '\\'))) {
    return s.substr(e - 1, 1);
  }
  for (size_t i = end; i-- > 0;) {
    if (i + 2 < end && s[i] == '(' && upper(s[i + 1]) && s[i + 2] == ')' &&
        (i == 0 || !alnum(s[i - 1]))) {
      return s.substr(i, 3);
    }
  }
  return {};
}

// When `s` is `command{...}` with the brace closing at its very end, the text inside.
std::optional<string_view> Unwrap(string_view s, string_view command) {
  if (!s.starts_with(command)) return std::nullopt;
  size_t open = command.size();
  while (open < s.size() && IsSpace(s[open])) ++open;
  if (open >= s.size() || s[open] != '{' || MatchBrace(s, open) != s.size() - 1) {
    return std::nullopt;
  }
  return s.substr(open + 1, s.size() - open - 2);
}

}  // namespace

string_view StripWrappers(string_view s) {
  static constexpr string_view kWrappers[] = {
      "\\boxed",  "\\fbox",   "\\text",   "\\textbf", "\\textrm",     "\\textit",      "\\texttt",
      "\\mathrm", "\\mathbf", "\\mathit", "\\mbox",   "\\textnormal", "\\operatorname"};
  for (;;) {
    const size_t before = s.size();
    s = Trim(s);
    while (!s.empty() && (s.back() == '.' || s.back() == ',' || s.back() == ';' ||
                          s.back() == '!' || s.back() == '*' || IsSpace(s.back()))) {
      s.remove_suffix(1);
    }
    while (!s.empty() && (s.front() == '*' || IsSpace(s.front()))) s.remove_prefix(1);
    if (s.starts_with("\\displaystyle") && !(s.size() > 13 && IsLabelStart(s[13]))) {
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
      for (const string_view command : kWrappers) {
        if (const std::optional<string_view> unwrapped = Unwrap(s, command)) {
          s = *unwrapped;
          break;
        }
      }
    }
    if (s.size() == before) return s;
  }
}

ExtractedAnswer ExtractAnswer(string_view s, Source source, Fallback fallback) {
  ExtractedAnswer out;
  const bool reference = source == Source::kReference;
  s = BeforeEndOfTurn(s);
  if (Trim(s).empty()) {
    out.detail = "empty answer section";
    return out;
  }
  string_view cut;
  const std::vector<Box> boxes = FindBoxes(s, &cut, reference);
  if (!cut.empty() && !reference) {
    out.detail = absl::StrCat("unterminated ", Sv(cut), "{: the generation was cut");
    return out;
  }
  const auto [phrase, phrase_len] = LastAnswerPhrase(s);
  // "… \boxed{255} … Final Answer: The final answer is $10,455$.": the statement written after
  // the last box is the final one, when it holds a value.
  if (!boxes.empty() && phrase != string_view::npos && phrase > boxes.back().end && phrase >= 6 &&
      FindLastCaseless(s.substr(phrase - 6, 6), "final ") == 0) {
    const string_view answer = Clean(PhraseAnswer(SentenceFrom(s, phrase + phrase_len)));
    if (std::any_of(answer.begin(), answer.end(), IsDigit)) {
      out.parts.emplace_back(answer);
      out.detail = "answer phrase after the last box";
      return out;
    }
  }
  if (!boxes.empty()) {
    size_t first = boxes.size() - 1;
    const std::vector<Span> envs = MathEnvironments(s);
    while (first > 0 && boxes.size() - first < kMaxParts &&
           (OnlySeparators(
                s.substr(boxes[first - 1].end, boxes[first].begin - boxes[first - 1].end)) ||
            InOneEnvironment(envs, boxes[first - 1].begin, boxes[first].end))) {
      --first;
    }
    for (size_t b = first; b < boxes.size(); ++b) {
      const string_view part = Clean(boxes[b].content);
      if (part.empty()) continue;
      // "\boxed{5} … \boxed{5}": one answer said twice is one part.
      if (std::find(out.parts.begin(), out.parts.end(), part) == out.parts.end()) {
        out.parts.emplace_back(part);
      }
    }
    if (out.parts.empty()) {
      out.detail = "empty \\boxed{}";
      return out;
    }
    out.detail = boxes.size() - first > 1 ? "boxes (multi-part)" : "last \\boxed{}";
    return out;
  }
  // The last complete <answer>…</answer> (an unclosed one after it is ignored).
  if (const size_t close = s.rfind("</answer>"); close != string_view::npos) {
    const size_t open = s.rfind("<answer>", close);
    if (open != string_view::npos) {
      // The tags may hold a sentence ("<answer>The answer is 42</answer>"): extract within it,
      // and take the whole content when nothing more specific is there.
      const string_view content = s.substr(open + 8, close - open - 8);
      if (Clean(content).empty()) {
        out.detail = "empty <answer></answer>";
        return out;
      }
      ExtractedAnswer inner = ExtractAnswer(content, source, fallback);
      if (inner.parts.empty() || inner.detail == "last expression of the final sentence" ||
          inner.detail == "whole text") {
        inner.parts.assign(1, std::string(Clean(content)));
      }
      inner.detail = "<answer> tags";
      return inner;
    }
  }
  if (phrase != string_view::npos) {
    const string_view answer =
        Clean(ValueOfProse(Clean(PhraseAnswer(SentenceFrom(s, phrase + phrase_len)))));
    if (!answer.empty()) {
      out.parts.emplace_back(answer);
      out.detail = "answer phrase";
      return out;
    }
  }
  if (fallback == Fallback::kChoiceLetter) {
    const string_view letter = LastChoiceToken(s);
    if (!letter.empty()) out.parts.emplace_back(letter);
    out.detail = letter.empty() ? "no choice letter in the answer section" : "final choice letter";
    return out;
  }
  if (fallback == Fallback::kWholeText) {
    const string_view text = Clean(s);
    if (!text.empty()) out.parts.emplace_back(text);
    out.detail = text.empty() ? "empty answer section" : "whole text";
    return out;
  }
  // The last math environment, unless a number written after it in prose ends the section.
  const std::vector<Span> envs = MathEnvironments(s);
  const std::optional<Span> expression = LastExpressionOfFinalSentence(s);
  const bool env_is_later = !envs.empty() && (!expression || envs.back().end >= expression->begin);
  if (env_is_later) {
    const string_view content =
        Clean(s.substr(envs.back().begin, envs.back().end - envs.back().begin));
    if (!content.empty()) {
      out.parts.emplace_back(content);
      out.detail = "last math environment";
      return out;
    }
  }
  if (expression) {
    out.parts.emplace_back(Clean(s.substr(expression->begin, expression->end - expression->begin)));
    out.detail = "last expression of the final sentence";
    return out;
  }
  out.detail = "no answer in the answer section";
  return out;
}

}  // namespace rlscore::scorers::math
