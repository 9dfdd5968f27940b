// A grpc.health.v1 Check from C++. Debian ships no generated health stubs, so the two messages
// are encoded here; `rlscore health` and the server tests both call this.
//
//   std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(address, credentials);
//   absl::StatusOr<HealthState> state = CheckHealth(channel, "", absl::Seconds(5));
//   if (state.ok() && *state == HealthState::kServing) ...
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace grpc {
class Channel;
}

namespace rlscore::service {

// HealthCheckResponse.ServingStatus.
enum class HealthState { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

// "SERVING", "NOT_SERVING", ...
std::string_view HealthStateName(HealthState state);

// Asks the server behind `channel` about `service` ("" is the whole server), waiting up to
// `timeout` for it to be reachable. Errors: the call's status (NOT_FOUND for a service the server
// does not know, DEADLINE_EXCEEDED when nothing answered), or INTERNAL for a reply that is not a
// HealthCheckResponse.
absl::StatusOr<HealthState> CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                        std::string_view service, absl::Duration timeout);

}  // namespace rlscore::service
