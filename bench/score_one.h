// Scores one completion per benchmark iteration, as a trainer's reward call would: the default
// math accuracy scorer against the reference "42", through scorers::ScoreGroup. Shared by
// scoring_bench and ast_bench.
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "scorers/math/verifier.h"
#include "scorers/reward.h"

namespace rlscore::bench {

// Times ScoreGroup on `text` under `profile`; returns the last score for the caller to check.
inline scorers::CompletionScore ScoreOneEachIteration(benchmark::State& state,
                                                      const std::string& text, uint32_t tokens,
                                                      bool finished,
                                                      const scorers::Profile& profile) {
  const std::vector<std::string> references = {"42"};
  auto accuracy = scorers::math::NewAccuracyScorer();
  auto judge = accuracy->Prepare(scorers::Task::kMath, references);
  scorers::CompletionInput input;
  input.text = text;
  input.num_tokens = tokens;
  input.finished = finished;
  std::vector<scorers::CompletionScore> scores;
  for (auto _ : state) {
    absl::Status status =
        scorers::ScoreGroup({&input, 1}, scorers::Task::kMath, judge.get(), profile, &scores);
    benchmark::DoNotOptimize(status);
    benchmark::DoNotOptimize(scores.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  return scores.empty() ? scorers::CompletionScore{} : scores[0];
}

}  // namespace rlscore::bench
