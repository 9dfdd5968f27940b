#include "service/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "gpu/loader.h"
#include "http/listener.h"
#include "scorers/math/verifier.h"
#include "service/scoring_service.h"

namespace rlscore::service {
namespace {

constexpr char kServiceName[] = "rlscore.v1.ScoringService";
// A sidecar serves one trainer; a shared evaluation service a few dozen runs.
constexpr size_t kTrackedRuns = 64;
// Batches kept per run: enough for a trailing baseline over hundreds of steps.
constexpr size_t kTelemetryWindow = 512;

// Process-wide gRPC settings that must precede the first ServerBuilder.
void InitGrpcOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  });
}

// The advantage backend of options.gpu: the CPU, behind a dispatcher that sends large batches to
// the CUDA module when it loads and opens a device. --gpu=require turns a failure into an error.
absl::StatusOr<std::shared_ptr<advantage::Backend>> MakeAdvantageBackend(
    const engine::ServerOptions::Gpu& gpu_options, engine::Metrics* metrics) {
  absl::StatusOr<gpu::GpuMode> mode = gpu::ParseGpuMode(gpu_options.mode);
  if (!mode.ok()) return mode.status();
  std::unique_ptr<advantage::Backend> accelerated;
  if (*mode != gpu::GpuMode::kOff) {
    const std::string path =
        gpu_options.module_path.empty() ? gpu::DefaultModulePath() : gpu_options.module_path;
    absl::StatusOr<std::unique_ptr<advantage::Backend>> loaded = gpu::LoadCudaBackend(path);
    if (loaded.ok()) {
      accelerated = *std::move(loaded);
    } else if (*mode == gpu::GpuMode::kRequire) {
      return absl::FailedPreconditionError(
          absl::StrCat("--gpu=require, but ", loaded.status().message()));
    } else {
      LogWarning(absl::StrCat("GPU unavailable (", loaded.status().message(),
                              "); advantages are computed on the CPU"));
      metrics->RecordGpuFallback("unavailable");
    }
  }
  return std::make_shared<gpu::DispatchingBackend>(
      advantage::NewCpuBackend(), std::move(accelerated),
      gpu::DispatchOptions{
          .min_rewards = gpu_options.min_rewards,
          .on_fallback = [metrics](const absl::Status&) { metrics->RecordGpuFallback("error"); }});
}

// A PEM file's contents. Errors name the path and the option it came from.
absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat("tls.", Sv(option), ": cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::FailedPreconditionError(
        absl::StrCat("tls.", Sv(option), ": ", path, " holds no PEM block (-----BEGIN ...)"));
  }
  return text.str();
}

// Plaintext, TLS, or TLS that verifies (and with require_client_cert demands) client
// certificates against client_ca_file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ApiCredentials(
    const engine::ServerOptions::Tls& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  RLSCORE_ASSIGN_OR_RETURN(pair.cert_chain, ReadPem(tls.cert_file, "cert_file"));
  RLSCORE_ASSIGN_OR_RETURN(pair.private_key, ReadPem(tls.key_file, "key_file"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca_file.empty()) {
    RLSCORE_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(tls.client_ca_file, "client_ca_file"));
    ssl.client_certificate_request =
        tls.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const engine::ServerOptions& options,
                                                      ServerDependencies dependencies) {
  RLSCORE_RETURN_IF_ERROR(engine::ValidateServerOptions(options));
  InitGrpcOnce();

  std::unique_ptr<Server> server(new Server());
  server->metrics_ = std::make_unique<PrometheusMetrics>();
  if (dependencies.backend != nullptr) {
    server->backend_ = std::move(dependencies.backend);
  } else {
    absl::StatusOr<std::shared_ptr<advantage::Backend>> backend =
        MakeAdvantageBackend(options.gpu, server->metrics_.get());
    if (!backend.ok()) return backend.status();
    server->backend_ = *std::move(backend);
  }
  server->metrics_->SetBackend(server->backend_->Name());
  server->accuracy_ =
      dependencies.accuracy != nullptr
          ? std::move(dependencies.accuracy)
          : std::shared_ptr<scorers::AccuracyScorer>(scorers::math::NewAccuracyScorer());
  server->pool_ = std::make_unique<engine::WorkerPool>(options.scoring_threads);
  server->calls_ = std::make_unique<engine::WorkerPool>(options.scoring_threads);
  server->telemetry_ = std::make_unique<engine::RunTelemetry>(kTrackedRuns, kTelemetryWindow);
  server->memory_ = std::make_unique<engine::MemoryBudget>(options.limits.memory_budget_bytes);
  server->metrics_->SetMemoryBudget(options.limits.memory_budget_bytes);
  server->service_ = std::make_unique<ScoringService>(
      options, server->backend_.get(), server->metrics_.get(),
      dependencies.clock != nullptr ? dependencies.clock : &RealClock(), server->accuracy_.get(),
      server->pool_.get(), server->telemetry_.get(), server->calls_.get(), server->memory_.get());

  // Metrics first: a port clash there should not leave a half-started gRPC server behind.
  if (!options.metrics_address.empty()) {
    try {
      server->exposer_ = std::make_unique<prometheus::Exposer>(options.metrics_address);
    } catch (const std::exception& e) {  // prometheus-cpp reports a failed bind by throwing
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", options.metrics_address, ": ", e.what()));
    }
    const std::shared_ptr<prometheus::Collectable> registry = server->metrics_->registry();
    server->exposer_->RegisterCollectable(registry);
    const std::vector<int> ports = server->exposer_->GetListeningPorts();
    server->metrics_port_ = ports.empty() ? 0 : ports.front();
  }

  // The HTTP listener before gRPC too, for the same reason.
  if (!options.http_address.empty()) {
    absl::StatusOr<std::unique_ptr<http::HttpListener>> http = http::HttpListener::Start(
        options,
        engine::ScoringContext{
            .limits = nullptr,
            .profiles = nullptr,
            .accuracy = server->accuracy_.get(),
            .backend = server->backend_.get(),
            .pool = server->pool_.get(),
            .metrics = server->metrics_.get(),
            .telemetry = server->telemetry_.get(),
            .health = nullptr,
            .clock = dependencies.clock != nullptr ? dependencies.clock : &RealClock(),
            .keep_going = nullptr},
        server->calls_.get(), server->memory_.get());
    if (!http.ok()) return http.status();
    server->http_ = *std::move(http);
    server->http_port_ = server->http_->port();
  }

  RLSCORE_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                           ApiCredentials(options.tls));
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(options.listen_address, credentials, &selected_port);
  const int max_message = static_cast<int>(options.limits.max_message_bytes);
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  // gRPC sets SO_REUSEPORT by default: a second rlscore on the same port would then share it
  // silently instead of failing to start.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Trainers send megabytes per call: a large initial stream window lets a whole batch arrive
  // without waiting on HTTP/2 flow-control round trips (the default is 64 KiB).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  // Streams one connection may hold open; the server-wide bounds are max_concurrent_calls and
  // max_streams.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 1024);
  builder.RegisterService(server->service_.get());
  server->grpc_server_ = builder.BuildAndStart();
  const bool is_unix = absl::StartsWith(options.listen_address, "unix:");
  if (server->grpc_server_ == nullptr || (!is_unix && selected_port == 0)) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen_address,
                                               ": the address is in use, invalid or not allowed"));
  }
  server->port_ = is_unix ? 0 : selected_port;
  if (is_unix) {
    // gRPC leaves the socket 0755 (umask applied), and connecting needs write permission: let
    // the group connect too, so a trainer that shares the pod's fsGroup but not our uid can.
    const std::string path = options.listen_address.substr(std::string_view("unix:").size());
    if (chmod(path.c_str(), 0660) != 0) {
      LogWarning(absl::StrCat("cannot make ", path, " group-writable (", std::strerror(errno),
                              "): only uid ", getuid(), " can connect"));
    }
  }

  // The probe listener last, so it never says SERVING for an API that is not listening yet.
  if (!options.health_address.empty()) {
    grpc::ServerBuilder probe;
    probe.AddListeningPort(options.health_address, grpc::InsecureServerCredentials(),
                           &server->health_port_);
    probe.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    server->health_server_ = probe.BuildAndStart();
    if (server->health_server_ == nullptr || server->health_port_ == 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot serve health checks on ", options.health_address,
                       ": the address is in use, invalid or not allowed"));
    }
  }

  for (grpc::Server* s : {server->grpc_server_.get(), server->health_server_.get()}) {
    if (s == nullptr) continue;
    grpc::HealthCheckServiceInterface* health = s->GetHealthCheckService();
    health->SetServingStatus(true);
    health->SetServingStatus(kServiceName, true);
    // A probe of "rlscore.gpu" says whether advantages can use a GPU (SERVING) or only the CPU.
    health->SetServingStatus(std::string(kGpuHealthName), server->backend_->Name() == "cuda");
  }

  LogInfo(absl::StrCat(
      "serving rlscore.v1 on ", options.listen_address,
      is_unix ? "" : absl::StrCat(" (port ", server->port_, ")"), "; metrics on ",
      options.metrics_address.empty()
          ? std::string("(disabled)")
          : absl::StrCat(options.metrics_address, " (port ", server->metrics_port_, ")"),
      options.http_address.empty()
          ? std::string()
          : absl::StrCat("; http on ", options.http_address, " (port ", server->http_port_, ")"),
      options.health_address.empty() ? std::string()
                                     : absl::StrCat("; health checks on ", options.health_address,
                                                    " (port ", server->health_port_, ")"),
      "; advantage backend ", Sv(server->backend_->Name()),
      !options.tls.enabled()                ? "; plaintext (no TLS)"
      : options.tls.require_client_cert     ? "; TLS, client certificates required (mTLS)"
      : !options.tls.client_ca_file.empty() ? "; TLS, client certificates verified when sent"
                                            : "; TLS"));
  return server;
}

Server::~Server() { Shutdown(absl::ZeroDuration()); }

void Server::Shutdown(absl::Duration grace) {
  std::call_once(shutdown_once_, [&] {
    if (grpc_server_ == nullptr) return;
    // Health first, so load balancers and probes stop sending before the listener closes; the
    // probe listener keeps answering NOT_SERVING until the drain is over.
    grpc_server_->GetHealthCheckService()->Shutdown();
    if (health_server_ != nullptr) health_server_->GetHealthCheckService()->Shutdown();
    // The HTTP listener stops accepting and answers what it has in flight.
    if (http_ != nullptr) http_->Stop();
    // New calls are refused UNAVAILABLE by our handlers while gRPC hands over what it has already
    // received (under load some calls arrive but wait for a handler); once nothing more is being
    // refused for 200 ms (at most 2 s, within the grace), gRPC's own shutdown closes the door.
    service_->StartDraining();
    const absl::Time quiet_by = absl::Now() + std::min(grace, absl::Seconds(2));
    for (uint64_t seen = service_->refused_while_draining(); absl::Now() < quiet_by;) {
      absl::SleepFor(absl::Milliseconds(200));
      const uint64_t now = service_->refused_while_draining();
      if (now == seen) break;
      seen = now;
    }
    // gRPC 1.51 closes a connection as soon as its last call ends once its shutdown has begun,
    // and a connection closed with the client's frames unread is reset: the client loses the end
    // of a large answer still on its way ("recvmsg:Connection reset by peer"). So the answers in
    // flight are written out first, within the grace. A connection with no call left when
    // gRPC's shutdown begins is closed after its GOAWAY exchange with the client.
    const absl::Time deadline = absl::Now() + grace;
    service_->WaitForAnswers(deadline);
    grpc_server_->Shutdown(absl::ToChronoTime(deadline));
    // Calls run on our pool answer after their handlers returned; gRPC does not wait for them.
    // They stop between groups once the grace deadline has cancelled them.
    service_->WaitForCalls();
    grpc_server_->Wait();
    // Join the call threads now, while everything their last instructions touch (the service, the
    // gRPC server) is still alive.
    calls_.reset();
    exposer_.reset();
    if (health_server_ != nullptr) health_server_->Shutdown(std::chrono::system_clock::now());
  });
}

void Server::Wait() {
  if (grpc_server_ != nullptr) grpc_server_->Wait();
}

}  // namespace rlscore::service
