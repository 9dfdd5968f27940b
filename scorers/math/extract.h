// Where the final answer is in an answer section (SPEC §2), in one linear pass:
//   1. the last \boxed{…} / \fbox{…} with balanced braces — several boxes at the end, separated
//      by commas, "and", "or", or typeset in one formula, form a multi-part answer; an
//      unterminated box means the generation was cut (no answer). A "final answer is" sentence
//      written after the last box overrides it;
//   2. the content of the last <answer>…</answer>;
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

// Whose text it is. A reference (a dataset's worked solution) is trusted and complete: all its
// boxes are its answer (repeats once), and a box it leaves open runs to the end of the text.
enum class Source : uint8_t { kCompletion, kReference };

// REQUIRES: nothing; any bytes. O(length).
ExtractedAnswer ExtractAnswer(std::string_view answer_section, Source source = Source::kCompletion);

}  // namespace rlscore::scorers::math
