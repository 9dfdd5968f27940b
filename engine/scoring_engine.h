// ScoreGroups and Score without gRPC: request in, response out, on the worker pool. The handlers
// in scoring_service.cc only add deadlines, metrics and the gRPC status.
//
// Thread-safe: any number of calls may run at once on one context, as the server's handlers do;
// the collaborators it borrows (profiles, scorer, backend, pool, metrics, telemetry) are each
// thread-safe, and a call writes only its own response.
//
//   ScoringContext context{&limits, &profiles, accuracy.get(), backend.get(), &pool, &metrics};
//   absl::Status s = RunScoreGroups(context, request, &response);
#pragma once

#include <functional>

#include "absl/status/status.h"
#include "advantage/advantage.h"
#include "common/clock.h"
#include "engine/config.h"
#include "engine/metrics.h"
#include "engine/profiles.h"
#include "engine/run_telemetry.h"
#include "engine/score_aggregate.h"
#include "engine/worker_pool.h"
#include "rlscore/v1/scoring.pb.h"
#include "scorers/accuracy.h"

namespace rlscore::engine {

// Borrowed collaborators; all must outlive the calls. `metrics` and `telemetry` may be null.
struct ScoringContext {
  const Limits* limits;
  const ProfileSet* profiles;
  const scorers::AccuracyScorer* accuracy;
  advantage::Backend* backend;
  WorkerPool* pool;
  Metrics* metrics;
  RunTelemetry* telemetry = nullptr;
  // Thresholds for the run-health gauges updated after each recorded batch; null skips them.
  const HealthThresholds* health = nullptr;
  // Times the AST detector's parses for rlscore_ast_parse_seconds; null leaves them untimed.
  const Clock* clock = nullptr;
  // Asked before each group is scored; a non-OK answer (DEADLINE_EXCEEDED, CANCELLED) stops the
  // remaining work and becomes the call's status. Unset means never stop. Thread-safe.
  std::function<absl::Status()> keep_going;
};

// Scores every completion of every group (groups in parallel; the result does not depend on the
// thread count), then computes group advantages with the profile's estimator, overridden by the
// request's options. A request with a run_id is recorded in `telemetry` at its step. Errors name
// the group and completion: RESOURCE_EXHAUSTED for a limit, INVALID_ARGUMENT for bad input,
// NOT_FOUND for an unknown profile.
absl::Status RunScoreGroups(const ScoringContext& context, const v1::ScoreGroupsRequest& request,
                            v1::ScoreGroupsResponse* response);

// Scores every item on its own and aggregates: accuracy, format, repetition and truncation
// rates, length percentiles, verdict counts and unbiased pass@k (Chen et al. 2021) over items
// that share a prompt_id.
absl::Status RunScore(const ScoringContext& context, const v1::ScoreRequest& request,
                      v1::ScoreResponse* response);

}  // namespace rlscore::engine
