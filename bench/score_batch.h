// Test data for the scoring benchmarks: a ScoreGroups batch of realistic reasoning text
// (bench/realistic_text.h), scored in process. Shared by scoring_bench and grpc_overhead_bench.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "bench/realistic_text.h"
#include "engine/config.h"
#include "engine/local_engine.h"
#include "rlscore/v1/scoring.pb.h"

namespace rlscore::bench {

// 32 groups of 8 realistic 3k-token completions: about 3 MB of text per call.
inline v1::ScoreGroupsRequest Batch() {
  v1::ScoreGroupsRequest request;
  for (int g = 0; g < 32; ++g) {
    v1::Group* group = request.add_groups();
    group->add_references(std::to_string(g % 100));
    for (int i = 0; i < 8; ++i) {
      v1::Completion* c = group->add_completions();
      c->set_text(RealisticCompletion(3000, static_cast<uint64_t>(g * 8 + i)));
      c->set_num_tokens(3000);
    }
  }
  return request;
}

// Times RunScoreGroups on Batch() in process, on `threads` scoring threads.
inline void ScoreGroupsInProcess(benchmark::State& state, unsigned threads) {
  const v1::ScoreGroupsRequest request = Batch();
  engine::ServerOptions options = engine::DefaultServerOptions();
  options.scoring_threads = threads;
  const engine::LocalEngine engine(std::move(options));
  for (auto _ : state) {
    v1::ScoreGroupsResponse response;
    absl::Status status = engine::RunScoreGroups(engine.context(), request, &response);
    benchmark::DoNotOptimize(status);
  }
  state.SetItemsProcessed(state.iterations() * 256);
}

}  // namespace rlscore::bench
