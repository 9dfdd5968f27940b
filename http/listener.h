// The optional HTTP JSON listener (`rlscore serve --http-address=HOST:PORT`): the remote-reward
// endpoints of trainers that call a reward over HTTP, served by the same scorers, worker pool,
// metrics and run telemetry as the gRPC service (civetweb underneath).
//
//   POST /get_reward[?profile=P&run_id=R&step=S]   OpenRLHF's remote reward (rewards.h)
//   POST /reward[?profile=P&run_id=R&step=S]       slime's remote_rm
//   POST /verify[?profile=P&run_id=R&step=S]       NeMo Gym's resources server (nemo_gym.h), and
//   POST /seed_session -> {}, GET / -> {"status": "ok"}, which its agents call too
//   GET  /healthz                                  "ok" while serving
//
// A malformed body gets 400 with {"error": "..."} naming what was wrong (/verify: 422 with
// {"detail": "..."}, as NeMo Gym's FastAPI servers answer); an unknown profile 404;
// a body over max_message_bytes, or a batch over a limit, 413; the listener keeps serving. With a
// run_id each request is one telemetry batch of the run (GetRunHealth): at `step` when given, else
// at the run's next step as this listener counts them.
//
// Connections are served by kHttpThreads civetweb threads (keep-alive connections hold one while
// open; idle ones are closed after 5 s); the bodies are parsed and scored on the server's call
// pool, as gRPC calls are.
//
//   absl::StatusOr<std::unique_ptr<HttpListener>> http = HttpListener::Start(options, context);
//   int port = (*http)->port();
//   (*http)->Stop();   // waits for the requests in flight
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "engine/admission.h"
#include "engine/config.h"
#include "engine/scoring_engine.h"
#include "engine/worker_pool.h"

struct mg_context;
struct mg_connection;

namespace rlscore::http {

// Thread-safe: requests are served on civetweb's threads; Stop() may be called from any thread.
class HttpListener {
 public:
  // Listens on options.http_address (host:port; port 0 picks one). `collaborators` supplies the
  // accuracy scorer, advantage backend, pool, metrics, telemetry and clock, `calls` runs the
  // requests' work, and `memory` admits them (admission.h: a body is charged JsonPeakBytes once
  // read); all must outlive the listener. Limits, profiles and health thresholds come
  // from `options`. UNAVAILABLE naming the address when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      const engine::ServerOptions& options, const engine::ScoringContext& collaborators,
      engine::WorkerPool* calls, engine::MemoryBudget* memory);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  int port() const { return port_; }

  // Stops accepting connections and returns when the requests in flight have been answered.
  // Idempotent.
  void Stop();

 private:
  enum class Protocol { kOpenRlhf, kSlime, kNemoGym };

  explicit HttpListener(const engine::ServerOptions& options) : options_(options) {}
  static int HandleReward(mg_connection* conn, void* protocol_listener);
  static int HandleHealth(mg_connection* conn, void* listener);
  static int HandleSeedSession(mg_connection* conn, void* listener);
  static int HandleRoot(mg_connection* conn, void* listener);
  int Serve(mg_connection* conn, Protocol protocol);
  // Parses and scores one body (on the call pool).
  // `reply` is the body to answer with when the status is OK.
  absl::Status Score(Protocol protocol, const std::string& body, const std::string& profile,
                     const std::string& run_id, const std::string& step, std::string* reply);
  // The step of a request of `run_id` that did not name one: one more than the last.
  int64_t NextStep(const std::string& run_id);

  const engine::ServerOptions options_;
  engine::ScoringContext context_{};
  engine::WorkerPool* calls_ = nullptr;
  engine::MemoryBudget* memory_ = nullptr;
  Mutex steps_mu_;
  absl::flat_hash_map<std::string, int64_t> next_step_ ABSL_GUARDED_BY(steps_mu_);
  uint64_t prompts_not_found_ ABSL_GUARDED_BY(steps_mu_) = 0;
  mg_context* civetweb_ = nullptr;
  int port_ = 0;
  std::once_flag stop_once_;
  // Handler callback data: which protocol a path speaks, and the listener.
  struct Route {
    HttpListener* listener;
    Protocol protocol;
  };
  Route openrlhf_{this, Protocol::kOpenRlhf};
  Route slime_{this, Protocol::kSlime};
  Route nemo_gym_{this, Protocol::kNemoGym};
};

}  // namespace rlscore::http
