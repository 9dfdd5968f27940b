#include "engine/local_engine.h"

#include <utility>

#include "scorers/math/verifier.h"

namespace rlscore::engine {

LocalEngine::LocalEngine(ServerOptions options)
    : options_(std::move(options)),
      accuracy_(scorers::math::NewAccuracyScorer()),
      backend_(advantage::NewCpuBackend()),
      pool_(options_.scoring_threads),
      context_{.limits = &options_.limits,
               .profiles = &options_.profiles,
               .accuracy = accuracy_.get(),
               .backend = backend_.get(),
               .pool = &pool_,
               .metrics = nullptr,
               .telemetry = nullptr,
               .health = nullptr,
               .clock = nullptr,
               .keep_going = nullptr} {}

}  // namespace rlscore::engine
