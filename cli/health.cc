#include "cli/health.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>

#include <chrono>
#include <iostream>

#include "cli/flags.h"

namespace rlscore::cli {
namespace {

// Debian ships no generated grpc.health.v1 stubs for C++, so the two messages are encoded here:
// HealthCheckRequest { string service = 1; } and HealthCheckResponse { ServingStatus status = 1; }.
std::string EncodeRequest(const std::string& service) {
  if (service.empty()) return "";
  std::string out(1, static_cast<char>((1 << 3) | 2));  // field 1, length-delimited
  for (size_t n = service.size();; n >>= 7) {           // varint length
    out.push_back(static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0)));
    if (n < 0x80) break;
  }
  return out + service;
}

// The status value (UNKNOWN = 0 is encoded as nothing), or -1 for a reply that is not one.
int DecodeStatus(const std::string& reply) {
  if (reply.empty()) return 0;
  if (reply.size() == 2 && reply[0] == 0x08) return static_cast<unsigned char>(reply[1]);
  return -1;
}

const char* StatusName(int status) {
  switch (status) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
    default:
      return "an unreadable reply";
  }
}

}  // namespace

int RunHealthCommand(std::span<const std::string> args) {
  std::string address = "127.0.0.1:50051", service;
  uint64_t timeout_secs = 5;
  bool help = false;
  FlagSet flags("rlscore health");
  flags.Add({"address", "ADDR", "the server: host:port or unix:/path (default 127.0.0.1:50051)",
             [&](std::string_view v) {
               address = std::string(v);
               return absl::OkStatus();
             }});
  flags.Add({"service", "NAME",
             "the service to ask about: empty for the whole server (default), "
             "rlscore.v1.ScoringService, rlscore.gpu",
             [&](std::string_view v) {
               service = std::string(v);
               return absl::OkStatus();
             }});
  flags.Add({"timeout-secs", "N", "how long to wait for the answer (default 5)",
             [&](std::string_view v) { return ParseUint64(v, &timeout_secs); }});
  flags.Add(
      {"help", "", "show this help", [&](std::string_view v) { return ParseBool(v, &help); }});
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(args);
  absl::Status status = parsed.status();
  if (status.ok()) status = parsed->ApplyAll();
  if (status.ok() && !parsed->positional().empty()) {
    status = absl::InvalidArgumentError("unexpected argument \"" + parsed->positional()[0] + "\"");
  }
  if (status.ok() && (timeout_secs == 0 || timeout_secs > 3600)) {
    status = absl::InvalidArgumentError("--timeout-secs must be between 1 and 3600");
  }
  if (!status.ok()) {
    std::cerr << "rlscore health: " << status.message() << "\n";
    return 2;
  }
  if (help) {
    std::cout << flags.Usage();
    return 0;
  }

  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(static_cast<int64_t>(timeout_secs)));
  context.set_wait_for_ready(true);  // a server still starting gets the whole timeout
  const grpc::internal::RpcMethod check("/grpc.health.v1.Health/Check",
                                        grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Slice request_slice(EncodeRequest(service));
  grpc::ByteBuffer reply;
  const grpc::Status call = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel.get(), check, &context, grpc::ByteBuffer(&request_slice, 1), &reply);
  const std::string what = service.empty() ? address : address + " (" + service + ")";
  if (!call.ok()) {
    std::cerr << "rlscore health: " << what << ": " << call.error_message() << "\n";
    return 1;
  }
  grpc::Slice slice;
  std::string bytes;
  if (reply.DumpToSingleSlice(&slice).ok()) {
    bytes.assign(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  const int serving = DecodeStatus(bytes);
  std::cout << what << ": " << StatusName(serving) << "\n";
  return serving == 1 ? 0 : 1;
}

}  // namespace rlscore::cli
