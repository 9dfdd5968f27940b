// Per-token cost of MonitorGeneration's incremental rule (scorers/generation_monitor.h): a
// 16,384-token generation pushed in deltas as an engine streams it, as token ids and as text.
// Results in docs/PERFORMANCE.md ("Early stop").
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "scorers/generation_monitor.h"

namespace rlscore::scorers {
namespace {

constexpr size_t kTokens = 16384;

void BM_MonitorTokenIds(benchmark::State& state) {
  const size_t delta = static_cast<size_t>(state.range(0));
  std::mt19937_64 rng(1);
  std::vector<uint32_t> ids(kTokens);
  for (uint32_t& id : ids) id = static_cast<uint32_t>(rng() % 150000);  // no loop: every token
  MonitorOptions options;
  options.max_tokens = 0;
  for (auto _ : state) {
    GenerationMonitor monitor(options);
    for (size_t at = 0; at < ids.size(); at += delta) {
      auto v = monitor.PushTokens(std::span<const uint32_t>(ids).subspan(at, delta));
      benchmark::DoNotOptimize(v);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kTokens));  // tokens/s
}
BENCHMARK(BM_MonitorTokenIds)->Arg(1)->Arg(16);

void BM_MonitorText(benchmark::State& state) {
  const size_t delta = static_cast<size_t>(state.range(0));
  std::mt19937_64 rng(2);
  const char* const words[] = {"the", "sum", "of", "its", "digits", "is", "odd", "so", "n",
                               "must", "be", "even", "check", "x", "=", "7", "then", "prime"};
  std::string text = "<think>";
  while (text.size() < 4 * kTokens) {  // about 16,384 tokens at four bytes a token
    text += words[rng() % 18];
    text += rng() % 11 == 0 ? ". " : " ";
  }
  MonitorOptions options;
  options.max_tokens = 0;
  for (auto _ : state) {
    GenerationMonitor monitor(options);
    for (size_t at = 0; at < text.size(); at += delta) {
      auto v = monitor.PushText(std::string_view(text).substr(at, delta));
      benchmark::DoNotOptimize(v);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  // Tokens at four bytes a token, as the monitor estimates them.
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * text.size() / 4));
}
BENCHMARK(BM_MonitorText)->Arg(4)->Arg(64);

}  // namespace
}  // namespace rlscore::scorers

BENCHMARK_MAIN();
