// MonitorGeneration's core (scorers/generation_monitor.h) fed the same text in arbitrary deltas:
// the verdict may not depend on where the deltas split it (a tag or a word cut in two included),
// and a stream that mixes text and token ids is refused. Input: options byte, then the text; the
// delta lengths come from the text's own bytes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "scorers/generation_monitor.h"

namespace rlscore::fuzz {
namespace {

struct Outcome {
  std::optional<scorers::StopVerdict> stop;
  uint64_t tokens = 0;
};

Outcome Watch(std::string_view text, const scorers::MonitorOptions& options,
              const std::vector<size_t>& cuts) {
  scorers::GenerationMonitor monitor(options);
  Outcome outcome;
  size_t begin = 0;
  for (size_t i = 0; i <= cuts.size() && !outcome.stop; ++i) {
    const size_t end = i < cuts.size() ? cuts[i] : text.size();
    absl::StatusOr<std::optional<scorers::StopVerdict>> r =
        monitor.PushText(text.substr(begin, end - begin));
    RLSCORE_FUZZ_CHECK(r.ok());
    outcome.stop = *r;
    begin = end;
  }
  outcome.tokens = monitor.tokens();
  RLSCORE_FUZZ_CHECK(!monitor.PushTokens(std::vector<uint32_t>{1, 2}).ok());
  return outcome;
}

}  // namespace
}  // namespace rlscore::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  const uint8_t flags = in.Byte();
  scorers::MonitorOptions options;
  options.ngram.n = 1 + flags % 8;
  options.ngram.max_occurrences = 1 + (flags >> 3) % 4;
  options.ngram.rule =
      (flags & 0x20) != 0 ? scorers::NgramRule::kLiteral : scorers::NgramRule::kLoop;
  options.ngram.window = 1 + flags % 64;
  options.ngram.max_number_run = (flags & 0x40) != 0 ? 4 : 512;
  options.max_tokens = (flags & 0x80) != 0 ? 64 : 0;
  options.max_reasoning_tags = (flags >> 3) % 4;  // 0: off
  options.max_run_bytes = flags % 3 == 0 ? 0 : 4u << (flags % 3);
  const std::string_view text = in.Rest();

  std::vector<size_t> cuts;
  for (size_t at = 0; at < text.size();) {
    at += 1 + static_cast<uint8_t>(text[at]) % 7;
    if (at < text.size()) cuts.push_back(at);
  }
  const fuzz::Outcome whole = fuzz::Watch(text, options, {});
  const fuzz::Outcome pieces = fuzz::Watch(text, options, cuts);
  RLSCORE_FUZZ_CHECK(whole.stop.has_value() == pieces.stop.has_value());
  // With a budget, which rule is reported first may depend on the delta sizes; without, the
  // verdict (n-gram, tag loop or unbroken run) must be the same to the byte.
  if (whole.stop && options.max_tokens == 0) {
    RLSCORE_FUZZ_CHECK(pieces.stop->reason == whole.stop->reason);
    RLSCORE_FUZZ_CHECK(pieces.stop->char_offset == whole.stop->char_offset);
  }
  return 0;
}
