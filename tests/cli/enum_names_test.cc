#include "cli/enum_names.h"

#include <algorithm>
#include <string>

#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace rlscore::cli {
namespace {

// Every value the proto names, and a number it does not, against protobuf's own names.
template <typename Enum, typename Ours>
void ExpectNamesOfEveryValue(const google::protobuf::EnumDescriptor* descriptor,
                             absl::string_view prefix, Ours ours) {
  ASSERT_GT(descriptor->value_count(), 1);
  int largest = 0;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor* value = descriptor->value(i);
    EXPECT_EQ(std::string(ours(static_cast<Enum>(value->number()))),
              std::string(absl::StripPrefix(value->name(), prefix)));
    largest = std::max(largest, value->number());
  }
  EXPECT_EQ(ours(static_cast<Enum>(largest + 1)), "");
  EXPECT_EQ(ours(static_cast<Enum>(-1)), "");
}

TEST(EnumNames, VerdictsAreTheProtosNamesWithoutThePrefix) {
  ExpectNamesOfEveryValue<v1::Verdict>(v1::Verdict_descriptor(), "VERDICT_", VerdictName);
  EXPECT_EQ(VerdictName(v1::VERDICT_BUDGET_EXCEEDED), "BUDGET_EXCEEDED");
}

TEST(EnumNames, RepetitionDetectorsAreTheProtosNamesWithoutThePrefix) {
  ExpectNamesOfEveryValue<v1::RepetitionDetector>(v1::RepetitionDetector_descriptor(),
                                                  "REPETITION_DETECTOR_", RepetitionDetectorName);
  EXPECT_EQ(RepetitionDetectorName(v1::REPETITION_DETECTOR_AST_CODE_CLONE), "AST_CODE_CLONE");
}

}  // namespace
}  // namespace rlscore::cli
