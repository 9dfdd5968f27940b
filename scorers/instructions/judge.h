// The Judge of task IF (scorers/accuracy.h): a group's reference is an IFEval instruction list,
// parsed once; each answer section gets every instruction's strict and loose verdict.
//
//   std::unique_ptr<Judge> judge = instructions::NewJudge(
//       {R"({"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]})"});
//   AccuracyResult r = judge->Grade("No commas here.");
//   r.verdict;          // Verdict::kCorrect: every instruction followed (strict)
//   r.instructions[0];  // {"punctuation:no_comma", strict: true, loose: true}
//
// The verdict and accuracy are IFEval's prompt-level strict ones (all instructions followed);
// ScoreGroup applies the profile's choice of loose rules or a fraction (reward.h). An empty
// answer section is kNoAnswer. A reference that does not parse, names an unknown instruction or
// gives bad arguments makes every completion kUnparseableReference, with the reason, naming the
// instruction, in `detail`: the group is left out of the statistics and never silently paid.
//
// Thread-safe: Grade() may run concurrently.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "scorers/accuracy.h"

namespace rlscore::scorers::instructions {

// Exactly one reference is expected; more than one is an unparseable reference too, since two
// instruction lists have no agreed meaning.
std::unique_ptr<Judge> NewJudge(std::span<const std::string> references);

}  // namespace rlscore::scorers::instructions
