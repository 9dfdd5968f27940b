// Scoring cost (docs/PERFORMANCE.md): one realistic 3k-token completion, one 16k-token looping completion, and
// a ScoreGroups batch in process next to the same batch over gRPC on loopback.
//
//   ./build-bench/bench/scoring_bench
//
// Prints Google Benchmark's table, then the gRPC overhead ratio.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/score_one.h"
#include "rlscore/v1/scoring_service.grpc.pb.h"
#include "scorers/math/verifier.h"
#include "scorers/reward.h"
#include "service/scoring_engine.h"
#include "service/server.h"

namespace rlscore {
namespace {

// A derivation of about `tokens` tokens (4 bytes each) whose sentences do not repeat: words drawn
// from a vocabulary of math prose with numbers that change, ending in a boxed answer.
std::string RealisticCompletion(uint32_t tokens, uint64_t seed) {
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

// 32 groups of 8 realistic 3k-token completions: about 3 MB of text per call.
v1::ScoreGroupsRequest Batch() {
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

constexpr unsigned kThreads = 2;  // this machine's cores; the server uses the same pool size

void BM_ScoreGroupsInProcess(benchmark::State& state) {
  const v1::ScoreGroupsRequest request = Batch();
  service::Limits limits;
  service::ProfileSet profiles = service::DefaultProfiles(advantage::Options{});
  auto accuracy = scorers::math::NewAccuracyScorer();
  auto backend = advantage::NewCpuBackend();
  service::WorkerPool pool(kThreads);
  const service::ScoringContext context{.limits = &limits,
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
    absl::Status status = service::RunScoreGroups(context, request, &response);
    benchmark::DoNotOptimize(status);
  }
  state.SetItemsProcessed(state.iterations() * 256);
}
BENCHMARK(BM_ScoreGroupsInProcess)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_ScoreGroupsOverGrpc(benchmark::State& state) {
  const v1::ScoreGroupsRequest request = Batch();
  service::ServerOptions options = service::DefaultServerOptions();
  options.listen_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.scoring_threads = kThreads;
  auto server = service::Server::Start(options);
  if (!server.ok()) {
    state.SkipWithError("server did not start");
    return;
  }
  auto stub = v1::ScoringService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string((*server)->port()), grpc::InsecureChannelCredentials()));
  for (auto _ : state) {
    grpc::ClientContext context;
    v1::ScoreGroupsResponse response;
    grpc::Status status = stub->ScoreGroups(&context, request, &response);
    if (!status.ok()) state.SkipWithError(status.error_message().c_str());
  }
  state.SetItemsProcessed(state.iterations() * 256);
  (*server)->Shutdown(absl::ZeroDuration());
}
BENCHMARK(BM_ScoreGroupsOverGrpc)->UseRealTime()->Unit(benchmark::kMillisecond);

class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration) {
        seconds_[run.benchmark_name()] = run.GetAdjustedRealTime();
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double Get(const std::string& name) const {
    auto it = seconds_.find(name);
    return it == seconds_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace
}  // namespace rlscore

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  rlscore::Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  const double in_process = collector.Get("BM_ScoreGroupsInProcess/real_time");
  const double grpc = collector.Get("BM_ScoreGroupsOverGrpc/real_time");
  if (in_process > 0 && grpc > 0) {
    std::printf(
        "\nScoreGroups, 256 completions of 3k tokens: in process %.2f ms, over gRPC %.2f "
        "ms, overhead %.1f %% (goal < 20 %%)\n",
        in_process, grpc, 100.0 * (grpc - in_process) / in_process);
  }
  benchmark::Shutdown();
  return 0;
}
