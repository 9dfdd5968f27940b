// The n-gram repetition rules (scorers/ngram_repetition.h) against a naive reference: token ids
// from the input (two bytes each, a small alphabet so windows recur), the rule, n, the threshold
// and the loop window from its first bytes. The hash-table rule must fire at exactly the window
// the naive count of every window fires at. The word normaliser runs on the same bytes as text,
// and the number-run rule on its words against a naive count; the words of the text fed in
// pieces are the words of the whole.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "scorers/ngram_repetition.h"

namespace rlscore::fuzz {
namespace {

scorers::NgramReport Naive(const std::vector<uint64_t>& tokens,
                           const scorers::NgramOptions& options) {
  scorers::NgramReport report;
  if (options.n == 0 || tokens.size() < options.n) return report;
  struct Seen {
    uint32_t count = 0;
    size_t first = 0;
    size_t last = 0;
  };
  std::map<std::vector<uint64_t>, Seen> seen;
  std::vector<bool> recurs;  // per window start
  for (size_t i = 0; i + options.n <= tokens.size(); ++i) {
    const std::vector<uint64_t> window(tokens.begin() + static_cast<ptrdiff_t>(i),
                                       tokens.begin() + static_cast<ptrdiff_t>(i + options.n));
    Seen& s = seen[window];
    recurs.push_back(s.count > 0 && i - s.last <= options.recurrence_distance);
    if (s.count == 0) s.first = i;
    s.last = i;
    ++s.count;
    uint32_t percent = 0;
    if (options.rule == scorers::NgramRule::kLoop) {
      const size_t span = std::min<size_t>(recurs.size(), options.window);
      size_t recurring = 0;
      for (size_t j = recurs.size() - span; j < recurs.size(); ++j) recurring += recurs[j];
      percent = static_cast<uint32_t>(recurring * 100 / span);
      if (percent < options.min_recurring_percent) continue;
    }
    if (s.count > options.max_occurrences) {
      report.fired = true;
      report.token_offset = i;
      report.first_token_offset = s.first;
      report.occurrences = s.count;
      report.recurring_percent = percent;
      return report;
    }
  }
  return report;
}

// Whether two reports say the same: fired or not, and where, how often and with what share.
bool SameReport(const scorers::NgramReport& a, const scorers::NgramReport& b) {
  if (a.fired != b.fired) return false;
  return !a.fired ||
         (a.token_offset == b.token_offset && a.first_token_offset == b.first_token_offset &&
          a.occurrences == b.occurrences && a.recurring_percent == b.recurring_percent);
}

}  // namespace
}  // namespace rlscore::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  scorers::NgramOptions options;
  options.n = in.Byte() % 12;                   // 0 (never fires) to 11
  options.max_occurrences = 1 + in.Byte() % 4;  // 1 to 4
  const uint8_t loop = in.Byte();
  options.rule = loop % 4 == 0 ? scorers::NgramRule::kLiteral : scorers::NgramRule::kLoop;
  options.window = 1 + loop % 61;
  options.min_recurring_percent = 1 + loop % 100;
  options.recurrence_distance = 1 + loop % 37;
  const uint8_t alphabet = 1 + in.Byte() % 16;  // distinct token ids
  const std::string_view rest = in.Rest();

  std::vector<uint64_t> tokens;
  for (size_t i = 0; i + 1 < rest.size(); i += 2) {
    const uint64_t id = static_cast<uint8_t>(rest[i]) % alphabet;
    tokens.push_back(id * 0x9e3779b97f4a7c15ULL + static_cast<uint8_t>(rest[i + 1]) % 2);
  }
  RLSCORE_FUZZ_CHECK(
      fuzz::SameReport(scorers::FindRepeatedNgram(tokens, options), fuzz::Naive(tokens, options)));
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
  // The same words when the text arrives in pieces cut anywhere (inside a character included).
  scorers::WordSplitter splitter(7);
  std::vector<scorers::Word> pieces;
  const auto keep = [&pieces](const scorers::Word& w) { pieces.push_back(w); };
  for (size_t at = 0; at < rest.size();) {
    const size_t len = std::min<size_t>(rest.size() - at, 1 + static_cast<uint8_t>(rest[at]) % 5);
    splitter.Feed(rest.substr(at, len), keep);
    at += len;
  }
  splitter.Finish(keep);
  // And the same from the byte-at-a-time definition, and from blocks whose words are hashed one
  // at a time rather than in vector lanes (where the CPU has them, NormalizedWords uses them).
  scorers::WordSplitter bytewise(7), scalar_blocks(7);
  scalar_blocks.UseVectorWords(false);
  std::vector<scorers::Word> by_bytes, by_scalar_blocks;
  const auto keep_bytes = [&by_bytes](const scorers::Word& w) { by_bytes.push_back(w); };
  const auto keep_scalar = [&by_scalar_blocks](const scorers::Word& w) {
    by_scalar_blocks.push_back(w);
  };
  bytewise.FeedBytewise(rest, keep_bytes);
  bytewise.Finish(keep_bytes);
  scalar_blocks.Feed(rest, keep_scalar);
  scalar_blocks.Finish(keep_scalar);
  for (const std::vector<scorers::Word>* other : {&pieces, &by_bytes, &by_scalar_blocks}) {
    RLSCORE_FUZZ_CHECK(other->size() == words.size());
    for (size_t i = 0; i < words.size(); ++i) {
      const scorers::Word& w = (*other)[i];
      RLSCORE_FUZZ_CHECK(w.hash == words[i].hash && w.offset == words[i].offset &&
                         w.number == words[i].number);
    }
  }
  // The rule over words, which takes them a run at a time (NgramStream::PushWords), against the
  // naive count of their hashes; number runs off, which the naive count does not know.
  scorers::NgramOptions no_runs = options;
  no_runs.max_number_run = 0;
  RLSCORE_FUZZ_CHECK(fuzz::SameReport(scorers::FindRepeatedWords(words, no_runs),
                                      fuzz::Naive(scorers::WordHashes(words), no_runs)));
  // The number-run rule: more than max_number_run number words in a row (with the n-gram rule
  // unable to fire first, it fires where the naive count first crosses the limit).
  scorers::NgramOptions runs;
  runs.max_number_run = 1 + loop % 5;
  runs.n = 1024;  // longer than any input in words: only the number rule can fire
  const scorers::NgramReport run = scorers::FindRepeatedWords(words, runs);
  std::optional<size_t> crossed;
  for (size_t i = 0, length = 0; i < words.size() && !crossed; ++i) {
    length = words[i].number ? length + 1 : 0;
    if (length > runs.max_number_run) crossed = i;
  }
  RLSCORE_FUZZ_CHECK(run.fired == crossed.has_value());
  if (run.fired) {
    RLSCORE_FUZZ_CHECK(run.number_run && run.token_offset == *crossed);
    RLSCORE_FUZZ_CHECK(run.first_token_offset == *crossed - runs.max_number_run);
  }
  // The text scan, which splits as it goes and stops at the first firing, reports what splitting
  // first does (the fuzzed options, and the number-run options above).
  for (const scorers::NgramOptions& o : {options, runs}) {
    const scorers::NgramReport want = scorers::FindRepeatedWords(words, o);
    const scorers::TextNgramReport got = scorers::FindRepeatedWordsInText(rest, o);
    RLSCORE_FUZZ_CHECK(got.report.fired == want.fired);
    if (!want.fired) continue;
    RLSCORE_FUZZ_CHECK(got.report.number_run == want.number_run &&
                       got.report.token_offset == want.token_offset &&
                       got.report.first_token_offset == want.first_token_offset &&
                       got.report.occurrences == want.occurrences &&
                       got.report.recurring_percent == want.recurring_percent);
    // `words` carry the base offset 7.
    RLSCORE_FUZZ_CHECK(got.char_offset + 7 == words[want.token_offset].offset &&
                       got.first_char_offset + 7 == words[want.first_token_offset].offset);
  }
  (void)scorers::FindRepeatedWords(words, scorers::NgramOptions{});
  return 0;
}
