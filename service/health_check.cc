#include "service/health_check.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>

#include "absl/strings/str_cat.h"
#include "service/grpc_status.h"

namespace rlscore::service {
namespace {

// HealthCheckRequest { string service = 1; }
std::string EncodeRequest(std::string_view service) {
  if (service.empty()) return "";
  std::string out(1, static_cast<char>((1 << 3) | 2));  // field 1, length-delimited
  for (size_t n = service.size();; n >>= 7) {           // varint length
    out.push_back(static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0)));
    if (n < 0x80) break;
  }
  out.append(service);
  return out;
}

}  // namespace

std::string_view HealthStateName(HealthState state) {
  switch (state) {
    case HealthState::kUnknown:
      return "UNKNOWN";
    case HealthState::kServing:
      return "SERVING";
    case HealthState::kNotServing:
      return "NOT_SERVING";
    case HealthState::kServiceUnknown:
      return "SERVICE_UNKNOWN";
  }
  return "UNKNOWN";
}

absl::StatusOr<HealthState> CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                        std::string_view service, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  context.set_wait_for_ready(true);  // a server still starting gets the whole timeout
  const grpc::internal::RpcMethod check("/grpc.health.v1.Health/Check",
                                        grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Slice request(EncodeRequest(service));
  grpc::ByteBuffer reply;
  const grpc::Status call = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel.get(), check, &context, grpc::ByteBuffer(&request, 1), &reply);
  if (!call.ok()) return FromGrpcStatus(call);
  grpc::Slice slice;
  std::string bytes;
  if (reply.DumpToSingleSlice(&slice).ok()) {
    bytes.assign(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  // HealthCheckResponse { ServingStatus status = 1; }: 0x08 <value>, nothing for UNKNOWN (0).
  if (bytes.empty()) return HealthState::kUnknown;
  if (bytes.size() == 2 && bytes[0] == 0x08 && bytes[1] >= 0 && bytes[1] <= 3) {
    return static_cast<HealthState>(bytes[1]);
  }
  return absl::InternalError(
      absl::StrCat("not a grpc.health.v1 HealthCheckResponse (", bytes.size(), " bytes)"));
}

}  // namespace rlscore::service
