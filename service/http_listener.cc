#include "service/http_listener.h"

#include <civetweb.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/strings.h"
#include "service/http_rewards.h"

namespace rlscore::service {
namespace {

// Requests are scored on the handler threads (groups in parallel on the shared pool), so a few
// are enough; more connections wait in civetweb's queue.
constexpr char kHandlerThreads[] = "8";

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kResourceExhausted:
      return 413;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

void Reply(mg_connection* conn, int status, std::string_view content_type, std::string_view body) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", std::string(content_type).c_str(), -1);
  mg_response_header_add(conn, "Content-Length", absl::StrCat(body.size()).c_str(), -1);
  mg_response_header_send(conn);
  mg_write(conn, body.data(), body.size());
}

// Reads the whole body, refusing more than `limit` bytes whether or not a Content-Length said
// so in advance.
absl::StatusOr<std::string> ReadBody(mg_connection* conn, uint64_t limit) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info->content_length > 0 && static_cast<uint64_t>(info->content_length) > limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the body is ", info->content_length, " bytes; at most ", limit, " (max_message_bytes)"));
  }
  std::string body;
  if (info->content_length > 0) body.reserve(static_cast<size_t>(info->content_length));
  char buffer[64 << 10];
  for (;;) {
    const int n = mg_read(conn, buffer, sizeof(buffer));
    if (n < 0) return absl::InvalidArgumentError("the connection failed while the body was read");
    if (n == 0) break;
    if (body.size() + static_cast<size_t>(n) > limit) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the body is over ", limit, " bytes (max_message_bytes)"));
    }
    body.append(buffer, static_cast<size_t>(n));
  }
  return body;
}

std::string QueryParameter(const mg_request_info* info, const char* name) {
  if (info->query_string == nullptr) return "";
  char value[512];
  const int n =
      mg_get_var(info->query_string, std::strlen(info->query_string), name, value, sizeof(value));
  return n > 0 ? std::string(value, static_cast<size_t>(n)) : "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const ServerOptions& options, const ScoringContext& collaborators) {
  std::unique_ptr<HttpListener> listener(new HttpListener(options));
  listener->context_ = collaborators;
  listener->context_.limits = &listener->options_.limits;
  listener->context_.profiles = &listener->options_.profiles;
  listener->context_.health = &listener->options_.run_health;
  listener->context_.keep_going = nullptr;

  mg_init_library(0);
  const char* config[] = {"listening_ports",
                          options.http_address.c_str(),
                          "num_threads",
                          kHandlerThreads,
                          "enable_keep_alive",
                          "yes",
                          "request_timeout_ms",
                          "300000",
                          nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  mg_init_data init{.callbacks = &callbacks, .user_data = nullptr, .configuration_options = config};
  unsigned code = 0;
  char error_text[256] = "";
  mg_error_data error{.code = &code, .text = error_text, .text_buffer_size = sizeof(error_text)};
  listener->civetweb_ = mg_start2(&init, &error);
  if (listener->civetweb_ == nullptr) {
    mg_exit_library();
    return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", options.http_address, ": ",
                                               error_text[0] != '\0' ? error_text : "failed"));
  }
  mg_set_request_handler(listener->civetweb_, "/get_reward$", HandleReward, &listener->openrlhf_);
  mg_set_request_handler(listener->civetweb_, "/reward$", HandleReward, &listener->slime_);
  mg_set_request_handler(listener->civetweb_, "/healthz$", HandleHealth, listener.get());
  mg_server_port ports[4];
  const int count = mg_get_server_ports(listener->civetweb_, 4, ports);
  listener->port_ = count > 0 ? ports[0].port : 0;
  return listener;
}

HttpListener::~HttpListener() { Stop(); }

void HttpListener::Stop() {
  std::call_once(stop_once_, [this] {
    if (civetweb_ == nullptr) return;
    mg_stop(civetweb_);  // joins the handler threads: requests in flight are answered first
    civetweb_ = nullptr;
    mg_exit_library();
  });
}

int HttpListener::HandleHealth(mg_connection* conn, void*) {
  Reply(conn, 200, "text/plain", "ok\n");
  return 200;
}

int HttpListener::HandleReward(mg_connection* conn, void* route) {
  const Route* r = static_cast<const Route*>(route);
  return r->listener->Serve(conn, r->protocol);
}

int HttpListener::Serve(mg_connection* conn, Protocol protocol) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (std::strcmp(info->request_method, "POST") != 0) {
    mg_response_header_start(conn, 405);
    mg_response_header_add(conn, "Allow", "POST", -1);
    mg_response_header_add(conn, "Content-Length", "0", -1);
    mg_response_header_send(conn);
    return 405;
  }
  const Method method =
      protocol == Protocol::kOpenRlhf ? Method::kHttpGetReward : Method::kHttpReward;
  const absl::Time start = absl::Now();
  if (context_.metrics != nullptr) context_.metrics->CallStarted(method);

  v1::ScoreGroupsResponse response;
  absl::Status status;
  absl::StatusOr<std::string> body = ReadBody(conn, options_.limits.max_message_bytes);
  if (body.ok()) {
    absl::StatusOr<v1::ScoreGroupsRequest> request =
        protocol == Protocol::kOpenRlhf ? OpenRlhfToRequest(*body) : SlimeToRequest(*body);
    if (request.ok()) {
      request->set_profile(QueryParameter(info, "profile"));
      request->set_run_id(QueryParameter(info, "run_id"));
      status = RunScoreGroups(context_, *request, &response);
    } else {
      status = request.status();
    }
  } else {
    status = body.status();
  }

  const int http_status = HttpStatusOf(status.code());
  if (status.ok()) {
    Reply(conn, 200, "application/json",
          protocol == Protocol::kOpenRlhf ? OpenRlhfReply(response) : SlimeReply(response));
  } else {
    Reply(conn, http_status, "application/json",
          ErrorReply(std::string_view(status.message().data(), status.message().size())));
  }
  if (context_.metrics != nullptr) {
    context_.metrics->CallFinished(method, status.code(), absl::Now() - start);
  }
  return http_status;
}

}  // namespace rlscore::service
