#include "cli/serve.h"

#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/flags.h"
#include "common/log.h"
#include "engine/config.h"
#include "service/server.h"

namespace rlscore::cli {
namespace {

struct ServeFlags {
  engine::ServerOptions options = engine::DefaultServerOptions();
  bool print_config = false;
  bool help = false;
};

FlagSet MakeServeFlags(ServeFlags* f) {
  engine::ServerOptions& o = f->options;
  FlagSet flags("rlscore serve");
  auto str = [](std::string* out) {
    return [out](std::string_view v) {
      *out = std::string(v);
      return absl::OkStatus();
    };
  };
  flags.Add({"config", "FILE",
             "server configuration in protobuf text format (rlscore.config.v1.ServerConfig); "
             "flags override it",
             [](std::string_view) { return absl::OkStatus(); }});  // applied first, by RunServe
  flags.Add({"listen-address", "ADDR",
             "gRPC address: host:port, [::]:port or unix:/path (default 127.0.0.1:50051)",
             str(&o.listen_address)});
  flags.Add({"metrics-address", "ADDR",
             "Prometheus /metrics address, host:port; empty disables (default 127.0.0.1:9464)",
             str(&o.metrics_address)});
  flags.Add({"health-address", "ADDR",
             "a second gRPC listener that serves only grpc.health.v1, for probes that dial the "
             "Pod IP while the API stays on loopback or a unix socket, e.g. 0.0.0.0:8081; empty "
             "disables (default empty)",
             str(&o.health_address)});
  flags.Add({"tls-cert", "FILE", "PEM certificate chain: with --tls-key serves the API over TLS",
             str(&o.tls.cert_file)});
  flags.Add({"tls-key", "FILE", "PEM private key of --tls-cert", str(&o.tls.key_file)});
  flags.Add({"tls-client-ca", "FILE",
             "PEM CAs that verify client certificates (with --tls-cert and --tls-key)",
             str(&o.tls.client_ca_file)});
  flags.Add({"tls-require-client-cert", "",
             "mTLS: refuse clients without a certificate from --tls-client-ca",
             [&o](std::string_view v) { return ParseBool(v, &o.tls.require_client_cert); }});
  flags.Add({"http-address", "ADDR",
             "HTTP JSON listener for OpenRLHF (POST /get_reward) and slime (POST /reward), "
             "host:port; empty disables (default empty)",
             str(&o.http_address)});
  flags.Add({"max-message-bytes", "N", "largest request or response (default 536870912)",
             [&o](std::string_view v) { return ParseUint64(v, &o.limits.max_message_bytes); }});
  flags.Add(
      {"max-groups-per-request", "N", "most groups in one request (default 16777216)",
       [&o](std::string_view v) { return ParseUint32(v, &o.limits.max_groups_per_request); }});
  flags.Add({"max-group-size", "N", "most completions in one group (default 65536)",
             [&o](std::string_view v) { return ParseUint32(v, &o.limits.max_group_size); }});
  flags.Add({"max-completion-bytes", "N", "largest completion text (default 1048576)",
             [&o](std::string_view v) { return ParseUint64(v, &o.limits.max_completion_bytes); }});
  flags.Add(
      {"max-completions-per-request", "N",
       "most completions in one ScoreGroups (or items in one Score) request (default 262144)",
       [&o](std::string_view v) { return ParseUint32(v, &o.limits.max_completions_per_request); }});
  flags.Add({"memory-budget-bytes", "N",
             "memory the calls being handled may hold at once; a call that would exceed it is "
             "refused at once, retryably (default 2147483648)",
             [&o](std::string_view v) { return ParseUint64(v, &o.limits.memory_budget_bytes); }});
  flags.Add({"drain-timeout-secs", "N",
             "on SIGTERM, how long in-flight calls may finish before they are cancelled "
             "(default 30)",
             [&o](std::string_view v) {
               uint64_t secs = 0;
               absl::Status s = ParseUint64(v, &secs);
               if (s.ok()) o.drain_timeout = absl::Seconds(static_cast<int64_t>(secs));
               return s;
             }});
  flags.Add({"scoring-threads", "N", "threads that score completions; 0 = one per core (default 0)",
             [&o](std::string_view v) { return ParseUint32(v, &o.scoring_threads); }});
  flags.Add({"gpu", "MODE",
             "advantages on a GPU: off, auto (use one if the CUDA module and a device load, "
             "else the CPU) or require (refuse to start without one) (default auto)",
             [&o](std::string_view v) {
               o.gpu.mode = std::string(v);
               return absl::OkStatus();
             }});
  flags.Add({"gpu-module", "PATH",
             "the CUDA module to load (default: librlscore_gpu.so next to this binary)",
             [&o](std::string_view v) {
               o.gpu.module_path = std::string(v);
               return absl::OkStatus();
             }});
  flags.Add({"gpu-min-rewards", "N",
             "batches with fewer rewards are computed on the CPU, which is faster for them "
             "(default 1000000)",
             [&o](std::string_view v) { return ParseUint64(v, &o.gpu.min_rewards); }});
  flags.Add({"print-config", "", "print the effective configuration and exit",
             [f](std::string_view v) { return ParseBool(v, &f->print_config); }});
  flags.Add(
      {"help", "", "show this help", [f](std::string_view v) { return ParseBool(v, &f->help); }});
  return flags;
}

// Waits for SIGTERM or SIGINT (blocked by main()) and drains the server.
void DrainOnSignal(service::Server* server, absl::Duration grace) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  int received = 0;
  sigwait(&signals, &received);
  LogInfo(absl::StrCat(received == SIGTERM ? "SIGTERM" : "SIGINT",
                       ": refusing new calls; draining in-flight calls for up to ",
                       absl::FormatDuration(grace)));
  server->Shutdown(grace);
}

}  // namespace

int RunServe(std::span<const std::string> args) {
  ServeFlags f;
  FlagSet flags = MakeServeFlags(&f);
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(args);
  if (!parsed.ok()) {
    std::cerr << "rlscore serve: " << parsed.status().message() << "\n";
    return 2;
  }
  if (!parsed->positional().empty()) {
    std::cerr << "rlscore serve: unexpected argument \"" << parsed->positional().front()
              << "\" (see rlscore serve --help)\n";
    return 2;
  }
  // The file first, then every other flag on top of it. An error in a value the file set names
  // its line.
  engine::ConfigLocations in_file;
  if (std::optional<std::string> path = parsed->Get("config")) {
    absl::Status status = engine::ApplyConfigFile(*path, &f.options, &in_file);
    if (!status.ok()) {
      std::cerr << "rlscore serve: " << status.message() << "\n";
      return 2;
    }
  }
  const std::string_view config_flag[] = {"config"};
  absl::Status status = parsed->ApplyAll(config_flag);
  if (status.ok()) status = in_file.Locate(engine::ValidateServerOptions(f.options), f.options);
  if (!status.ok()) {
    std::cerr << "rlscore serve: " << status.message() << "\n";
    return 2;
  }
  if (f.help) {
    std::cout << flags.Usage();
    return 0;
  }
  if (f.print_config) {
    std::cout << engine::ToConfigText(f.options);
    return 0;
  }

  // Nothing of a caller's ever reaches the disk: a crash leaves no core file full of completions.
  const rlimit no_core{0, 0};
  if (setrlimit(RLIMIT_CORE, &no_core) != 0) LogWarning("cannot disable core dumps");

  absl::StatusOr<std::unique_ptr<service::Server>> server = service::Server::Start(f.options);
  if (!server.ok()) {
    LogError(absl::StrCat("cannot start: ", server.status().message()));
    return 1;
  }
  std::thread drainer(DrainOnSignal, server->get(), f.options.drain_timeout);
  (*server)->Wait();
  drainer.join();
  server->reset();
  LogInfo("stopped");
  return 0;
}

}  // namespace rlscore::cli
