// Where the final answer is in an answer section (SPEC §2), in one linear pass:
//   1. the last \boxed{…} / \fbox{…} with balanced braces — several boxes at the end, separated
//      by commas or "and", form a multi-part answer; an unterminated box means the generation
//      was cut (no answer);
//   2. the content of the last <answer>…</answer>;
//   3. the text after the last "final answer is" / "the answer is" / "answer:" up to the end of
//      its sentence;
//   4. the last math environment ($…$, $$…$$, \(…\), \[…\]) of the section;
//   5. the last number or expression of the section's final sentence.
//
//   ExtractedAnswer a = ExtractAnswer("so x = \\boxed{3} and y = \\boxed{5}.");
//   a.parts;   // {"3", "5"}
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rlscore::scorers::math {

struct ExtractedAnswer {
  std::vector<std::string> parts;  // empty: no answer
  std::string detail;              // why there is no answer, or which rule found it
};

// REQUIRES: nothing; any bytes. O(length).
ExtractedAnswer ExtractAnswer(std::string_view answer_section);

}  // namespace rlscore::scorers::math
