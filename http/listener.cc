#include "http/listener.h"

#include <civetweb.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "engine/request_cost.h"
#include "http/nemo_gym.h"
#include "http/rewards.h"

namespace rlscore::http {
namespace {

// A keep-alive connection holds a civetweb thread while it is open (slime pools up to 64), so
// there are more threads than cores; they only read bodies and write replies.
constexpr char kHttpThreads[] = "128";
// Runs of which the listener counts steps; more are forgotten (and counted again from 0).
constexpr size_t kMaxCountedRuns = 4096;
constexpr size_t kMaxQueryValue = 4096;

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

// A busy server's refusal (admission.h) is 503 with Retry-After, which HTTP clients retry.
void Reply(mg_connection* conn, int status, std::string_view content_type, std::string_view body,
           bool retryable = false) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", std::string(content_type).c_str(), -1);
  mg_response_header_add(conn, "Content-Length", absl::StrCat(body.size()).c_str(), -1);
  if (retryable) mg_response_header_add(conn, "Retry-After", "1", -1);
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
  // Reserve no more than 16 MiB on the sender's word: the bytes have not arrived yet.
  if (info->content_length > 0) {
    body.reserve(std::min<size_t>(static_cast<size_t>(info->content_length), 16u << 20));
  }
  constexpr size_t kChunk = 64 << 10;
  for (;;) {
    const size_t size = body.size();
    body.resize(size + kChunk);
    const int n = mg_read(conn, body.data() + size, kChunk);
    body.resize(size + static_cast<size_t>(std::max(n, 0)));
    if (n < 0) return absl::InvalidArgumentError("the connection failed while the body was read");
    if (n == 0) break;
    if (body.size() > limit) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the body is over ", limit, " bytes (max_message_bytes)"));
    }
  }
  return body;
}

// The URL-decoded value of `name` in the query string; empty when absent.
absl::StatusOr<std::string> QueryParameter(const mg_request_info* info, const char* name) {
  if (info->query_string == nullptr) return std::string();
  std::string value(kMaxQueryValue, '\0');
  const int n = mg_get_var(info->query_string, std::strlen(info->query_string), name, value.data(),
                           value.size());
  if (n == -2) {
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter \"", name, "\" is longer than ", kMaxQueryValue, " bytes"));
  }
  value.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return value;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const engine::ServerOptions& options, const engine::ScoringContext& collaborators,
    engine::WorkerPool* calls, engine::MemoryBudget* memory) {
  std::unique_ptr<HttpListener> listener(new HttpListener(options));
  listener->calls_ = calls;
  listener->memory_ = memory;
  listener->context_ = collaborators;
  listener->context_.limits = &listener->options_.limits;
  listener->context_.profiles = &listener->options_.profiles;
  listener->context_.health = &listener->options_.run_health;
  listener->context_.keep_going = nullptr;

  mg_init_library(0);
  const char* config[] = {"listening_ports",
                          options.http_address.c_str(),
                          "num_threads",
                          kHttpThreads,
                          "enable_keep_alive",
                          "yes",
                          "keep_alive_timeout_ms",
                          "5000",
                          "request_timeout_ms",
                          "60000",
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
  mg_set_request_handler(listener->civetweb_, "/verify$", HandleReward, &listener->nemo_gym_);
  mg_set_request_handler(listener->civetweb_, "/seed_session$", HandleSeedSession, nullptr);
  mg_set_request_handler(listener->civetweb_, "/$", HandleRoot, nullptr);
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

// NeMo Gym's agents seed a session before a rollout; rlscore keeps no session state.
int HttpListener::HandleSeedSession(mg_connection* conn, void*) {
  Reply(conn, 200, "application/json", "{}");
  return 200;
}

// NeMo Gym polls a server's base URL until it answers.
int HttpListener::HandleRoot(mg_connection* conn, void*) {
  Reply(conn, 200, "application/json", "{\"status\":\"ok\"}");
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
  const engine::Method method = protocol == Protocol::kOpenRlhf ? engine::Method::kHttpGetReward
                                : protocol == Protocol::kSlime  ? engine::Method::kHttpReward
                                                                : engine::Method::kHttpVerify;
  const absl::Time start = absl::Now();
  if (context_.metrics != nullptr) context_.metrics->CallStarted(method);

  std::string reply;
  absl::Status status;
  // The query first: reading the body reuses the buffer the request line is in.
  absl::StatusOr<std::string> profile = QueryParameter(info, "profile");
  absl::StatusOr<std::string> run_id = QueryParameter(info, "run_id");
  absl::StatusOr<std::string> step = QueryParameter(info, "step");
  absl::StatusOr<std::string> body = ReadBody(conn, options_.limits.max_message_bytes);
  for (const absl::Status& s : {profile.status(), run_id.status(), step.status(), body.status()}) {
    if (status.ok()) status = s;
  }
  // Admitted by memory as gRPC calls are (the same budget), once its size is known.
  absl::StatusOr<engine::MemoryBudget::Grant> grant = engine::MemoryBudget::Grant();
  if (status.ok()) {
    grant = memory_->Admit(engine::JsonPeakBytes(*body));
    if (!grant.ok()) {
      status = grant.status();
      if (context_.metrics != nullptr) {
        context_.metrics->RecordAdmissionRefusal(engine::RetryableLimit(status).has_value());
      }
      *body = std::string();
    } else if (context_.metrics != nullptr) {
      context_.metrics->SetMemoryInUse(memory_->in_use());
    }
  }
  if (status.ok()) {
    // The work runs on the call pool, as gRPC calls do: a full stack and the same threads.
    auto done = std::make_shared<std::promise<absl::Status>>();
    std::future<absl::Status> result = done->get_future();
    calls_->Submit(
        [&, done] { done->set_value(Score(protocol, *body, *profile, *run_id, *step, &reply)); });
    status = result.get();
  }

  int http_status = engine::RetryableLimit(status).has_value() ? 503 : HttpStatusOf(status.code());
  if (!status.ok()) {
    const std::string_view message(status.message().data(), status.message().size());
    if (protocol == Protocol::kNemoGym) {
      if (http_status == 400) http_status = 422;  // FastAPI's status for a body it cannot take
      reply = NemoGymErrorReply(message);
    } else {
      reply = ErrorReply(message);
    }
  }
  // Counted before the reply is sent, so a client that reads the metrics next sees this request.
  if (context_.metrics != nullptr) {
    context_.metrics->CallFinished(method, status.code(), absl::Now() - start);
  }
  Reply(conn, http_status, "application/json", reply, engine::RetryableLimit(status).has_value());
  return http_status;
}

absl::Status HttpListener::Score(Protocol protocol, const std::string& body,
                                 const std::string& profile, const std::string& run_id,
                                 const std::string& step, std::string* reply) {
  uint64_t prompts_not_found = 0;
  absl::StatusOr<NemoGymVerify> verify;
  absl::StatusOr<v1::ScoreGroupsRequest> request;
  switch (protocol) {
    case Protocol::kOpenRlhf:
      request = OpenRlhfToRequest(body, &prompts_not_found);
      break;
    case Protocol::kSlime:
      request = SlimeToRequest(body);
      break;
    case Protocol::kNemoGym:
      verify = NemoGymToRequest(body);
      request = verify.ok() ? absl::StatusOr<v1::ScoreGroupsRequest>(std::move(verify->request))
                            : absl::StatusOr<v1::ScoreGroupsRequest>(verify.status());
      break;
  }
  if (!request.ok()) return request.status();
  if (prompts_not_found > 0) {
    if (context_.metrics != nullptr) context_.metrics->RecordPromptNotFound(prompts_not_found);
    uint64_t total = 0;
    {
      MutexLock lock(&steps_mu_);
      total = prompts_not_found_ += prompts_not_found;
    }
    // The first time, then at each power of two: visible without flooding the log.
    if ((total & (total - 1)) == 0 || total - prompts_not_found == 0) {
      LogWarning(absl::StrCat(prompts_not_found,
                              " OpenRLHF queries did not contain their prompt, so the whole "
                              "query was scored (",
                              total, " so far; rlscore_http_prompt_not_found_total)"));
    }
  }
  request->set_profile(profile);
  if (!run_id.empty()) {
    int64_t at = 0;
    if (step.empty()) {
      at = NextStep(run_id);
    } else if (!absl::SimpleAtoi(step, &at)) {
      return absl::InvalidArgumentError(
          absl::StrCat("query parameter \"step\": \"", step, "\" is not an integer"));
    }
    request->set_run_id(run_id);
    request->set_step(at);
  }
  v1::ScoreGroupsResponse response;
  RLSCORE_RETURN_IF_ERROR(engine::RunScoreGroups(context_, *request, &response));
  switch (protocol) {
    case Protocol::kOpenRlhf:
      *reply = OpenRlhfReply(response);
      break;
    case Protocol::kSlime:
      *reply = SlimeReply(response);
      break;
    case Protocol::kNemoGym:
      *reply = NemoGymReply(*verify, response);
      break;
  }
  return absl::OkStatus();
}

int64_t HttpListener::NextStep(const std::string& run_id) {
  MutexLock lock(&steps_mu_);
  if (next_step_.size() >= kMaxCountedRuns && !next_step_.contains(run_id)) next_step_.clear();
  return next_step_[run_id]++;
}

}  // namespace rlscore::http
