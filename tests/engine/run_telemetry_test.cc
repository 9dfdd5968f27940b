#include "engine/run_telemetry.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::engine {
namespace {

using ::testing::ElementsAre;

BatchTelemetry AtStep(int64_t step) {
  BatchTelemetry b;
  b.step = step;
  return b;
}

std::vector<int64_t> Steps(const std::vector<BatchTelemetry>& window) {
  std::vector<int64_t> steps;
  for (const BatchTelemetry& b : window) steps.push_back(b.step);
  return steps;
}

TEST(RunTelemetry, KeepsABoundedWindowPerRunOldestFirst) {
  RunTelemetry telemetry(4, 3);
  for (int64_t step = 1; step <= 5; ++step) telemetry.Record("a", AtStep(step));
  telemetry.Record("b", AtStep(100));
  EXPECT_THAT(Steps(telemetry.Window("a")), ElementsAre(3, 4, 5));
  EXPECT_THAT(Steps(telemetry.Window("b")), ElementsAre(100));
  EXPECT_TRUE(telemetry.Window("unknown").empty());
}

TEST(RunTelemetry, ARetriedStepIsCountedOnce) {
  RunTelemetry telemetry(4, 8);
  telemetry.Record("a", AtStep(7));
  BatchTelemetry retry = AtStep(7);
  retry.groups = 16;
  telemetry.Record("a", retry);
  const std::vector<BatchTelemetry> window = telemetry.Window("a");
  ASSERT_EQ(window.size(), 1u);
  EXPECT_EQ(window[0].groups, 16u);
}

TEST(RunTelemetry, EvictsTheLeastRecentlyRecordedRun) {
  RunTelemetry telemetry(2, 8);
  EXPECT_EQ(telemetry.Record("a", AtStep(1)), std::nullopt);
  EXPECT_EQ(telemetry.Record("b", AtStep(1)), std::nullopt);
  EXPECT_EQ(telemetry.Record("a", AtStep(2)), std::nullopt);  // a is now the most recent
  EXPECT_EQ(telemetry.Record("c", AtStep(1)), "b");           // evicts b, and says so
  EXPECT_THAT(telemetry.Runs(), ElementsAre("c", "a"));
  EXPECT_TRUE(telemetry.Window("b").empty());
  EXPECT_THAT(Steps(telemetry.Window("a")), ElementsAre(1, 2));
}

TEST(RunTelemetry, EveryPowerOfTwoOfRunsStaysBounded) {
  for (size_t runs = 1; runs <= 1024; runs *= 2) {
    SCOPED_TRACE(runs);
    RunTelemetry telemetry(16, 4);
    for (size_t r = 0; r < runs; ++r) {
      for (int64_t step = 0; step < 6; ++step) telemetry.Record(std::to_string(r), AtStep(step));
    }
    EXPECT_EQ(telemetry.Runs().size(), std::min<size_t>(runs, 16));
    EXPECT_EQ(telemetry.Window(std::to_string(runs - 1)).size(), 4u);
  }
}

}  // namespace
}  // namespace rlscore::engine
