#include "service/scoring_service.h"

#include <grpc/slice.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "common/tsan_handoff.h"
#include "engine/advantage_mapping.h"
#include "engine/protobuf_log.h"
#include "engine/request_cost.h"
#include "engine/run_health.h"
#include "scorers/generation_monitor.h"
#include "service/grpc_status.h"
#include "service/monitor_stream.h"
#include "service/wire.h"

namespace rlscore::service {
namespace {

v1::HealthLevel ToProto(engine::HealthLevel level) {
  switch (level) {
    case engine::HealthLevel::kOk:
      return v1::HEALTH_LEVEL_OK;
    case engine::HealthLevel::kWarn:
      return v1::HEALTH_LEVEL_WARN;
    case engine::HealthLevel::kCritical:
      return v1::HEALTH_LEVEL_CRITICAL;
  }
  return v1::HEALTH_LEVEL_UNSPECIFIED;
}

void FillRunHealth(const engine::RunHealthReport& report, v1::RunHealth* out) {
  out->set_run_id(report.run_id);
  out->set_level(ToProto(report.level));
  out->set_last_step(report.last_step);
  out->set_batches(report.batches);
  for (const engine::HealthSignal& s : report.signals) {
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
absl::Status CheckResponseSize(const google::protobuf::Message& response,
                               const engine::Limits& limits) {
  const size_t bytes = response.ByteSizeLong();
  if (bytes <= limits.max_message_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("the response would be ", bytes, " bytes, over the limit max_message_bytes = ",
                   limits.max_message_bytes, ": send fewer completions per request"));
}

// A unary request's bytes as a protobuf input stream that frees each slice once the parse has
// moved past it, so that the request's bytes and its parsed form are not both held whole.
// protobuf backs up only within the buffer Next() returned last.
class ReleasingSliceStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit ReleasingSliceStream(std::vector<grpc::Slice> slices) : slices_(std::move(slices)) {}

  bool Next(const void** data, int* size) override {
    if (backed_up_ > 0) {
      const grpc::Slice& s = slices_[next_ - 1];
      *data = s.begin() + (s.size() - backed_up_);
      *size = static_cast<int>(backed_up_);
      count_ += backed_up_;
      backed_up_ = 0;
      return true;
    }
    if (next_ > 0) slices_[next_ - 1] = grpc::Slice();  // the parse is past it
    while (next_ < slices_.size() && slices_[next_].size() == 0) ++next_;
    if (next_ == slices_.size()) return false;
    const grpc::Slice& s = slices_[next_++];
    *data = s.begin();
    *size = static_cast<int>(s.size());
    count_ += s.size();
    return true;
  }
  void BackUp(int count) override {
    backed_up_ = static_cast<size_t>(count);
    count_ -= backed_up_;
  }
  bool Skip(int count) override {
    const void* data;
    int size;
    while (count > 0) {
      if (!Next(&data, &size)) return false;
      if (size > count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return true;
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(count_); }

 private:
  std::vector<grpc::Slice> slices_;
  size_t next_ = 0;       // the slice Next() returns next
  size_t backed_up_ = 0;  // bytes at the end of slice next_ - 1 to return again
  size_t count_ = 0;
};

// Requests at least this large are given back to the system once parsed (malloc_trim costs a few
// milliseconds: a walk over malloc's free lists).
constexpr size_t kTrimAfterBytes = 16 << 20;

// Parses a unary call's request into `message`, freeing its bytes as the parse consumes them:
// gRPC would keep them until the call is done. INVALID_ARGUMENT as ParseWire.
template <typename Message>
absl::Status ParseRequest(const grpc::ByteBuffer* request, Message* message) {
  const size_t bytes = request->Length();
  std::vector<grpc::Slice> slices;
  if (!request->Dump(&slices).ok()) {
    return absl::InternalError("cannot read the request's bytes");
  }
  // Ours now: gRPC destroys the request after the call, and a cleared one holds nothing.
  const_cast<grpc::ByteBuffer*>(request)->Clear();
  bool parsed;
  engine::ProtobufLogCapture reason;
  {
    ReleasingSliceStream stream(std::move(slices));
    parsed = message->ParseFromZeroCopyStream(&stream);
  }
  // The transport read the request in small slices, which malloc keeps resident once freed:
  // a large request's bytes go back to the system before its answer is allocated.
  if (bytes >= kTrimAfterBytes) malloc_trim(0);
  if (parsed) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the request (", bytes, " bytes) is not a valid ", Message::descriptor()->full_name(), ": ",
      reason.text().empty() ? "the bytes are truncated, or not that message's protobuf encoding"
                            : reason.text()));
}

// Frees a refused call's request now (gRPC would keep it until the call is done), and gives a
// large one back to the system.
void DiscardRequest(const grpc::ByteBuffer& request) {
  const size_t bytes = request.Length();
  const_cast<grpc::ByteBuffer&>(request).Clear();
  if (bytes >= kTrimAfterBytes) malloc_trim(0);
}

// What handling `request` will hold at its peak (request_cost.h), read from its bytes.
uint64_t RequestPeakBytes(engine::Method method, const grpc::ByteBuffer& request) {
  std::vector<grpc::Slice> slices;
  if (!request.Dump(&slices).ok()) return 2 * request.Length();
  std::vector<std::string_view> pieces;
  pieces.reserve(slices.size());
  for (const grpc::Slice& s : slices) {
    pieces.emplace_back(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return engine::PeakBytes(method, pieces);
}

// Parses `in` as a `Request`, answers it with `handle`, and serialises the answer into `out`.
template <typename Request, typename Response, typename Handle>
absl::Status HandleRaw(const grpc::ByteBuffer* in, grpc::ByteBuffer* out, Handle&& handle) {
  Request request;
  RLSCORE_RETURN_IF_ERROR(ParseRequest(in, &request));
  Response response;
  RLSCORE_RETURN_IF_ERROR(handle(request, &response));
  return SerializeWire(response, out);
}

}  // namespace

ScoringService::ScoringService(const engine::ServerOptions& options, advantage::Backend* backend,
                               engine::Metrics* metrics, const Clock* clock,
                               const scorers::AccuracyScorer* accuracy, engine::WorkerPool* pool,
                               engine::RunTelemetry* telemetry, engine::WorkerPool* calls,
                               engine::MemoryBudget* memory)
    : options_(options),
      memory_(*memory),
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

engine::ScoringContext ScoringService::WithCall(grpc::CallbackServerContext* context) const {
  engine::ScoringContext scoring = scoring_;
  const Clock* clock = clock_;
  scoring.clock = clock;
  scoring.keep_going = [context, clock] {
    return CheckCallAlive(*context, *clock, "while completions were scored");
  };
  return scoring;
}

grpc::ServerUnaryReactor* ScoringService::Offload(engine::Method method,
                                                  grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer& request,
                                                  std::function<absl::Status()> work) {
  const absl::Time start = absl::Now();
  metrics_->CallStarted(method);
  if (draining_) {
    ++refused_while_draining_;
    DiscardRequest(request);
    return Finish(method, context, start, DrainingStatus());
  }
  const int limit = static_cast<int>(options_.limits.max_concurrent_calls);
  int taken = 0;
  {
    MutexLock lock(&calls_mu_);
    taken = calls_taken_;
    if (taken < limit) {
      ++calls_taken_;  // given back by the reactor's OnDone
      ++calls_in_flight_;
    }
  }
  if (taken >= limit) {
    // Refused before it is queued.
    DiscardRequest(request);
    return Finish(
        method, context, start,
        engine::MarkRetryable(absl::ResourceExhaustedError(absl::StrCat(
                                  taken, " calls are being handled, queued or sending their ",
                                  "answers, the limit max_concurrent_calls; retry later")),
                              "max_concurrent_calls"));
  }
  // Admitted by memory too before any work: charged its peak until its answer is written out.
  absl::StatusOr<engine::MemoryBudget::Grant> grant =
      memory_.Admit(RequestPeakBytes(method, request));
  if (!grant.ok()) {
    metrics_->RecordAdmissionRefusal(engine::RetryableLimit(grant.status()).has_value());
    {
      MutexLock lock(&calls_mu_);
      --calls_taken_;
      if (--calls_in_flight_ == 0) calls_done_.SignalAll();
    }
    DiscardRequest(request);
    return Finish(method, context, start, grant.status());
  }
  metrics_->SetMemoryInUse(memory_.in_use());
  grpc::ServerUnaryReactor* reactor = NewReactor(method, /*holds_place=*/true, *std::move(grant));
  calls_->Submit([this, method, start, reactor, work = std::move(work)] {
    absl::Status status;
    try {
      status = work();
    } catch (const std::bad_alloc&) {
      // One oversized call must not take the process (and every other call) down with it.
      status = absl::ResourceExhaustedError("out of memory while handling this call");
    }
    metrics_->CallFinished(method, status.code(), absl::Now() - start);
    reactor->Finish(ToGrpcStatus(status));
    MutexLock lock(&calls_mu_);
    if (--calls_in_flight_ == 0) calls_done_.SignalAll();
  });
  return reactor;
}

void ScoringService::WaitForCalls() {
  MutexLock lock(&calls_mu_);
  while (calls_in_flight_ != 0) calls_done_.Wait(&calls_mu_);
}

bool ScoringService::WaitForAnswers(absl::Time deadline) {
  MutexLock lock(&calls_mu_);
  while (calls_in_flight_ != 0 || answers_open_ != 0) {
    if (!calls_done_.WaitUntil(&calls_mu_, absl::ToChronoTime(deadline))) {
      return calls_in_flight_ == 0 && answers_open_ == 0;
    }
  }
  return true;
}

grpc::ServerUnaryReactor* ScoringService::NewReactor(engine::Method method, bool holds_place,
                                                     engine::MemoryBudget::Grant grant) {
  // gRPC calls OnDone once it is done with the call, its answer written or the call cancelled.
  class Reactor : public grpc::ServerUnaryReactor {
   public:
    Reactor(ScoringService* service, engine::Method method, bool holds_place,
            engine::MemoryBudget::Grant grant)
        : service_(service), method_(method), holds_place_(holds_place), grant_(std::move(grant)) {}
    // The client gave up or the deadline passed; the work sees it at its next check.
    void OnCancel() override { service_->metrics_->CallCancelled(method_); }
    void OnDone() override {
      const bool charged = grant_.bytes() != 0;
      grant_ = engine::MemoryBudget::Grant();  // the answer is written out: its memory is free
      if (charged) service_->metrics_->SetMemoryInUse(service_->memory_.in_use());
      {
        MutexLock lock(&service_->calls_mu_);
        if (holds_place_) --service_->calls_taken_;
        if (--service_->answers_open_ == 0) service_->calls_done_.SignalAll();
      }
      delete this;
    }

   private:
    ScoringService* const service_;
    const engine::Method method_;
    const bool holds_place_;
    engine::MemoryBudget::Grant grant_;
  };
  MutexLock lock(&calls_mu_);
  ++answers_open_;
  return new Reactor(this, method, holds_place, std::move(grant));
}

grpc::ServerUnaryReactor* ScoringService::Finish(engine::Method method,
                                                 grpc::CallbackServerContext* context,
                                                 absl::Time start, const absl::Status& status) {
  metrics_->CallFinished(method, status.code(), absl::Now() - start);
  if (const std::optional<std::string> limit = engine::RetryableLimit(status); limit.has_value()) {
    context->AddTrailingMetadata(std::string(engine::kRetryableTrailer), *limit);
  }
  grpc::ServerUnaryReactor* reactor =
      NewReactor(method, /*holds_place=*/false, engine::MemoryBudget::Grant());
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* ScoringService::ScoreGroups(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request,
                                                      grpc::ByteBuffer* response) {
  return Offload(
      engine::Method::kScoreGroups, context, *request, [this, context, request, response] {
        RLSCORE_RETURN_IF_ERROR(CheckCallAlive(*context, *clock_, "before ScoreGroups started"));
        return HandleRaw<v1::ScoreGroupsRequest, v1::ScoreGroupsResponse>(
            request, response, [&](const v1::ScoreGroupsRequest& in, v1::ScoreGroupsResponse* out) {
              RLSCORE_RETURN_IF_ERROR(engine::RunScoreGroups(WithCall(context), in, out));
              RLSCORE_RETURN_IF_ERROR(
                  CheckCallAlive(*context, *clock_, "while completions were scored"));
              return CheckResponseSize(*out, options_.limits);
            });
      });
}

grpc::ServerUnaryReactor* ScoringService::Score(grpc::CallbackServerContext* context,
                                                const grpc::ByteBuffer* request,
                                                grpc::ByteBuffer* response) {
  return Offload(engine::Method::kScore, context, *request, [this, context, request, response] {
    RLSCORE_RETURN_IF_ERROR(CheckCallAlive(*context, *clock_, "before Score started"));
    return HandleRaw<v1::ScoreRequest, v1::ScoreResponse>(
        request, response, [&](const v1::ScoreRequest& in, v1::ScoreResponse* out) {
          RLSCORE_RETURN_IF_ERROR(engine::RunScore(WithCall(context), in, out));
          RLSCORE_RETURN_IF_ERROR(
              CheckCallAlive(*context, *clock_, "while completions were scored"));
          return CheckResponseSize(*out, options_.limits);
        });
  });
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ScoringService::MonitorGeneration(
    grpc::CallbackServerContext*) {
  if (draining_) ++refused_while_draining_;
  return NewMonitorStream(options_, metrics_, &open_streams_, draining_);
}

grpc::ServerUnaryReactor* ScoringService::GetRunHealth(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  // Cheap (at most max-runs windows of a few hundred batches): answered on gRPC's thread.
  const absl::Time start = absl::Now();
  metrics_->CallStarted(engine::Method::kGetRunHealth);
  const absl::Status status = HandleRaw<v1::GetRunHealthRequest, v1::GetRunHealthResponse>(
      request, response, [&](const v1::GetRunHealthRequest& in, v1::GetRunHealthResponse* out) {
        return DoGetRunHealth(in, out);
      });
  return Finish(engine::Method::kGetRunHealth, context, start, status);
}

absl::Status ScoringService::DoGetRunHealth(const v1::GetRunHealthRequest& request,
                                            v1::GetRunHealthResponse* response) const {
  const engine::RunTelemetry& telemetry = *scoring_.telemetry;
  std::vector<std::string> runs;
  if (request.run_id().empty()) {
    runs = telemetry.Runs();
  } else {
    if (telemetry.Window(request.run_id()).empty()) {
      return absl::NotFoundError(absl::StrCat(
          "run_id \"", Clip(request.run_id()),
          "\" is not tracked: no ScoreGroups call carried it, or it ", "was evicted (",
          telemetry.Runs().size(), " runs are tracked; the least recently ", "recorded go first)"));
    }
    runs.push_back(request.run_id());
  }
  for (const std::string& run : runs) {
    const std::vector<engine::BatchTelemetry> window = telemetry.Window(run);
    FillRunHealth(engine::EvaluateRunHealth(run, window, options_.run_health),
                  response->add_runs());
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ScoringService::ComputeAdvantages(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  return Offload(engine::Method::kComputeAdvantages, context, *request,
                 [this, context, request, response] {
                   RLSCORE_RETURN_IF_ERROR(
                       CheckCallAlive(*context, *clock_, "before ComputeAdvantages started"));
                   v1::ComputeAdvantagesRequest parsed;
                   RLSCORE_RETURN_IF_ERROR(ParseRequest(request, &parsed));
                   return DoComputeAdvantages(*context, parsed, response);
                 });
}

absl::Status ScoringService::DoComputeAdvantages(const grpc::CallbackServerContext& context,
                                                 const v1::ComputeAdvantagesRequest& request,
                                                 grpc::ByteBuffer* response) {
  engine::AdvantageCall call;
  RLSCORE_RETURN_IF_ERROR(
      engine::MapComputeAdvantagesRequest(request, options_.limits, options_.advantage, &call));

  // The answer is written in its wire form, into the slice gRPC sends (advantage_mapping.h).
  std::vector<advantage::GroupStats> groups(call.batch.group_sizes.size());
  engine::AdvantagesAnswer answer(call.batch.rewards.size(), groups.size());
  grpc::Slice storage(grpc_slice_malloc(answer.capacity()), grpc::Slice::STEAL_REF);
  const std::span<double> advantages =
      answer.Start(reinterpret_cast<char*>(const_cast<uint8_t*>(storage.begin())));
  advantage::BatchSummary summary;
  const absl::StatusOr<std::string_view> served =
      backend_->Compute(call.batch, call.options, advantages, groups, &summary);
  if (!served.ok()) return served.status();
  RLSCORE_RETURN_IF_ERROR(CheckCallAlive(context, *clock_, "while advantages were computed"));

  const std::string_view wire = answer.Finish(groups, summary, *served);
  if (wire.size() > options_.limits.max_message_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the response would be ", wire.size(), " bytes, over the limit max_message_bytes = ",
        options_.limits.max_message_bytes, ": send fewer rewards per request"));
  }
  const size_t offset =
      static_cast<size_t>(wire.data() - reinterpret_cast<const char*>(storage.begin()));
  grpc::Slice sent = storage.sub(offset, offset + wire.size());
  *response = grpc::ByteBuffer(&sent, 1);
  metrics_->RecordAdvantageBatch(summary);
  metrics_->RecordAdvantageBackend(*served);
  return absl::OkStatus();
}

}  // namespace rlscore::service
