// Accuracy: is the final answer in the answer section equivalent to a reference? The interface
// every task's scorer implements; scorers/math/verifier.h has the one implementation (one
// extraction, then a judge per task).
//
// The scorer prepares a group's references once, then grades each completion's answer section:
//
//   std::unique_ptr<AccuracyScorer> scorer = math::NewAccuracyScorer();
//   std::unique_ptr<Judge> judge = scorer->Prepare(Task::kNumeric, references);
//   AccuracyResult r = judge->Grade("so the answer is \\boxed{\\frac{1}{2}}.");
//   r.verdict;     // Verdict::kCorrect when a reference is 0.5, 1/2 or \frac12
//   r.extracted;   // "\\frac{1}{2}"
//
// EXTERNAL accuracy is supplied by the caller and never reaches a Judge.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlscore::scorers {

enum class Task : uint8_t {
  kMath,
  kMultipleChoice,
  kExact,
  kNumeric,
  kExternal,
  kInstructionFollowing,  // IFEval-style verifiable instructions (scorers/instructions/)
};

enum class Verdict : uint8_t {
  kCorrect,
  kWrong,
  kNoAnswer,              // nothing to grade in the answer section (or an unterminated \boxed{)
  kUnparseableReference,  // unscorable: no reference could be parsed for the task
  kBudgetExceeded,        // unscorable: a work budget ran out
};

// "CORRECT", "WRONG", "NO_ANSWER", "UNPARSEABLE_REFERENCE", "BUDGET_EXCEEDED" (the wire names,
// without the VERDICT_ prefix), for logs and test failures.
std::string_view VerdictName(Verdict v);

// True for the verdicts that make a completion unscorable (left out of its group's statistics).
inline bool IsUnscorable(Verdict v) {
  return v == Verdict::kUnparseableReference || v == Verdict::kBudgetExceeded;
}

// Task kInstructionFollowing: one instruction of the reference and whether the answer section
// follows it, under IFEval's strict and loose rules.
struct InstructionResult {
  std::string id;  // e.g. "length_constraints:number_words"
  bool strict = false;
  bool loose = false;
};

struct AccuracyResult {
  double accuracy = 0.0;  // 1 for kCorrect, else 0 (kInstructionFollowing: see reward.h)
  Verdict verdict = Verdict::kNoAnswer;
  std::string extracted;                        // the answer as written in the completion, trimmed
  std::string detail;                           // why, for unscorable verdicts and NO_ANSWER
  std::vector<InstructionResult> instructions;  // kInstructionFollowing only, in reference order
};

// One group's references, parsed once. Thread-safe: Grade() may run concurrently.
class Judge {
 public:
  virtual ~Judge() = default;
  // `answer_section` is the text after the last </think> (see Anatomy).
  virtual AccuracyResult Grade(std::string_view answer_section) const = 0;
};

// Thread-safe.
class AccuracyScorer {
 public:
  virtual ~AccuracyScorer() = default;
  // Never fails: references that cannot be parsed for `task` are skipped while any one parses;
  // when none does (or there are none) the Judge grades every completion kUnparseableReference
  // with the reason in `detail`. An extracted answer longer than 1024 bytes is graded kWrong (not
  // unscorable: a runaway answer must not escape the wrong-answer signal).
  // REQUIRES: task != Task::kExternal.
  virtual std::unique_ptr<Judge> Prepare(Task task,
                                         std::span<const std::string> references) const = 0;
};

}  // namespace rlscore::scorers
