// Per-run telemetry recorded from the batches a trainer scores (ScoreGroups with a run_id): the
// raw material of GetRunHealth. The signals of the incident — zero-variance fraction, length
// growth, truncation and repetition, format without accuracy — were all visible eight steps
// before the NaN; this keeps them per run.
//
//   RunTelemetry telemetry(/*max_runs=*/64, /*window=*/256);
//   telemetry.Record("run-32b", batch);                 // after each scored batch
//   std::vector<BatchTelemetry> w = telemetry.Window("run-32b");   // oldest first
//
// Memory is bounded: at most `max_runs` runs (the least recently recorded is evicted) with at
// most `window` batches each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"

namespace rlscore::engine {

// What one scored batch says about its run.
struct BatchTelemetry {
  int64_t step = 0;
  uint64_t groups = 0;
  uint64_t zero_variance_groups = 0;
  uint64_t completions = 0;
  double mean_length_tokens = 0.0;
  uint32_t max_length_tokens = 0;
  uint64_t truncated = 0;
  uint64_t repetition_fired = 0;
  // Well-formed but wrong: the format reward the gate withheld (the incident's Mechanism 2).
  uint64_t format_without_accuracy = 0;
  double reward_mean = 0.0;
  double reward_std = 0.0;
};

// Thread-safe.
class RunTelemetry {
 public:
  // REQUIRES: max_runs >= 1, window >= 1.
  RunTelemetry(size_t max_runs, size_t window);

  // Appends `batch` to the run's window (dropping its oldest batch when full) and marks the run
  // most recently used, evicting the least recently used run when there are too many. A batch with
  // the same step as the last one (a retried call) replaces it. Returns the evicted run's id, if
  // one was evicted.
  std::optional<std::string> Record(std::string_view run_id, const BatchTelemetry& batch);

  // The run's batches, oldest first; empty for an unknown (or evicted) run.
  std::vector<BatchTelemetry> Window(std::string_view run_id) const;

  // Tracked run ids, most recently recorded first.
  std::vector<std::string> Runs() const;

 private:
  struct Run {
    std::deque<BatchTelemetry> batches;
    std::list<std::string>::iterator recency;
  };

  const size_t max_runs_;
  const size_t window_;
  mutable Mutex mu_;
  std::list<std::string> recency_ ABSL_GUARDED_BY(mu_);  // front: most recent
  std::map<std::string, Run, std::less<>> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rlscore::engine
