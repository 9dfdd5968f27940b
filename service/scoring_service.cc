#include "service/scoring_service.h"

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "service/advantage_mapping.h"
#include "service/grpc_status.h"
#include "service/run_health.h"

namespace rlscore::service {
namespace {

// What each RPC still waits for; the message a caller reads in the UNIMPLEMENTED answer.
constexpr char kMonitorMissing[] =
    "rlscore.v1.ScoringService/MonitorGeneration is not implemented yet: it needs the incremental "
    "n-gram repetition rule and the token budget of the early-stop stream";

v1::HealthLevel ToProto(HealthLevel level) {
  switch (level) {
    case HealthLevel::kOk:
      return v1::HEALTH_LEVEL_OK;
    case HealthLevel::kWarn:
      return v1::HEALTH_LEVEL_WARN;
    case HealthLevel::kCritical:
      return v1::HEALTH_LEVEL_CRITICAL;
  }
  return v1::HEALTH_LEVEL_UNSPECIFIED;
}

void FillRunHealth(const RunHealthReport& report, v1::RunHealth* out) {
  out->set_run_id(report.run_id);
  out->set_level(ToProto(report.level));
  out->set_last_step(report.last_step);
  out->set_batches(report.batches);
  for (const HealthSignal& s : report.signals) {
    v1::RunSignal* signal = out->add_signals();
    signal->set_name(s.name);
    signal->set_value(s.value);
    signal->set_baseline(s.baseline);
    signal->set_warn_threshold(s.warn);
    signal->set_critical_threshold(s.critical);
    signal->set_level(ToProto(s.level));
    signal->set_reason(s.reason);
  }
  for (const std::string& reason : report.reasons) out->add_reasons(reason);
}

// DEADLINE_EXCEEDED if the caller's deadline has passed by `clock`, CANCELLED if the caller gave
// up.
absl::Status CheckCallAlive(const grpc::CallbackServerContext& context, const Clock& clock,
                            std::string_view stage) {
  if (clock.Now() >= absl::FromChrono(context.deadline())) {
    return absl::DeadlineExceededError(absl::StrCat("deadline passed ", Sv(stage)));
  }
  // IsCancelled() is not const in gRPC 1.51 although it only reads.
  if (const_cast<grpc::CallbackServerContext&>(context).IsCancelled()) {
    return absl::CancelledError(absl::StrCat("the client cancelled the call ", Sv(stage)));
  }
  return absl::OkStatus();
}

// RESOURCE_EXHAUSTED naming the limit when the answer is larger than gRPC may send (gRPC would
// refuse it with a message naming no rlscore limit, after the call was counted OK).
absl::Status CheckResponseSize(const google::protobuf::Message& response, const Limits& limits) {
  const size_t bytes = response.ByteSizeLong();
  if (bytes <= limits.max_message_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("the response would be ", bytes, " bytes, over the limit max_message_bytes = ",
                   limits.max_message_bytes, ": send fewer completions per request"));
}

// A bidirectional stream that answers UNIMPLEMENTED at once.
class UnimplementedStream final
    : public grpc::ServerBidiReactor<v1::MonitorGenerationRequest, v1::MonitorGenerationResponse> {
 public:
  explicit UnimplementedStream(Metrics* metrics) : metrics_(metrics), start_(absl::Now()) {
    metrics_->CallStarted(Method::kMonitorGeneration);
    Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, kMonitorMissing));
  }
  void OnDone() override {
    metrics_->CallFinished(Method::kMonitorGeneration, absl::StatusCode::kUnimplemented,
                           absl::Now() - start_);
    delete this;
  }

 private:
  Metrics* const metrics_;
  const absl::Time start_;
};

}  // namespace

ScoringService::ScoringService(const ServerOptions& options, advantage::Backend* backend,
                               Metrics* metrics, const Clock* clock,
                               const scorers::AccuracyScorer* accuracy, WorkerPool* pool,
                               RunTelemetry* telemetry, WorkerPool* calls)
    : options_(options),
      backend_(backend),
      metrics_(metrics),
      clock_(clock),
      scoring_{.limits = &options_.limits,
               .profiles = &options_.profiles,
               .accuracy = accuracy,
               .backend = backend,
               .pool = pool,
               .metrics = metrics,
               .telemetry = telemetry,
               .health = &options_.run_health,
               .keep_going = nullptr},
      calls_(calls) {}

ScoringContext ScoringService::WithCall(grpc::CallbackServerContext* context) const {
  ScoringContext scoring = scoring_;
  const Clock* clock = clock_;
  scoring.clock = clock;
  scoring.keep_going = [context, clock] {
    return CheckCallAlive(*context, *clock, "while completions were scored");
  };
  return scoring;
}

grpc::ServerUnaryReactor* ScoringService::Offload(grpc::CallbackServerContext* context,
                                                  Method method,
                                                  std::function<absl::Status()> work) {
  const absl::Time start = absl::Now();
  metrics_->CallStarted(method);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    ++calls_in_flight_;
  }
  calls_->Submit([this, method, start, reactor, work = std::move(work)] {
    const absl::Status status = work();
    metrics_->CallFinished(method, status.code(), absl::Now() - start);
    reactor->Finish(ToGrpcStatus(status));
    std::lock_guard<std::mutex> lock(calls_mu_);
    if (--calls_in_flight_ == 0) calls_done_.notify_all();
  });
  return reactor;
}

void ScoringService::WaitForCalls() {
  std::unique_lock<std::mutex> lock(calls_mu_);
  calls_done_.wait(lock, [this] { return calls_in_flight_ == 0; });
}

grpc::ServerUnaryReactor* ScoringService::Finish(grpc::CallbackServerContext* context,
                                                 Method method, absl::Time start,
                                                 const absl::Status& status) {
  metrics_->CallFinished(method, status.code(), absl::Now() - start);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* ScoringService::ScoreGroups(grpc::CallbackServerContext* context,
                                                      const v1::ScoreGroupsRequest* request,
                                                      v1::ScoreGroupsResponse* response) {
  return Offload(context, Method::kScoreGroups, [this, context, request, response] {
    absl::Status status = CheckCallAlive(*context, *clock_, "before ScoreGroups started");
    if (status.ok()) status = RunScoreGroups(WithCall(context), *request, response);
    if (status.ok()) status = CheckCallAlive(*context, *clock_, "while completions were scored");
    if (status.ok()) status = CheckResponseSize(*response, options_.limits);
    if (!status.ok()) response->Clear();
    return status;
  });
}

grpc::ServerUnaryReactor* ScoringService::Score(grpc::CallbackServerContext* context,
                                                const v1::ScoreRequest* request,
                                                v1::ScoreResponse* response) {
  return Offload(context, Method::kScore, [this, context, request, response] {
    absl::Status status = CheckCallAlive(*context, *clock_, "before Score started");
    if (status.ok()) status = RunScore(WithCall(context), *request, response);
    if (status.ok()) status = CheckCallAlive(*context, *clock_, "while completions were scored");
    if (status.ok()) status = CheckResponseSize(*response, options_.limits);
    if (!status.ok()) response->Clear();
    return status;
  });
}

grpc::ServerBidiReactor<v1::MonitorGenerationRequest, v1::MonitorGenerationResponse>*
ScoringService::MonitorGeneration(grpc::CallbackServerContext*) {
  return new UnimplementedStream(metrics_);
}

grpc::ServerUnaryReactor* ScoringService::GetRunHealth(grpc::CallbackServerContext* context,
                                                       const v1::GetRunHealthRequest* request,
                                                       v1::GetRunHealthResponse* response) {
  // Cheap (at most max-runs windows of a few hundred batches): answered on gRPC's thread.
  const absl::Time start = absl::Now();
  metrics_->CallStarted(Method::kGetRunHealth);
  absl::Status status = DoGetRunHealth(*request, response);
  if (!status.ok()) response->Clear();
  return Finish(context, Method::kGetRunHealth, start, status);
}

absl::Status ScoringService::DoGetRunHealth(const v1::GetRunHealthRequest& request,
                                            v1::GetRunHealthResponse* response) const {
  const RunTelemetry& telemetry = *scoring_.telemetry;
  std::vector<std::string> runs;
  if (request.run_id().empty()) {
    runs = telemetry.Runs();
  } else {
    if (telemetry.Window(request.run_id()).empty()) {
      return absl::NotFoundError(absl::StrCat(
          "run_id \"", request.run_id(),
          "\" is not tracked: no ScoreGroups call carried it, or it ", "was evicted (",
          telemetry.Runs().size(), " runs are tracked; the least recently ", "recorded go first)"));
    }
    runs.push_back(request.run_id());
  }
  for (const std::string& run : runs) {
    const std::vector<BatchTelemetry> window = telemetry.Window(run);
    FillRunHealth(EvaluateRunHealth(run, window, options_.run_health), response->add_runs());
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ScoringService::ComputeAdvantages(
    grpc::CallbackServerContext* context, const v1::ComputeAdvantagesRequest* request,
    v1::ComputeAdvantagesResponse* response) {
  return Offload(context, Method::kComputeAdvantages, [this, context, request, response] {
    absl::Status status = DoComputeAdvantages(*context, *request, response);
    if (!status.ok()) response->Clear();
    return status;
  });
}

absl::Status ScoringService::DoComputeAdvantages(const grpc::CallbackServerContext& context,
                                                 const v1::ComputeAdvantagesRequest& request,
                                                 v1::ComputeAdvantagesResponse* response) {
  RLSCORE_RETURN_IF_ERROR(CheckCallAlive(context, *clock_, "before ComputeAdvantages started"));
  AdvantageCall call;
  RLSCORE_RETURN_IF_ERROR(
      MapComputeAdvantagesRequest(request, options_.limits, options_.advantage, &call));

  std::vector<advantage::GroupStats> groups(call.batch.group_sizes.size());
  advantage::BatchSummary summary;
  const absl::StatusOr<std::string_view> served = backend_->Compute(
      call.batch, call.options,
      PrepareAdvantages(call.batch.rewards.size(), response->mutable_advantages()), groups,
      &summary);
  if (!served.ok()) return served.status();
  RLSCORE_RETURN_IF_ERROR(CheckCallAlive(context, *clock_, "while advantages were computed"));

  FillGroupStatistics(groups, response->mutable_groups());
  FillBatchSummary(summary, response->mutable_summary());
  response->set_backend(std::string(*served));
  metrics_->RecordAdvantageBatch(summary);
  metrics_->RecordAdvantageBackend(*served);
  return absl::OkStatus();
}

}  // namespace rlscore::service
