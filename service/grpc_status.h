// The one place where absl::Status becomes grpc::Status (STYLE.md: Errors).
//
//   reactor->Finish(ToGrpcStatus(HandleRequest(*request, response)));
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace rlscore::service {

// Same code (the numeric values of absl::StatusCode and grpc::StatusCode agree), same message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace rlscore::service
