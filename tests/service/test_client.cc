#include "tests/service/test_client.h"

#include <arpa/inet.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <grpcpp/impl/codegen/sync_stream.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "service/health_check.h"

namespace rlscore::service::testing {
namespace {

grpc::ByteBuffer ToBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string FromBuffer(const grpc::ByteBuffer& buffer) {
  grpc::Slice slice;
  if (!buffer.TrySingleSlice(&slice).ok() && !buffer.DumpToSingleSlice(&slice).ok()) return "";
  return std::string(reinterpret_cast<const char*>(slice.begin()), slice.size());
}

// A length-delimited protobuf field: tag, varint length (< 128 here), bytes.
std::string StringField(int field, const std::string& value) {
  std::string out;
  out.push_back(static_cast<char>((field << 3) | 2));
  out.push_back(static_cast<char>(value.size()));
  out += value;
  return out;
}

}  // namespace

grpc::Status RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& request, std::string* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::internal::RpcMethod rpc(method.c_str(), grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::ByteBuffer reply;
  grpc::Status status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel.get(), rpc, &context, ToBuffer(request), &reply);
  if (status.ok()) *response = FromBuffer(reply);
  return status;
}

int HealthStatus(const std::shared_ptr<grpc::Channel>& channel, const std::string& service) {
  const absl::StatusOr<HealthState> state = CheckHealth(channel, service, absl::Seconds(10));
  return state.ok() ? static_cast<int>(*state) : -1;
}

std::string ReflectionListServices(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::internal::RpcMethod rpc(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING);
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          channel.get(), rpc, &context));
  // ServerReflectionRequest { string list_services = 7; }
  if (!stream->Write(ToBuffer(StringField(7, "*")))) return "";
  stream->WritesDone();
  grpc::ByteBuffer reply;
  std::string bytes;
  if (stream->Read(&reply)) bytes = FromBuffer(reply);
  while (stream->Read(&reply)) {
  }
  return stream->Finish().ok() ? bytes : "";
}

std::string HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buffer[65536];
      ssize_t n;
      while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
    }
  }
  ::close(fd);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

}  // namespace rlscore::service::testing
