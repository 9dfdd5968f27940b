// The accuracy scorer of every task, behind the interface of scorers/accuracy.h: one extraction
// (extract.h) for all of them, then a thin judge per task —
//   MATH            the verifier: parsing, exact and numeric equivalence (docs/VERIFIER.md);
//   NUMERIC         the same, with both sides exact numbers ("2+3" is 5; "\sqrt{2}" is no number);
//   MULTIPLE_CHOICE one letter A-Z in the reference, the letter the answer chooses;
//   EXACT           unwrapped, spaces folded, ASCII case-folded, byte for byte.
//
//   std::unique_ptr<AccuracyScorer> scorer = NewAccuracyScorer();
//   std::unique_ptr<Judge> judge = scorer->Prepare(Task::kMath, {"\\frac{1}{2}"});
//   judge->Grade(" so the answer is $0.5$.").verdict;   // Verdict::kCorrect
//
// References are parsed once, in Prepare(). Every Grade() is bounded by explicit budgets (answer
// bytes, depth, nodes, arithmetic steps): a final answer longer than any answer is WRONG, a
// reasonably sized one over another budget BUDGET_EXCEEDED, never a hang. Verdicts are cached per
// group by extracted answer.
#pragma once

#include <memory>

#include "scorers/accuracy.h"

namespace rlscore::scorers::math {

// Thread-safe; so are its judges.
std::unique_ptr<AccuracyScorer> NewAccuracyScorer();

}  // namespace rlscore::scorers::math
