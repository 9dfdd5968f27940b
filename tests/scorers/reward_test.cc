// Tests of scorers/reward.h end to end through the real scorers: the default profile
// (gated format, truncation, the incident's loop), token-id mode, token estimates, weights,
// repetition modes, every length shape through a profile (Kimi within the group), tag policies,
// caller-supplied accuracy, unscorable completions, and one ValidateProfile row per rule.
#include "scorers/reward.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scorers/accuracy.h"
#include "scorers/length.h"
#include "scorers/math/verifier.h"
#include "scorers/ngram_repetition.h"
#include "scorers/tokens.h"

namespace rlscore::scorers {

// Readable verdicts in failure messages (found by argument-dependent lookup).
void PrintTo(Verdict v, std::ostream* os) { *os << VerdictName(v); }

namespace {

using ::testing::HasSubstr;

constexpr Verdict kC = Verdict::kCorrect;
constexpr Verdict kW = Verdict::kWrong;
constexpr Verdict kNo = Verdict::kNoAnswer;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The loop of the incident post-mortem: 41 bytes, 7 words.
constexpr std::string_view kPhrase = "Wait, let me double check... but wait... ";
constexpr size_t kThinkOpen = 7;  // bytes of "<think>"

std::string Repeat(std::string_view s, size_t times) {
  std::string out;
  for (size_t i = 0; i < times; ++i) out.append(s);
  return out;
}

std::string Excerpt(std::string_view s) {
  return s.size() <= 80 ? std::string(s) : absl::StrCat(Sv(s.substr(0, 80)), "...");
}

CompletionInput In(std::string_view text, std::optional<uint32_t> num_tokens = 100,
                   std::optional<bool> finished = true) {
  CompletionInput in;
  in.text = text;
  in.num_tokens = num_tokens;
  in.finished = finished;
  return in;
}

// Scores `inputs` as one group with the basic accuracy scorer and `references`.
absl::StatusOr<std::vector<CompletionScore>> Score(
    const std::vector<CompletionInput>& inputs, const Profile& profile, Task task = Task::kNumeric,
    const std::vector<std::string>& references = {"42"}) {
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  const std::unique_ptr<Judge> judge = scorer->Prepare(task, references);
  std::vector<CompletionScore> scores;
  const absl::Status status = ScoreGroup(inputs, task, judge.get(), profile, &scores);
  if (!status.ok()) return status;
  EXPECT_EQ(scores.size(), inputs.size());
  return scores;
}

// One completion through ScoreGroup; fails the test on an error.
CompletionScore ScoreOne(const CompletionInput& input, const Profile& profile,
                         Task task = Task::kNumeric) {
  absl::StatusOr<std::vector<CompletionScore>> scores = Score({input}, profile, task);
  EXPECT_TRUE(scores.ok()) << scores.status();
  if (!scores.ok() || scores->size() != 1) return CompletionScore{};
  return (*scores)[0];
}

// The total must be the profile's weighted sum of the components it reports.
void ExpectComposed(const CompletionScore& s, const Weights& w) {
  EXPECT_DOUBLE_EQ(s.total, w.accuracy * s.accuracy + w.format * s.format +
                                w.repetition * s.repetition + w.length * s.length);
}

TEST(Reward, DefaultProfileIsSpecTable) {
  const Profile p;
  EXPECT_EQ(p.name, "default");
  EXPECT_EQ(p.task, Task::kMath);
  EXPECT_DOUBLE_EQ(p.format.reward, 0.1);
  EXPECT_FALSE(p.format.ungated);
  EXPECT_TRUE(p.repetition.enabled);
  EXPECT_EQ(p.repetition.mode, RepetitionMode::kThreshold);
  EXPECT_DOUBLE_EQ(p.repetition.penalty, -0.5);
  EXPECT_EQ(p.repetition.ngram.n, 8u);
  EXPECT_EQ(p.repetition.ngram.max_occurrences, 3u);
  EXPECT_EQ(p.length.shape, LengthShape::kQuadratic);
  EXPECT_DOUBLE_EQ(p.length.weight, 0.5);
  EXPECT_EQ(p.length.target, 4096u);
  EXPECT_EQ(p.length.max, 16384u);
  EXPECT_EQ(p.weights.accuracy, 1.0);
  EXPECT_EQ(p.weights.format, 1.0);
  EXPECT_EQ(p.weights.repetition, 1.0);
  EXPECT_EQ(p.weights.length, 1.0);
  EXPECT_TRUE(p.expects_reasoning);
  EXPECT_FALSE(p.tags.think_prefilled);
  EXPECT_FALSE(p.tags.require_answer_tags);
  EXPECT_TRUE(ValidateProfile(p).ok()) << ValidateProfile(p);
}

TEST(Reward, DefaultProfileTable) {
  const std::string right = "<think>6 times 7 is 42.</think> The answer is \\boxed{42}.";
  const std::string wrong = "<think>6 times 7 is 41.</think> The answer is \\boxed{41}.";
  const std::string unsure = "<think>hard.</think> I am not sure.";
  const std::string doubled = "<think>a</think><think>b</think> \\boxed{42}";
  struct Case {
    std::string_view text;
    std::optional<uint32_t> num_tokens;
    std::optional<bool> finished;
    Verdict verdict;
    double accuracy, format, length, total;
    bool well_formed, truncated, gated;
  };
  const double at_16383 = -0.5 * (12287.0 / 12288.0) * (12287.0 / 12288.0);
  const Case cases[] = {
      // Correct and well-formed: 1 + 0.1.
      {right, 100, true, kC, 1.0, 0.1, 0.0, 1.1, true, false, false},
      {right, 100, std::nullopt, kC, 1.0, 0.1, 0.0, 1.1, true, false, false},
      {right, 4096, true, kC, 1.0, 0.1, 0.0, 1.1, true, false, false},
      // Wrong and well-formed: the gate withholds the format reward.
      {wrong, 100, true, kW, 0.0, 0.0, 0.0, 0.0, true, false, true},
      {unsure, 100, true, kNo, 0.0, 0.0, 0.0, 0.0, true, false, true},
      // Truncated: no format reward; the length shape decides the rest.
      {right, 100, false, kC, 1.0, 0.0, 0.0, 1.0, false, true, false},
      {right, 16384, std::nullopt, kC, 1.0, 0.0, -0.5, 0.5, false, true, false},
      {right, 16384, true, kC, 1.0, 0.0, -0.5, 0.5, false, true, false},
      {right, 1000000, true, kC, 1.0, 0.0, -0.5, 0.5, false, true, false},
      {wrong, 16384, true, kW, 0.0, 0.0, -0.5, -0.5, false, true, false},
      // Quadratic below L_max, not truncated.
      {right, 10240, true, kC, 1.0, 0.1, -0.125, 0.975, true, false, false},
      {right, 16383, true, kC, 1.0, 0.1, at_16383, 1.1 + at_16383, true, false, false},
      {right, 10240, false, kC, 1.0, 0.0, -0.125, 0.875, false, true, false},
      // Malformed but correct: accuracy without format.
      {doubled, 100, true, kC, 1.0, 0.0, 0.0, 1.0, false, false, false},
  };
  for (const Task task : {Task::kNumeric, Task::kMath}) {
    for (size_t i = 0; i < std::size(cases); ++i) {
      const Case& c = cases[i];
      SCOPED_TRACE(absl::StrCat("task ", static_cast<int>(task), " case ", i, " [", Excerpt(c.text),
                                "] num_tokens ", c.num_tokens.value_or(0), " finished ",
                                c.finished.has_value() ? (*c.finished ? "true" : "false") : "-"));
      const Profile profile;
      const CompletionScore s = ScoreOne(In(c.text, c.num_tokens, c.finished), profile, task);
      EXPECT_EQ(s.verdict, c.verdict);
      EXPECT_EQ(s.accuracy, c.accuracy);
      EXPECT_DOUBLE_EQ(s.format, c.format);
      EXPECT_EQ(s.repetition, 0.0);
      EXPECT_DOUBLE_EQ(s.length, c.length);
      EXPECT_DOUBLE_EQ(s.total, c.total);
      ExpectComposed(s, profile.weights);
      EXPECT_EQ(s.well_formed, c.well_formed);
      EXPECT_EQ(s.truncated, c.truncated);
      EXPECT_EQ(s.format_gated, c.gated);
      EXPECT_FALSE(s.format_paid_ungated);
      EXPECT_EQ(s.num_tokens, c.num_tokens.value_or(0));
      EXPECT_FALSE(s.tokens_estimated);
      EXPECT_EQ(s.repetition_finding.detector, RepetitionDetector::kNone);
      EXPECT_FALSE(s.unscorable());
    }
  }
}

TEST(Reward, ExtractedAnswerAndTagCounts) {
  const std::string text = "<think>6 times 7 is 42.</think> The answer is \\boxed{42}.";
  const CompletionScore s = ScoreOne(In(text), Profile{});
  EXPECT_EQ(s.extracted_answer, "42");
  EXPECT_TRUE(s.has_answer_section);
  EXPECT_EQ(s.think_open_tags, 1u);
  EXPECT_EQ(s.think_close_tags, 1u);
  EXPECT_EQ(s.malformed_tags, 0u);

  const std::string look_alike = "<think>x</thinking></think> \\boxed{42}";
  const CompletionScore m = ScoreOne(In(look_alike), Profile{});
  EXPECT_EQ(m.malformed_tags, 1u);
  EXPECT_FALSE(m.well_formed);
  EXPECT_EQ(m.verdict, kC);
  EXPECT_DOUBLE_EQ(m.total, 1.0);
}

// The incident: an endless "Wait, let me double check" loop inside <think> that never closes.
TEST(Reward, IncidentLoop) {
  const std::string text = absl::StrCat("<think>", Sv(Repeat(kPhrase, 40)));
  ASSERT_EQ(kPhrase.size(), 41u);
  const uint64_t fourth = kThinkOpen + 3 * kPhrase.size();  // 130
  struct Case {
    std::optional<uint32_t> num_tokens;
    std::optional<bool> finished;
    double length;
  };
  const Case cases[] = {
      {std::nullopt, std::nullopt, 0.0},  // estimated: 412 tokens
      {1647, true, 0.0},                  // one token per byte: token offset == char offset
      {16384, false, -0.5},               // how the incident's rollouts ended
      {10240, true, -0.125},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("num_tokens ", c.num_tokens.value_or(0)));
    const Profile profile;
    const CompletionScore s = ScoreOne(In(text, c.num_tokens, c.finished), profile);
    const uint32_t num_tokens = c.num_tokens.value_or(EstimateTokens(text));
    EXPECT_EQ(s.num_tokens, num_tokens);
    EXPECT_EQ(s.tokens_estimated, !c.num_tokens.has_value());

    const RepetitionFinding& f = s.repetition_finding;
    EXPECT_EQ(f.detector, RepetitionDetector::kNgram);
    EXPECT_EQ(f.char_offset, fourth);
    EXPECT_EQ(f.first_char_offset, kThinkOpen);
    EXPECT_EQ(f.occurrences, 4u);
    EXPECT_EQ(f.token_offset, EstimateTokenOffset(fourth, text.size(), num_tokens));
    EXPECT_THAT(f.detail, HasSubstr("token offset estimated"));
    EXPECT_THAT(f.detail, HasSubstr("character 7 "));
    EXPECT_EQ(s.repetition, -0.5);

    EXPECT_EQ(s.verdict, kNo);
    EXPECT_THAT(s.detail, HasSubstr("only in the reasoning"));
    EXPECT_EQ(s.accuracy, 0.0);
    EXPECT_EQ(s.format, 0.0);  // the incident's 0.1 is gone
    EXPECT_FALSE(s.well_formed);
    EXPECT_FALSE(s.format_gated);
    EXPECT_FALSE(s.has_answer_section);
    EXPECT_EQ(s.think_open_tags, 1u);
    EXPECT_EQ(s.think_close_tags, 0u);
    EXPECT_DOUBLE_EQ(s.length, c.length);
    EXPECT_DOUBLE_EQ(s.total, -0.5 + c.length);
  }
  // Spelled out for the estimated case: ceil(1647 / 4) = 412 tokens, 130 · 412 / 1647 = 32.5.
  const CompletionScore s = ScoreOne(In(text, std::nullopt, std::nullopt), Profile{});
  EXPECT_EQ(text.size(), 1647u);
  EXPECT_EQ(s.num_tokens, 412u);
  EXPECT_EQ(s.repetition_finding.char_offset, 130u);
  EXPECT_EQ(s.repetition_finding.token_offset, 32u);
}

// The AST rules (docs/REPETITION.md) through the reward: a code model re-emitting its function with
// renamed identifiers is caught by the code-clone rule although no 8-gram of its words repeats.
TEST(Reward, RenamedFunctionFiresCodeCloneNotNgram) {
  static const char* const kNames[][3] = {{"solve", "n", "m"},
                                          {"compute", "count", "scale"},
                                          {"helper", "limit", "factor"},
                                          {"answer_fn", "size", "weight"}};
  static const char* const kIntros[] = {"First attempt at the code.", "Let me restate it.",
                                        "Cleaner this time.", "One more version."};
  std::string text = "<think>";
  for (int c = 0; c < 4; ++c) {
    absl::StrAppend(&text, kIntros[c], "\n\n```python\ndef ", kNames[c][0], "(", kNames[c][1], ", ",
                    kNames[c][2], "):\n    total = 0\n    for i in range(", kNames[c][1],
                    "):\n        if i % ", c + 2, " == 0:\n            total += i * ", kNames[c][2],
                    "\n        else:\n            total -= ", kNames[c][2],
                    "\n    return total\n```\n\n");
  }
  text += "</think>The answer is 42.";
  // The n-gram rule alone does not fire on it...
  const std::vector<Word> words = NormalizedWords(text);
  ASSERT_FALSE(FindRepeatedNgram(WordHashes(words), NgramOptions{}).fired);
  // ... the code-clone rule does, at the fourth function.
  const CompletionScore s = ScoreOne(In(text), Profile{});
  const RepetitionFinding& f = s.repetition_finding;
  EXPECT_EQ(f.detector, RepetitionDetector::kAstCodeClone) << f.detail;
  EXPECT_EQ(f.char_offset, text.find("def answer_fn"));
  EXPECT_EQ(f.first_char_offset, text.find("def solve"));
  EXPECT_EQ(f.occurrences, 4u);
  EXPECT_EQ(f.token_offset, EstimateTokenOffset(f.char_offset, text.size(), 100));
  EXPECT_THAT(f.detail, HasSubstr("identifiers and literals abstracted"));
  EXPECT_EQ(s.repetition, -0.5);
  EXPECT_TRUE(s.ast_parsed);
  EXPECT_EQ(s.verdict, kC);
  ExpectComposed(s, Weights{});

  // Off in the profile: nothing fires and nothing is parsed.
  Profile off;
  off.repetition.ast.enabled = false;
  const CompletionScore quiet = ScoreOne(In(text), off);
  EXPECT_EQ(quiet.repetition_finding.detector, RepetitionDetector::kNone);
  EXPECT_EQ(quiet.repetition, 0.0);
  EXPECT_FALSE(quiet.ast_parsed);
}

// The incident's loop: reworded reflections that re-enter the reasoning, well-formed or not. No
// 8-gram recurs, so only the tag-loop rule sees it: a third reasoning section fires, at its tag.
TEST(Reward, ReenteringTheReasoningFiresTheTagLoop) {
  const std::string text =
      "<think>The area is 12.</think>Hmm, wait.\n<think>Let me reconsider the legs, they were "
      "6 and 4.</ think>So 12.\n<THINK>But what if the triangle is obtuse instead? Then";
  const CompletionScore s = ScoreOne(In(text), Profile{});
  const RepetitionFinding& f = s.repetition_finding;
  EXPECT_EQ(f.detector, RepetitionDetector::kTagLoop) << f.detail;
  EXPECT_EQ(f.char_offset, text.find("<THINK>"));
  EXPECT_EQ(f.first_char_offset, 0u);
  EXPECT_EQ(f.occurrences, 5u);
  EXPECT_THAT(f.detail, HasSubstr("reasoning tag 5 (more than 4"));
  EXPECT_EQ(s.repetition, -0.5);

  // Two whole sections do not fire; a profile may turn the rule off or move its limit.
  const std::string two = "<think>a</think>b<think>c</think> \\boxed{42}";
  EXPECT_EQ(ScoreOne(In(two), Profile{}).repetition_finding.detector, RepetitionDetector::kNone);
  Profile off;
  off.repetition.max_reasoning_tags = 0;
  EXPECT_EQ(ScoreOne(In(text), off).repetition_finding.detector, RepetitionDetector::kNone);
  Profile smooth;
  smooth.repetition.mode = RepetitionMode::kSmooth;
  EXPECT_LE(ScoreOne(In(text), smooth).repetition, -0.5);

  // When the n-gram rule fires too, the rule whose evidence is complete first is reported, as
  // the stream stops: here a verbatim loop that fills the window long before the tags.
  std::string looping = "<think>";
  for (int i = 0; i < 40; ++i) looping += "one two three four five six seven eight ";
  looping += text;
  EXPECT_EQ(ScoreOne(In(looping), Profile{}).repetition_finding.detector,
            RepetitionDetector::kNgram);
  std::string tags_first = text + " ";
  for (int i = 0; i < 40; ++i) tags_first += "one two three four five six seven eight ";
  EXPECT_EQ(ScoreOne(In(tags_first), Profile{}).repetition_finding.detector,
            RepetitionDetector::kTagLoop);
}

// A degenerate generation with no words: the word rules cannot see it.
TEST(Reward, PunctuationWithoutEndFiresTheUnbrokenRun) {
  const std::string text = "<think>Let me compute the sum" + std::string(5000, '!');
  const CompletionScore s = ScoreOne(In(text), Profile{});
  const RepetitionFinding& f = s.repetition_finding;
  EXPECT_EQ(f.detector, RepetitionDetector::kUnbrokenRun) << f.detail;
  EXPECT_EQ(f.first_char_offset, text.find('!'));
  EXPECT_EQ(f.char_offset, text.find('!') + 2048);
  EXPECT_EQ(s.repetition, -0.5);
  Profile off;
  off.repetition.max_run_bytes = 0;
  EXPECT_EQ(ScoreOne(In(text), off).repetition_finding.detector, RepetitionDetector::kNone);
  // Token ids see it as a loop of their own: the n-gram rule on them comes first.
  const std::vector<uint32_t> ids(1200, 0);
  CompletionInput with_ids = In(text);
  with_ids.token_ids = ids;
  EXPECT_EQ(ScoreOne(with_ids, Profile{}).repetition_finding.detector, RepetitionDetector::kNgram);
}

// "The same step with different numbers": the block rule.
TEST(Reward, DerivationWithDifferentNumbersFiresBlock) {
  std::string text = "<think>We look for the smallest valid $k$.\n\n";
  for (int c = 0; c < 5; ++c) {
    const int a = 4 + 9 * c;
    absl::StrAppend(&text, "Trying $k = ", a, "$: then $k^2 - ", 2 * a + 1, " = ",
                    a * a - 2 * a - 1, "$, leaving the remainder ", (a * a) % (5 + c), " modulo ",
                    5 + c, ", so it fails.\n\n");
  }
  text += "</think>The answer is 42.";
  const std::vector<Word> words = NormalizedWords(text);
  ASSERT_FALSE(FindRepeatedNgram(WordHashes(words), NgramOptions{}).fired);
  const CompletionScore s = ScoreOne(In(text), Profile{});
  const RepetitionFinding& f = s.repetition_finding;
  EXPECT_EQ(f.detector, RepetitionDetector::kAstBlock) << f.detail;
  EXPECT_EQ(f.first_char_offset, text.find("Trying"));
  size_t fourth = text.find("Trying");
  for (int k = 1; k < 4; ++k) fourth = text.find("Trying", fourth + 1);
  EXPECT_EQ(f.char_offset, fourth);
  EXPECT_EQ(s.repetition, -0.5);

  // Smooth mode: an AST firing makes the component at most `penalty`.
  Profile smooth;
  smooth.repetition.mode = RepetitionMode::kSmooth;
  const CompletionScore sm = ScoreOne(In(text), smooth);
  EXPECT_EQ(sm.repetition_finding.detector, RepetitionDetector::kAstBlock);
  EXPECT_LE(sm.repetition, -0.5);

  // Out of budget: nothing fires, the finding says so, and the n-gram rule still applied.
  Profile tight;
  tight.repetition.ast.max_parse_bytes = 64;
  const CompletionScore t = ScoreOne(In(text), tight);
  EXPECT_EQ(t.repetition_finding.detector, RepetitionDetector::kNone);
  EXPECT_EQ(t.ast_skipped, ast::AstBudget::kBytes);
  EXPECT_THAT(t.repetition_finding.detail, HasSubstr("skipped: budget (bytes"));
  EXPECT_EQ(t.repetition, 0.0);
}

// The incident's reflections, reworded each time and mixed with malformed tags, separated into
// paragraphs as reasoning models write them: at least one rule fires.
TEST(Reward, IncidentReflectionLoopFires) {
  static const char* const kReflections[] = {
      "Wait, let me rethink the previous step... but wait, consider another case where the "
      "divisor is even. <thinking>",
      "Hmm, let me re-examine the last step... but wait, maybe there is another case where the "
      "divisor is odd. </ think>",
      "Actually, let me double check the previous step... but wait, consider the case where the "
      "divisor is zero. <think>",
  };
  std::string text = "<think>We need the number of divisors of 360.\n\n";
  for (int k = 0; k < 12; ++k) absl::StrAppend(&text, kReflections[k % 3], "\n\n");
  const CompletionScore s = ScoreOne(In(text, 16384, false), Profile{});
  EXPECT_NE(s.repetition_finding.detector, RepetitionDetector::kNone);
  EXPECT_EQ(s.repetition, -0.5);
  EXPECT_GT(s.malformed_tags, 0u);
  EXPECT_EQ(s.format, 0.0);
}

// A boxed answer inside the unclosed reasoning earns nothing, and the loop is still penalised.
TEST(Reward, AnswerOnlyInReasoningEarnsNothing) {
  const std::string text = absl::StrCat("<think>", Sv(Repeat(kPhrase, 5)), "\\boxed{42}");
  const CompletionScore s = ScoreOne(In(text), Profile{});
  EXPECT_EQ(s.verdict, kNo);
  EXPECT_THAT(s.detail, HasSubstr("only in the reasoning"));
  EXPECT_EQ(s.accuracy, 0.0);
  EXPECT_EQ(s.repetition, -0.5);
  EXPECT_DOUBLE_EQ(s.total, -0.5);
}

// The n-gram rule reads the whole completion (words mode) — reasoning, tags, answer section —
// and offsets are in the whole text. kPhrase is 7 words, 41 bytes.
TEST(Reward, RepetitionIsReadInTheWholeCompletion) {
  struct Case {
    std::string text;
    bool fires;
    uint64_t first, fourth;
    double total;
  };
  const Case cases[] = {
      {absl::StrCat("<think>", Sv(Repeat(kPhrase, 5)), "</think> \\boxed{42}"), true, 7, 7 + 3 * 41,
       0.6},
      {absl::StrCat("  \n<think>", Sv(Repeat(kPhrase, 5)), "</think> \\boxed{42}"), true, 10,
       10 + 3 * 41, 0.6},
      // Four words first ("think", "intro", "words", "here"): positions 11 on recur, and the
      // share of recurring positions first reaches 60 % at position 27 ((27 - 10) · 100 / 28),
      // which starts the 4th occurrence of the 8-gram that begins at the loop's third word.
      {absl::StrCat("<think>Intro words here. ", Sv(Repeat(kPhrase, 5)), "</think> \\boxed{42}"),
       true, 7 + 18 + 10, 7 + 18 + 3 * 41 + 10, 0.6},
      // Three loops and the start of a fourth: the 4th 8-gram needs one word of the next loop.
      {absl::StrCat("<think>", Sv(Repeat(kPhrase, 3)), "Wait, let me double check... but wait",
                    "</think> \\boxed{42}"),
       false, 0, 0, 1.1},
      {absl::StrCat("<think>", Sv(Repeat(kPhrase, 3)), "Wait, let me double check... but wait... ",
                    "wait", "</think> \\boxed{42}"),
       true, 7, 7 + 3 * 41, 0.6},
      // A loop after </think> is a loop: the answer section is read too; so is one with no tags
      // (no </think>: no answer, 0 - 0.5), or before <think> (not well-formed: 1 - 0.5).
      {absl::StrCat("<think>short</think> ", Sv(Repeat(kPhrase, 6)), "\\boxed{42}"), true, 21,
       21 + 3 * 41, 0.6},
      {absl::StrCat(Sv(Repeat(kPhrase, 6)), "\\boxed{42}"), true, 0, 3 * 41, -0.5},
      {absl::StrCat(Sv(Repeat(kPhrase, 6)), "<think>x</think>\\boxed{42}"), true, 0, 3 * 41, 0.5},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(absl::StrCat("case ", i, " [", Excerpt(c.text), "]"));
    const CompletionScore s = ScoreOne(In(c.text), Profile{});
    EXPECT_DOUBLE_EQ(s.total, c.total);
    if (c.fires) {
      EXPECT_EQ(s.repetition_finding.detector, RepetitionDetector::kNgram);
      EXPECT_EQ(s.repetition_finding.first_char_offset, c.first);
      EXPECT_EQ(s.repetition_finding.char_offset, c.fourth);
      EXPECT_EQ(s.repetition_finding.occurrences, 4u);
      EXPECT_EQ(s.repetition, -0.5);
    } else {
      EXPECT_EQ(s.repetition_finding.detector, RepetitionDetector::kNone);
      EXPECT_EQ(s.repetition_finding.occurrences, 0u);
      EXPECT_TRUE(s.repetition_finding.detail.empty());
      EXPECT_EQ(s.repetition, 0.0);
      EXPECT_DOUBLE_EQ(s.total, 1.1);
    }
  }
}

// Token ids of `prefix` distinct ids followed by `loops` copies of an 8-id pattern.
std::vector<uint32_t> LoopIds(size_t prefix, size_t loops) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < prefix; ++i) ids.push_back(static_cast<uint32_t>(1000 + i));
  for (size_t k = 0; k < loops; ++k) {
    for (uint32_t j = 1; j <= 8; ++j) ids.push_back(j);
  }
  return ids;
}

// A correct, well-formed completion of exactly `bytes` bytes whose words never repeat.
std::string PlainCompletion(size_t bytes) {
  std::string text = "<think>";
  for (int i = 0; text.size() < bytes / 2; ++i) absl::StrAppend(&text, "w", i, " ");
  const std::string_view tail = "</think> \\boxed{42}";
  text.append(bytes - text.size() - tail.size(), ' ');
  text.append(tail);
  return text;
}

TEST(Reward, TokenIdsDriveLengthAndRepetition) {
  const std::string text = PlainCompletion(450);
  ASSERT_EQ(text.size(), 450u);
  // The literal rule, for an offset that is the 4th occurrence whatever the prefix.
  Profile literal;
  literal.repetition.ngram.rule = NgramRule::kLiteral;
  for (size_t prefix = 0; prefix <= 9; ++prefix) {
    SCOPED_TRACE(absl::StrCat("prefix ", prefix));
    const std::vector<uint32_t> ids = LoopIds(prefix, 5);
    CompletionInput in = In(text, /*num_tokens=*/9999);  // token_ids win over num_tokens
    in.token_ids = ids;
    const CompletionScore s = ScoreOne(in, literal);
    EXPECT_EQ(s.num_tokens, ids.size());
    EXPECT_FALSE(s.tokens_estimated);
    EXPECT_FALSE(s.truncated);
    const RepetitionFinding& f = s.repetition_finding;
    EXPECT_EQ(f.detector, RepetitionDetector::kNgram);
    EXPECT_EQ(f.token_offset, prefix + 24);  // the 4th occurrence of the pattern
    EXPECT_EQ(f.occurrences, 4u);
    // Proportional: token · bytes / tokens.
    EXPECT_EQ(f.char_offset, (prefix + 24) * 450 / ids.size());
    EXPECT_EQ(f.first_char_offset, prefix * 450 / ids.size());
    EXPECT_THAT(f.detail, HasSubstr("character offsets estimated"));
    EXPECT_THAT(f.detail, HasSubstr(absl::StrCat("first at token ", prefix, " occurs")));
    EXPECT_EQ(s.repetition, -0.5);
    EXPECT_EQ(s.verdict, kC);
    EXPECT_DOUBLE_EQ(s.total, 0.6);
  }
  // 45 ids over 450 bytes: ten bytes a token, so the estimate is exact here.
  CompletionInput in = In(text, std::nullopt);
  const std::vector<uint32_t> ids = LoopIds(5, 5);
  in.token_ids = ids;
  const CompletionScore s = ScoreOne(in, literal);
  EXPECT_EQ(s.num_tokens, 45u);
  EXPECT_EQ(s.repetition_finding.token_offset, 29u);
  EXPECT_EQ(s.repetition_finding.char_offset, 290u);
  EXPECT_EQ(s.repetition_finding.first_char_offset, 50u);
  // The default loop rule: positions 13 on recur (5 + 8), and the recurring share first reaches
  // 60 % at position 32 ((32 - 12) · 100 / 33 = 60), the 4th occurrence of the 8-gram at 8.
  const CompletionScore loop = ScoreOne(in, Profile{});
  EXPECT_EQ(loop.repetition_finding.token_offset, 32u);
  EXPECT_EQ(loop.repetition_finding.char_offset, 320u);
  EXPECT_EQ(loop.repetition_finding.first_char_offset, 80u);
  EXPECT_THAT(loop.repetition_finding.detail, HasSubstr("in a loop: 60% of the last 200"));
}

TEST(Reward, TokenIdsAreTheRepetitionTokens) {
  // Three copies of the pattern and a partial fourth: no 8-gram occurs 4 times.
  const std::string plain = PlainCompletion(450);
  const std::vector<uint32_t> three = LoopIds(3, 3);
  std::vector<uint32_t> almost = three;
  for (uint32_t j = 1; j <= 7; ++j) almost.push_back(j);
  // A looping text with ids that never repeat: the ids decide.
  const std::string looping =
      absl::StrCat("<think>", Sv(Repeat(kPhrase, 8)), "</think> \\boxed{42}");
  std::vector<uint32_t> distinct;
  for (uint32_t i = 0; i < 100; ++i) distinct.push_back(i);
  struct Case {
    std::string_view text;
    std::span<const uint32_t> ids;
  };
  const Case cases[] = {{plain, three}, {plain, almost}, {looping, distinct}};
  for (size_t i = 0; i < std::size(cases); ++i) {
    SCOPED_TRACE(absl::StrCat("case ", i));
    CompletionInput in = In(cases[i].text, std::nullopt);
    in.token_ids = cases[i].ids;
    const CompletionScore s = ScoreOne(in, Profile{});
    EXPECT_EQ(s.num_tokens, cases[i].ids.size());
    EXPECT_EQ(s.repetition_finding.detector, RepetitionDetector::kNone);
    EXPECT_EQ(s.repetition, 0.0);
    EXPECT_DOUBLE_EQ(s.total, 1.1);
  }
}

TEST(Reward, TokenIdsAtMaxAreTruncated) {
  const std::string text = PlainCompletion(200);
  for (uint32_t n : {16383u, 16384u, 20000u}) {
    SCOPED_TRACE(absl::StrCat("ids ", n));
    std::vector<uint32_t> ids(n);
    for (uint32_t i = 0; i < n; ++i) ids[i] = i;
    CompletionInput in = In(text, /*num_tokens=*/10);
    in.token_ids = ids;
    const CompletionScore s = ScoreOne(in, Profile{});
    EXPECT_EQ(s.num_tokens, n);
    EXPECT_EQ(s.truncated, n >= 16384);
    EXPECT_DOUBLE_EQ(s.length, QuadraticLengthPenalty(n, LengthOptions{}));
    EXPECT_DOUBLE_EQ(s.format, n >= 16384 ? 0.0 : 0.1);
  }
}

TEST(Reward, TokensEstimatedWithoutACount) {
  const std::vector<std::string> texts = {
      "",
      "4",
      "<think>",
      "<think>a</think>",
      "<think>ab</think> \\boxed{42}",
      PlainCompletion(1001),
  };
  for (const std::string& text : texts) {
    SCOPED_TRACE(absl::StrCat("[", Excerpt(text), "] bytes ", text.size()));
    const CompletionScore estimated = ScoreOne(In(text, std::nullopt, std::nullopt), Profile{});
    EXPECT_TRUE(estimated.tokens_estimated);
    EXPECT_EQ(estimated.num_tokens, EstimateTokens(text));
    EXPECT_EQ(estimated.num_tokens, (text.size() + 3) / 4);

    const CompletionScore given = ScoreOne(In(text, /*num_tokens=*/0), Profile{});
    EXPECT_FALSE(given.tokens_estimated);
    EXPECT_EQ(given.num_tokens, 0u);

    CompletionInput with_ids = In(text, std::nullopt);
    const std::vector<uint32_t> ids = {7, 8, 9};
    with_ids.token_ids = ids;
    const CompletionScore by_ids = ScoreOne(with_ids, Profile{});
    EXPECT_FALSE(by_ids.tokens_estimated);
    EXPECT_EQ(by_ids.num_tokens, 3u);
  }
  // An estimate at L_max truncates like a count would.
  std::string long_text = "<think>x";
  long_text.append(65536, ' ');
  long_text.append("</think> \\boxed{42}");
  Profile length_only;  // 64 KiB of spaces is an unbroken run too; this checks the length alone
  length_only.repetition.max_run_bytes = 0;
  const CompletionScore s = ScoreOne(In(long_text, std::nullopt), length_only);
  EXPECT_TRUE(s.tokens_estimated);
  EXPECT_EQ(s.num_tokens, EstimateTokens(long_text));
  EXPECT_TRUE(s.truncated);
  EXPECT_DOUBLE_EQ(s.length, -0.5);
  EXPECT_DOUBLE_EQ(s.total, 0.5);
}

TEST(Reward, WeightsComposeUnweightedComponents) {
  // Correct, well-formed, looping reasoning, 10240 tokens: components 1, 0.1, -0.5, -0.125.
  const std::string text = absl::StrCat("<think>", Sv(Repeat(kPhrase, 5)), "</think> \\boxed{42}");
  struct Case {
    Weights weights;
    double total;
  };
  const Case cases[] = {
      {{1, 1, 1, 1}, 0.475}, {{2, 0, 1, 0}, 1.5},     {{0.5, 3, 2, 4}, 0.5 + 0.3 - 1.0 - 0.5},
      {{0, 0, 0, 0}, 0.0},   {{-1, 1, 1, 1}, -1.525}, {{1, 10, 0, 0}, 2.0},
      {{0, 0, 0, 8}, -1.0},
  };
  for (const Case& c : cases) {
    const Weights& w = c.weights;
    SCOPED_TRACE(
        absl::StrCat("weights ", w.accuracy, " ", w.format, " ", w.repetition, " ", w.length));
    Profile profile;
    profile.weights = w;
    ASSERT_TRUE(ValidateProfile(profile).ok());
    const CompletionScore s = ScoreOne(In(text, 10240), profile);
    EXPECT_EQ(s.accuracy, 1.0);
    EXPECT_DOUBLE_EQ(s.format, 0.1);
    EXPECT_EQ(s.repetition, -0.5);
    EXPECT_DOUBLE_EQ(s.length, -0.125);
    EXPECT_DOUBLE_EQ(s.total, c.total);
    ExpectComposed(s, w);
  }
}

TEST(Reward, SmoothRepetitionMatchesDirectCall) {
  const std::string incident = absl::StrCat("<think>", Sv(Repeat(kPhrase, 40)));
  const std::string closed =
      absl::StrCat("<think>", Sv(Repeat(kPhrase, 6)), "</think> \\boxed{42}");
  // Distinct reasoning, repetitive answer section: the words of both are scored.
  const std::string answer_loop =
      absl::StrCat("<think>one two three four five six seven eight nine ten</think> ",
                   Sv(Repeat(kPhrase, 6)), "\\boxed{42}");
  const std::string short_text = "<think>a b c</think> \\boxed{42}";
  // The whole completion's words are scored, as open-r1 scores the whole completion.
  struct Case {
    std::string_view text;
    uint32_t n;
    double max_penalty;
  };
  const Case cases[] = {
      {incident, 8, -1.0}, {incident, 8, -2.0},    {incident, 2, -1.0},
      {closed, 8, -1.0},   {answer_loop, 8, -1.0}, {short_text, 8, -1.0},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(absl::StrCat("case ", i, " n ", c.n, " max ", c.max_penalty));
    Profile profile;
    profile.repetition.mode = RepetitionMode::kSmooth;
    profile.repetition.ngram.n = c.n;
    profile.repetition.smooth_max_penalty = c.max_penalty;
    ASSERT_TRUE(ValidateProfile(profile).ok());
    const CompletionScore s = ScoreOne(In(c.text), profile);
    const double direct =
        SmoothRepetitionPenalty(WordHashes(NormalizedWords(c.text)), c.n, c.max_penalty);
    EXPECT_DOUBLE_EQ(s.repetition, direct);
    EXPECT_DOUBLE_EQ(s.total, s.accuracy + s.format + s.length + direct);
  }
  // The three loops are really penalised, the one after </think> too, and a short text is not.
  Profile smooth;
  smooth.repetition.mode = RepetitionMode::kSmooth;
  EXPECT_LT(ScoreOne(In(incident), smooth).repetition, -0.9);
  EXPECT_LT(ScoreOne(In(closed), smooth).repetition, -0.5);
  EXPECT_LT(ScoreOne(In(answer_loop), smooth).repetition, -0.5);
  EXPECT_EQ(ScoreOne(In(short_text), smooth).repetition, 0.0);

  // Token ids: the smooth penalty runs over the ids.
  const std::string plain = PlainCompletion(300);
  const std::vector<uint32_t> ids = LoopIds(4, 6);
  CompletionInput in = In(plain);
  in.token_ids = ids;
  const std::vector<uint64_t> ids64(ids.begin(), ids.end());
  const CompletionScore s = ScoreOne(in, smooth);
  EXPECT_DOUBLE_EQ(s.repetition, SmoothRepetitionPenalty(ids64, 8, -1.0));
  EXPECT_LT(s.repetition, -0.5);
}

TEST(Reward, RepetitionDisabled) {
  const std::string incident = absl::StrCat("<think>", Sv(Repeat(kPhrase, 40)));
  const std::string closed =
      absl::StrCat("<think>", Sv(Repeat(kPhrase, 6)), "</think> \\boxed{42}");
  for (const RepetitionMode mode : {RepetitionMode::kThreshold, RepetitionMode::kSmooth}) {
    for (const std::string* text : {&incident, &closed}) {
      SCOPED_TRACE(absl::StrCat("mode ", static_cast<int>(mode), " [", Excerpt(*text), "]"));
      Profile profile;
      profile.repetition.enabled = false;
      profile.repetition.mode = mode;
      const CompletionScore s = ScoreOne(In(*text), profile);
      EXPECT_EQ(s.repetition, 0.0);
      EXPECT_EQ(s.repetition_finding.detector, RepetitionDetector::kNone);
      EXPECT_EQ(s.repetition_finding.occurrences, 0u);
      EXPECT_EQ(s.repetition_finding.char_offset, 0u);
      EXPECT_TRUE(s.repetition_finding.detail.empty());
      EXPECT_DOUBLE_EQ(s.total, text == &closed ? 1.1 : 0.0);
    }
  }
}

TEST(Reward, RepetitionThresholdOptions) {
  const std::string text = absl::StrCat("<think>", Sv(Repeat(kPhrase, 6)), "</think> \\boxed{42}");
  struct Case {
    NgramRule rule;
    uint32_t n, max_occurrences;
    double penalty;
    bool fires;
    uint64_t char_offset;
    uint32_t occurrences;
  };
  constexpr NgramRule kLoop = NgramRule::kLoop;
  constexpr NgramRule kLiteral = NgramRule::kLiteral;
  const Case cases[] = {
      {kLoop, 8, 3, -0.5, true, 7 + 3 * 41, 4},
      {kLoop, 8, 3, -0.25, true, 7 + 3 * 41, 4},
      {kLoop, 8, 3, 0.0, true, 7 + 3 * 41, 4},  // fires, penalises nothing
      // 6 loops are 42 words, then "think": the 8-gram of loop 6 would need another "wait".
      {kLoop, 8, 4, -0.5, true, 7 + 4 * 41, 5},
      {kLoop, 8, 5, -0.5, false, 0, 0},
      {kLiteral, 8, 3, -0.5, true, 7 + 3 * 41, 4},
      // "wait" is word 0 and word 6 of each loop: its 4th occurrence is word 6 of loop 1.
      {kLiteral, 1, 3, -0.5, true, 7 + 41 + 33, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat("rule ", static_cast<int>(c.rule), " n ", c.n, " max ",
                              c.max_occurrences, " penalty ", c.penalty));
    Profile profile;
    profile.repetition.ngram.rule = c.rule;
    profile.repetition.ngram.n = c.n;
    profile.repetition.ngram.max_occurrences = c.max_occurrences;
    profile.repetition.penalty = c.penalty;
    ASSERT_TRUE(ValidateProfile(profile).ok());
    const CompletionScore s = ScoreOne(In(text), profile);
    EXPECT_EQ(s.repetition_finding.detector,
              c.fires ? RepetitionDetector::kNgram : RepetitionDetector::kNone);
    EXPECT_EQ(s.repetition_finding.char_offset, c.char_offset);
    EXPECT_EQ(s.repetition_finding.occurrences, c.occurrences);
    EXPECT_EQ(s.repetition, c.fires ? c.penalty : 0.0);
    EXPECT_DOUBLE_EQ(s.total, 1.1 + s.repetition);
  }
  // The loop rule's options are validated.
  for (const auto& [field, set] :
       std::vector<std::pair<std::string, std::function<void(NgramOptions&)>>>{
           {"repetition.loop_window", [](NgramOptions& o) { o.window = 0; }},
           {"repetition.loop_min_recurring_percent",
            [](NgramOptions& o) { o.min_recurring_percent = 101; }},
           {"repetition.loop_recurrence_distance",
            [](NgramOptions& o) { o.recurrence_distance = 0; }}}) {
    Profile bad;
    set(bad.repetition.ngram);
    const absl::Status status = ValidateProfile(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_THAT(std::string(status.message()), HasSubstr(field));
  }
}

TEST(Reward, LengthShapesThroughProfile) {
  const std::string right = "<think>6 times 7 is 42.</think> \\boxed{42}";
  const std::string wrong = "<think>6 times 7 is 41.</think> \\boxed{41}";
  const double cos_quarter = (1.0 - std::cos(std::numbers::pi / 4)) / 2.0;
  struct Case {
    LengthShape shape;
    uint32_t dapo_buffer;
    bool correct;
    uint32_t num_tokens;
    double length;
  };
  const Case cases[] = {
      {LengthShape::kNone, 4096, true, 100, 0.0},
      {LengthShape::kNone, 4096, true, 10240, 0.0},
      {LengthShape::kNone, 4096, true, 16384, 0.0},
      {LengthShape::kNone, 4096, false, 1000000, 0.0},
      // DAPO: 0 to L_max - buffer = 12288, then linear to -1 at L_max.
      {LengthShape::kDapoOverlong, 4096, true, 12288, 0.0},
      {LengthShape::kDapoOverlong, 4096, true, 14336, -0.5},
      {LengthShape::kDapoOverlong, 4096, false, 14336, -0.5},
      {LengthShape::kDapoOverlong, 4096, true, 15360, -0.75},
      {LengthShape::kDapoOverlong, 4096, true, 16384, -1.0},
      {LengthShape::kDapoOverlong, 4096, true, 20000, -1.0},
      {LengthShape::kDapoOverlong, 2048, true, 15360, -0.5},
      {LengthShape::kDapoOverlong, 16384, true, 8192, -0.5},
      // Cosine (Yeo et al.): correct 1 → 0.5, wrong -1 → -0.5 over [0, L_max], clamped beyond.
      {LengthShape::kCosine, 4096, true, 0, 1.0},
      {LengthShape::kCosine, 4096, false, 0, -1.0},
      {LengthShape::kCosine, 4096, true, 8192, 0.75},
      {LengthShape::kCosine, 4096, false, 8192, -0.75},
      {LengthShape::kCosine, 4096, true, 4096, 1.0 - 0.5 * cos_quarter},
      {LengthShape::kCosine, 4096, false, 4096, -1.0 + 0.5 * cos_quarter},
      {LengthShape::kCosine, 4096, true, 16384, 0.5},
      {LengthShape::kCosine, 4096, false, 16384, -0.5},
      {LengthShape::kCosine, 4096, true, 40000, 0.5},
      {LengthShape::kCosine, 4096, false, 40000, -0.5},
      // Kimi alone in its group: every length equal, so 0.
      {LengthShape::kKimi, 4096, true, 100, 0.0},
      {LengthShape::kKimi, 4096, false, 16384, 0.0},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(absl::StrCat("case ", i, " shape ", static_cast<int>(c.shape), " correct ",
                              c.correct, " L ", c.num_tokens));
    Profile profile;
    profile.length.shape = c.shape;
    profile.length.dapo_buffer = c.dapo_buffer;
    ASSERT_TRUE(ValidateProfile(profile).ok()) << ValidateProfile(profile);
    const CompletionScore s = ScoreOne(In(c.correct ? right : wrong, c.num_tokens), profile);
    EXPECT_EQ(s.verdict, c.correct ? kC : kW);
    EXPECT_DOUBLE_EQ(s.length, c.length);
    const bool truncated = c.num_tokens >= 16384;
    EXPECT_EQ(s.truncated, truncated);
    const double format = c.correct && !truncated ? 0.1 : 0.0;
    EXPECT_DOUBLE_EQ(s.format, format);
    EXPECT_DOUBLE_EQ(s.total, (c.correct ? 1.0 : 0.0) + format + c.length);
  }
}

TEST(Reward, QuadraticOptionsThroughProfile) {
  const std::string right = "<think>6 times 7 is 42.</think> \\boxed{42}";
  Profile profile;
  profile.length.weight = 1.0;
  profile.length.target = 0;
  profile.length.max = 100;
  ASSERT_TRUE(ValidateProfile(profile).ok());
  struct Case {
    uint32_t num_tokens;
    double length;
    bool truncated;
  };
  for (const Case& c : {Case{0, 0.0, false}, Case{50, -0.25, false}, Case{99, -0.9801, false},
                        Case{100, -1.0, true}}) {
    SCOPED_TRACE(absl::StrCat("L ", c.num_tokens));
    const CompletionScore s = ScoreOne(In(right, c.num_tokens), profile);
    EXPECT_DOUBLE_EQ(s.length, c.length);
    EXPECT_EQ(s.truncated, c.truncated);  // L_max is the profile's
    EXPECT_DOUBLE_EQ(s.total, 1.0 + (c.truncated ? 0.0 : 0.1) + c.length);
  }
}

// A Judge that grades a section containing "BUDGET" as over budget and defers to a real one
// otherwise: the basic scorer never runs out of budget, and unscorable completions must be
// mixed with scorable ones in a group.
class BudgetJudge : public Judge {
 public:
  explicit BudgetJudge(const Judge* real) : real_(real) {}
  AccuracyResult Grade(std::string_view section) const override {
    if (section.find("BUDGET") != std::string_view::npos) {
      AccuracyResult r;
      r.verdict = Verdict::kBudgetExceeded;
      r.detail = "budget";
      return r;
    }
    return real_->Grade(section);
  }

 private:
  const Judge* real_;
};

TEST(Reward, KimiIsComputedWithinTheGroup) {
  const std::string right = "<think>6 times 7 is 42.</think> \\boxed{42}";
  const std::string wrong = "<think>6 times 7 is 41.</think> \\boxed{41}";
  Profile profile;
  profile.length.shape = LengthShape::kKimi;
  ASSERT_TRUE(ValidateProfile(profile).ok());

  // λ = 0.5 - (L - 100) / 400: 0.5, 0.25, 0, -0.25, -0.5; a wrong one gets min(0, λ).
  const std::vector<CompletionInput> group = {In(right, 100), In(wrong, 200), In(right, 300),
                                              In(wrong, 400), In(right, 500)};
  const double lengths[] = {0.5, 0.0, 0.0, -0.25, -0.5};
  const double totals[] = {1.6, 0.0, 1.1, -0.25, 0.6};
  absl::StatusOr<std::vector<CompletionScore>> scores = Score(group, profile);
  ASSERT_TRUE(scores.ok()) << scores.status();
  for (size_t i = 0; i < group.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("completion ", i));
    EXPECT_DOUBLE_EQ((*scores)[i].length, lengths[i]);
    EXPECT_DOUBLE_EQ((*scores)[i].total, totals[i]);
  }

  // The same completion scores differently in another group.
  const std::vector<CompletionInput> other = {In(right, 100), In(right, 50)};
  scores = Score(other, profile);
  ASSERT_TRUE(scores.ok()) << scores.status();
  EXPECT_DOUBLE_EQ((*scores)[0].length, -0.5);
  EXPECT_DOUBLE_EQ((*scores)[1].length, 0.5);

  // All lengths equal: zeros, correct or not.
  const std::vector<CompletionInput> equal = {In(right, 700), In(wrong, 700), In(right, 700)};
  scores = Score(equal, profile);
  ASSERT_TRUE(scores.ok()) << scores.status();
  for (size_t i = 0; i < equal.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("equal, completion ", i));
    EXPECT_EQ((*scores)[i].length, 0.0);
  }

  // Empty group.
  scores = Score({}, profile);
  ASSERT_TRUE(scores.ok()) << scores.status();
  EXPECT_TRUE(scores->empty());
}

TEST(Reward, KimiLeavesOutUnscorable) {
  const std::string right = "<think>6 times 7 is 42.</think> \\boxed{42}";
  const std::string wrong = "<think>6 times 7 is 41.</think> \\boxed{41}";
  const std::string over = "<think>long</think> \\boxed{BUDGET}";
  Profile profile;
  profile.length.shape = LengthShape::kKimi;
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  const std::vector<std::string> refs = {"42"};
  const std::unique_ptr<Judge> real = scorer->Prepare(Task::kNumeric, refs);
  const BudgetJudge judge(real.get());

  // Scorable lengths 100..300; the unscorable 10 and 1000 must not widen the range.
  const std::vector<CompletionInput> group = {In(over, 10), In(right, 100), In(wrong, 300),
                                              In(right, 200), In(over, 1000)};
  std::vector<CompletionScore> scores;
  ASSERT_TRUE(ScoreGroup(group, Task::kNumeric, &judge, profile, &scores).ok());
  ASSERT_EQ(scores.size(), group.size());
  const Verdict verdicts[] = {Verdict::kBudgetExceeded, kC, kW, kC, Verdict::kBudgetExceeded};
  const double lengths[] = {0.0, 0.5, -0.5, 0.0, 0.0};
  const double totals[] = {0.0, 1.6, -0.5, 1.1, 0.0};
  for (size_t i = 0; i < group.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("completion ", i));
    EXPECT_EQ(scores[i].verdict, verdicts[i]);
    EXPECT_EQ(scores[i].unscorable(), verdicts[i] == Verdict::kBudgetExceeded);
    EXPECT_DOUBLE_EQ(scores[i].length, lengths[i]);
    EXPECT_DOUBLE_EQ(scores[i].total, totals[i]);
  }

  // Every completion unscorable: nothing to compare, all zeros.
  const std::vector<CompletionInput> all_over = {In(over, 10), In(over, 5000)};
  ASSERT_TRUE(ScoreGroup(all_over, Task::kNumeric, &judge, profile, &scores).ok());
  ASSERT_EQ(scores.size(), 2u);
  for (const CompletionScore& s : scores) {
    EXPECT_EQ(s.length, 0.0);
    EXPECT_EQ(s.total, 0.0);
  }
}

TEST(Reward, TagPolicy) {
  struct Case {
    bool prefilled, answer_tags, expects_reasoning;
    std::string_view text;
    Verdict verdict;
    bool well_formed;
  };
  const Case cases[] = {
      // The chat template emitted <think>.
      {true, false, true, "reasoning</think> \\boxed{42}", kC, true},
      {false, false, true, "reasoning</think> \\boxed{42}", kC, false},
      {true, false, true, "<think>reasoning</think> \\boxed{42}", kC, false},
      {true, false, true, "reasoning</think> \\boxed{41}", kW, true},
      {true, false, true, "reasoning \\boxed{42}", kNo, false},
      // <answer> tags required.
      {false, true, true, "<think>r</think> <answer>42</answer>", kC, true},
      {false, true, true, "<think>r</think> \\boxed{42}", kC, false},
      {false, true, true, "<think>r</think> <answer>41</answer>", kW, true},
      {false, true, true, "<think><answer>42</answer></think> <answer>42</answer>", kC, false},
      {false, false, true, "<think>r</think> <answer>42</answer>", kC, true},
      {true, true, true, "r</think><answer>42</answer>", kC, true},
      // A model that does not think: the whole text is the answer section.
      {false, false, false, "The answer is \\boxed{42}.", kC, true},
      {false, false, false, "The answer is \\boxed{41}.", kW, true},
      {false, false, false, "", kNo, false},
      {false, false, false, "  \n", kNo, false},
      {false, false, true, "The answer is \\boxed{42}.", kNo, false},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(absl::StrCat("case ", i, " prefilled ", c.prefilled, " answer_tags ",
                              c.answer_tags, " reasoning ", c.expects_reasoning, " [", Sv(c.text),
                              "]"));
    Profile profile;
    profile.tags.think_prefilled = c.prefilled;
    profile.tags.require_answer_tags = c.answer_tags;
    profile.expects_reasoning = c.expects_reasoning;
    ASSERT_TRUE(ValidateProfile(profile).ok());
    const CompletionScore s = ScoreOne(In(c.text), profile);
    EXPECT_EQ(s.verdict, c.verdict);
    EXPECT_EQ(s.well_formed, c.well_formed);
    const double accuracy = c.verdict == kC ? 1.0 : 0.0;
    const double format = c.well_formed && c.verdict == kC ? 0.1 : 0.0;
    EXPECT_EQ(s.accuracy, accuracy);
    EXPECT_DOUBLE_EQ(s.format, format);
    EXPECT_EQ(s.format_gated, c.well_formed && c.verdict != kC);
    EXPECT_DOUBLE_EQ(s.total, accuracy + format);
  }
}

TEST(Reward, NonThinkingModelRepetitionCoversWholeText) {
  const std::string text = absl::StrCat(Sv(Repeat(kPhrase, 5)), "So \\boxed{42}.");
  Profile profile;
  profile.expects_reasoning = false;
  const CompletionScore s = ScoreOne(In(text), profile);
  EXPECT_EQ(s.verdict, kC);
  EXPECT_TRUE(s.well_formed);
  EXPECT_EQ(s.think_open_tags, 0u);
  EXPECT_EQ(s.think_close_tags, 0u);
  EXPECT_EQ(s.repetition_finding.detector, RepetitionDetector::kNgram);
  EXPECT_EQ(s.repetition_finding.first_char_offset, 0u);
  EXPECT_EQ(s.repetition_finding.char_offset, 3 * kPhrase.size());
  EXPECT_EQ(s.repetition, -0.5);
  EXPECT_DOUBLE_EQ(s.total, 0.6);

  // The same loop after </think> is an answer section, read for a thinking model as well; for
  // one that does not think it is all there is.
  const std::string tagged = absl::StrCat("<think>ok</think> ", Sv(text));
  EXPECT_EQ(ScoreOne(In(tagged), Profile{}).repetition, -0.5);
  EXPECT_EQ(ScoreOne(In(tagged), profile).repetition, -0.5);
}

// "When a profile requires <answer> tags, exactly one <answer>…</answer>" in the answer
// section; for a model that does not think the whole text is that section, so the policy still
// applies.
TEST(Reward, NonThinkingModelStillRequiresAnswerTags) {
  Profile profile;
  profile.expects_reasoning = false;
  profile.tags.require_answer_tags = true;
  ASSERT_TRUE(ValidateProfile(profile).ok());
  struct Case {
    std::string_view text;
    bool well_formed;
  };
  const Case cases[] = {
      {"<answer>42</answer>", true},
      {"The answer is \\boxed{42}.", false},
      {"<answer>42</answer> <answer>42</answer>", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const CompletionScore s = ScoreOne(In(c.text), profile);
    EXPECT_EQ(s.verdict, kC);
    EXPECT_EQ(s.well_formed, c.well_formed);
    EXPECT_DOUBLE_EQ(s.format, c.well_formed ? 0.1 : 0.0);
    EXPECT_DOUBLE_EQ(s.total, c.well_formed ? 1.1 : 1.0);
  }
}

// An ungated format reward only by explicit opt-in, and flagged when paid.
TEST(Reward, UngatedFormatIsFlagged) {
  Profile profile;
  profile.format.ungated = true;
  const std::string right = "<think>6 times 7 is 42.</think> \\boxed{42}";
  const std::string wrong = "<think>6 times 7 is 41.</think> \\boxed{41}";
  struct Case {
    std::string_view text;
    std::optional<bool> finished;
    double format;
    bool paid_ungated;
  };
  const Case cases[] = {
      {right, true, 0.1, false},
      {wrong, true, 0.1, true},
      {wrong, false, 0.0, false},  // truncated: not well-formed, nothing to pay
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(absl::StrCat("case ", i));
    const CompletionScore s = ScoreOne(In(c.text, 100, c.finished), profile);
    EXPECT_DOUBLE_EQ(s.format, c.format);
    EXPECT_EQ(s.format_paid_ungated, c.paid_ungated);
    EXPECT_FALSE(s.format_gated);
    EXPECT_DOUBLE_EQ(s.total, s.accuracy + c.format);
  }
}

TEST(Reward, ExternalAccuracy) {
  const std::string text = "<think>ran the tests</think> def f(): return 1";
  struct Case {
    double external;
    Verdict verdict;
    double format, total;
    bool gated;
  };
  const Case cases[] = {
      {1.0, kC, 0.1, 1.1, false}, {0.0, kW, 0.0, 0.0, true},     {0.5, kC, 0.1, 0.6, false},
      {-0.0, kW, 0.0, 0.0, true}, {1e-300, kC, 0.1, 0.1, false}, {0.25, kC, 0.1, 0.35, false},
  };
  std::vector<CompletionInput> group;
  for (const Case& c : cases) {
    group.push_back(In(text));
    group.back().external_accuracy = c.external;
  }
  std::vector<CompletionScore> scores;
  const absl::Status status = ScoreGroup(group, Task::kExternal, nullptr, Profile{}, &scores);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(scores.size(), std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(absl::StrCat("external ", c.external));
    const CompletionScore& s = scores[i];
    EXPECT_EQ(s.verdict, c.verdict);
    EXPECT_EQ(s.accuracy, c.external);
    EXPECT_TRUE(s.well_formed);
    EXPECT_DOUBLE_EQ(s.format, c.format);
    EXPECT_EQ(s.format_gated, c.gated);
    EXPECT_DOUBLE_EQ(s.total, c.total);
  }

  // A judge, when given, is not consulted for TASK_EXTERNAL.
  const std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
  const std::vector<std::string> refs = {"42"};
  const std::unique_ptr<Judge> judge = scorer->Prepare(Task::kNumeric, refs);
  CompletionInput boxed = In("<think>r</think> \\boxed{41}");
  boxed.external_accuracy = 1.0;
  const std::vector<CompletionInput> one = {boxed};
  ASSERT_TRUE(ScoreGroup(one, Task::kExternal, judge.get(), Profile{}, &scores).ok());
  EXPECT_EQ(scores[0].verdict, kC);
  EXPECT_DOUBLE_EQ(scores[0].total, 1.1);

  // And external_accuracy is ignored for the other tasks.
  const CompletionScore numeric = ScoreOne(boxed, Profile{});
  EXPECT_EQ(numeric.verdict, kW);
  EXPECT_EQ(numeric.total, 0.0);
}

TEST(Reward, ExternalAccuracyErrors) {
  const std::string text = "<think>ran the tests</think> def f(): return 1";
  struct Case {
    std::vector<std::optional<double>> values;
    std::string_view completion;
  };
  const Case cases[] = {
      {{1.0, std::nullopt, 0.5}, "completion 1"},
      {{std::nullopt}, "completion 0"},
      {{1.0, 0.0, std::nullopt}, "completion 2"},
      {{-0.1}, "completion 0"},
      {{1.0, 1.0000001}, "completion 1"},
      {{kNaN}, "completion 0"},
      {{0.0, kInf}, "completion 1"},
      {{-kInf}, "completion 0"},
      {{0.5, 0.5, 0.5, 2.0}, "completion 3"},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(absl::StrCat("case ", i, " expects ", Sv(c.completion)));
    std::vector<CompletionInput> group;
    for (const std::optional<double>& v : c.values) {
      group.push_back(In(text));
      group.back().external_accuracy = v;
    }
    std::vector<CompletionScore> scores;
    const absl::Status status = ScoreGroup(group, Task::kExternal, nullptr, Profile{}, &scores);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.completion));
    EXPECT_THAT(std::string(status.message()), HasSubstr("external_accuracy"));
  }
}

TEST(Reward, UnparseableReferenceIsExactlyZero) {
  const std::string incident = absl::StrCat("<think>", Sv(Repeat(kPhrase, 40)));
  const std::string right = "<think>6 times 7 is 42.</think> \\boxed{42}";
  const std::string wrong = "<think>6 times 7 is 41.</think> \\boxed{41}";
  const std::vector<std::vector<std::string>> reference_sets = {{"not a number"}, {}};
  for (const LengthShape shape : {LengthShape::kQuadratic, LengthShape::kKimi}) {
    for (const std::vector<std::string>& refs : reference_sets) {
      SCOPED_TRACE(absl::StrCat("shape ", static_cast<int>(shape), " refs ", refs.size()));
      Profile profile;
      profile.length.shape = shape;
      // Each would otherwise earn a nonzero reward or penalty.
      const std::vector<CompletionInput> group = {In(right, 100), In(wrong, 10240),
                                                  In(incident, 16384, false), In(right, 20000)};
      absl::StatusOr<std::vector<CompletionScore>> scores =
          Score(group, profile, Task::kNumeric, refs);
      ASSERT_TRUE(scores.ok()) << scores.status();
      for (size_t i = 0; i < group.size(); ++i) {
        SCOPED_TRACE(absl::StrCat("completion ", i));
        const CompletionScore& s = (*scores)[i];
        EXPECT_EQ(s.verdict, Verdict::kUnparseableReference);
        EXPECT_TRUE(s.unscorable());
        EXPECT_EQ(s.total, 0.0);
        EXPECT_FALSE(std::signbit(s.total));
        EXPECT_EQ(s.accuracy, 0.0);
        EXPECT_EQ(s.format, 0.0);
      }
      // Components are still reported for the unscorable.
      EXPECT_EQ((*scores)[2].repetition, -0.5);
      if (shape == LengthShape::kQuadratic) {
        EXPECT_DOUBLE_EQ((*scores)[1].length, -0.125);
      }
    }
  }
}

TEST(Reward, ValidateProfile) {
  struct Case {
    std::string_view name;
    std::function<void(Profile&)> change;
    std::string_view field;  // "" when the profile is valid
  };
  const Case cases[] = {
      {"default", [](Profile&) {}, ""},
      // Length.
      {"max 0", [](Profile& p) { p.length.max = 0; }, "length.max_tokens"},
      {"target == max", [](Profile& p) { p.length.target = 16384; }, "length.target_tokens"},
      {"target > max", [](Profile& p) { p.length.target = 20000; }, "length.target_tokens"},
      {"target = max - 1", [](Profile& p) { p.length.target = 16383; }, ""},
      {"target 0", [](Profile& p) { p.length.target = 0; }, ""},
      {"dapo buffer 0",
       [](Profile& p) {
         p.length.shape = LengthShape::kDapoOverlong;
         p.length.dapo_buffer = 0;
       },
       "length.dapo_buffer_tokens"},
      {"dapo buffer > max",
       [](Profile& p) {
         p.length.shape = LengthShape::kDapoOverlong;
         p.length.dapo_buffer = 16385;
       },
       "length.dapo_buffer_tokens"},
      {"dapo buffer == max",
       [](Profile& p) {
         p.length.shape = LengthShape::kDapoOverlong;
         p.length.dapo_buffer = 16384;
       },
       ""},
      {"dapo buffer 1",
       [](Profile& p) {
         p.length.shape = LengthShape::kDapoOverlong;
         p.length.dapo_buffer = 1;
       },
       ""},
      // Non-finite numbers.
      {"length.weight inf", [](Profile& p) { p.length.weight = kInf; }, "length.weight"},
      {"cosine_correct_short nan", [](Profile& p) { p.length.cosine_correct_short = kNaN; },
       "length.cosine_correct_short"},
      {"cosine_correct_long -inf", [](Profile& p) { p.length.cosine_correct_long = -kInf; },
       "length.cosine_correct_long"},
      {"cosine_wrong_short nan", [](Profile& p) { p.length.cosine_wrong_short = kNaN; },
       "length.cosine_wrong_short"},
      {"cosine_wrong_long inf", [](Profile& p) { p.length.cosine_wrong_long = kInf; },
       "length.cosine_wrong_long"},
      {"weights.accuracy nan", [](Profile& p) { p.weights.accuracy = kNaN; }, "weights.accuracy"},
      {"weights.format inf", [](Profile& p) { p.weights.format = kInf; }, "weights.format"},
      {"weights.repetition -inf", [](Profile& p) { p.weights.repetition = -kInf; },
       "weights.repetition"},
      {"weights.length nan", [](Profile& p) { p.weights.length = kNaN; }, "weights.length"},
      {"negative weights",
       [](Profile& p) {
         p.weights = {-1, -2, -3, -4};
       },
       ""},
      // Format.
      {"format.reward -0.1", [](Profile& p) { p.format.reward = -0.1; }, "format.reward"},
      {"format.reward nan", [](Profile& p) { p.format.reward = kNaN; }, "format.reward"},
      {"format.reward inf", [](Profile& p) { p.format.reward = kInf; }, "format.reward"},
      {"format.reward 0", [](Profile& p) { p.format.reward = 0; }, ""},
      // Repetition.
      {"penalty positive", [](Profile& p) { p.repetition.penalty = 0.5; }, "repetition.penalty"},
      {"penalty nan", [](Profile& p) { p.repetition.penalty = kNaN; }, "repetition.penalty"},
      {"penalty -inf", [](Profile& p) { p.repetition.penalty = -kInf; }, "repetition.penalty"},
      {"penalty 0", [](Profile& p) { p.repetition.penalty = 0; }, ""},
      {"smooth positive", [](Profile& p) { p.repetition.smooth_max_penalty = 1; },
       "repetition.smooth_max_penalty"},
      {"smooth nan", [](Profile& p) { p.repetition.smooth_max_penalty = kNaN; },
       "repetition.smooth_max_penalty"},
      {"ngram 0", [](Profile& p) { p.repetition.ngram.n = 0; }, "repetition.ngram_size"},
      {"ngram 1025", [](Profile& p) { p.repetition.ngram.n = 1025; }, "repetition.ngram_size"},
      {"ngram 1", [](Profile& p) { p.repetition.ngram.n = 1; }, ""},
      {"ngram 1024", [](Profile& p) { p.repetition.ngram.n = 1024; }, ""},
      {"max_occurrences 0", [](Profile& p) { p.repetition.ngram.max_occurrences = 0; },
       "repetition.max_occurrences"},
      {"max_occurrences 1", [](Profile& p) { p.repetition.ngram.max_occurrences = 1; }, ""},
      {"ast block 0", [](Profile& p) { p.repetition.ast.block_max_occurrences = 0; },
       "repetition.ast.block_max_occurrences"},
      {"ast code 0", [](Profile& p) { p.repetition.ast.code_max_occurrences = 0; },
       "repetition.ast.code_max_occurrences"},
      {"ast min chars 0", [](Profile& p) { p.repetition.ast.min_block_chars = 0; },
       "repetition.ast.min_block_chars"},
      {"ast min nodes 1", [](Profile& p) { p.repetition.ast.min_code_nodes = 1; },
       "repetition.ast.min_code_nodes"},
      {"ast bytes 2 GiB", [](Profile& p) { p.repetition.ast.max_parse_bytes = 2ULL << 30; },
       "repetition.ast.max_parse_bytes"},
      {"ast disabled, limits 0",
       [](Profile& p) {
         p.repetition.ast.enabled = false;
         p.repetition.ast.max_nodes = 0;
       },
       ""},
      // Task.
      {"task external", [](Profile& p) { p.task = Task::kExternal; }, "TASK_EXTERNAL"},
      {"task external (field)", [](Profile& p) { p.task = Task::kExternal; }, "task"},
      {"task multiple choice", [](Profile& p) { p.task = Task::kMultipleChoice; }, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Profile profile;
    c.change(profile);
    const absl::Status status = ValidateProfile(profile);
    if (c.field.empty()) {
      EXPECT_TRUE(status.ok()) << status;
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
      EXPECT_THAT(std::string(status.message()), HasSubstr(c.field));
    }
  }
}

}  // namespace
}  // namespace rlscore::scorers
