#include "cli/enum_names.h"

namespace rlscore::cli {

std::string_view VerdictName(v1::Verdict verdict) {
  switch (verdict) {
    case v1::VERDICT_UNSPECIFIED:
      return "UNSPECIFIED";
    case v1::VERDICT_CORRECT:
      return "CORRECT";
    case v1::VERDICT_WRONG:
      return "WRONG";
    case v1::VERDICT_NO_ANSWER:
      return "NO_ANSWER";
    case v1::VERDICT_UNPARSEABLE_REFERENCE:
      return "UNPARSEABLE_REFERENCE";
    case v1::VERDICT_BUDGET_EXCEEDED:
      return "BUDGET_EXCEEDED";
    default:  // the proto's sentinels and numbers it does not name
      return "";
  }
}

std::string_view RepetitionDetectorName(v1::RepetitionDetector detector) {
  switch (detector) {
    case v1::REPETITION_DETECTOR_NONE:
      return "NONE";
    case v1::REPETITION_DETECTOR_NGRAM:
      return "NGRAM";
    case v1::REPETITION_DETECTOR_AST_BLOCK:
      return "AST_BLOCK";
    case v1::REPETITION_DETECTOR_AST_CODE_CLONE:
      return "AST_CODE_CLONE";
    case v1::REPETITION_DETECTOR_TAG_LOOP:
      return "TAG_LOOP";
    case v1::REPETITION_DETECTOR_UNBROKEN_RUN:
      return "UNBROKEN_RUN";
    default:
      return "";
  }
}

}  // namespace rlscore::cli
