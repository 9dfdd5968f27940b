#include "tests/service/server_harness.h"

#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "scorers/math/verifier.h"
#include "tests/service/test_client.h"

namespace rlscore::service::testing {

engine::ServerOptions TestOptions() {
  engine::ServerOptions options = engine::DefaultServerOptions();
  options.listen_address = "127.0.0.1:0";
  options.metrics_address = "127.0.0.1:0";
  return options;
}

std::unique_ptr<Server> StartOrDie(const engine::ServerOptions& options, ServerDependencies deps) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options, std::move(deps));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

std::shared_ptr<grpc::Channel> ChannelTo(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

std::shared_ptr<grpc::Channel> ChannelTo(const Server& server) {
  return ChannelTo("127.0.0.1:" + std::to_string(server.port()));
}

void SetDeadline(grpc::ClientContext* context, int seconds) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

v1::ComputeAdvantagesRequest IncidentRequest() {
  v1::ComputeAdvantagesRequest request;
  for (int g = 0; g < 16; ++g) {
    request.add_group_sizes(8);
    for (int i = 0; i < 8; ++i) {
      const bool mixed = g >= 14;
      request.add_rewards(mixed && i % 3 == 0 ? 1.1 : 0.1);
    }
  }
  return request;
}

std::string ScrapeUntil(const Server& server, const std::function<bool(std::string_view)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string metrics;
  for (;;) {
    metrics = HttpGet(server.metrics_port(), "/metrics");
    if (done(metrics) || std::chrono::steady_clock::now() > deadline) return metrics;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string ScrapeUntil(const Server& server, const std::string& series) {
  return ScrapeUntil(server, [&](std::string_view metrics) {
    return metrics.find(series) != std::string_view::npos;
  });
}

bool EventuallyShows(const Server& server, const std::string& series) {
  return ScrapeUntil(server, series).find(series) != std::string::npos;
}

void Gate::Enter() const {
  MutexLock lock(&mu_);
  ++entered_;
  changed_.SignalAll();
  while (!released_) changed_.Wait(&mu_);
}

void Gate::WaitUntilEntered(int entries) const {
  MutexLock lock(&mu_);
  while (entered_ < entries) changed_.Wait(&mu_);
}

int Gate::entered() const {
  MutexLock lock(&mu_);
  return entered_;
}

void Gate::Release() {
  MutexLock lock(&mu_);
  released_ = true;
  changed_.SignalAll();
}

absl::StatusOr<std::string_view> GatedBackend::Compute(const advantage::Batch& batch,
                                                       const advantage::Options& options,
                                                       std::span<double> advantages,
                                                       std::span<advantage::GroupStats> groups,
                                                       advantage::BatchSummary* summary) {
  Enter();
  const absl::StatusOr<std::string_view> served =
      cpu_->Compute(batch, options, advantages, groups, summary);
  if (!served.ok()) return served.status();
  return Name();  // the response names the backend that served
}

GatedAccuracy::GatedAccuracy() : math_(scorers::math::NewAccuracyScorer()) {}

std::unique_ptr<scorers::Judge> GatedAccuracy::Prepare(
    scorers::Task task, std::span<const std::string> references) const {
  Enter();
  return math_->Prepare(task, references);
}

absl::Time FakeClock::Now() const {
  MutexLock lock(&mu_);
  return now_;
}

void FakeClock::Advance(absl::Duration d) {
  MutexLock lock(&mu_);
  now_ += d;
}

}  // namespace rlscore::service::testing
