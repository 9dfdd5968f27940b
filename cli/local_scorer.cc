// The in-process BatchScorer: the service's own RunScore, without a network in between.
#include <memory>

#include "absl/strings/str_cat.h"
#include "advantage/advantage.h"
#include "cli/batch_scorer.h"
#include "engine/scoring_engine.h"
#include "engine/worker_pool.h"
#include "scorers/math/verifier.h"

namespace rlscore::cli {
namespace {

class LocalScorer final : public BatchScorer {
 public:
  explicit LocalScorer(const engine::ServerOptions& options)
      : options_(options),
        accuracy_(scorers::math::NewAccuracyScorer()),
        backend_(advantage::NewCpuBackend()),
        pool_(options.scoring_threads),
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

  absl::Status Score(const v1::ScoreRequest& request, v1::ScoreResponse* response) override {
    response->Clear();
    return engine::RunScore(context_, request, response);
  }

  std::string Describe() const override {
    return absl::StrCat("in-process, ", pool_.size(), " scoring threads");
  }

 private:
  const engine::ServerOptions options_;
  const std::unique_ptr<scorers::AccuracyScorer> accuracy_;
  const std::unique_ptr<advantage::Backend> backend_;
  engine::WorkerPool pool_;
  const engine::ScoringContext context_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BatchScorer>> NewLocalScorer(const engine::ServerOptions& options) {
  return std::make_unique<LocalScorer>(options);
}

}  // namespace rlscore::cli
