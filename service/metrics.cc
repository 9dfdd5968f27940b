#include "service/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

#include "absl/status/status.h"

namespace rlscore::service {

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kScoreGroups:
      return "ScoreGroups";
    case Method::kComputeAdvantages:
      return "ComputeAdvantages";
    case Method::kScore:
      return "Score";
    case Method::kMonitorGeneration:
      return "MonitorGeneration";
    case Method::kGetRunHealth:
      return "GetRunHealth";
  }
  return "unknown";
}

namespace {

// Handling time from 50 µs (a small ComputeAdvantages) to 30 s (a bulk Score).
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
          5e-2, 0.1,  0.25,   0.5,  1,    2.5,    5,    10,   30};
}

// Powers of ten from one reward to 10^8 (a whole evaluation sweep).
prometheus::Histogram::BucketBoundaries BatchBuckets() {
  return {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
}

// absl::StatusCodeToString gives "INVALID_ARGUMENT" etc.; gRPC's names are the same.
std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  requests_ = &prometheus::BuildCounter()
                   .Name("rlscore_requests_total")
                   .Help("RPCs answered, by method and gRPC status code")
                   .Register(*registry_);
  auto& durations = prometheus::BuildHistogram()
                        .Name("rlscore_request_duration_seconds")
                        .Help("Time to handle an RPC, from its arrival to its answer")
                        .Register(*registry_);
  auto& in_flight = prometheus::BuildGauge()
                        .Name("rlscore_requests_in_flight")
                        .Help("RPCs being handled now")
                        .Register(*registry_);
  for (int m = 0; m < kNumMethods; ++m) {
    const std::string name(MethodName(static_cast<Method>(m)));
    durations_[m] = &durations.Add({{"method", name}}, LatencyBuckets());
    in_flight_[m] = &in_flight.Add({{"method", name}});
  }
  batch_rewards_ = &prometheus::BuildHistogram()
                        .Name("rlscore_advantage_batch_rewards")
                        .Help("Rewards per batch given to the advantage engine")
                        .Register(*registry_)
                        .Add({}, BatchBuckets());
  rewards_ = &prometheus::BuildCounter()
                  .Name("rlscore_advantage_rewards_total")
                  .Help("Rewards that went through the advantage engine")
                  .Register(*registry_)
                  .Add({});
  unscorable_ = &prometheus::BuildCounter()
                     .Name("rlscore_advantage_unscorable_total")
                     .Help("Rewards left out of their group's statistics as unscorable")
                     .Register(*registry_)
                     .Add({});
  groups_ = &prometheus::BuildCounter()
                 .Name("rlscore_advantage_groups_total")
                 .Help("Groups that went through the advantage engine")
                 .Register(*registry_)
                 .Add({});
  auto& zero_variance = prometheus::BuildCounter()
                            .Name("rlscore_advantage_zero_variance_groups_total")
                            .Help("Groups clamped to zero advantage, by cause")
                            .Register(*registry_);
  for (int c = 1; c < advantage::kNumZeroVarianceCauses; ++c) {
    zero_variance_groups_[c] = &zero_variance.Add(
        {{"cause",
          std::string(advantage::CauseName(static_cast<advantage::ZeroVarianceCause>(c)))}});
  }
  zero_variance_fraction_ = &prometheus::BuildGauge()
                                 .Name("rlscore_advantage_zero_variance_fraction")
                                 .Help("Fraction of zero-variance groups in the last batch")
                                 .Register(*registry_)
                                 .Add({});
  backend_info_ = &prometheus::BuildGauge()
                       .Name("rlscore_advantage_backend_info")
                       .Help("1 for the backend that computes advantages")
                       .Register(*registry_);
  prometheus::BuildGauge()
      .Name("rlscore_build_info")
      .Help("1, labelled with the version of this build")
      .Register(*registry_)
      .Add({{"version", RLSCORE_VERSION}})
      .Set(1);
}

Metrics::~Metrics() = default;

void Metrics::CallStarted(Method method) { in_flight_[static_cast<int>(method)]->Increment(); }

void Metrics::CallFinished(Method method, absl::StatusCode code, absl::Duration elapsed) {
  const int m = static_cast<int>(method);
  in_flight_[m]->Decrement();
  durations_[m]->Observe(absl::ToDoubleSeconds(elapsed));
  requests_->Add({{"method", std::string(MethodName(method))}, {"code", CodeName(code)}})
      .Increment();
}

void Metrics::RecordAdvantageBatch(const advantage::BatchSummary& summary) {
  batch_rewards_->Observe(static_cast<double>(summary.rewards));
  rewards_->Increment(static_cast<double>(summary.rewards));
  unscorable_->Increment(static_cast<double>(summary.unscorable));
  groups_->Increment(static_cast<double>(summary.groups));
  for (int c = 1; c < advantage::kNumZeroVarianceCauses; ++c) {
    if (summary.groups_by_cause[c] > 0) {
      zero_variance_groups_[c]->Increment(static_cast<double>(summary.groups_by_cause[c]));
    }
  }
  if (summary.groups > 0) zero_variance_fraction_->Set(summary.zero_variance_fraction);
}

void Metrics::SetBackend(std::string_view backend) {
  backend_info_->Add({{"backend", std::string(backend)}}).Set(1);
}

}  // namespace rlscore::service
