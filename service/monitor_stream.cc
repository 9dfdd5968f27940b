#include "service/monitor_stream.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/tsan_handoff.h"
#include "engine/monitor_session.h"
#include "service/grpc_status.h"
#include "service/wire.h"

namespace rlscore::service {
namespace {

using engine::Method;

// Each delta is handled on the reactor's own callback (O(delta) work), so streams need no thread
// of their own. gRPC runs those callbacks one at a time, each on any of its threads: each one
// acquires the stream from the one before (common/tsan_handoff.h) and releases it when it hands
// the call back.
class MonitorStream final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  MonitorStream(const engine::ServerOptions& options, engine::Metrics* metrics,
                std::atomic<uint32_t>* open, bool draining)
      : options_(options), metrics_(metrics), start_(absl::Now()), open_(open), session_(options) {
    metrics_->CallStarted(Method::kMonitorGeneration);
    if (draining) {
      open_->fetch_add(1);  // OnDone gives it back
      End(DrainingStatus());
      return;
    }
    if (open_->fetch_add(1) >= options_.limits.max_streams) {
      End(absl::ResourceExhaustedError(
          absl::StrCat("MonitorGeneration: ", options_.limits.max_streams,
                       " streams are open, the limit max_streams; retry later")));
      return;
    }
    // Headers now, before any answer: a client that waits for them (WaitForInitialMetadata)
    // knows its stream was admitted and counts against max_streams.
    StartSendInitialMetadata();
    ReleaseHandoff(this);
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    AcquireHandoff(this);
    if (!ok) {  // the client half-closed, or the call is over: nothing fired
      End(absl::OkStatus());
      return;
    }
    ++messages_;
    const absl::Status parsed =
        ParseWire(in_, absl::StrCat("message ", messages_, " of the stream"), &request_);
    if (!parsed.ok()) {
      End(parsed);
      return;
    }
    absl::StatusOr<std::optional<scorers::StopVerdict>> verdict = session_.Handle(request_);
    if (!verdict.ok()) {
      End(verdict.status());
      return;
    }
    if (!verdict->has_value()) {
      ReleaseHandoff(this);
      StartRead(&in_);
      return;
    }
    const scorers::StopVerdict& stop = **verdict;
    response_.set_reason(engine::ToProto(stop.reason));
    response_.set_token_offset(stop.token_offset);
    response_.set_char_offset(stop.char_offset);
    response_.set_detail(stop.detail);
    metrics_->RecordGenerationStop(stop.reason);
    if (const absl::Status serialized = SerializeWire(response_, &out_); !serialized.ok()) {
      End(serialized);
      return;
    }
    code_ = absl::StatusCode::kOk;
    ReleaseHandoff(this);
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void OnCancel() override {
    cancelled_ = true;
    metrics_->CallCancelled(Method::kMonitorGeneration);
  }

  void OnDone() override {
    AcquireHandoff(this);
    open_->fetch_sub(1);
    metrics_->CallFinished(Method::kMonitorGeneration,
                           cancelled_ ? absl::StatusCode::kCancelled : code_, absl::Now() - start_);
    delete this;
  }

 private:
  void End(const absl::Status& status) {
    code_ = status.code();
    ReleaseHandoff(this);
    Finish(ToGrpcStatus(status));
  }

  const engine::ServerOptions& options_;
  engine::Metrics* const metrics_;
  const absl::Time start_;
  std::atomic<uint32_t>* const open_;
  grpc::ByteBuffer in_;
  grpc::ByteBuffer out_;
  uint64_t messages_ = 0;  // read so far, for errors: "message 3 of the stream"
  v1::MonitorGenerationRequest request_;
  v1::MonitorGenerationResponse response_;
  engine::MonitorSession session_;
  absl::StatusCode code_ = absl::StatusCode::kOk;
  std::atomic<bool> cancelled_ = false;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewMonitorStream(
    const engine::ServerOptions& options, engine::Metrics* metrics, std::atomic<uint32_t>* open,
    bool draining) {
  return new MonitorStream(options, metrics, open, draining);
}

}  // namespace rlscore::service
