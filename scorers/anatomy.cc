// Completion anatomy: a hand-written scanner over the bytes, then one pass over the exact tags it
// found. See anatomy.h for the contract.
//
// What counts as a look-alike (a kLookAlikeTag diagnostic). A candidate is '<', then optional
// whitespace, an optional '/', optional whitespace, then a case-insensitive "think" or "answer".
//   - No whitespace after '<' or '/': every candidate that is not exactly an exact tag is a
//     look-alike: "<think" at the end or before anything but '>' ("<think\n", "<think >",
//     "<thinking>", "<think/>"), and every case variant ("<THINK>", "</Answer>").
//   - Whitespace after '<' or '/' ("< think>", "</ think>", "< /answer >"): a look-alike only when
//     the name is followed by optional letters, optional whitespace and then '>'. Without the '>'
//     this is prose, as in "if x < answer then" or "a < thinking time", and is not flagged.
// Anything else after '<' is text: "a < b", "x<y", "<=", "<br>", "<tool>" are never flagged.
// Whitespace means ASCII space, \t, \n, \r, \f, \v; bytes >= 0x80 (valid UTF-8 or not) are never
// whitespace and never part of a name.
//
// Cost. Each candidate scan starts at a '<' and stops at the first byte that is not whitespace,
// '/', a letter or '>', in particular at the next '<', so every byte is read a bounded number of
// times: O(length) for any input, including megabytes of '<' or of "<think".
#include "scorers/anatomy.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

namespace rlscore::scorers {
namespace {

constexpr std::string_view kThinkName = "think";
constexpr std::string_view kAnswerName = "answer";

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool AllSpace(std::string_view s) { return std::all_of(s.begin(), s.end(), IsSpace); }

size_t SkipSpace(std::string_view text, size_t i) {
  while (i < text.size() && IsSpace(text[i])) ++i;
  return i;
}

// Matches `name` (lower case) at text[i] ignoring ASCII case. Sets *exact_case when every byte
// matched in lower case.
bool MatchName(std::string_view text, size_t i, std::string_view name, bool* exact_case) {
  if (text.size() - i < name.size()) return false;
  bool exact = true;
  for (size_t k = 0; k < name.size(); ++k) {
    const char c = text[i + k];
    if (AsciiLower(c) != name[k]) return false;
    if (c != name[k]) exact = false;
  }
  *exact_case = exact;
  return true;
}

// The exact tags and look-alikes of `text`, in order of offset.
struct ScanResult {
  std::vector<Tag> tags;
  std::vector<size_t> look_alikes;  // offsets of '<'
};

ScanResult Scan(std::string_view text) {
  ScanResult out;
  const size_t n = text.size();
  size_t i = text.find('<');
  while (i != std::string_view::npos) {
    const size_t lt = i;
    size_t j = i + 1;
    bool spaced = false;
    size_t after = SkipSpace(text, j);
    spaced |= after != j;
    j = after;
    bool closing = false;
    if (j < n && text[j] == '/') {
      closing = true;
      after = SkipSpace(text, j + 1);
      spaced |= after != j + 1;
      j = after;
    }
    bool exact_case = false;
    std::string_view name;
    if (j < n && AsciiLower(text[j]) == 't' && MatchName(text, j, kThinkName, &exact_case)) {
      name = kThinkName;
    } else if (j < n && AsciiLower(text[j]) == 'a' &&
               MatchName(text, j, kAnswerName, &exact_case)) {
      name = kAnswerName;
    }
    size_t next = j;  // where the search for the next '<' resumes; never past a '<'
    if (!name.empty()) {
      const size_t k = j + name.size();
      next = k;
      if (!spaced && exact_case && k < n && text[k] == '>') {
        TagKind kind;
        if (name == kThinkName) {
          kind = closing ? TagKind::kThinkClose : TagKind::kThinkOpen;
        } else {
          kind = closing ? TagKind::kAnswerClose : TagKind::kAnswerOpen;
        }
        out.tags.push_back(Tag{kind, lt, k + 1 - lt});
        next = k + 1;
      } else if (!spaced) {
        out.look_alikes.push_back(lt);
      } else {
        size_t m = k;
        while (m < n && IsAsciiLetter(text[m])) ++m;
        m = SkipSpace(text, m);
        if (m < n && text[m] == '>') out.look_alikes.push_back(lt);
        next = m;  // text[m] is not a letter or whitespace; if it is '<' find() sees it
      }
    }
    if (next <= lt) next = lt + 1;
    i = next < n ? text.find('<', next) : std::string_view::npos;
  }
  return out;
}

}  // namespace

Anatomy ParseAnatomy(std::string_view text, const TagPolicy& policy) {
  const size_t n = text.size();
  ScanResult scan = Scan(text);
  Anatomy a;
  a.tags = std::move(scan.tags);

  // Spans first: the answer rules depend on where the answer section begins.
  const Tag* first_open = nullptr;
  const Tag* last_close = nullptr;
  for (const Tag& t : a.tags) {
    if (t.kind == TagKind::kThinkOpen && first_open == nullptr) first_open = &t;
    if (t.kind == TagKind::kThinkClose) last_close = &t;
  }
  a.reasoning_begin = (policy.think_prefilled || first_open == nullptr)
                          ? 0
                          : first_open->offset + first_open->length;
  a.reasoning_end = n;
  // The first </think> at or after the reasoning begins, so that a stray "</think>" before the
  // first "<think>" cannot make the span run backwards.
  for (const Tag& t : a.tags) {
    if (t.kind == TagKind::kThinkClose && t.offset >= a.reasoning_begin) {
      a.reasoning_end = t.offset;
      break;
    }
  }
  a.has_think_close = last_close != nullptr;
  a.answer_begin = a.has_think_close ? last_close->offset + last_close->length : n;
  a.answer_end = n;

  std::vector<Diagnostic> diags;
  auto add = [&diags](Malformation kind, size_t offset) { diags.push_back({kind, offset}); };

  // One pass over the tags, in order of offset.
  size_t opens = 0;
  size_t closes = 0;
  size_t depth = policy.think_prefilled ? 1 : 0;  // how many <think> are open
  bool answer_open = false;
  size_t answer_open_offset = 0;
  size_t answer_content_begin = 0;
  size_t answer_pairs = 0;
  for (const Tag& t : a.tags) {
    switch (t.kind) {
      case TagKind::kThinkOpen:
        ++opens;
        if (policy.think_prefilled || opens > 1) {
          add(Malformation::kRepeatedThinkOpen, t.offset);
        } else if (!AllSpace(text.substr(0, t.offset))) {
          add(Malformation::kThinkOpenNotFirst, t.offset);
        }
        if (depth > 0) add(Malformation::kNestedThink, t.offset);
        ++depth;
        break;
      case TagKind::kThinkClose:
        ++closes;
        if (!policy.think_prefilled && opens == 0) {
          add(Malformation::kThinkCloseBeforeOpen, t.offset);
        }
        if (closes > 1) add(Malformation::kRepeatedThinkClose, t.offset);
        if (depth > 0) --depth;
        break;
      case TagKind::kAnswerOpen:
        if (t.offset < a.answer_begin) {
          add(Malformation::kAnswerTagMisplaced, t.offset);  // in or before the reasoning
        } else if (answer_open) {
          add(Malformation::kAnswerTagMisplaced, t.offset);  // nested: this one restarts the pair
          answer_open_offset = t.offset;
          answer_content_begin = t.offset + t.length;
        } else {
          answer_open = true;
          answer_open_offset = t.offset;
          answer_content_begin = t.offset + t.length;
        }
        break;
      case TagKind::kAnswerClose:
        if (t.offset < a.answer_begin || !answer_open) {
          add(Malformation::kAnswerTagMisplaced, t.offset);  // in the reasoning, or unbalanced
        } else {
          answer_open = false;
          ++answer_pairs;
          if (answer_pairs > 1) add(Malformation::kAnswerTagMisplaced, answer_open_offset);
          a.has_answer_tag = true;
          a.answer_tag_begin = answer_content_begin;
          a.answer_tag_end = t.offset;
        }
        break;
    }
  }
  if (answer_open) add(Malformation::kAnswerTagMisplaced, answer_open_offset);  // never closed

  // Whole-text rules, reported at the end of the text.
  if (closes == 0) {
    if (policy.think_prefilled || opens > 0) {
      add(Malformation::kThinkNotClosed, n);
    } else {
      add(Malformation::kMissingThink, n);
    }
  } else if (AllSpace(text.substr(a.answer_begin))) {
    add(Malformation::kEmptyAnswer, n);
  }
  if (policy.require_answer_tags && answer_pairs == 0) add(Malformation::kMissingAnswerTags, n);

  // The tag pass emits in order except an unclosed <answer> and a repeated pair, which are
  // reported at their opening tag once the pair is known; a stable sort keeps same-offset
  // diagnostics in the order they were found.
  if (!std::is_sorted(diags.begin(), diags.end(), [](const Diagnostic& x, const Diagnostic& y) {
        return x.offset < y.offset;
      })) {
    std::stable_sort(diags.begin(), diags.end(),
                     [](const Diagnostic& x, const Diagnostic& y) { return x.offset < y.offset; });
  }

  // Merge the look-alikes (already in order) with the structural diagnostics; on equal offsets
  // (impossible: a look-alike is never an exact tag) the look-alike would come first.
  const size_t look_alikes = scan.look_alikes.size();
  a.malformed_tags = look_alikes > std::numeric_limits<uint32_t>::max()
                         ? std::numeric_limits<uint32_t>::max()
                         : static_cast<uint32_t>(look_alikes);
  a.diagnostics.reserve(look_alikes + diags.size());
  size_t p = 0;
  size_t q = 0;
  while (p < look_alikes || q < diags.size()) {
    if (q == diags.size() || (p < look_alikes && scan.look_alikes[p] <= diags[q].offset)) {
      a.diagnostics.push_back({Malformation::kLookAlikeTag, scan.look_alikes[p++]});
    } else {
      a.diagnostics.push_back(diags[q++]);
    }
  }
  return a;
}

}  // namespace rlscore::scorers
