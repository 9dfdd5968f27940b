// Watches one generation while it is produced (README "Stopping generations early") and says STOP
// as soon as the batch scorer's n-gram repetition rule fires, or on text its tag-loop or
// unbroken-run rule (tag_loop.h, unbroken_run.h; token ids cannot show them), or the token budget
// is spent, so a looping rollout is cut where ScoreGroups would later report the loop, not at the
// 16,384-token ceiling.
//
// The same rules on the same units as the batch scorer (reward.cc), over the whole generation —
// reasoning, answer section and tags alike, so a loop after "</think>" is stopped too: token ids,
// or the normalised words of the text, hashed exactly as NormalizedWords does whatever the
// deltas' boundaries. For token ids the stop's token offset is exact; for text its character
// offset is exact and the token offset is estimated (four bytes a token, as in tokens.h).
//
//   GenerationMonitor monitor(MonitorOptions{.max_tokens = 16384});
//   for (const std::vector<uint32_t>& delta : engine) {
//     if (std::optional<StopVerdict> stop = monitor.PushTokens(delta)) return Abort(*stop);
//   }
//
// O(1) amortised work per token or byte; memory grows with the tokens (or words) seen, about
// 50–80 bytes each, and the budget bounds them. Not thread-safe; one per generation.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scorers/ngram_repetition.h"
#include "scorers/tag_loop.h"
#include "scorers/unbroken_run.h"

namespace rlscore::scorers {

struct MonitorOptions {
  bool repetition = true;  // the repetition rules on or off
  NgramOptions ngram;
  // Text only: the tag-loop rule's limit (RepetitionOptions::max_reasoning_tags); 0: off.
  uint32_t max_reasoning_tags = kDefaultMaxReasoningTags;
  // Text only: the unbroken-run rule's limit (RepetitionOptions::max_run_bytes); 0: off.
  uint32_t max_run_bytes = kDefaultMaxRunBytes;
  // Stop once this many tokens were generated (text: estimated at four bytes a token).
  // 0: no budget.
  uint32_t max_tokens = 16384;
};

// The server's metrics keep a counter per value (service/prometheus_metrics.h).
enum class StopReason : uint8_t {
  kRepetitionNgram,
  kTokenBudget,
  kRepetitionTagLoop,
  kRepetitionUnbrokenRun,
};

struct StopVerdict {
  StopReason reason = StopReason::kRepetitionNgram;
  // Where generation should have stopped: the start of the occurrence that crossed the threshold
  // (the same offsets ScoreGroups reports), or the budget.
  uint64_t token_offset = 0;
  uint64_t char_offset = 0;
  std::string detail;
};

class GenerationMonitor {
 public:
  explicit GenerationMonitor(const MonitorOptions& options);

  // The next token ids, or the next piece of text. Returns the verdict the first time a rule
  // fires, then nothing more (the generation is over). A stream is token ids or text, not both:
  // mixing them is INVALID_ARGUMENT.
  absl::StatusOr<std::optional<StopVerdict>> PushTokens(std::span<const uint32_t> ids);
  absl::StatusOr<std::optional<StopVerdict>> PushText(std::string_view text);

  bool stopped() const { return stopped_; }
  uint64_t tokens() const;  // generated so far (estimated for text)
  uint64_t bytes() const { return bytes_; }
  size_t MemoryBytes() const;

 private:
  enum class Mode : uint8_t { kUnknown, kTokens, kText };

  absl::Status SetMode(Mode mode);
  std::optional<StopVerdict> Budget();
  std::optional<StopVerdict> NgramVerdict();
  // The verdict of a rule on the raw text (tag loop, unbroken run).
  std::optional<StopVerdict> TextRuleVerdict(StopReason reason, size_t char_offset,
                                             std::string_view detail);
  void OnWord(const Word& word);

  MonitorOptions options_;
  Mode mode_ = Mode::kUnknown;
  bool stopped_ = false;
  uint64_t token_count_ = 0;
  uint64_t bytes_ = 0;
  NgramStream ngram_;
  // Text only.
  WordSplitter words_;
  std::vector<uint64_t> word_offsets_;
  bool word_fired_ = false;
  TagLoopScanner tags_;
  UnbrokenRunScanner runs_;
};

}  // namespace rlscore::scorers
