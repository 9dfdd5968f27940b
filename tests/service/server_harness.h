// What the server tests share: a server on loopback port 0 with its metrics, channels and
// deadlines, the incident's ComputeAdvantages batch, a gate that holds a call provably in flight,
// a clock the test moves by hand, and a wait for a metrics series to appear.
//
//   std::unique_ptr<Server> server = StartOrDie(TestOptions());
//   auto stub = v1::ScoringService::NewStub(ChannelTo(*server));
//   ...
//   ASSERT_TRUE(EventuallyShows(*server, "rlscore_requests_total{code=\"OK\",method=\"Score\"}
//   1"));
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/time/clock.h"
#include "advantage/advantage.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "engine/config.h"
#include "rlscore/v1/advantage.pb.h"
#include "scorers/accuracy.h"
#include "service/server.h"

namespace rlscore::service::testing {

// The built-in configuration on 127.0.0.1, any free port, metrics on any free port.
engine::ServerOptions TestOptions();

// Starts a server, or fails the test and returns null.
std::unique_ptr<Server> StartOrDie(const engine::ServerOptions& options,
                                   ServerDependencies deps = {});

// A channel without message size limits.
std::shared_ptr<grpc::Channel> ChannelTo(const std::string& target);
std::shared_ptr<grpc::Channel> ChannelTo(const Server& server);

void SetDeadline(grpc::ClientContext* context, int seconds = 30);

// The incident's step 1,428: 16 groups of 8; 14 groups earn only the 0.1 format reward, two are
// mixed.
v1::ComputeAdvantagesRequest IncidentRequest();

// Scrapes the server's metrics until `series` shows (the server counts a call after gRPC hands it
// back, which can be just after the client saw its status), or until one scrape satisfies `done`
// (a scrape reads one family after another, so related series must be judged in one scrape),
// for up to 10 s; the last scrape.
std::string ScrapeUntil(const Server& server, const std::string& series);
std::string ScrapeUntil(const Server& server, const std::function<bool(std::string_view)>& done);
bool EventuallyShows(const Server& server, const std::string& series);

// Holds whoever enters until the test releases it, counting the entries, so a test can act while
// a call is provably in flight (and count the work that started). Thread-safe.
class Gate {
 public:
  void Enter() const;
  void WaitUntilEntered(int entries) const;
  int entered() const;
  void Release();

 private:
  mutable Mutex mu_;
  mutable CondVar changed_;
  mutable int entered_ ABSL_GUARDED_BY(mu_) = 0;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

// A CPU backend that holds each call at its gate.
class GatedBackend final : public advantage::Backend, public Gate {
 public:
  std::string_view Name() const override { return "gated-cpu"; }
  absl::StatusOr<std::string_view> Compute(const advantage::Batch& batch,
                                           const advantage::Options& options,
                                           std::span<double> advantages,
                                           std::span<advantage::GroupStats> groups,
                                           advantage::BatchSummary* summary) override;

 private:
  std::unique_ptr<advantage::Backend> cpu_ = advantage::NewCpuBackend();
};

// The math accuracy scorer, holding each group's preparation at its gate.
class GatedAccuracy final : public scorers::AccuracyScorer, public Gate {
 public:
  GatedAccuracy();
  std::unique_ptr<scorers::Judge> Prepare(scorers::Task task,
                                          std::span<const std::string> references) const override;

 private:
  std::unique_ptr<scorers::AccuracyScorer> math_;
};

// A clock the test moves by hand. Thread-safe.
class FakeClock final : public Clock {
 public:
  absl::Time Now() const override;
  void Advance(absl::Duration d);

 private:
  mutable Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::Now();
};

}  // namespace rlscore::service::testing
