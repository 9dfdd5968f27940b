// rlscore.v1.ScoringService on gRPC's callback API.
//
// Handlers admit a call, hand it to the engine (engine/scoring_engine.h, advantage/) on the call
// pool, and answer; every call is counted in engine::Metrics. MonitorGeneration streams are
// monitor_stream.h's. This header and server.cc are the only places that see gRPC's generated
// service code.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "advantage/advantage.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "engine/admission.h"
#include "engine/config.h"
#include "engine/metrics.h"
#include "engine/scoring_engine.h"
#include "engine/worker_pool.h"
#include "rlscore/v1/scoring_service.grpc.pb.h"

namespace rlscore::service {

// Every method takes its messages as bytes and parses them itself. gRPC's own parse answers a
// malformed unary request UNIMPLEMENTED with no message, and on a stream it reports a message that
// does not parse as the client's half-close, so MonitorGeneration would end OK as if nothing had
// fired; callers need INVALID_ARGUMENT saying which message did not parse and why. The unary
// methods parse on the call pool, so a call refused for load is never parsed at all.
using ScoringServiceBase = v1::ScoringService::WithRawCallbackMethod_ScoreGroups<
    v1::ScoringService::WithRawCallbackMethod_ComputeAdvantages<
        v1::ScoringService::WithRawCallbackMethod_Score<
            v1::ScoringService::WithRawCallbackMethod_GetRunHealth<
                v1::ScoringService::WithRawCallbackMethod_MonitorGeneration<
                    v1::ScoringService::Service>>>>>;

// Thread-safe: gRPC calls its handlers concurrently. `backend`, `metrics`, `clock` and `memory`
// (the admission budget, shared with the HTTP listener) must outlive it; `clock` decides whether a
// caller's deadline has passed.
class ScoringService final : public ScoringServiceBase {
 public:
  ScoringService(const engine::ServerOptions& options, advantage::Backend* backend,
                 engine::Metrics* metrics, const Clock* clock,
                 const scorers::AccuracyScorer* accuracy, engine::WorkerPool* pool,
                 engine::RunTelemetry* telemetry, engine::WorkerPool* calls,
                 engine::MemoryBudget* memory);

  grpc::ServerUnaryReactor* ScoreGroups(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ComputeAdvantages(grpc::CallbackServerContext* context,
                                              const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Score(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* MonitorGeneration(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetRunHealth(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;

  // Blocks until every call handed to the call pool has been answered (its work done and Finish
  // called). gRPC's Shutdown() does not wait for them (their handlers have returned), so the
  // server's drain must.
  void WaitForCalls();
  // Blocks until gRPC is done with every unary call's answer as well (written to its connection:
  // the reactor's OnDone), or until `deadline`; false if some were not by then. The drain waits
  // for this before gRPC's own shutdown, which closes a connection as soon as its last call ends.
  bool WaitForAnswers(absl::Time deadline);

  // From now on every new call is answered UNAVAILABLE ("shutting down; retry elsewhere") at
  // once, while calls already handed to the call pool go on. Calls gRPC had received but not yet
  // handed over get that clean refusal instead of the CANCELLED of a server shutdown.
  void StartDraining() { draining_ = true; }
  // Calls refused so far because the server is draining.
  uint64_t refused_while_draining() const { return refused_while_draining_; }

 private:
  absl::Status DoGetRunHealth(const v1::GetRunHealthRequest& request,
                              v1::GetRunHealthResponse* response) const;
  // Computes the advantages and writes the answer's wire bytes into `response`.
  absl::Status DoComputeAdvantages(const grpc::CallbackServerContext& context,
                                   const v1::ComputeAdvantagesRequest& request,
                                   grpc::ByteBuffer* response);
  // The scoring context for one call: it stops when the call's deadline passes or the client
  // cancels.
  engine::ScoringContext WithCall(grpc::CallbackServerContext* context) const;
  // Hands a unary call to the call pool and returns its reactor at once: gRPC's callback threads
  // only pass calls along, so a long batch never starves health checks or other calls. Before
  // that the call must get a place among max_concurrent_calls and the memory its handling will
  // hold (admission.h, request_cost.h); otherwise it is refused at once, retryably. `work` runs
  // on a pool thread; its status answers the call.
  grpc::ServerUnaryReactor* Offload(engine::Method method, grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer& request,
                                    std::function<absl::Status()> work);
  // A unary call's reactor, counted in answers_open_ until gRPC is done with it; one that
  // `holds_place` gives its place among max_concurrent_calls (calls_taken_) back then, and its
  // memory grant.
  grpc::ServerUnaryReactor* NewReactor(engine::Method method, bool holds_place,
                                       engine::MemoryBudget::Grant grant);
  // Answers a unary call with `status` and records it; a retryable refusal (admission.h) carries
  // the trailer engine::kRetryableTrailer naming its limit.
  grpc::ServerUnaryReactor* Finish(engine::Method method, grpc::CallbackServerContext* context,
                                   absl::Time start, const absl::Status& status);

  const engine::ServerOptions options_;
  engine::MemoryBudget& memory_;
  advantage::Backend* const backend_;
  engine::Metrics* const metrics_;
  const Clock* const clock_;
  const engine::ScoringContext scoring_;
  engine::WorkerPool* const calls_;
  Mutex calls_mu_;
  CondVar calls_done_;  // one of the counts below reached zero
  // Calls handed to the call pool and not yet answered.
  int calls_in_flight_ ABSL_GUARDED_BY(calls_mu_) = 0;
  // Calls taken (admitted within max_concurrent_calls) that gRPC is not yet done with, answer
  // written or call cancelled.
  int calls_taken_ ABSL_GUARDED_BY(calls_mu_) = 0;
  // Unary reactors not yet done.
  int answers_open_ ABSL_GUARDED_BY(calls_mu_) = 0;
  std::atomic<uint32_t> open_streams_ = 0;  // MonitorGeneration streams open now
  std::atomic<bool> draining_ = false;
  std::atomic<uint64_t> refused_while_draining_ = 0;
};

}  // namespace rlscore::service
