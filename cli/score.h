// `rlscore score`: scores a JSONL file of rollouts (cli/rollouts.h) in this process or on a
// running server, writes one JSON result per line, and prints a summary; optionally an HTML
// report. See `rlscore score --help`.
#pragma once

#include <span>
#include <string>

namespace rlscore::cli {

// Returns the process exit status: 0 when every line was scored or skipped as asked, 1 when
// scoring stopped (an error that is not one line's, or a bad line with --on-error=fail), 2 for a
// usage error.
int RunScoreCommand(std::span<const std::string> args);

}  // namespace rlscore::cli
