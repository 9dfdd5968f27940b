// The math verifier's front half on any answer section: extraction (scorers/math/extract.h), the
// expression parser under its limits, and grading against a few fixed references of every shape
// (scalar, fraction, expression, interval, set, equation, matrix). Nothing may crash, leak or run
// past its budget; a verdict is always one of the five.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "scorers/math/extract.h"
#include "scorers/math/parser.h"
#include "scorers/math/verifier.h"

namespace rlscore::fuzz {
namespace {

const scorers::Judge& Judge() {
  static const std::unique_ptr<scorers::AccuracyScorer> scorer =
      scorers::math::NewAccuracyScorer();
  static const std::vector<std::string> references = {
      "\\frac{1}{2}",  "x^2 + 2x + 1", "[1, 3)",
      "\\{1, 2, 3\\}", "y = 2x - 1",   "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}",
      "3\\sqrt{2}",    "45^\\circ"};
  static const std::unique_ptr<scorers::Judge> judge =
      scorer->Prepare(scorers::Task::kMath, references);
  return *judge;
}

}  // namespace
}  // namespace rlscore::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  const std::string_view section = in.Rest();

  const scorers::math::ExtractedAnswer extracted = scorers::math::ExtractAnswer(section);
  for (const std::string& part : extracted.parts) {
    RLSCORE_FUZZ_CHECK(part.size() <= section.size());
  }
  // The raw section through the parser too: it meets far more shapes than extraction yields.
  scorers::math::Budget budget;
  (void)scorers::math::ParseAnswer(section, scorers::math::ParseLimits{}, budget);

  const scorers::AccuracyResult result = fuzz::Judge().Grade(section);
  RLSCORE_FUZZ_CHECK(result.accuracy == (result.verdict == scorers::Verdict::kCorrect ? 1.0 : 0.0));
  RLSCORE_FUZZ_CHECK(result.verdict != scorers::Verdict::kUnparseableReference);
  return 0;
}
