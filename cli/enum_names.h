// The names `rlscore score` writes for the scoring protocol's enums (result lines, the summary,
// the HTML report): the value's proto name without its prefix, "CORRECT" for VERDICT_CORRECT.
//
//   absl::StrAppend(&line, "\"verdict\":\"", Sv(VerdictName(result.verdict())), "\"");
//
// From tables, not from protobuf's reflection (v1::Verdict_Name), which builds the descriptors of
// all of scoring.proto on its first call: a tenth of an empty `rlscore score` run (about 0.8 ms
// here), for names that never change at run time. tests/cli/enum_names_test.cc holds every table to
// the proto's own names, so a value added to the proto without its name here fails it.
#pragma once

#include <string_view>

#include "rlscore/v1/scoring.pb.h"

namespace rlscore::cli {

// "" for a number the proto does not name (a newer server's value), as v1::Verdict_Name gives.
std::string_view VerdictName(v1::Verdict verdict);
std::string_view RepetitionDetectorName(v1::RepetitionDetector detector);

}  // namespace rlscore::cli
