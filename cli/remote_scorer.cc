// The BatchScorer that calls a running server. The only file of cli/ that includes gRPC.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/batch_scorer.h"
#include "common/mutex.h"
#include "engine/admission.h"
#include "rlscore/v1/scoring_service.grpc.pb.h"
#include "service/grpc_status.h"

namespace rlscore::cli {
namespace {

// How long to wait for the first connection before saying the server cannot be reached.
constexpr absl::Duration kConnectTimeout = absl::Seconds(10);

std::chrono::system_clock::time_point DeadlineAfter(absl::Duration timeout) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
}

// Retries: attempt k (0-based) waits min(kMaxBackoff, kBackoff * 2^k) with "equal jitter" (half
// of it, plus a uniform share of the other half), never past the batch's deadline.
constexpr int kRetries = 8;
constexpr absl::Duration kBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(5);

absl::Duration BackoffDelay(int retry) {
  thread_local std::mt19937 random{std::random_device{}()};
  const absl::Duration cap = std::min(kMaxBackoff, kBackoff * (int64_t{1} << std::min(retry, 20)));
  return cap / 2 + cap / 2 * std::uniform_real_distribution<double>(0.0, 1.0)(random);
}

// UNAVAILABLE (a restart, a server draining); a busy server's refusal: RESOURCE_EXHAUSTED with
// the trailer that marks it retryable (engine/admission.h); or a connection that broke under the
// call (a replica killed mid-call: UNKNOWN or INTERNAL saying so; Score is idempotent). A limit
// the request itself exceeds is final.
bool Retryable(const grpc::Status& status, const grpc::ClientContext& context) {
  const grpc::StatusCode code = status.error_code();
  if (code == grpc::StatusCode::UNAVAILABLE) return true;
  if (code == grpc::StatusCode::UNKNOWN || code == grpc::StatusCode::INTERNAL) {
    for (const char* broke : {"Stream removed", "Socket closed", "Connection reset", "Broken pipe",
                              "RST_STREAM", "GOAWAY"}) {
      if (absl::StrContains(status.error_message(), broke)) return true;
    }
    return false;
  }
  if (code != grpc::StatusCode::RESOURCE_EXHAUSTED) return false;
  const auto& trailers = context.GetServerTrailingMetadata();
  return trailers.find(grpc::string_ref(engine::kRetryableTrailer.data(),
                                        engine::kRetryableTrailer.size())) != trailers.end();
}

// One server of the target: its channel, and when it may be picked again after a failure.
struct Replica {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ScoringService::Stub> stub;
  // rlscore::Mutex, not absl::Mutex: Debian's abseil is not built for ThreadSanitizer.
  Mutex mu;
  std::chrono::steady_clock::time_point down_until ABSL_GUARDED_BY(mu);
  int failures ABSL_GUARDED_BY(mu) = 0;
};

class RemoteScorer final : public BatchScorer {
 public:
  RemoteScorer(std::string target, absl::Duration timeout,
               std::vector<std::unique_ptr<Replica>> replicas)
      : target_(std::move(target)), timeout_(timeout), replicas_(std::move(replicas)) {}

  // One batch, within one deadline: round robin over the replicas that are up; a retryable
  // failure sets the replica aside for a cool-off and goes at once to a replica this batch has
  // not tried, else waits the backoff.
  absl::Status Score(const v1::ScoreRequest& request, v1::ScoreResponse* response) override {
    const auto deadline = DeadlineAfter(timeout_);
    std::vector<bool> tried(replicas_.size(), false);
    size_t index = next_.fetch_add(1, std::memory_order_relaxed) % replicas_.size();
    for (int attempt = 1;; ++attempt) {
      index = Pick(index, tried);
      Replica& replica = *replicas_[index];
      tried[index] = true;
      grpc::ClientContext context;
      context.set_deadline(deadline);
      response->Clear();
      const grpc::Status status = replica.stub->Score(&context, request, response);
      if (status.ok()) {
        MutexLock lock(&replica.mu);
        replica.failures = 0;
        return absl::OkStatus();
      }
      if (Retryable(status, context) && attempt <= kRetries) {
        SetAside(replica);
        if (!tried[Pick(index, tried)]) continue;  // a replica up and not tried yet: no wait
        const absl::Duration delay = BackoffDelay(attempt - 1);
        if (std::chrono::system_clock::now() + absl::ToChronoMilliseconds(delay) < deadline) {
          std::this_thread::sleep_for(absl::ToChronoMilliseconds(delay));
          continue;
        }
      }
      const absl::Status answer = service::FromGrpcStatus(status);
      return absl::Status(
          answer.code(),
          absl::StrCat(answer.message(), " (server ", replica.address,
                       attempt > 1 ? absl::StrCat(", ", attempt, " attempts") : "", ")"));
    }
  }

  std::string Describe() const override {
    return replicas_.size() == 1 ? absl::StrCat("server ", target_)
                                 : absl::StrCat(replicas_.size(), " servers ", target_);
  }

  // Two calls in flight per replica keep each busy while the next batch travels.
  unsigned Concurrency() const override { return 2 * static_cast<unsigned>(replicas_.size()); }

  bool InProcess() const override { return false; }

 private:
  // The replica for the next attempt after `index`: the next that is up and untried, else the
  // next that is up, else the one whose cool-off ends first.
  size_t Pick(size_t index, const std::vector<bool>& tried) const {
    const auto now = std::chrono::steady_clock::now();
    const size_t n = replicas_.size();
    size_t up = n;
    size_t soonest = index;
    auto soonest_time = std::chrono::steady_clock::time_point::max();
    for (size_t k = 1; k <= n; ++k) {
      const size_t i = (index + k) % n;
      MutexLock lock(&replicas_[i]->mu);
      if (replicas_[i]->down_until <= now) {
        if (!tried[i]) return i;
        if (up == n) up = i;
      } else if (replicas_[i]->down_until < soonest_time) {
        soonest_time = replicas_[i]->down_until;
        soonest = i;
      }
    }
    return up != n ? up : soonest;
  }

  static void SetAside(Replica& replica) {
    MutexLock lock(&replica.mu);
    ++replica.failures;
    const auto cool_off = std::chrono::milliseconds(
        std::min<int64_t>(30000, int64_t{500} << std::min(replica.failures - 1, 6)));
    replica.down_until = std::chrono::steady_clock::now() + cool_off;
  }

  const std::string target_;
  const absl::Duration timeout_;
  const std::vector<std::unique_ptr<Replica>> replicas_;
  std::atomic<size_t> next_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<BatchScorer>> NewRemoteScorer(const std::string& address,
                                                             absl::Duration timeout) {
  // Several replicas: a list separated by commas ("ipv4:" and "ipv6:" targets are lists of their
  // own and stay whole). A "dns:" name balances over every address it resolves to, with gRPC's
  // round_robin policy, which follows the name as replicas come and go.
  std::vector<std::string> targets;
  if (absl::StartsWith(address, "ipv4:") || absl::StartsWith(address, "ipv6:")) {
    targets.push_back(address);
  } else {
    for (absl::string_view t : absl::StrSplit(address, ',', absl::SkipWhitespace())) {
      targets.emplace_back(absl::StripAsciiWhitespace(t));
    }
  }
  if (targets.empty()) return absl::InvalidArgumentError("--server: no address given");
  std::vector<std::unique_ptr<Replica>> replicas;
  const absl::Duration connect = std::min(timeout, kConnectTimeout);
  const auto connect_deadline = DeadlineAfter(connect);
  bool any_connected = false;
  for (const std::string& target : targets) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    if (absl::StartsWith(target, "dns:") || absl::StartsWith(target, "ipv4:") ||
        absl::StartsWith(target, "ipv6:")) {
      args.SetLoadBalancingPolicyName("round_robin");
    }
    auto replica = std::make_unique<Replica>();
    replica->address = target;
    replica->channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
    replica->stub = v1::ScoringService::NewStub(replica->channel);
    // One replica that answers is enough to start; the others are tried as calls go.
    if (!any_connected) any_connected = replica->channel->WaitForConnected(connect_deadline);
    replicas.push_back(std::move(replica));
  }
  if (!any_connected) {
    return absl::UnavailableError(absl::StrCat("cannot reach an rlscore server at ", address,
                                               " within ", absl::FormatDuration(connect)));
  }
  return std::make_unique<RemoteScorer>(address, timeout, std::move(replicas));
}

}  // namespace rlscore::cli
