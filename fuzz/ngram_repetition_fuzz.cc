// The n-gram repetition rule (scorers/ngram_repetition.h) against a naive reference: token ids
// from the input (two bytes each, a small alphabet so windows recur), n and the threshold from
// its first bytes. The hash-table rule must fire at exactly the window the naive count of every
// window fires at. The word normaliser runs on the same bytes as text.
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "scorers/ngram_repetition.h"

namespace rlscore::fuzz {
namespace {

scorers::NgramReport Naive(const std::vector<uint64_t>& tokens,
                           const scorers::NgramOptions& options) {
  scorers::NgramReport report;
  if (options.n == 0 || tokens.size() < options.n) return report;
  std::map<std::vector<uint64_t>, std::pair<uint32_t, size_t>> seen;  // count, first start
  for (size_t i = 0; i + options.n <= tokens.size(); ++i) {
    const std::vector<uint64_t> window(tokens.begin() + static_cast<ptrdiff_t>(i),
                                       tokens.begin() + static_cast<ptrdiff_t>(i + options.n));
    auto [it, inserted] = seen.try_emplace(window, 0u, i);
    if (++it->second.first > options.max_occurrences) {
      report.fired = true;
      report.token_offset = i;
      report.first_token_offset = it->second.second;
      report.occurrences = it->second.first;
      return report;
    }
  }
  return report;
}

}  // namespace
}  // namespace rlscore::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  scorers::NgramOptions options;
  options.n = in.Byte() % 12;                   // 0 (never fires) to 11
  options.max_occurrences = 1 + in.Byte() % 4;  // 1 to 4
  const uint8_t alphabet = 1 + in.Byte() % 16;  // distinct token ids
  const std::string_view rest = in.Rest();

  std::vector<uint64_t> tokens;
  for (size_t i = 0; i + 1 < rest.size(); i += 2) {
    const uint64_t id = static_cast<uint8_t>(rest[i]) % alphabet;
    tokens.push_back(id * 0x9e3779b97f4a7c15ULL + static_cast<uint8_t>(rest[i + 1]) % 2);
  }
  const scorers::NgramReport fast = scorers::FindRepeatedNgram(tokens, options);
  const scorers::NgramReport naive = fuzz::Naive(tokens, options);
  RLSCORE_FUZZ_CHECK(fast.fired == naive.fired);
  if (fast.fired) {
    RLSCORE_FUZZ_CHECK(fast.token_offset == naive.token_offset);
    RLSCORE_FUZZ_CHECK(fast.first_token_offset == naive.first_token_offset);
    RLSCORE_FUZZ_CHECK(fast.occurrences == naive.occurrences);
  }
  const double penalty =
      scorers::SmoothRepetitionPenalty(tokens, options.n == 0 ? 1 : options.n, -1.0);
  RLSCORE_FUZZ_CHECK(penalty >= -1.0 && penalty <= 0.0);

  const std::vector<scorers::Word> words = scorers::NormalizedWords(rest, 7);
  size_t previous = 0;
  for (const scorers::Word& word : words) {
    RLSCORE_FUZZ_CHECK(word.offset >= 7 && word.offset < rest.size() + 7 &&
                       word.offset >= previous);
    previous = word.offset + 1;
  }
  (void)scorers::FindRepeatedNgram(scorers::WordHashes(words), scorers::NgramOptions{});
  return 0;
}
