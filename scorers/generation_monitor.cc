#include "scorers/generation_monitor.h"

#include "absl/strings/str_cat.h"

namespace rlscore::scorers {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr uint64_t kBytesPerToken = 4;  // tokens.h's estimate

}  // namespace

GenerationMonitor::GenerationMonitor(const MonitorOptions& options)
    : options_(options),
      ngram_(options.ngram),
      span_(options.expects_reasoning && !options.think_prefilled ? Span::kBefore : Span::kInside) {
}

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
    v.detail = absl::StrCat("token ", r.first_token_offset, ": a ", options_.ngram.n,
                            "-gram of token ids occurs ", r.occurrences, " times");
  } else {
    v.char_offset = word_offsets_[r.token_offset];
    v.token_offset = v.char_offset / kBytesPerToken;
    v.detail = absl::StrCat("a ", options_.ngram.n, "-gram of words first at character ",
                            word_offsets_[r.first_token_offset], " occurs ", r.occurrences,
                            " times; token offset estimated");
  }
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
  word_fired_ = ngram_.Push(word.hash);
}

void GenerationMonitor::FeedReasoning(std::string_view bytes) {
  if (!options_.repetition) return;
  words_.Feed(bytes, [this](const Word& w) { OnWord(w); });
}

absl::StatusOr<std::optional<StopVerdict>> GenerationMonitor::PushText(std::string_view text) {
  if (absl::Status s = SetMode(Mode::kText); !s.ok()) return s;
  if (stopped_) return std::nullopt;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++bytes_;
    switch (span_) {
      case Span::kBefore:
        // Everything before "<think>" is outside the reasoning span.
        matched_ = c == kThinkOpen[matched_] ? matched_ + 1 : (c == '<' ? 1 : 0);
        if (matched_ == kThinkOpen.size()) {
          span_ = Span::kInside;
          matched_ = 0;
          words_ = WordSplitter(bytes_);
        }
        break;
      case Span::kInside:
        if (!options_.expects_reasoning) {
          FeedReasoning(text.substr(i, 1));
          break;
        }
        // A "</think>" in the making is held back; it is text after all if it breaks off.
        if (c == kThinkClose[matched_]) {
          if (++matched_ == kThinkClose.size()) {
            span_ = Span::kAfter;
            if (options_.repetition) words_.Finish([this](const Word& w) { OnWord(w); });
          }
          break;
        }
        FeedReasoning(kThinkClose.substr(0, matched_));
        matched_ = 0;
        if (c == '<') {
          matched_ = 1;
        } else {
          FeedReasoning(text.substr(i, 1));
        }
        break;
      case Span::kAfter:
        break;  // the answer section: only the budget applies
    }
    if (word_fired_) return NgramVerdict();
    if (std::optional<StopVerdict> v = Budget()) return v;
  }
  return std::nullopt;
}

}  // namespace rlscore::scorers
