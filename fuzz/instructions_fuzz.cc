// Task IF (scorers/instructions/) on any bytes: an instruction list, then a response. Parsing
// never fails other than with INVALID_ARGUMENT; checking never fails, is deterministic, gives one
// outcome per instruction, and the loose rules forgive at least what the strict ones accept. The
// text units stay within what the response can hold.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "scorers/instructions/instructions.h"
#include "scorers/instructions/text.h"

namespace rlscore::fuzz {
namespace {

void Check(std::string_view reference, std::string_view response) {
  using namespace scorers::instructions;  // NOLINT: the one scope of this check
  absl::StatusOr<std::vector<Instruction>> parsed = ParseInstructions(reference);
  if (!parsed.ok()) {
    RLSCORE_FUZZ_CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    RLSCORE_FUZZ_CHECK(!parsed.status().message().empty());
  } else {
    const std::vector<InstructionOutcome> first = CheckAll(*parsed, response);
    const std::vector<InstructionOutcome> again = CheckAll(*parsed, response);
    RLSCORE_FUZZ_CHECK(first.size() == parsed->size());
    for (size_t i = 0; i < first.size(); ++i) {
      RLSCORE_FUZZ_CHECK(first[i].strict == again[i].strict && first[i].loose == again[i].loose);
      RLSCORE_FUZZ_CHECK(!first[i].strict || first[i].loose);
      RLSCORE_FUZZ_CHECK(first[i].strict == Follows((*parsed)[i], response));
    }
  }
  RLSCORE_FUZZ_CHECK(CountWords(response) <= response.size());
  RLSCORE_FUZZ_CHECK(CountSentences(response) <= response.size());
  RLSCORE_FUZZ_CHECK(CountUpperCaseWords(response) <= response.size());
  const std::string_view stripped = Strip(response);
  RLSCORE_FUZZ_CHECK(stripped.data() >= response.data() &&
                     stripped.data() + stripped.size() <= response.data() + response.size());
}

}  // namespace
}  // namespace rlscore::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlscore::fuzz::FuzzInput in(data, size);
  const std::string_view reference = in.Until('\0');
  rlscore::fuzz::Check(reference, in.Rest());
  return 0;
}
