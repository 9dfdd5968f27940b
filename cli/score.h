// `rlscore score`: scores a JSONL file of rollouts (cli/rollouts.h) in this process or on a
// running server, writes one JSON result per line, and prints a summary; optionally an HTML
// report. See `rlscore score --help`.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/batch_scorer.h"

namespace rlscore::cli {

// Makes the scorer for `--server ADDRESS` with each call's `timeout`: NewRemoteScorer where the
// binary has the transport; in the `rlscore` launcher, a hand-over to rlscore-service
// (cli/launcher.h) that only returns to report why it failed.
using RemoteScorerFactory = std::function<absl::StatusOr<std::unique_ptr<BatchScorer>>(
    const std::string& address, absl::Duration timeout)>;

// Returns the process exit status: 0 when every line was scored or skipped as asked, 1 when
// scoring stopped (an error that is not one line's, or a bad line with --on-error=fail), 2 for a
// usage error. `remote` is called, once, only when --server is given.
int RunScoreCommand(std::span<const std::string> args, const RemoteScorerFactory& remote);

}  // namespace rlscore::cli
