// The BatchScorer that calls a running server. The only file of cli/ that includes gRPC.
#include <grpcpp/grpcpp.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "cli/batch_scorer.h"
#include "rlscore/v1/scoring_service.grpc.pb.h"

namespace rlscore::cli {
namespace {

// How long to wait for the first connection before saying the server cannot be reached.
constexpr absl::Duration kConnectTimeout = absl::Seconds(10);

std::chrono::system_clock::time_point DeadlineAfter(absl::Duration timeout) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
}

class RemoteScorer final : public BatchScorer {
 public:
  RemoteScorer(std::string address, absl::Duration timeout, std::shared_ptr<grpc::Channel> channel)
      : address_(std::move(address)),
        timeout_(timeout),
        channel_(std::move(channel)),
        stub_(v1::ScoringService::NewStub(channel_)) {}

  absl::Status Score(const v1::ScoreRequest& request, v1::ScoreResponse* response) override {
    grpc::ClientContext context;
    context.set_deadline(DeadlineAfter(timeout_));
    response->Clear();
    const grpc::Status status = stub_->Score(&context, request, response);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          absl::StrCat(status.error_message(), " (server ", address_, ")"));
    }
    return absl::OkStatus();
  }

  std::string Describe() const override { return absl::StrCat("server ", address_); }

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
