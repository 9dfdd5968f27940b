// Test data for the scoring benchmarks: realistic reasoning text that does not repeat, and a
// ScoreGroups batch of it, scored in process. Shared by scoring_bench and grpc_overhead_bench.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>

#include "engine/config.h"
#include "engine/local_engine.h"
#include "rlscore/v1/scoring.pb.h"

namespace rlscore::bench {

// A derivation of about `tokens` tokens (4 bytes each) whose sentences do not repeat: words drawn
// from a vocabulary of math prose with numbers that change, ending in a boxed answer.
inline std::string RealisticCompletion(uint32_t tokens, uint64_t seed) {
  static const char* const kWords[] = {
      "we",    "compute", "the",      "sum",    "of",      "terms", "so",           "that",
      "each",  "factor",  "divides",  "modulo", "prime",   "hence", "therefore",    "let",
      "x",     "y",       "equation", "gives",  "solving", "for",   "substituting", "back",
      "check", "case",    "when",     "is",     "even",    "odd",   "then",         "square",
      "root",  "integer", "bound",    "at",     "most",    "least", "value",        "sequence"};
  std::mt19937_64 rng(seed);
  std::string text = "<think>";
  const size_t target = static_cast<size_t>(tokens) * 4;
  while (text.size() < target) {
    const int sentence = 6 + static_cast<int>(rng() % 10);
    for (int w = 0; w < sentence; ++w) {
      text += kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
      text += ' ';
      if (rng() % 5 == 0) text += std::to_string(rng() % 10000) + " ";
    }
    text += rng() % 3 == 0 ? "$x^2 + " + std::to_string(rng() % 100) + "$. " : ". ";
  }
  text += "</think> Therefore the answer is $\\boxed{" + std::to_string(seed % 100) + "}$.";
  return text;
}

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
