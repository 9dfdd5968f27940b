#include "scorers/generation_monitor.h"

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace rlscore::scorers {
namespace {

constexpr uint64_t kBytesPerToken = 4;  // tokens.h's estimate

}  // namespace

GenerationMonitor::GenerationMonitor(const MonitorOptions& options)
    : options_(options),
      ngram_(options.ngram),
      tags_(options.repetition ? options.max_reasoning_tags : 0),
      runs_(options.repetition ? options.max_run_bytes : 0) {}

uint64_t GenerationMonitor::tokens() const {
  if (mode_ == Mode::kText) return (bytes_ + kBytesPerToken - 1) / kBytesPerToken;
  return token_count_;
}

size_t GenerationMonitor::MemoryBytes() const {
  return sizeof(*this) + ngram_.MemoryBytes() + word_offsets_.capacity() * sizeof(uint64_t);
}

absl::Status GenerationMonitor::SetMode(Mode mode) {
  if (mode_ == Mode::kUnknown) mode_ = mode;
  if (mode_ != mode) {
    return absl::InvalidArgumentError(
        "a generation is streamed as token ids or as text, not both: this stream started with " +
        std::string(mode_ == Mode::kTokens ? "token ids" : "text"));
  }
  return absl::OkStatus();
}

std::optional<StopVerdict> GenerationMonitor::Budget() {
  if (options_.max_tokens == 0 || tokens() < options_.max_tokens) return std::nullopt;
  stopped_ = true;
  StopVerdict v;
  v.reason = StopReason::kTokenBudget;
  v.token_offset = options_.max_tokens;
  v.char_offset = bytes_;
  v.detail = absl::StrCat("the token budget of ", options_.max_tokens, " tokens is spent",
                          mode_ == Mode::kText ? " (estimated at four bytes a token)" : "");
  return v;
}

std::optional<StopVerdict> GenerationMonitor::NgramVerdict() {
  stopped_ = true;
  const NgramReport& r = ngram_.report();
  StopVerdict v;
  v.reason = StopReason::kRepetitionNgram;
  if (mode_ == Mode::kTokens) {
    v.token_offset = r.token_offset;
    v.detail = DescribeNgramFiring(r, options_.ngram, "token ids", r.first_token_offset);
  } else {
    v.char_offset = word_offsets_[r.token_offset];
    v.token_offset = v.char_offset / kBytesPerToken;
    v.detail = absl::StrCat(
        DescribeNgramFiring(r, options_.ngram, "words", word_offsets_[r.first_token_offset]),
        "; token offset estimated");
  }
  return v;
}

std::optional<StopVerdict> GenerationMonitor::TextRuleVerdict(StopReason reason, size_t char_offset,
                                                              std::string_view detail) {
  stopped_ = true;
  StopVerdict v;
  v.reason = reason;
  v.char_offset = char_offset;
  v.token_offset = v.char_offset / kBytesPerToken;
  v.detail = absl::StrCat(Sv(detail), "; token offset estimated");
  return v;
}

absl::StatusOr<std::optional<StopVerdict>> GenerationMonitor::PushTokens(
    std::span<const uint32_t> ids) {
  if (absl::Status s = SetMode(Mode::kTokens); !s.ok()) return s;
  if (stopped_) return std::nullopt;
  for (const uint32_t id : ids) {
    ++token_count_;
    if (options_.repetition && ngram_.Push(id)) return NgramVerdict();
    if (std::optional<StopVerdict> v = Budget()) return v;
  }
  return std::nullopt;
}

void GenerationMonitor::OnWord(const Word& word) {
  if (word_fired_) return;
  word_offsets_.push_back(word.offset);
  word_fired_ = ngram_.PushWord(word);
}

absl::StatusOr<std::optional<StopVerdict>> GenerationMonitor::PushText(std::string_view text) {
  if (absl::Status s = SetMode(Mode::kText); !s.ok()) return s;
  if (stopped_) return std::nullopt;
  // Byte by byte, so that the budget stops at the byte that spends it and a word, a tag or a run
  // that ends in this piece fires before the bytes after it are counted. Within a byte the rules
  // go in the batch scorer's order of ties (reward.cc).
  for (size_t i = 0; i < text.size(); ++i) {
    ++bytes_;
    if (options_.repetition) words_.Feed(text.substr(i, 1), [this](const Word& w) { OnWord(w); });
    if (word_fired_) return NgramVerdict();
    if (tags_.Push(text[i], bytes_ - 1)) {
      return TextRuleVerdict(StopReason::kRepetitionTagLoop, tags_.report().char_offset,
                             DescribeTagLoop(tags_.report(), options_.max_reasoning_tags));
    }
    if (runs_.Push(text[i], bytes_ - 1)) {
      return TextRuleVerdict(StopReason::kRepetitionUnbrokenRun, runs_.report().char_offset,
                             DescribeUnbrokenRun(runs_.report(), options_.max_run_bytes));
    }
    if (std::optional<StopVerdict> v = Budget()) return v;
  }
  return std::nullopt;
}

}  // namespace rlscore::scorers
