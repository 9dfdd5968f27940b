// Scoring cost of one completion (docs/PERFORMANCE.md): a realistic 3k-token completion and a
// 16k-token looping one, through the engine alone, and a ScoreGroups batch in process. Links the
// engine without any transport.
//
//   ./build-release/bench/scoring_bench
#include <benchmark/benchmark.h>

#include <string>

#include "bench/score_batch.h"
#include "bench/score_one.h"
#include "engine/scoring_engine.h"
#include "scorers/math/verifier.h"
#include "scorers/reward.h"

namespace rlscore {
namespace {

using bench::Batch;
using bench::RealisticCompletion;

std::string LoopingCompletion(uint32_t tokens) {
  std::string text = "<think>Let me think about the problem. ";
  while (text.size() < static_cast<size_t>(tokens) * 4) {
    text += "Wait, let me double check the previous step... but wait, consider another case. ";
  }
  return text;
}

void ScoreOne(benchmark::State& state, const std::string& text, uint32_t tokens, bool finished) {
  bench::ScoreOneEachIteration(state, text, tokens, finished, scorers::Profile{});
  state.SetItemsProcessed(state.iterations());
}

void BM_ScoreRealistic3k(benchmark::State& state) {
  ScoreOne(state, RealisticCompletion(3000, 42), 3000, true);
}
BENCHMARK(BM_ScoreRealistic3k);

void BM_ScoreLooping16k(benchmark::State& state) {
  ScoreOne(state, LoopingCompletion(16384), 16384, false);
}
BENCHMARK(BM_ScoreLooping16k);

constexpr unsigned kThreads = 2;  // this machine's cores; the server uses the same pool size

void BM_ScoreGroupsInProcess(benchmark::State& state) {
  bench::ScoreGroupsInProcess(state, kThreads);
}
BENCHMARK(BM_ScoreGroupsInProcess)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rlscore

BENCHMARK_MAIN();
