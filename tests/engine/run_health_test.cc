#include "engine/run_health.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::engine {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kGroups = 16;
constexpr uint64_t kCompletions = kGroups * 8;

uint64_t Binomial(std::mt19937_64& rng, uint64_t n, double p) {
  return std::binomial_distribution<uint64_t>(n, p)(rng);
}

// A healthy batch: ordinary zero-variance fraction (easy prompts all correct, hard ones all
// wrong), steady lengths, rare truncation and repetition, many well-formed wrong answers.
BatchTelemetry HealthyBatch(int64_t step, double mean_length, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  BatchTelemetry b;
  b.step = step;
  b.groups = kGroups;
  b.zero_variance_groups = Binomial(rng, kGroups, 0.25);
  b.completions = kCompletions;
  b.mean_length_tokens = mean_length * (0.95 + 0.1 * u(rng));
  b.max_length_tokens = static_cast<uint32_t>(b.mean_length_tokens * (2.0 + u(rng)));
  b.truncated = Binomial(rng, kCompletions, 0.01);
  b.repetition_fired = Binomial(rng, kCompletions, 0.01);
  b.format_without_accuracy = Binomial(rng, kCompletions, 0.4);
  b.reward_mean = 0.6 + 0.05 * (u(rng) - 0.5);
  b.reward_std = 0.4;
  return b;
}

// The postmortem's run, steps 1,350 to 1,440: mean length 2,780 at step 1,350 and 3,120 at
// 1,420; 14 of 16 groups zero-variance from step 1,428 (hard AIME prompts, all 8 rollouts wrong);
// 9,450 tokens and repetition loops at 1,432; the 16,384-token ceiling by 1,438.
std::vector<BatchTelemetry> IncidentRun() {
  std::mt19937_64 rng(1428);
  std::vector<BatchTelemetry> run;
  for (int64_t step = 1350; step <= 1440; ++step) {
    double length = 0.0;
    if (step <= 1420) {
      length = 2780.0 + (3120.0 - 2780.0) * static_cast<double>(step - 1350) / 70.0;
    } else if (step <= 1428) {
      length = 3120.0 + 10.0 * static_cast<double>(step - 1420);
    } else if (step < 1432) {
      length = (step == 1429) ? 4200.0 : (step == 1430) ? 5600.0 : 7400.0;
    } else if (step < 1438) {
      length = 9450.0 + (16384.0 - 9450.0) * static_cast<double>(step - 1432) / 6.0;
    } else {
      length = 16384.0;
    }
    BatchTelemetry b = HealthyBatch(step, length, rng);
    b.mean_length_tokens = length;  // as written, without noise
    b.max_length_tokens = static_cast<uint32_t>(std::min(16384.0, 2.5 * length));
    if (step >= 1428) {
      b.zero_variance_groups = 14;
      b.format_without_accuracy = 14 * 8 + Binomial(rng, 16, 0.4);  // all wrong, all well formed
      b.reward_mean = 0.1;
    }
    if (step >= 1432) {
      const double looping = std::min(1.0, 0.6 + 0.1 * static_cast<double>(step - 1432));
      b.repetition_fired = static_cast<uint64_t>(looping * kCompletions);
      b.truncated = static_cast<uint64_t>(kCompletions * std::pow(length / 16384.0, 4.0));
    }
    run.push_back(b);
  }
  return run;
}

HealthLevel LevelAt(const std::vector<BatchTelemetry>& run, size_t i, std::string* reasons) {
  const std::span<const BatchTelemetry> window(run.data(), i + 1);
  const RunHealthReport r = EvaluateRunHealth("incident", window, HealthThresholds{});
  *reasons = absl::StrJoin(r.reasons, "; ");
  return r.level;
}

TEST(RunHealth, IncidentReplayWarnsBy1428AndIsCriticalBy1432) {
  const std::vector<BatchTelemetry> run = IncidentRun();
  for (size_t i = 0; i < run.size(); ++i) {
    const int64_t step = run[i].step;
    std::string reasons;
    const HealthLevel level = LevelAt(run, i, &reasons);
    SCOPED_TRACE(testing::Message()
                 << "step " << step << ": " << HealthLevelName(level) << " (" << reasons << ")");
    if (step < 1428) {
      EXPECT_EQ(level, HealthLevel::kOk);  // the run was healthy until then
    }
    if (step >= 1428) {
      EXPECT_GE(level, HealthLevel::kWarn);
    }
    if (step >= 1432) {
      EXPECT_EQ(level, HealthLevel::kCritical);
    }
  }
  std::string reasons;
  EXPECT_EQ(LevelAt(run, 1428 - 1350, &reasons), HealthLevel::kWarn);
  EXPECT_THAT(reasons, HasSubstr("zero_variance_fraction_last_batch 0.875 at step 1428"));
  LevelAt(run, 1432 - 1350, &reasons);
  EXPECT_THAT(reasons, HasSubstr("zero_variance_fraction 0.875 over the last 4 batches"));
  EXPECT_THAT(reasons, HasSubstr("mean_length_growth"));
}

TEST(RunHealth, AHealthyThousandStepRunNeverLeavesOk) {
  std::mt19937_64 rng(7);
  std::vector<BatchTelemetry> run;
  for (int64_t step = 0; step < 1000; ++step) {
    // Lengths drift up slowly, as they do while a model learns to reason (+20 % over the run).
    run.push_back(
        HealthyBatch(step, 2800.0 * (1.0 + 0.2 * static_cast<double>(step) / 1000.0), rng));
    const RunHealthReport r = EvaluateRunHealth("healthy", run, HealthThresholds{});
    ASSERT_EQ(r.level, HealthLevel::kOk)
        << "step " << step << ": " << absl::StrJoin(r.reasons, "; ");
  }
}

TEST(RunHealth, AnEmptyWindowIsOkAndSaysSo) {
  const RunHealthReport r = EvaluateRunHealth("new", {}, HealthThresholds{});
  EXPECT_EQ(r.level, HealthLevel::kOk);
  EXPECT_EQ(r.batches, 0u);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_THAT(r.reasons[0], HasSubstr("no batches"));
}

TEST(RunHealth, BaselineSignalsWaitForEnoughBatches) {
  std::mt19937_64 rng(3);
  std::vector<BatchTelemetry> run;
  for (int64_t step = 0; step < 5; ++step) run.push_back(HealthyBatch(step, 3000.0, rng));
  const RunHealthReport r = EvaluateRunHealth("young", run, HealthThresholds{});
  EXPECT_EQ(r.level, HealthLevel::kOk);
  EXPECT_THAT(absl::StrJoin(r.reasons, "; "), HasSubstr("baselines need 8 earlier batches; 1"));
  for (const HealthSignal& s : r.signals) EXPECT_NE(s.name, "mean_length_growth");
}

TEST(RunHealth, EachSignalCrossesItsThresholds) {
  struct Case {
    const char* signal;
    void (*spoil)(BatchTelemetry&, double);  // applied to the recent batches with a strength
  };
  const Case cases[] = {
      {"truncation_rate",
       [](BatchTelemetry& b, double x) { b.truncated = static_cast<uint64_t>(x * 128); }},
      {"repetition_rate",
       [](BatchTelemetry& b, double x) { b.repetition_fired = static_cast<uint64_t>(x * 128); }},
      {"mean_length_growth",
       [](BatchTelemetry& b, double x) { b.mean_length_tokens *= 1.0 + 5.0 * x; }},
      {"zero_variance_fraction",
       [](BatchTelemetry& b, double x) { b.zero_variance_groups = static_cast<uint64_t>(16 * x); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.signal);
    HealthLevel previous = HealthLevel::kOk;
    bool saw_warn = false;
    for (double strength : {0.0, 0.15, 0.35, 0.6, 0.9}) {
      std::vector<BatchTelemetry> run;
      for (int64_t step = 0; step < 40; ++step) {
        BatchTelemetry b;
        b.step = step;
        b.groups = 16;
        b.completions = 128;
        b.mean_length_tokens = 3000;
        b.max_length_tokens = 6000;
        b.format_without_accuracy = 50;
        if (step >= 36) c.spoil(b, strength);
        run.push_back(b);
      }
      const RunHealthReport r = EvaluateRunHealth("r", run, HealthThresholds{});
      auto it = std::find_if(r.signals.begin(), r.signals.end(),
                             [&](const HealthSignal& s) { return s.name == c.signal; });
      ASSERT_NE(it, r.signals.end());
      EXPECT_GE(it->level, previous) << "strength " << strength;  // monotone in the strength
      previous = it->level;
      saw_warn |= it->level == HealthLevel::kWarn;
      if (it->level != HealthLevel::kOk) {
        EXPECT_THAT(it->reason, HasSubstr(c.signal));
      }
    }
    EXPECT_TRUE(saw_warn);
    EXPECT_EQ(previous, HealthLevel::kCritical);
  }
}

TEST(RunHealth, ThresholdsAreValidated) {
  EXPECT_EQ(ValidateHealthThresholds(HealthThresholds{}), "");
  HealthThresholds t;
  t.truncation_warn = 0.5;
  t.truncation_critical = 0.2;
  EXPECT_THAT(ValidateHealthThresholds(t), HasSubstr("truncation_warn"));
  t = HealthThresholds{};
  t.recent_batches = 0;
  EXPECT_THAT(ValidateHealthThresholds(t), HasSubstr("recent_batches"));
}

}  // namespace
}  // namespace rlscore::engine
