// Where the final answer is in an answer section (docs/VERIFIER.md), in one linear pass:
//   1. the last \boxed{…} / \fbox{…} with balanced braces — several boxes at the end, separated
//      by commas, "and", "or", or typeset in one formula, form a multi-part answer; an
//      unterminated or empty box means no answer (the generation was cut). A "final answer is"
//      sentence written after the last box overrides it;
//   2. the content of the last <answer>…</answer> (empty: no answer);
//   3. the text after the last "final answer is" / "the answer is" / "answer:" up to the end of
//      its sentence ("the largest $n$ is 34" gives 34; a prose sentence its last number);
//   4. the last math environment ($…$, $$…$$, \(…\), \[…\]) of the section;
//   5. the last number or expression of the section's final sentence (a sign-off such as "I hope
//      it is correct" is not one).
// A chat template's end-of-turn token ("<|im_end|>") ends the section.
//
//   ExtractedAnswer a = ExtractAnswer("so x = \\boxed{3} and y = \\boxed{5}.");
//   a.parts;   // {"3", "5"}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlscore::scorers::math {

struct ExtractedAnswer {
  std::vector<std::string> parts;  // empty: no answer
  std::string detail;              // why there is no answer, or which rule found it
};

// Whose text it is. A reference (a dataset's worked solution) is trusted and complete: a box it
// leaves open runs to the end of the text instead of meaning the generation was cut.
enum class Source : uint8_t { kCompletion, kReference };

// The last resort when there is no box, no <answer> and no answer phrase: steps 4 and 5 above
// (math and numbers), the final choice letter ("… so C.", else the last "(C)"), or the whole
// text (exact-match tasks).
enum class Fallback : uint8_t { kExpression, kChoiceLetter, kWholeText };

// REQUIRES: nothing; any bytes. O(length).
ExtractedAnswer ExtractAnswer(std::string_view answer_section, Source source = Source::kCompletion,
                              Fallback fallback = Fallback::kExpression);

// Peels what surrounds an answer without being part of it, repeatedly: blanks, trailing
// sentence punctuation, markdown stars, $…$, $$…$$, \(…\), \[…\], {…}, \displaystyle, and
// wrappers whose argument is the whole answer (\boxed, \text, \textbf, \mathrm, …):
// "$\text{(B)}$." is "(B)". For the tasks that compare text (choices, exact answers).
// O(length × nesting).
std::string_view StripWrappers(std::string_view s);

}  // namespace rlscore::scorers::math
