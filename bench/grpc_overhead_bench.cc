// What gRPC adds to a ScoreGroups call (docs/PERFORMANCE.md): the same batch of 256 realistic
// 3k-token completions scored in process and through a server on loopback.
//
//   ./build-release/bench/grpc_overhead_bench
//
// Prints Google Benchmark's table, then the overhead (goal: under 20 %).
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench/score_batch.h"
#include "engine/scoring_engine.h"
#include "rlscore/v1/scoring_service.grpc.pb.h"
#include "scorers/math/verifier.h"
#include "service/server.h"

namespace rlscore {
namespace {

using bench::Batch;

constexpr unsigned kThreads = 2;  // this machine's cores; the server uses the same pool size

void BM_ScoreGroupsInProcess(benchmark::State& state) {
  bench::ScoreGroupsInProcess(state, kThreads);
}
BENCHMARK(BM_ScoreGroupsInProcess)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_ScoreGroupsOverGrpc(benchmark::State& state) {
  const v1::ScoreGroupsRequest request = Batch();
  engine::ServerOptions options = engine::DefaultServerOptions();
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
