// The BatchScorer that calls a running server. The only file of cli/ that includes gRPC.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/batch_scorer.h"
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

// UNAVAILABLE (a restart, a server draining), or a busy server's refusal: RESOURCE_EXHAUSTED with
// the trailer that marks it retryable (engine/admission.h). A limit the request itself exceeds
// is final.
bool Retryable(const grpc::Status& status, const grpc::ClientContext& context) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) return true;
  if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) return false;
  const auto& trailers = context.GetServerTrailingMetadata();
  return trailers.find(grpc::string_ref(engine::kRetryableTrailer.data(),
                                        engine::kRetryableTrailer.size())) != trailers.end();
}

class RemoteScorer final : public BatchScorer {
 public:
  RemoteScorer(std::string address, absl::Duration timeout, std::shared_ptr<grpc::Channel> channel)
      : address_(std::move(address)),
        timeout_(timeout),
        channel_(std::move(channel)),
        stub_(v1::ScoringService::NewStub(channel_)) {}

  // One batch, retried with backoff while the server is busy or unavailable, within one
  // deadline.
  absl::Status Score(const v1::ScoreRequest& request, v1::ScoreResponse* response) override {
    const auto deadline = DeadlineAfter(timeout_);
    for (int attempt = 1;; ++attempt) {
      grpc::ClientContext context;
      context.set_deadline(deadline);
      response->Clear();
      const grpc::Status status = stub_->Score(&context, request, response);
      if (status.ok()) return absl::OkStatus();
      if (Retryable(status, context) && attempt <= kRetries) {
        const absl::Duration delay = BackoffDelay(attempt - 1);
        if (std::chrono::system_clock::now() + absl::ToChronoMilliseconds(delay) < deadline) {
          std::this_thread::sleep_for(absl::ToChronoMilliseconds(delay));
          continue;
        }
      }
      const absl::Status answer = service::FromGrpcStatus(status);
      return absl::Status(
          answer.code(),
          absl::StrCat(answer.message(), " (server ", address_,
                       attempt > 1 ? absl::StrCat(", ", attempt, " attempts") : "", ")"));
    }
  }

  std::string Describe() const override { return absl::StrCat("server ", address_); }

  unsigned Concurrency() const override { return 2; }

  bool InProcess() const override { return false; }

 private:
  const std::string address_;
  const absl::Duration timeout_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::ScoringService::Stub> stub_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BatchScorer>> NewRemoteScorer(const std::string& address,
                                                             absl::Duration timeout) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  const absl::Duration connect = std::min(timeout, kConnectTimeout);
  if (!channel->WaitForConnected(DeadlineAfter(connect))) {
    return absl::UnavailableError(absl::StrCat("cannot reach an rlscore server at ", address,
                                               " within ", absl::FormatDuration(connect)));
  }
  return std::make_unique<RemoteScorer>(address, timeout, std::move(channel));
}

}  // namespace rlscore::cli
