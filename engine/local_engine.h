// The engine with collaborators of its own, for a process that scores without a server:
// `rlscore score` in process and the Python module. The same calls as the server's handlers
// make (RunScoreGroups, RunScore, the CPU advantage backend), so the answers are the server's.
//
//   LocalEngine engine(DefaultServerOptions());
//   RLSCORE_RETURN_IF_ERROR(RunScore(engine.context(), request, &response));
//
// Thread-safe, as the engine is: any number of calls at once. No telemetry, no metrics, no
// deadline.
#pragma once

#include <memory>

#include "advantage/advantage.h"
#include "engine/config.h"
#include "engine/scoring_engine.h"
#include "engine/worker_pool.h"
#include "scorers/accuracy.h"

namespace rlscore::engine {

class LocalEngine {
 public:
  // Where the work of a call runs.
  enum class Parallelism {
    // On a pool of `options.scoring_threads` threads (0: one per core): one call uses them all.
    kWithinCalls,
    // On the calling thread alone: the caller runs `threads()` calls at once (rlscore score,
    // whose threads each parse, score and write batches of their own, with nothing to wait for).
    kAcrossCalls,
  };

  explicit LocalEngine(ServerOptions options, Parallelism parallelism = Parallelism::kWithinCalls);
  LocalEngine(const LocalEngine&) = delete;
  LocalEngine& operator=(const LocalEngine&) = delete;

  const ServerOptions& options() const { return options_; }
  const ScoringContext& context() const { return context_; }
  advantage::Backend& backend() const { return *backend_; }
  // The scoring threads: the pool's, or under kAcrossCalls the callers the engine expects.
  unsigned threads() const { return threads_; }

 private:
  const ServerOptions options_;
  const std::unique_ptr<scorers::AccuracyScorer> accuracy_;
  const std::unique_ptr<advantage::Backend> backend_;
  const unsigned threads_;
  const std::unique_ptr<WorkerPool> pool_;
  const ScoringContext context_;
};

}  // namespace rlscore::engine
