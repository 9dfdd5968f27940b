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
  const v1::ScoreGroupsRequest request = Batch();
  engine::Limits limits;
  engine::ProfileSet profiles = engine::DefaultProfiles(advantage::Options{});
  auto accuracy = scorers::math::NewAccuracyScorer();
  auto backend = advantage::NewCpuBackend();
  engine::WorkerPool pool(kThreads);
  const engine::ScoringContext context{.limits = &limits,
                                       .profiles = &profiles,
                                       .accuracy = accuracy.get(),
                                       .backend = backend.get(),
                                       .pool = &pool,
                                       .metrics = nullptr,
                                       .telemetry = nullptr,
                                       .clock = nullptr,
                                       .keep_going = nullptr};
  for (auto _ : state) {
    v1::ScoreGroupsResponse response;
    absl::Status status = engine::RunScoreGroups(context, request, &response);
    benchmark::DoNotOptimize(status);
  }
  state.SetItemsProcessed(state.iterations() * 256);
}
BENCHMARK(BM_ScoreGroupsInProcess)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rlscore

BENCHMARK_MAIN();
