// The tag-loop rule (docs/REPETITION.md): a completion that opens or closes its reasoning more
// than `max_tags` times (the profile's default 4: a third reasoning section fires) is looping
// through reasoning sections, whatever its words do. An honest single-turn completion has one
// <think> and one </think> at most; the incident this project answers ended in hundreds of
// malformed ones, and a model that keeps re-entering its reasoning with reworded reflections
// repeats no n-gram often enough for the n-gram rule. Interleaved thinking (a reasoning section
// per tool call) needs a profile with a higher limit.
//
// A reasoning tag is what a model writes when it means one, well-formed or not: '<', optional
// spaces or tabs, an optional '/', optional spaces or tabs, then "think" in any case — so
// "<think>", "</think>", "</ think>", "< think>", "<THINK>", "<thinking>" and an unclosed
// "<think" all count, at the offset of their '<'. A tag is complete at its 'k'; nothing after it
// is read, so the rule is causal and the stream stops where the batch scan reports.
//
//   TagLoopReport r = FindTagLoop(text, 4);
//   if (r.fired) penalise(r.char_offset);
//
// O(1) work per byte and O(1) memory. Pure and thread-safe (TagLoopScanner: one per text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlscore::scorers {

// The default profile's limit: two whole reasoning sections pass, a third fires.
inline constexpr uint32_t kDefaultMaxReasoningTags = 4;

struct TagLoopReport {
  bool fired = false;
  size_t char_offset = 0;        // the '<' of the tag that fired (the (max_tags + 1)th)
  size_t first_char_offset = 0;  // the '<' of the first reasoning tag
  size_t detected_at = 0;        // the byte that completed the tag that fired (its 'k')
  uint32_t tags = 0;             // reasoning tags seen so far (up to the one that fired)
};

// The rule fed one byte at a time, for text that arrives in pieces: after each Push, report()
// is exactly FindTagLoop of the bytes pushed so far. `max_tags` 0 never fires.
class TagLoopScanner {
 public:
  explicit TagLoopScanner(uint32_t max_tags) : max_tags_(max_tags) {}

  // The next byte, at byte offset `offset` of the text. Returns true when it completes the tag
  // that fires; once fired, later bytes are ignored.
  bool Push(char byte, size_t offset);
  // Every byte of `piece`, which starts at byte offset `offset`; true when the rule has fired.
  bool Feed(std::string_view piece, size_t offset);

  bool fired() const { return report_.fired; }
  const TagLoopReport& report() const { return report_; }

 private:
  enum class State : uint8_t { kText, kOpen, kSlash, kName };

  uint32_t max_tags_;
  State state_ = State::kText;
  uint8_t matched_ = 0;  // letters of "think" matched, in kName
  size_t start_ = 0;     // the '<' of the candidate tag
  TagLoopReport report_;
};

TagLoopReport FindTagLoop(std::string_view text, uint32_t max_tags);

// What fired, in words, for a report that fired: shared by the batch scorer and the stream.
std::string DescribeTagLoop(const TagLoopReport& report, uint32_t max_tags);

}  // namespace rlscore::scorers
