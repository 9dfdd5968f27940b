// The request mapping from protobuf, end to end below gRPC: the first byte picks ScoreGroups,
// Score or ComputeAdvantages, the rest is parsed as that request's wire bytes and run through the
// same code as the handlers (engine/scoring_engine.h, advantage_mapping.h) with small limits.
// Every request is either refused with a typed error or answered with one finite reward and
// advantage per completion. Wire bytes that are not the message are dropped as the server drops
// them, with protobuf's reason kept (engine/protobuf_log.h), not logged.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "advantage/advantage.h"
#include "engine/advantage_mapping.h"
#include "engine/protobuf_log.h"
#include "engine/scoring_engine.h"
#include "fuzz/fuzz_input.h"
#include "scorers/math/verifier.h"

namespace rlscore::fuzz {
namespace {

bool AllFinite(const google::protobuf::RepeatedField<double>& values) {
  for (const double v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

bool ExpectedError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kResourceExhausted ||
         status.code() == absl::StatusCode::kNotFound;
}

// One engine for the whole run, like one server for many calls.
struct Engine {
  Engine() : pool(1) {
    limits.max_message_bytes = 1 << 20;
    limits.max_groups_per_request = 64;
    limits.max_group_size = 64;
    limits.max_completion_bytes = 16 << 10;
    limits.max_completions_per_request = 256;
  }
  engine::ScoringContext context() {
    return {.limits = &limits,
            .profiles = &profiles,
            .accuracy = accuracy.get(),
            .backend = backend.get(),
            .pool = &pool,
            .metrics = nullptr,
            .telemetry = &telemetry,
            .keep_going = nullptr};
  }
  engine::Limits limits;
  engine::ProfileSet profiles = engine::DefaultProfiles(advantage::Options{});
  std::unique_ptr<scorers::AccuracyScorer> accuracy = scorers::math::NewAccuracyScorer();
  std::unique_ptr<advantage::Backend> backend = advantage::NewCpuBackend();
  engine::WorkerPool pool;
  engine::RunTelemetry telemetry{4, 8};
};

Engine& TheEngine() {
  static Engine* engine = new Engine();  // never destroyed: the pool's thread outlives main
  return *engine;
}

template <typename Message>
bool Parse(std::string_view bytes, Message* message) {
  engine::ProtobufLogCapture capture;
  return message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

void ScoreGroups(std::string_view bytes) {
  v1::ScoreGroupsRequest request;
  if (!Parse(bytes, &request)) return;
  v1::ScoreGroupsResponse response;
  const absl::Status status = engine::RunScoreGroups(TheEngine().context(), request, &response);
  if (!status.ok()) {
    RLSCORE_FUZZ_CHECK(ExpectedError(status) && !status.message().empty());
    return;
  }
  int completions = 0;
  for (const v1::Group& group : request.groups()) completions += group.completions_size();
  RLSCORE_FUZZ_CHECK(response.rewards_size() == completions);
  RLSCORE_FUZZ_CHECK(response.advantages_size() == completions);
  RLSCORE_FUZZ_CHECK(response.results_size() == completions);
  RLSCORE_FUZZ_CHECK(AllFinite(response.rewards()) && AllFinite(response.advantages()));
}

void Score(std::string_view bytes) {
  v1::ScoreRequest request;
  if (!Parse(bytes, &request)) return;
  v1::ScoreResponse response;
  const absl::Status status = engine::RunScore(TheEngine().context(), request, &response);
  if (!status.ok()) {
    RLSCORE_FUZZ_CHECK(ExpectedError(status) && !status.message().empty());
    return;
  }
  RLSCORE_FUZZ_CHECK(response.rewards_size() == request.items_size());
  RLSCORE_FUZZ_CHECK(AllFinite(response.rewards()));
}

void ComputeAdvantages(std::string_view bytes) {
  v1::ComputeAdvantagesRequest request;
  if (!Parse(bytes, &request)) return;
  engine::AdvantageCall call;
  const absl::Status mapped =
      engine::MapComputeAdvantagesRequest(request, TheEngine().limits, advantage::Options{}, &call);
  if (!mapped.ok()) {
    RLSCORE_FUZZ_CHECK(ExpectedError(mapped) && !mapped.message().empty());
    return;
  }
  v1::ComputeAdvantagesResponse response;
  std::vector<advantage::GroupStats> groups(call.batch.group_sizes.size());
  advantage::BatchSummary summary;
  const absl::StatusOr<std::string_view> served = TheEngine().backend->Compute(
      call.batch, call.options,
      engine::PrepareAdvantages(call.batch.rewards.size(), response.mutable_advantages()), groups,
      &summary);
  if (!served.ok()) {
    RLSCORE_FUZZ_CHECK(ExpectedError(served.status()) && !served.status().message().empty());
    return;
  }
  RLSCORE_FUZZ_CHECK(AllFinite(response.advantages()));
}

}  // namespace
}  // namespace rlscore::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlscore::fuzz::FuzzInput in(data, size);
  const uint8_t which = in.Byte() % 3;
  const std::string_view bytes = in.Rest();
  if (which == 0) rlscore::fuzz::ScoreGroups(bytes);
  if (which == 1) rlscore::fuzz::Score(bytes);
  if (which == 2) rlscore::fuzz::ComputeAdvantages(bytes);
  return 0;
}
