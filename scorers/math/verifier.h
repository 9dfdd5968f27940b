// The math answer verifier (SPEC §2, issue 4): extraction from the answer section,
// normalisation, parsing, and equivalence — behind the AccuracyScorer interface of accuracy.h.
//
//   std::unique_ptr<AccuracyScorer> math = NewMathAccuracyScorer();
//   std::unique_ptr<Judge> judge = math->Prepare(Task::kMath, {"\\frac{1}{2}"});
//   judge->Grade(" so the answer is $0.5$.").verdict;   // Verdict::kCorrect
//
// References are parsed once, in Prepare(). Every Grade() is bounded by explicit budgets (input
// bytes, depth, nodes, arithmetic steps): over budget is Verdict::kBudgetExceeded, never a hang.
#pragma once

#include <memory>

#include "scorers/accuracy.h"

namespace rlscore::scorers::math {

// Tasks kMath (this verifier); kMultipleChoice, kExact and kNumeric are delegated to the basic
// rules of NewBasicAccuracyScorer().
std::unique_ptr<AccuracyScorer> NewMathAccuracyScorer();

}  // namespace rlscore::scorers::math
