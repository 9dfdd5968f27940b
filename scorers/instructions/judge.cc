#include "scorers/instructions/judge.h"

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "scorers/instructions/instructions.h"
#include "scorers/instructions/text.h"

namespace rlscore::scorers::instructions {
namespace {

class UnparseableJudge final : public Judge {
 public:
  explicit UnparseableJudge(std::string reason) : reason_(std::move(reason)) {}
  AccuracyResult Grade(std::string_view) const override {
    AccuracyResult r;
    r.verdict = Verdict::kUnparseableReference;
    r.detail = reason_;
    return r;
  }

 private:
  std::string reason_;
};

class InstructionJudge final : public Judge {
 public:
  explicit InstructionJudge(std::vector<Instruction> instructions)
      : instructions_(std::move(instructions)) {}

  AccuracyResult Grade(std::string_view answer_section) const override {
    AccuracyResult r;
    const std::vector<InstructionOutcome> outcomes = CheckAll(instructions_, answer_section);
    r.instructions.reserve(outcomes.size());
    size_t followed = 0;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      r.instructions.push_back({instructions_[i].id, outcomes[i].strict, outcomes[i].loose});
      followed += outcomes[i].strict;
    }
    if (Strip(answer_section).empty()) {
      r.verdict = Verdict::kNoAnswer;
      r.detail = "empty answer section: it follows no instruction";
      return r;
    }
    const bool all = followed == outcomes.size();
    r.accuracy = all ? 1.0 : 0.0;
    r.verdict = all ? Verdict::kCorrect : Verdict::kWrong;
    r.detail = absl::StrCat(followed, " of ", outcomes.size(), " instructions followed (strict)");
    return r;
  }

 private:
  std::vector<Instruction> instructions_;
};

}  // namespace

std::unique_ptr<Judge> NewJudge(std::span<const std::string> references) {
  if (references.size() != 1) {
    return std::make_unique<UnparseableJudge>(absl::StrCat(
        "task IF takes exactly one reference (an instruction list), got ", references.size()));
  }
  absl::StatusOr<std::vector<Instruction>> parsed = ParseInstructions(references[0]);
  if (!parsed.ok())
    return std::make_unique<UnparseableJudge>(std::string(parsed.status().message()));
  return std::make_unique<InstructionJudge>(*std::move(parsed));
}

}  // namespace rlscore::scorers::instructions
