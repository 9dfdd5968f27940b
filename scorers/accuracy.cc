#include "scorers/accuracy.h"

namespace rlscore::scorers {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kCorrect:
      return "CORRECT";
    case Verdict::kWrong:
      return "WRONG";
    case Verdict::kNoAnswer:
      return "NO_ANSWER";
    case Verdict::kUnparseableReference:
      return "UNPARSEABLE_REFERENCE";
    case Verdict::kBudgetExceeded:
      return "BUDGET_EXCEEDED";
  }
  return "UNKNOWN";
}

}  // namespace rlscore::scorers
