// Run health (docs/DESIGN.md §5 GetRunHealth): OK / WARN / CRITICAL for one training run, from the
// rolling window of its scored batches (run_telemetry.h), with a reason per signal.
//
// In the incident the signals were all visible before the NaN: 14 of 16 groups zero-variance at
// step 1,428, mean length 2,780 -> 9,450 tokens by step 1,432, repetition loops everywhere, then
// the 16,384-token ceiling. Each is a signal here, judged against fixed thresholds or against the
// run's own trailing baseline:
//
//   zero_variance_fraction          last batch and the mean of the recent batches
//   mean_length_growth              recent mean length / baseline mean length
//   max_length_growth               recent max length / baseline max length
//   truncation_rate                 recent truncated completions / completions
//   repetition_rate                 recent completions where a repetition rule fired
//   format_without_accuracy_rise    recent well-formed-but-wrong rate minus its baseline
//   reward_mean, reward_std,        reported, not judged
//   mean_length_tokens, max_length_tokens
//
// "Recent" is the last `recent_batches` batches; the baseline is the mean over the batches before
// them (at most `baseline_batches`). Signals against a baseline wait until it has
// `min_baseline_batches` batches.
//
//   RunHealthReport r = EvaluateRunHealth("run-32b", telemetry.Window("run-32b"), thresholds);
//   if (r.level == HealthLevel::kCritical) ...  // r.reasons[0] says why, most severe first
//
// Pure: no I/O, no clock. Thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/run_telemetry.h"

namespace rlscore::engine {

enum class HealthLevel : uint8_t { kOk = 0, kWarn = 1, kCritical = 2 };
std::string_view HealthLevelName(HealthLevel level);  // "ok", "warn", "critical"

struct HealthThresholds {
  uint32_t recent_batches = 4;
  uint32_t baseline_batches = 64;
  uint32_t min_baseline_batches = 8;
  // Fraction of groups with no learning signal. One batch that bad is worth a warning; the
  // recent mean that bad is critical. Healthy GRPO runs see 0.1-0.4 (easy prompts all correct,
  // hard ones all wrong).
  double zero_variance_batch_warn = 0.75;
  double zero_variance_recent_warn = 0.5;
  double zero_variance_recent_critical = 0.75;
  // Ratios to the baseline.
  double mean_length_growth_warn = 1.5;
  double mean_length_growth_critical = 2.0;
  double max_length_growth_warn = 2.0;
  double max_length_growth_critical = 3.0;
  // Rates over the recent batches.
  double truncation_warn = 0.1;
  double truncation_critical = 0.3;
  double repetition_warn = 0.1;
  double repetition_critical = 0.3;
  // Rise of the well-formed-but-wrong rate over its baseline (it is high in any run that learns
  // hard prompts; a jump is the incident's Mechanism 2 at work).
  double format_without_accuracy_rise_warn = 0.25;
  double format_without_accuracy_rise_critical = 0.4;
};

// Checks that every threshold is finite, warn <= critical, and the batch counts make sense.
// The error names the field.
std::string ValidateHealthThresholds(const HealthThresholds& t);  // empty when valid

struct HealthSignal {
  std::string name;
  double value = 0.0;
  double baseline = 0.0;  // 0 where the signal has none
  double warn = 0.0;      // 0 and 0: reported, not judged
  double critical = 0.0;  // +inf: this signal only warns (the last batch's zero-variance fraction)
  HealthLevel level = HealthLevel::kOk;
  std::string reason;  // empty when OK
};

struct RunHealthReport {
  std::string run_id;
  HealthLevel level = HealthLevel::kOk;
  int64_t last_step = 0;
  uint64_t batches = 0;
  std::vector<HealthSignal> signals;
  std::vector<std::string> reasons;  // most severe first
};

// The health of a run whose window (oldest first) is `window`. An empty window is OK with the
// reason that nothing was recorded.
RunHealthReport EvaluateRunHealth(std::string_view run_id, std::span<const BatchTelemetry> window,
                                  const HealthThresholds& thresholds);

}  // namespace rlscore::engine
