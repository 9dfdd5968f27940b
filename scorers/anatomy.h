// Completion anatomy: where the reasoning and the answer are, every reserved tag and
// its position, and the malformed look-alikes that a looping model emits — in one linear pass.
//
//   std::string_view text = "<think>2+2 is 4</think> The answer is \\boxed{4}.";
//   Anatomy a = ParseAnatomy(text, TagPolicy{});
//   a.reasoning(text);   // "2+2 is 4"
//   a.answer(text);      // " The answer is \\boxed{4}."
//   a.WellFormed();  // true (truncation is decided by the caller, from tokens)
//
// Reserved tags: <think>, </think>, <answer>, </answer> (exact, lower case, no spaces).
// Look-alikes counted as diagnostics: "<think" without ">", "</ think>", "< think>", "<think >",
// "<thinking>", "</thinking>", "<THINK>", and the same for answer; nested or repeated tags are
// reported too. The scanner never backtracks: O(length) whatever the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace rlscore::scorers {

// How a profile expects completions to be tagged.
struct TagPolicy {
  // The chat template already emitted "<think>": the completion starts inside the reasoning and
  // must contain no <think> of its own, only the closing </think>.
  bool think_prefilled = false;
  // The answer section must hold exactly one <answer>…</answer>.
  bool require_answer_tags = false;
};

enum class TagKind : uint8_t { kThinkOpen, kThinkClose, kAnswerOpen, kAnswerClose };

struct Tag {
  TagKind kind;
  size_t offset;  // byte offset of '<'
  size_t length;  // bytes, including '<' and '>'
};

// A reason the completion is not well-formed.
enum class Malformation : uint8_t {
  kLookAlikeTag,  // "<think" without '>', "</ think>", "<thinking>", "<THINK>", "<answer >", ...
  kRepeatedThinkOpen,     // a second <think> (or one at all when the template pre-filled it)
  kRepeatedThinkClose,    // a second </think>
  kNestedThink,           // <think> inside an open <think> (also reported kRepeatedThinkOpen)
  kThinkCloseBeforeOpen,  // </think> with no <think> before it (and none pre-filled)
  kThinkOpenNotFirst,     // <think> preceded by something other than whitespace
  kThinkNotClosed,        // <think> never closed: no answer section
  kMissingThink,          // neither <think> nor </think>
  kEmptyAnswer,           // nothing but whitespace after </think>
  kAnswerTagMisplaced,    // <answer>/</answer> inside the reasoning, unbalanced, nested or repeated
  kMissingAnswerTags,     // the policy requires <answer>…</answer> and there is none
};

struct Diagnostic {
  Malformation kind;
  size_t offset;  // where it was seen; text size for kMissing*, kEmptyAnswer, kThinkNotClosed
};

// The parse of one completion. Spans are byte offsets into the text that was parsed; the Anatomy
// holds no pointer to it.
struct Anatomy {
  std::vector<Tag> tags;                // every exact reserved tag, in order
  std::vector<Diagnostic> diagnostics;  // every reason it is not well-formed, in order of offset
  uint32_t malformed_tags = 0;          // how many of the diagnostics are kLookAlikeTag

  // The reasoning span: after the first <think> (or from the start when pre-filled or when there
  // is no <think>) up to the first </think> after that (or the end of the text). The AST
  // detector looks here; the n-gram rule reads it and the answer section after it.
  size_t reasoning_begin = 0;
  size_t reasoning_end = 0;
  // The answer section: after the last </think> to the end. Empty (begin == end == size) when
  // there is no </think>: an answer that appears only in the reasoning earns nothing.
  size_t answer_begin = 0;
  size_t answer_end = 0;
  bool has_think_close = false;
  // The content of the last <answer>…</answer> in the answer section, when there is one.
  bool has_answer_tag = false;
  size_t answer_tag_begin = 0;
  size_t answer_tag_end = 0;

  // Exactly one <think> (none when pre-filled) first after optional whitespace, one </think>, a
  // non-empty answer section, no reserved tag elsewhere, no look-alike, and the answer tags the
  // policy asks for. Truncation is not part of it (the caller knows the token count).
  bool WellFormed() const { return diagnostics.empty(); }

  std::string_view reasoning(std::string_view text) const {
    return text.substr(reasoning_begin, reasoning_end - reasoning_begin);
  }
  std::string_view answer(std::string_view text) const {
    return text.substr(answer_begin, answer_end - answer_begin);
  }
};

// One pass over `text`. Never fails: odd input yields diagnostics. Thread-safe (pure).
Anatomy ParseAnatomy(std::string_view text, const TagPolicy& policy);

}  // namespace rlscore::scorers
