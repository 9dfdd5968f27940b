// Messages to and from gRPC's raw byte buffers, with the errors a caller can act on. The service
// takes every message as bytes (scoring_service.h says why) and parses it here.
//
//   v1::MonitorGenerationRequest request;
//   RLSCORE_RETURN_IF_ERROR(ParseWire(bytes, "message 3 of the stream", &request));
//   RLSCORE_RETURN_IF_ERROR(SerializeWire(response, &out));
#pragma once

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "engine/protobuf_log.h"

namespace rlscore::service {

// Parses `in` into `message`: INVALID_ARGUMENT naming `what` (the request, message 3 of the
// stream), its size, the message type and protobuf's reason when the bytes are not one.
template <typename Message>
absl::Status ParseWire(const grpc::ByteBuffer& in, std::string_view what, Message* message) {
  grpc::ByteBuffer bytes(in);         // shares the slices; the parse consumes this copy
  engine::ProtobufLogCapture reason;  // a string field that is not UTF-8: protobuf only logs it
  if (grpc::GenericDeserialize<grpc::ProtoBufferReader, Message>(&bytes, message).ok()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      Sv(what), " (", in.Length(), " bytes) is not a valid ", Message::descriptor()->full_name(),
      ": ",
      reason.text().empty() ? "the bytes are truncated, or not that message's protobuf encoding"
                            : reason.text()));
}

// Serialises `message` into `out`; INTERNAL if protobuf cannot.
template <typename Message>
absl::Status SerializeWire(const Message& message, grpc::ByteBuffer* out) {
  bool own_buffer = false;
  const grpc::Status serialized =
      grpc::GenericSerialize<grpc::ProtoBufferWriter, Message>(message, out, &own_buffer);
  if (!serialized.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot serialise the response: ", serialized.error_message()));
  }
  return absl::OkStatus();
}

// The answer to a call that arrives while the server drains.
inline absl::Status DrainingStatus() {
  return absl::UnavailableError(
      "the server is shutting down (SIGTERM): the call was not started; retry on another replica");
}

}  // namespace rlscore::service
