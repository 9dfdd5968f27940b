// Where `rlscore score` sends its batches: the scorers in this process, or a running rlscore
// server over gRPC. Both answer with the ScoreResponse of the same request, so a file scored
// either way gives the same output.
//
//   absl::StatusOr<std::unique_ptr<BatchScorer>> scorer = NewLocalScorer(options);
//   v1::ScoreResponse response;
//   absl::Status status = (*scorer)->Score(request, &response);
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/config.h"
#include "rlscore/v1/scoring.pb.h"

namespace rlscore::cli {

// Thread-safe: `rlscore score` keeps Concurrency() calls of Score() going at once.
class BatchScorer {
 public:
  virtual ~BatchScorer() = default;
  // Errors are those of the Score RPC: INVALID_ARGUMENT or RESOURCE_EXHAUSTED naming the item
  // ("items[3]: ..."), NOT_FOUND for an unknown profile, UNAVAILABLE when a server cannot be
  // reached.
  virtual absl::Status Score(const v1::ScoreRequest& request, v1::ScoreResponse* response) = 0;
  // "in-process, 2 scoring threads" or "server 127.0.0.1:50051", for the summary.
  virtual std::string Describe() const = 0;
  // How many calls at once keep it busy: the scoring threads in process, each of which scores a
  // call alone; two for a server (one batch travels while the next is read).
  virtual unsigned Concurrency() const = 0;
  // True for the scorer in this process, which gets small calls (every thread busy to the end
  // of a file); a server gets calls of --batch-size rollouts, as its limits are per call.
  virtual bool InProcess() const = 0;
};

// Scores with `options`' profiles and limits, as a server started with the same options would;
// each call on its caller's thread, `options.scoring_threads` (0: one per core) of them at once.
absl::StatusOr<std::unique_ptr<BatchScorer>> NewLocalScorer(const engine::ServerOptions& options);

// Calls the Score RPC of the server at `address` (host:port or unix:/path), each call with
// `timeout`. Several replicas: addresses separated by commas (one channel each, calls round
// robin over those that are up, a failed call retried at once on another and the failed replica
// set aside for a cool-off), or a "dns:" name (gRPC's round_robin over its addresses). Retried:
// UNAVAILABLE, a busy server's retryable refusal, a connection broken under the call.
// UNAVAILABLE when no replica connects within min(timeout, 10 s).
absl::StatusOr<std::unique_ptr<BatchScorer>> NewRemoteScorer(const std::string& address,
                                                             absl::Duration timeout);

}  // namespace rlscore::cli
