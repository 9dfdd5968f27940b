// `rlscore health`: asks a server's grpc.health.v1 service whether it is SERVING, for container
// health checks and Kubernetes test hooks (the image carries no other gRPC client).
//
//   rlscore health --address=127.0.0.1:8081            # exit 0 when SERVING
//   rlscore health --address=unix:/run/rlscore/rlscore.sock --service=rlscore.gpu
#pragma once

#include <span>
#include <string>

namespace rlscore::cli {

// Exit status: 0 SERVING, 1 anything else (NOT_SERVING, unknown service, no answer within the
// timeout: the reason goes to stderr), 2 for a usage error.
int RunHealthCommand(std::span<const std::string> args);

}  // namespace rlscore::cli
