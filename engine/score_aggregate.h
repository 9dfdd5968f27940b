// The aggregate of Score (docs/DESIGN.md §5): accuracy, format, repetition and truncation rates,
// length percentiles, verdict counts and unbiased pass@k over completions that share a prompt id.
//
// RunScore aggregates one request with it and `rlscore score` a whole file, request after
// request, so the two report the same numbers for the same completions.
//
//   ScoreAggregator aggregator;
//   for (int i = 0; i < response.results_size(); ++i)
//     aggregator.Add(request.items(i).prompt_id(), response.results(i));
//   const uint32_t ks[] = {1, 8};
//   v1::ScoreAggregate aggregate = aggregator.Finish(ks);
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rlscore/v1/scoring.pb.h"

namespace rlscore::engine {

// The unbiased pass@k estimator for one prompt with n samples of which c are correct:
// 1 - C(n - c, k) / C(n, k), computed as a stable product (Chen et al. 2021).
// REQUIRES: k <= n, c <= n.
double PassAtK(uint32_t n, uint32_t c, uint32_t k);

// What the aggregate counts of one judged completion: a few numbers, which a thread that scored
// the completion can hand on while it frees the result where it allocated it.
struct CountedResult {
  int verdict = v1::VERDICT_UNSPECIFIED;
  uint32_t num_tokens = 0;
  bool well_formed = false;
  bool repeated = false;  // a repetition detector fired
  bool truncated = false;
  double accuracy = 0.0;  // the accuracy component
};
CountedResult CountedOf(const v1::CompletionResult& result);

// Not thread-safe. Memory: 4 bytes per completion plus one entry per distinct prompt id.
class ScoreAggregator {
 public:
  // Counts one judged completion. Unscorable verdicts count in the rates and the length
  // percentiles but not in accuracy or pass@k. An empty prompt id is a prompt of its own.
  void Add(std::string_view prompt_id, const v1::CompletionResult& result) {
    Add(prompt_id, CountedOf(result));
  }
  void Add(std::string_view prompt_id, const CountedResult& result);

  // The aggregate so far, with pass@k for each k (sorted, duplicates dropped; empty means {1}).
  // Accuracy is the mean accuracy over scorable completions; the rates are over all of them;
  // lengths use the nearest-rank percentile. REQUIRES: every k >= 1.
  v1::ScoreAggregate Finish(std::span<const uint32_t> ks) const;

  uint64_t items() const { return items_; }

 private:
  uint64_t items_ = 0;
  uint64_t scorable_ = 0;
  uint64_t well_formed_ = 0;
  uint64_t repeated_ = 0;
  uint64_t truncated_ = 0;
  double accuracy_sum_ = 0.0;
  std::vector<uint64_t> verdicts_ = std::vector<uint64_t>(v1::Verdict_ARRAYSIZE, 0);
  std::vector<uint32_t> lengths_;
  // prompt id -> (scorable samples, correct samples).
  std::map<std::string, std::pair<uint32_t, uint32_t>, std::less<>> prompts_;
  uint64_t anonymous_prompts_ = 0;  // items without a prompt id: each a prompt with 1 sample
  uint64_t anonymous_correct_ = 0;
};

}  // namespace rlscore::engine
