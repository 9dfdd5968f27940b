#include "engine/run_telemetry.h"

namespace rlscore::engine {

RunTelemetry::RunTelemetry(size_t max_runs, size_t window)
    : max_runs_(max_runs == 0 ? 1 : max_runs), window_(window == 0 ? 1 : window) {}

std::optional<std::string> RunTelemetry::Record(std::string_view run_id,
                                                const BatchTelemetry& batch) {
  MutexLock lock(&mu_);
  std::optional<std::string> evicted;
  auto it = runs_.find(run_id);
  if (it == runs_.end()) {
    if (runs_.size() == max_runs_) {
      evicted = recency_.back();
      runs_.erase(recency_.back());
      recency_.pop_back();
    }
    recency_.emplace_front(run_id);
    it = runs_.emplace(std::string(run_id), Run{{}, recency_.begin()}).first;
  } else {
    recency_.splice(recency_.begin(), recency_, it->second.recency);
  }
  std::deque<BatchTelemetry>& batches = it->second.batches;
  // A trainer that retries a step sends it again: the step is counted once, as last sent.
  if (!batches.empty() && batches.back().step == batch.step) {
    batches.back() = batch;
    return evicted;
  }
  if (batches.size() == window_) batches.pop_front();
  batches.push_back(batch);
  return evicted;
}

std::vector<BatchTelemetry> RunTelemetry::Window(std::string_view run_id) const {
  MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return {};
  return std::vector<BatchTelemetry>(it->second.batches.begin(), it->second.batches.end());
}

std::vector<std::string> RunTelemetry::Runs() const {
  MutexLock lock(&mu_);
  return std::vector<std::string>(recency_.begin(), recency_.end());
}

}  // namespace rlscore::engine
