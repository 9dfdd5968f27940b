// `rlscore serve`: runs the server until SIGTERM or SIGINT, then drains and exits 0.
#pragma once

#include <span>
#include <string>

namespace rlscore::cli {

// REQUIRES: SIGTERM and SIGINT are blocked in every thread (main() blocks them before any library
// starts a thread); a dedicated thread waits for them. Returns the process exit code.
int RunServe(std::span<const std::string> args);

}  // namespace rlscore::cli
