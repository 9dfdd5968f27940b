// Task IF through the reward: the judge's verdicts, the profile's accuracy policy, the format
// gate, and references that cannot be used.
#include "scorers/instructions/judge.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scorers/math/verifier.h"
#include "scorers/reward.h"

namespace rlscore::scorers {
namespace {

const std::string kReference =
    R"({"instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
        "kwargs": [{}, {"relation": "less than", "num_words": 10}]})";

std::vector<CompletionScore> Score(const std::vector<std::string>& texts, const Profile& profile,
                                   const std::string& reference = kReference) {
  std::vector<std::string> references = {reference};
  std::unique_ptr<Judge> judge =
      math::NewAccuracyScorer()->Prepare(Task::kInstructionFollowing, references);
  std::vector<CompletionInput> inputs;
  for (const std::string& t : texts) {
    CompletionInput in;
    in.text = t;
    inputs.push_back(in);
  }
  std::vector<CompletionScore> scores;
  EXPECT_TRUE(ScoreGroup(inputs, Task::kInstructionFollowing, judge.get(), profile, &scores).ok());
  return scores;
}

TEST(InstructionJudge, AllOrNothingByDefaultWithTheFormatGate) {
  const std::vector<CompletionScore> s =
      Score({"<think>short</think>Five words and no commas.",
             "<think>short</think>Commas, here, break one of the two.", "<think>short</think>"},
            Profile{});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].verdict, Verdict::kCorrect);
  EXPECT_EQ(s[0].accuracy, 1.0);
  EXPECT_EQ(s[0].format, 0.1);
  ASSERT_EQ(s[0].instructions.size(), 2u);
  EXPECT_EQ(s[0].instructions[0].id, "punctuation:no_comma");
  EXPECT_TRUE(s[0].instructions[0].strict);
  EXPECT_TRUE(s[0].instructions[1].strict);

  EXPECT_EQ(s[1].verdict, Verdict::kWrong);
  EXPECT_EQ(s[1].accuracy, 0.0);
  EXPECT_EQ(s[1].format, 0.0);  // the gate: no format reward without accuracy
  EXPECT_TRUE(s[1].format_gated);
  EXPECT_FALSE(s[1].instructions[0].strict);
  EXPECT_TRUE(s[1].instructions[1].strict);
  EXPECT_EQ(s[1].detail, "1 of 2 instructions followed (strict)");

  EXPECT_EQ(s[2].verdict, Verdict::kNoAnswer);
  EXPECT_EQ(s[2].accuracy, 0.0);
}

TEST(InstructionJudge, FractionAndLooseByProfile) {
  Profile fraction;
  fraction.instructions.fraction = true;
  const std::vector<CompletionScore> s =
      Score({"<think>x</think>Commas, here, break one of the two."}, fraction);
  EXPECT_EQ(s[0].accuracy, 0.5);
  EXPECT_EQ(s[0].verdict, Verdict::kCorrect);
  EXPECT_EQ(s[0].format, 0.1);  // accuracy > 0 opens the gate

  Profile loose;
  loose.instructions.loose = true;
  // The preamble line carries the comma; without it the answer follows both instructions.
  const std::string text = "<think>x</think>Sure, here it is:\nFive words and no commas.";
  EXPECT_EQ(Score({text}, Profile{})[0].verdict, Verdict::kWrong);
  const std::vector<CompletionScore> l = Score({text}, loose);
  EXPECT_EQ(l[0].verdict, Verdict::kCorrect);
  EXPECT_EQ(l[0].accuracy, 1.0);
  EXPECT_FALSE(l[0].instructions[0].strict);
  EXPECT_TRUE(l[0].instructions[0].loose);
}

TEST(InstructionJudge, ABadReferenceIsUnscorableAndNamesTheInstruction) {
  const std::vector<CompletionScore> s =
      Score({"<think>x</think>Anything."}, Profile{},
            R"({"instruction_id_list": ["punctuation:no_comma", "keywords:nonexistent"]})");
  EXPECT_EQ(s[0].verdict, Verdict::kUnparseableReference);
  EXPECT_TRUE(s[0].unscorable());
  EXPECT_EQ(s[0].total, 0.0);
  EXPECT_NE(s[0].detail.find("instruction 2"), std::string::npos) << s[0].detail;
  EXPECT_NE(s[0].detail.find("keywords:nonexistent"), std::string::npos) << s[0].detail;
}

TEST(InstructionJudge, OnlyTheAnswerSectionIsGraded) {
  // The reasoning has commas; the answer has none.
  const std::vector<CompletionScore> s =
      Score({"<think>Well, first, count words.</think>Fine answer."}, Profile{});
  EXPECT_EQ(s[0].verdict, Verdict::kCorrect);
  // No </think>: nothing to grade.
  EXPECT_EQ(Score({"<think>No commas here at all"}, Profile{})[0].verdict, Verdict::kNoAnswer);
}

TEST(InstructionJudge, ExactlyOneReference) {
  std::vector<std::string> two = {kReference, kReference};
  std::unique_ptr<Judge> judge = instructions::NewJudge(two);
  const AccuracyResult r = judge->Grade("x");
  EXPECT_EQ(r.verdict, Verdict::kUnparseableReference);
  EXPECT_NE(r.detail.find("exactly one reference"), std::string::npos);
}

}  // namespace
}  // namespace rlscore::scorers
