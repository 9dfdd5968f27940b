// The equivalence checker on pairs (scorers/math/equivalence.h): "answer\0reference". Both are
// parsed under the verifier's limits and compared under a budget; and the pair goes through the
// whole verifier (Prepare the reference, Grade the boxed answer). Nothing may crash, leak or run
// past its budget.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.h"
#include "scorers/math/equivalence.h"
#include "scorers/math/parser.h"
#include "scorers/math/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  const std::string_view answer = in.Until('\0');
  const std::string reference(in.Rest());

  scorers::math::Budget budget;
  const scorers::math::ParseLimits limits;
  const absl::StatusOr<scorers::math::Expr> a = scorers::math::ParseAnswer(answer, limits, budget);
  const absl::StatusOr<scorers::math::Expr> b =
      scorers::math::ParseAnswer(reference, limits, budget);
  if (a.ok() && b.ok()) {
    const scorers::math::Equivalence e =
        scorers::math::Equivalent(*a, a->root, *b, b->root, budget);
    RLSCORE_FUZZ_CHECK(e != scorers::math::Equivalence::kBudgetExceeded || budget.exceeded);
  }

  static const std::unique_ptr<scorers::AccuracyScorer> scorer =
      scorers::math::NewAccuracyScorer();
  const std::unique_ptr<scorers::Judge> judge =
      scorer->Prepare(scorers::Task::kMath, std::span<const std::string>(&reference, 1));
  const scorers::AccuracyResult result =
      judge->Grade("The answer is \\boxed{" + std::string(answer) + "}.");
  RLSCORE_FUZZ_CHECK(result.accuracy == (result.verdict == scorers::Verdict::kCorrect ? 1.0 : 0.0));
  return 0;
}
