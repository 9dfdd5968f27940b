#include "scorers/tag_loop.h"

#include "absl/strings/str_cat.h"

namespace rlscore::scorers {

bool TagLoopScanner::Push(char byte, size_t offset) {
  if (report_.fired) return false;
  if (byte == '<') {
    state_ = State::kOpen;
    start_ = offset;
    return false;
  }
  static constexpr char kName[] = "think";
  const char lower = byte >= 'A' && byte <= 'Z' ? static_cast<char>(byte - 'A' + 'a') : byte;
  switch (state_) {
    case State::kText:
      return false;
    case State::kOpen:
    case State::kSlash:
      if (byte == ' ' || byte == '\t') return false;
      if (byte == '/' && state_ == State::kOpen) {
        state_ = State::kSlash;
        return false;
      }
      if (lower != kName[0]) {
        state_ = State::kText;
        return false;
      }
      state_ = State::kName;
      matched_ = 1;
      return false;
    case State::kName:
      if (lower != kName[matched_]) {
        state_ = State::kText;
        return false;
      }
      if (++matched_ < sizeof kName - 1) return false;
      break;
  }
  // A whole reasoning tag.
  state_ = State::kText;
  if (report_.tags++ == 0) report_.first_char_offset = start_;
  if (max_tags_ == 0 || report_.tags <= max_tags_) return false;
  report_.fired = true;
  report_.char_offset = start_;
  report_.detected_at = offset;
  return true;
}

bool TagLoopScanner::Feed(std::string_view piece, size_t offset) {
  // Only a '<' can start a tag: the bytes between two of them matter only in the few after it.
  for (size_t i = 0; i < piece.size() && !report_.fired;) {
    if (state_ == State::kText) {
      const size_t lt = piece.find('<', i);
      if (lt == std::string_view::npos) break;
      i = lt;
    }
    Push(piece[i], offset + i);
    ++i;
  }
  return report_.fired;
}

TagLoopReport FindTagLoop(std::string_view text, uint32_t max_tags) {
  TagLoopScanner scanner(max_tags);
  scanner.Feed(text, 0);
  return scanner.report();
}

std::string DescribeTagLoop(const TagLoopReport& report, uint32_t max_tags) {
  return absl::StrCat("tag loop: reasoning tag ", report.tags, " (more than ", max_tags,
                      "; \"<think>\", \"</think>\" and their look-alikes), the first at character ",
                      report.first_char_offset);
}

}  // namespace rlscore::scorers
