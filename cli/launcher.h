// The two binaries. `rlscore` scores in process and links no transport: no gRPC, HTTP or
// Prometheus library, so it starts in a few milliseconds where loading those 60-odd shared
// libraries took over 20 (docs/PERFORMANCE.md, "Evaluation CLI"). `rlscore-service`, installed
// beside it, is the whole program: every command, the transport included. `rlscore` hands the
// commands that need the transport (serve, health, score --server) over to it with execv, so the
// process keeps its id, arguments, environment, open files and signal mask: to a user, a script
// or a container runtime, `rlscore serve` behaves as before.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace rlscore::cli {

// The full binary beside the running one: the directory of /proc/self/exe + "/rlscore-service".
std::string ServiceBinaryPath();

// Replaces this process with ServiceBinaryPath() run with `argv` (argv[0] kept as given).
// Returns only when that fails: FAILED_PRECONDITION naming the path and the reason (missing, not
// executable).
absl::Status HandOverToService(char** argv);

}  // namespace rlscore::cli
