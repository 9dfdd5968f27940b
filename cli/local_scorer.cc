// The in-process BatchScorer: the service's own RunScore, without a network in between.
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/batch_scorer.h"
#include "engine/local_engine.h"

namespace rlscore::cli {
namespace {

class LocalScorer final : public BatchScorer {
 public:
  explicit LocalScorer(const engine::ServerOptions& options)
      : engine_(options, engine::LocalEngine::Parallelism::kAcrossCalls) {}

  absl::Status Score(const v1::ScoreRequest& request, v1::ScoreResponse* response) override {
    response->Clear();
    return engine::RunScore(engine_.context(), request, response);
  }

  std::string Describe() const override {
    return absl::StrCat("in-process, ", engine_.threads(), " scoring threads");
  }

  unsigned Concurrency() const override { return engine_.threads(); }

  bool InProcess() const override { return true; }

 private:
  const engine::LocalEngine engine_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BatchScorer>> NewLocalScorer(const engine::ServerOptions& options) {
  return std::make_unique<LocalScorer>(options);
}

}  // namespace rlscore::cli
