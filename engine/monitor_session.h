// One MonitorGeneration stream's logic without its transport: the first message names the
// profile and the budget, token or text deltas follow, and the session answers each with "go on"
// (nullopt) or the STOP verdict. service/monitor_stream.h drives it from gRPC.
//
//   MonitorSession session(options);
//   absl::StatusOr<std::optional<scorers::StopVerdict>> v = session.Handle(message);
//   if (!v.ok()) ... end the stream with v.status()
//   else if (v->has_value()) ... send STOP at (*v)->token_offset and end the stream
//
// Not thread-safe: one stream's messages arrive one at a time. `options` must outlive it.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "engine/config.h"
#include "rlscore/v1/monitor.pb.h"
#include "scorers/generation_monitor.h"

namespace rlscore::engine {

class MonitorSession {
 public:
  explicit MonitorSession(const ServerOptions& options) : options_(options) {}

  // INVALID_ARGUMENT for a stream out of order (a delta before start, start twice, an empty
  // message), NOT_FOUND for an unknown profile, RESOURCE_EXHAUSTED past max_completion_tokens or
  // max_completion_bytes. After a STOP the stream is over; further calls are not expected.
  absl::StatusOr<std::optional<scorers::StopVerdict>> Handle(
      const v1::MonitorGenerationRequest& request);

 private:
  const ServerOptions& options_;
  std::optional<scorers::GenerationMonitor> monitor_;
};

// The wire form of a stop reason.
v1::StopReason ToProto(scorers::StopReason reason);

}  // namespace rlscore::engine
