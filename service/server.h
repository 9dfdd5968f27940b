// The rlscore gRPC server: rlscore.v1.ScoringService, grpc.health.v1, server reflection, and the
// Prometheus endpoint on its own port, and optionally the HTTP JSON listener for OpenRLHF and
// slime.
//
//   engine::ServerOptions options = engine::DefaultServerOptions();
//   options.listen_address = "127.0.0.1:0";          // tests: any free port
//   absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
//   if (!server.ok()) return server.status();
//   int port = (*server)->port();
//   ...
//   (*server)->Shutdown(absl::Seconds(30));          // drain, then cancel what is left
//
// This file and scoring_service.cc are the only ones that include gRPC's server headers.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "advantage/advantage.h"
#include "common/clock.h"
#include "engine/admission.h"
#include "engine/config.h"
#include "engine/metrics.h"
#include "engine/run_telemetry.h"
#include "engine/worker_pool.h"
#include "scorers/accuracy.h"
#include "service/prometheus_metrics.h"

namespace grpc {
class Server;
}
namespace prometheus {
class Exposer;
}

namespace rlscore::http {
class HttpListener;
}  // namespace rlscore::http

namespace rlscore::service {

class ScoringService;

// The grpc.health.v1 service name whose status says whether advantages can use a GPU: SERVING
// with the CUDA backend, NOT_SERVING when only the CPU computes them.
inline constexpr std::string_view kGpuHealthName = "rlscore.gpu";

// What a server is built from, injectable so tests can script it (Envoy style).
struct ServerDependencies {
  // Computes advantages; null means the CPU backend.
  std::shared_ptr<advantage::Backend> backend;
  // Decides whether callers' deadlines have passed; null means RealClock(). Must outlive the
  // server.
  const Clock* clock = nullptr;
  // Grades answers; null means the math verifier (scorers/math/verifier.h).
  std::shared_ptr<scorers::AccuracyScorer> accuracy;
};

// Thread-safety: Shutdown() and Wait() may be called from any thread, concurrently.
class Server {
 public:
  // Binds, starts serving and marks health SERVING. Errors: INVALID_ARGUMENT for bad options,
  // UNAVAILABLE when an address cannot be bound (naming it).
  static absl::StatusOr<std::unique_ptr<Server>> Start(const engine::ServerOptions& options,
                                                       ServerDependencies dependencies = {});

  // Shuts down with no grace if Shutdown() was not called.
  ~Server();

  // The bound gRPC port (the chosen one when the address asked for port 0); 0 for unix: sockets.
  int port() const { return port_; }
  // The bound metrics port; 0 when metrics are disabled.
  int metrics_port() const { return metrics_port_; }
  // The bound port of the HTTP JSON listener; 0 when it is disabled.
  int http_port() const { return http_port_; }
  // The bound port of the health-only listener; 0 when it is disabled.
  int health_port() const { return health_port_; }
  PrometheusMetrics& metrics() { return *metrics_; }
  // Per-run telemetry recorded from ScoreGroups requests that carry a run_id.
  const engine::RunTelemetry& telemetry() const { return *telemetry_; }
  std::string_view backend_name() const { return backend_->Name(); }

  // Marks health NOT_SERVING, stops accepting calls, lets in-flight calls finish for up to
  // `grace`, then cancels the rest. Returns when every call is done. Idempotent.
  void Shutdown(absl::Duration grace);

  // Blocks until Shutdown() has completed.
  void Wait();

 private:
  Server() = default;

  std::shared_ptr<advantage::Backend> backend_;
  std::unique_ptr<PrometheusMetrics> metrics_;
  std::shared_ptr<scorers::AccuracyScorer> accuracy_;
  std::unique_ptr<engine::WorkerPool> pool_;      // scores the groups of a call in parallel
  std::unique_ptr<engine::WorkerPool> calls_;     // runs the calls themselves, off gRPC's threads
  std::unique_ptr<engine::MemoryBudget> memory_;  // admits gRPC and HTTP calls alike
  std::unique_ptr<engine::RunTelemetry> telemetry_;
  std::unique_ptr<ScoringService> service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<http::HttpListener> http_;
  // Serves only grpc.health.v1 (options.health_address), mirroring grpc_server_'s statuses.
  std::unique_ptr<grpc::Server> health_server_;
  int port_ = 0;
  int metrics_port_ = 0;
  int http_port_ = 0;
  int health_port_ = 0;
  std::once_flag shutdown_once_;
};

}  // namespace rlscore::service
