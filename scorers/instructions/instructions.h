// Verifiable instructions (task IF): IFEval's registry of checkers, with its strict and loose
// semantics, behind a reference in IFEval's own format.
//
//   absl::StatusOr<std::vector<Instruction>> list = ParseInstructions(
//       R"({"instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
//           "kwargs": [{}, {"relation": "less than", "num_words": 50}]})");
//   if (!list.ok()) return list.status();   // "instruction 2 (length_constraints:...): ..."
//   std::vector<InstructionOutcome> r = CheckAll(*list, "A short answer without commas.");
//   r[0].strict;                            // true
//
// Every instruction of IFEval's registry (google-research instruction_following_eval) is here
// except language:response_language, which needs a statistical language detector; the
// change_case:english_* checkers test the case and not the language, for the same reason.
// docs/INSTRUCTIONS.md lists each checker's rule and every departure from the Python.
//
// Pure: no I/O, no clock, no globals. Checking is linear in the response for every instruction
// (keyword search is O(response × keyword)); memory is a few copies of the response.
// Thread-safe: everything here is a function of its arguments.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace rlscore::scorers::instructions {

enum class Kind : uint8_t {
  kKeywordsExistence,
  kKeywordsFrequency,
  kKeywordsForbiddenWords,
  kKeywordsLetterFrequency,
  kNumberSentences,
  kNumberParagraphs,
  kNumberWords,
  kNthParagraphFirstWord,
  kNumberPlaceholders,
  kPostscript,
  kNumberBulletLists,
  kConstrainedResponse,
  kNumberHighlightedSections,
  kMultipleSections,
  kJsonFormat,
  kTitle,
  kTwoResponses,
  kRepeatPrompt,
  kEndChecker,
  kCapitalWordFrequency,
  kEnglishCapital,
  kEnglishLowercase,
  kNoComma,
  kQuotation,
};

// IFEval's comparisons: "less than" (count < n) and "at least" (count >= n).
enum class Relation : uint8_t { kLessThan, kAtLeast };

// One instruction with its arguments, validated. Which fields matter depends on `kind`.
struct Instruction {
  Kind kind = Kind::kNoComma;
  std::string id;                  // as the registry names it, e.g. "keywords:frequency"
  std::vector<std::string> words;  // keywords, forbidden_words
  // keyword, letter, first_word, postscript_marker, section_spliter, prompt_to_repeat,
  // end_phrase: stripped (and lowered where IFEval lowers them).
  std::string text;
  uint64_t count = 0;  // the threshold: num_words, frequency, num_paragraphs, ...
  uint64_t nth = 0;    // nth_paragraph, 1-based
  Relation relation = Relation::kAtLeast;
};

// The ids of the registry this library implements, in registry order.
std::span<const std::string_view> SupportedIds();

// Parses a reference: one JSON object with "instruction_id_list" (a non-empty array of ids) and
// "kwargs" (an array of as many objects; optional when no instruction takes arguments). Other
// keys, such as an IFEval row's "key" and "prompt", are ignored, so a dataset row can be passed
// as it is. Within kwargs, a null value counts as absent (datasets stored in columnar formats
// carry every argument name of every instruction, null where unused).
//
// Errors: INVALID_ARGUMENT naming the instruction by position and id: an unknown id, the
// language detector's id, a missing or ill-typed argument, an argument the instruction does not
// take, a negative or non-integral count, a relation other than "less than" / "at least", a
// letter that is not one character, nth_paragraph outside [1, num_paragraphs]. IFEval draws a
// random value for a missing argument; a reward must not.
absl::StatusOr<std::vector<Instruction>> ParseInstructions(std::string_view reference);

// IFEval's check_following: whether `response` follows `instruction`.
bool Follows(const Instruction& instruction, std::string_view response);

struct InstructionOutcome {
  bool strict = false;  // the response as given (empty or white space follows nothing)
  bool loose = false;   // any of IFEval's eight variants: as given, without its first line,
                        // without its last, without both, each also with every '*' removed
};

// Both verdicts for every instruction, in order. The loose variants are built only when an
// instruction fails strictly.
std::vector<InstructionOutcome> CheckAll(std::span<const Instruction> instructions,
                                         std::string_view response);

}  // namespace rlscore::scorers::instructions
