// The one place where absl::Status and grpc::Status meet (STYLE.md: Errors), both ways: the
// server answers with ToGrpcStatus, clients read answers with FromGrpcStatus.
//
//   reactor->Finish(ToGrpcStatus(HandleRequest(*request, response)));
//   absl::Status s = FromGrpcStatus(stub->Score(&context, request, &response));
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace rlscore::service {

// Same code (the numeric values of absl::StatusCode and grpc::StatusCode agree), same message.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace rlscore::service
