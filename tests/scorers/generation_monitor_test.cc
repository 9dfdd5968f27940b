#include "scorers/generation_monitor.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scorers/accuracy.h"
#include "scorers/math/verifier.h"
#include "scorers/reward.h"

namespace rlscore::scorers {
namespace {

using ::testing::HasSubstr;

// What the batch scorer (ScoreGroups' scorer) reports for one completion, with the AST rules off
// so that only the n-gram and tag-loop rules can fire, as in the stream.
CompletionScore BatchScore(const CompletionInput& in, const Profile& profile) {
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  const std::vector<std::string> references = {"42"};
  const std::unique_ptr<Judge> judge = scorer->Prepare(Task::kNumeric, references);
  std::vector<CompletionScore> scores;
  const CompletionInput inputs[] = {in};
  EXPECT_TRUE(ScoreGroup(inputs, Task::kNumeric, judge.get(), profile, &scores).ok());
  return scores.at(0);
}

Profile NgramOnly() {
  Profile p;
  p.repetition.ast.enabled = false;
  return p;
}

// Splits `n` items into random deltas (sometimes empty), as an inference engine streams them.
std::vector<size_t> Cuts(size_t n, std::mt19937_64& rng) {
  std::vector<size_t> cuts;
  for (size_t at = 0; at < n;) {
    const size_t len = std::min<size_t>(n - at, rng() % 12);
    cuts.push_back(len);
    at += len;
  }
  return cuts;
}

// Reasoning tags as models write them, well-formed or not, and text that only looks like a start.
constexpr const char* kTags[] = {"<think>", "</think>",   "</ think>", "< think>",
                                 "<THINK>", "<thinking>", "<think",    "<thin",
                                 "<the",    "</",         "<<think>"};

// Reasoning text: sentences from a small vocabulary (they recur by chance), for some cases a loop
// of reworded reflections after a prefix, like the incident's, and for others reasoning tags
// between the words (the incident's malformed tags).
std::string Reasoning(std::mt19937_64& rng, bool loop, int tags = 0) {
  // Chinese, punctuation that separates ("，", "—") and a character whose bytes a delta may cut.
  static const char* const kWords[] = {"wait", "let",    "me",     "check", "the",    "sum",
                                       "of",   "x",      "is",     "7",     "but",    "consider",
                                       "case", "then",   "answer", "Prime", "FACTOR", "n+1",
                                       "我们", "再检查", "，",     "—",     "∩",      "café"};
  std::string text;
  const size_t words = 20 + rng() % 300;
  for (size_t i = 0; i < words; ++i) {
    absl::StrAppend(&text, kWords[rng() % std::size(kWords)], rng() % 9 == 0 ? ". " : " ");
    if (tags > 0 && rng() % 24 == 0) {
      absl::StrAppend(&text, kTags[rng() % std::size(kTags)], rng() % 2 == 0 ? " " : "");
      --tags;
    }
  }
  if (loop) {
    const std::string step = absl::StrCat("Wait, let me double check step ", rng() % 100,
                                          ": but wait, consider another case. ");
    for (int k = 0; k < 6; ++k) text += step;
  }
  return text;
}

// An answer section: a boxed answer, sometimes a loop of its own, sometimes a counting run.
std::string Answer(std::mt19937_64& rng, int kind) {
  std::string text = " \\boxed{42}";
  if (kind == 1 && rng() % 2 == 0) {
    for (int i = 0; i < 30; ++i) absl::StrAppend(&text, "所以答案是四十二，我们完成了。");
  } else if (kind == 1) {
    for (int i = 0; i < 30; ++i) absl::StrAppend(&text, " The answer is 42, so we are done.");
  } else if (kind == 2) {
    const uint64_t from = rng() % 1000;
    for (uint64_t i = 0; i < 40; ++i) absl::StrAppend(&text, ", ", from + i);
  }
  return text;
}

TEST(GenerationMonitor, TextStopsExactlyWhereTheBatchScorerReportsTheLoop) {
  std::mt19937_64 rng(1432);
  int fired = 0;
  int literal_fired = 0;
  int counting_fired = 0;
  int tags_fired = 0;
  int runs_fired = 0;
  for (int k = 0; k < 600; ++k) {
    // Loops in the reasoning, in the answer section, or counting runs; text before <think>, a
    // pre-filled <think>, or no tags at all; both n-gram rules, and a number-run limit that the
    // counting answers cross; reasoning tags in the text, with the tag-loop rule's limit at 1
    // or 3 or off, so that it fires before, after and among the n-gram rule's firings.
    // Every eighth case has a run of 20 to 80 bytes, of punctuation and white space or of
    // letters and digits, under an unbroken-run limit of 48.
    const bool prefilled = k % 4 == 0;
    std::string run;
    if (k % 8 == 3) {
      const char* pool = k % 16 == 3 ? "!.) \n=\\" : "a3Zx9q0";
      for (size_t i = 20 + rng() % 60; i > 0; --i) run += pool[rng() % 7];
    }
    const std::string text =
        absl::StrCat(prefilled ? "" : (k % 3 == 0 ? "Sure. <think>" : "<think>"),
                     Reasoning(rng, k % 2 == 0, k % 6 < 3 ? static_cast<int>(k % 11) : 0), run,
                     k % 5 == 0 ? "" : "</think>", Answer(rng, k % 3));
    Profile profile = NgramOnly();
    profile.tags.think_prefilled = prefilled;
    profile.repetition.ngram.rule = k % 7 == 0 ? NgramRule::kLiteral : NgramRule::kLoop;
    profile.repetition.ngram.max_number_run = k % 2 == 0 ? 512 : 24;
    profile.repetition.max_reasoning_tags = k % 13 == 0 ? 0 : (k % 4 == 1 ? 1 : 3);
    profile.repetition.max_run_bytes = k % 8 == 3 ? 48 : 2048;
    CompletionInput in;
    in.text = text;
    in.num_tokens = 1000;
    const CompletionScore batch = BatchScore(in, profile);

    MonitorOptions options;
    options.ngram = profile.repetition.ngram;
    options.max_reasoning_tags = profile.repetition.max_reasoning_tags;
    options.max_run_bytes = profile.repetition.max_run_bytes;
    options.max_tokens = 0;
    GenerationMonitor monitor(options);
    std::optional<StopVerdict> stop;
    size_t at = 0;
    for (size_t len : Cuts(text.size(), rng)) {
      absl::StatusOr<std::optional<StopVerdict>> v = monitor.PushText(text.substr(at, len));
      ASSERT_TRUE(v.ok());
      at += len;
      if (v->has_value()) {
        stop = **v;
        break;
      }
    }
    SCOPED_TRACE(text);
    const RepetitionDetector detector = batch.repetition_finding.detector;
    const bool batch_fired = detector != RepetitionDetector::kNone;
    ASSERT_EQ(stop.has_value(), batch_fired);
    if (!batch_fired) continue;
    ++fired;
    literal_fired += profile.repetition.ngram.rule == NgramRule::kLiteral;
    counting_fired += absl::StrContains(stop->detail, "number words in a row");
    tags_fired += detector == RepetitionDetector::kTagLoop;
    runs_fired += detector == RepetitionDetector::kUnbrokenRun;
    EXPECT_EQ(stop->reason,
              detector == RepetitionDetector::kTagLoop       ? StopReason::kRepetitionTagLoop
              : detector == RepetitionDetector::kUnbrokenRun ? StopReason::kRepetitionUnbrokenRun
                                                             : StopReason::kRepetitionNgram);
    EXPECT_EQ(stop->char_offset, batch.repetition_finding.char_offset);
    // The stream says what the batch scorer says (less the token estimate's wording).
    EXPECT_THAT(batch.repetition_finding.detail, HasSubstr(stop->detail.substr(0, 40)));
    // It stops within the word after the firing one, before the end of the text.
    EXPECT_LT(at, text.size());
  }
  // The property was exercised: by each rule, and by the counting runs.
  EXPECT_GT(fired, 150);
  EXPECT_GT(literal_fired, 20);
  EXPECT_GT(counting_fired, 20);
  EXPECT_GT(tags_fired, 20);
  EXPECT_GT(runs_fired, 10);
}

TEST(GenerationMonitor, TokenIdsStopExactlyWhereTheBatchScorerReportsTheLoop) {
  std::mt19937_64 rng(1428);
  int fired = 0;
  for (int k = 0; k < 400; ++k) {
    std::vector<uint32_t> ids(1 + rng() % 500);
    for (uint32_t& id : ids) id = static_cast<uint32_t>(rng() % (k % 2 == 0 ? 30 : 50000));
    if (k % 3 == 0) {  // a loop long enough to fill the loop rule's window
      const size_t period = 3 + rng() % 20;
      for (size_t i = 0; i < 40 * period; ++i)
        ids.push_back(static_cast<uint32_t>(1000 + i % period));
    }
    CompletionInput in;
    in.text = "<think>x</think> \\boxed{42}";
    in.token_ids = ids;
    Profile profile = NgramOnly();
    profile.repetition.ngram.rule = k % 5 == 0 ? NgramRule::kLiteral : NgramRule::kLoop;
    const CompletionScore batch = BatchScore(in, profile);

    MonitorOptions options;
    options.ngram = profile.repetition.ngram;
    options.max_tokens = 0;
    GenerationMonitor monitor(options);
    std::optional<StopVerdict> stop;
    size_t at = 0;
    for (size_t len : Cuts(ids.size(), rng)) {
      absl::StatusOr<std::optional<StopVerdict>> v =
          monitor.PushTokens(std::span<const uint32_t>(ids).subspan(at, len));
      ASSERT_TRUE(v.ok());
      at += len;
      if (v->has_value()) {
        stop = **v;
        break;
      }
    }
    const bool batch_fired = batch.repetition_finding.detector == RepetitionDetector::kNgram;
    ASSERT_EQ(stop.has_value(), batch_fired) << k;
    if (!batch_fired) continue;
    ++fired;
    EXPECT_EQ(stop->token_offset, batch.repetition_finding.token_offset) << k;
    EXPECT_EQ(monitor.tokens(), stop->token_offset + 8);  // stopped on the completing token
  }
  EXPECT_GT(fired, 100);
}

TEST(GenerationMonitor, TheTokenBudgetStopsAtExactlyMaxTokens) {
  MonitorOptions options;
  options.max_tokens = 100;
  GenerationMonitor monitor(options);
  std::vector<uint32_t> ids(30);
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint32_t>(round * 30 + i);
    ASSERT_FALSE(monitor.PushTokens(ids)->has_value());
  }
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint32_t>(90 + i);
  const std::optional<StopVerdict> stop = *monitor.PushTokens(ids);
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(stop->reason, StopReason::kTokenBudget);
  EXPECT_EQ(stop->token_offset, 100u);
  EXPECT_EQ(monitor.tokens(), 100u);
  EXPECT_TRUE(monitor.stopped());
  EXPECT_FALSE(monitor.PushTokens(ids)->has_value());  // over: nothing more is said

  // Text: tokens are estimated as tokens.h does, ceil(bytes / 4), so the 100th token has begun
  // at byte 397.
  GenerationMonitor text(options);
  EXPECT_FALSE(text.PushText(std::string(396, 'a'))->has_value());
  const std::optional<StopVerdict> text_stop = *text.PushText("ab");
  ASSERT_TRUE(text_stop.has_value());
  EXPECT_EQ(text_stop->reason, StopReason::kTokenBudget);
  EXPECT_EQ(text_stop->char_offset, 397u);
  EXPECT_THAT(text_stop->detail, HasSubstr("estimated"));
}

TEST(GenerationMonitor, LoopsAnywhereInTheGenerationAreWatched) {
  // The batch scorer reads the whole completion, so the stream watches it all: a loop after
  // </think>, before <think>, or in a generation with no tags stops it.
  MonitorOptions options;
  options.max_tokens = 0;
  std::string looping_words;
  for (int i = 0; i < 40; ++i) looping_words += "one two three four five six seven eight ";
  for (const std::string& text : {"<think>fine</think>" + looping_words, looping_words,
                                  "</think>" + looping_words, looping_words + "<think>"}) {
    GenerationMonitor monitor(options);
    const absl::StatusOr<std::optional<StopVerdict>> stop = monitor.PushText(text);
    ASSERT_TRUE(stop.ok());
    EXPECT_TRUE(stop->has_value()) << text;
  }
}

TEST(GenerationMonitor, MixingTokensAndTextIsRefused) {
  GenerationMonitor monitor(MonitorOptions{});
  const uint32_t ids[] = {1, 2, 3};
  ASSERT_TRUE(monitor.PushTokens(ids).ok());
  const absl::StatusOr<std::optional<StopVerdict>> text = monitor.PushText("hello");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("token ids"));
}

TEST(GenerationMonitor, MemoryIsBoundedByTheTokensSeen) {
  MonitorOptions options;
  options.max_tokens = 20000;
  GenerationMonitor monitor(options);
  std::vector<uint32_t> ids(1000);
  std::optional<StopVerdict> stop;
  for (uint32_t round = 0; !stop; ++round) {
    for (uint32_t i = 0; i < ids.size(); ++i) ids[i] = round * 1000 + i;
    stop = *monitor.PushTokens(ids);
  }
  EXPECT_EQ(stop->reason, StopReason::kTokenBudget);
  EXPECT_LE(monitor.MemoryBytes(), 20000u * 80 + 4096);
}

}  // namespace
}  // namespace rlscore::scorers
