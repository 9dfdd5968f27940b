#include "engine/local_engine.h"

#include <utility>

#include "scorers/math/verifier.h"

namespace rlscore::engine {

LocalEngine::LocalEngine(ServerOptions options, Parallelism parallelism)
    : options_(std::move(options)),
      accuracy_(scorers::math::NewAccuracyScorer()),
      backend_(advantage::NewCpuBackend()),
      threads_(WorkerPool::Resolve(options_.scoring_threads)),
      pool_(parallelism == Parallelism::kAcrossCalls
                ? std::make_unique<WorkerPool>(WorkerPool::CallerOnly{})
                : std::make_unique<WorkerPool>(threads_)),
      context_{.limits = &options_.limits,
               .profiles = &options_.profiles,
               .accuracy = accuracy_.get(),
               .backend = backend_.get(),
               .pool = pool_.get(),
               .metrics = nullptr,
               .telemetry = nullptr,
               .health = nullptr,
               .clock = nullptr,
               .keep_going = nullptr} {}

}  // namespace rlscore::engine
