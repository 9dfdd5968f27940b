// Reward composition: a profile says how a completion is scored; ScoreGroup() runs the
// anatomy, accuracy, gated format, repetition and length scorers over a group's completions and
// composes r = w_acc·r_acc + w_fmt·r_fmt + w_rep·r_rep + w_len·r_len, each component reported.
//
//   Profile profile;                                  // the built-in default profile
//   std::unique_ptr<Judge> judge = math::NewAccuracyScorer()->Prepare(Task::kNumeric, refs);
//   std::vector<CompletionScore> scores;
//   RLSCORE_RETURN_IF_ERROR(ScoreGroup(completions, Task::kNumeric, judge.get(), profile,
//                                      &scores));
//   scores[0].total;                                  // the reward
//
// Pure: no I/O, no clock, no globals; thread-safe for concurrent calls.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/clock.h"
#include "scorers/accuracy.h"
#include "scorers/anatomy.h"
#include "scorers/ast/ast_repetition.h"
#include "scorers/format.h"
#include "scorers/length.h"
#include "scorers/ngram_repetition.h"
#include "scorers/tag_loop.h"
#include "scorers/unbroken_run.h"

namespace rlscore::scorers {

enum class RepetitionMode : uint8_t {
  kThreshold,  // `penalty` once when a rule fires
  kSmooth,     // open-r1 / TRL: (1 - unique/total) × smooth_max_penalty over n-grams; an AST
               // rule that fires makes it at most `penalty`
};

struct RepetitionOptions {
  bool enabled = true;
  RepetitionMode mode = RepetitionMode::kThreshold;
  NgramOptions ngram;  // the loop rule over 8-grams (ngram_repetition.h)
  // The tag-loop rule (tag_loop.h): more than this many reasoning tags, well-formed or not,
  // fire; 0 turns it off. Causal like the n-gram rule: the earliest rule to complete fires.
  uint32_t max_reasoning_tags = kDefaultMaxReasoningTags;
  // The unbroken-run rule (unbroken_run.h): more than this many ASCII bytes in a row of
  // punctuation and white space, or of letters and digits, fire; 0 turns it off. Causal too.
  uint32_t max_run_bytes = kDefaultMaxRunBytes;
  // The AST rules (blocks and code clones, docs/REPETITION.md), run on the whole completion when
  // none of the rules above has fired: the penalty is applied once whatever fires.
  ast::AstOptions ast;
  double penalty = -0.5;
  double smooth_max_penalty = -1.0;
};

struct Weights {
  double accuracy = 1.0;
  double format = 1.0;
  double repetition = 1.0;
  double length = 1.0;
};

// Task IF (scorers/instructions/): how the instructions' verdicts make the accuracy.
struct InstructionOptions {
  // IFEval's loose rules (the response also without its first or last line, or without '*')
  // instead of its strict ones.
  bool loose = false;
  // The fraction of instructions followed, instead of all-or-nothing (IFEval's prompt-level
  // accuracy, the default).
  bool fraction = false;
};

// A named reward specification. The default-constructed Profile is the built-in default:
// accuracy 1/0, gated format 0.1, repetition -0.5 (the loop rule on 8-grams), quadratic
// length (w = 0.5, L_t = 4096, L_max = 16384), task MATH.
struct Profile {
  std::string name = "default";
  Task task = Task::kMath;  // for groups that do not name one
  TagPolicy tags;
  FormatOptions format;
  RepetitionOptions repetition;
  LengthOptions length;
  Weights weights;
  InstructionOptions instructions;
  // False for models that do not think: the whole completion is the answer section and the
  // format reward needs no think tags.
  bool expects_reasoning = true;
};

// INVALID_ARGUMENT naming the field for a profile that cannot score: L_t >= L_max, n = 0, a
// positive penalty, a non-finite weight, a DAPO buffer of 0 or above L_max, ...
absl::Status ValidateProfile(const Profile& profile);

// One completion as the caller sent it.
struct CompletionInput {
  std::string_view text;
  // When given: the length, and the n-gram rule's tokens (the whole completion, as the words
  // are when they are not given).
  std::span<const uint32_t> token_ids;
  std::optional<uint32_t> num_tokens;       // the length when token_ids is empty
  std::optional<bool> finished;             // false: generation hit max_tokens (truncated)
  std::optional<double> external_accuracy;  // Task::kExternal only, in [0, 1]
};

enum class RepetitionDetector : uint8_t {
  kNone,
  kNgram,
  kAstBlock,
  kAstCodeClone,
  kTagLoop,
  kUnbrokenRun,
};

struct RepetitionFinding {
  RepetitionDetector detector = RepetitionDetector::kNone;
  // The start of the occurrence that crossed the threshold, and of the first occurrence. The
  // exact one is the unit the rule ran on (words: characters; token ids: tokens); the other is
  // estimated and says so in `detail`.
  uint64_t char_offset = 0;
  uint64_t token_offset = 0;
  uint64_t first_char_offset = 0;
  uint32_t occurrences = 0;
  std::string detail;
};

struct CompletionScore {
  // Components before weighting, and the weighted total.
  double accuracy = 0.0;
  double format = 0.0;
  double repetition = 0.0;
  double length = 0.0;
  double total = 0.0;

  Verdict verdict = Verdict::kNoAnswer;
  std::string extracted_answer;
  std::string detail;

  bool well_formed = false;  // anatomy well-formed and not truncated
  bool truncated = false;    // finished == false, or length >= L_max
  bool has_answer_section = false;
  uint32_t malformed_tags = 0;
  uint32_t think_open_tags = 0;
  uint32_t think_close_tags = 0;
  bool format_gated = false;         // well-formed but wrong: format reward withheld
  bool format_paid_ungated = false;  // paid with accuracy 0 because the profile opted out

  // Task IF: every instruction's strict and loose verdict, in reference order.
  std::vector<InstructionResult> instructions;

  RepetitionFinding repetition_finding;  // detector kNone when nothing fired
  // The AST detector's work on this completion, for metrics: whether it parsed anything (the
  // screens usually rule repetition out without parsing), the budget that stopped it (its
  // finding's detail then says "skipped: budget (...)"), and the parse time when a clock was given.
  bool ast_parsed = false;
  ast::AstBudget ast_skipped = ast::AstBudget::kNone;
  double ast_parse_seconds = 0.0;
  uint32_t num_tokens = 0;
  bool tokens_estimated = false;

  bool unscorable() const { return IsUnscorable(verdict); }
};

// Scores the completions of one group (Kimi's length shape needs the whole group). `judge` grades
// accuracy for every task but kExternal, where it may be null and each completion's
// external_accuracy is used. Unscorable completions get total 0 and their verdict.
//
// Errors: INVALID_ARGUMENT naming the completion index ("completion 3: external_accuracy ...")
// when a kExternal completion lacks external_accuracy or it is outside [0, 1] or not finite.
// `clock`, when given, times the AST detector's parses (ast_parse_seconds); it changes no result.
// REQUIRES: ValidateProfile(profile).ok(); judge != nullptr unless task == kExternal.
absl::Status ScoreGroup(std::span<const CompletionInput> completions, Task task, const Judge* judge,
                        const Profile& profile, std::vector<CompletionScore>* scores,
                        const Clock* clock = nullptr);

}  // namespace rlscore::scorers
