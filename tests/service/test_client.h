// Helpers for tests that talk to a real Server over loopback: a generic unary call for services
// we have no generated stubs for (grpc.health.v1), a reflection listing, and an HTTP GET.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace rlscore::service::testing {

// Calls `method` ("/package.Service/Method") with serialized bytes; returns the status and, when
// OK, the serialized response in `*response`.
grpc::Status RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& request, std::string* response);

// grpc.health.v1.Health/Check for `service` ("" is the whole server): the serving status value
// (1 SERVING, 2 NOT_SERVING) or -1 when the call failed.
int HealthStatus(const std::shared_ptr<grpc::Channel>& channel, const std::string& service);

// The raw bytes of grpc.reflection.v1alpha's answer to list_services; it contains every service
// name. Empty when the call failed.
std::string ReflectionListServices(const std::shared_ptr<grpc::Channel>& channel);

// GET http://127.0.0.1:<port><path>; the body, or "" when the request failed.
std::string HttpGet(int port, const std::string& path);

}  // namespace rlscore::service::testing
