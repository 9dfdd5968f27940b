// The server's configuration: built-in defaults, an optional file in protobuf text format
// (proto/rlscore/config/v1/server_config.proto), then command-line flags, each layer overriding
// the one before.
//
//   ServerOptions options = DefaultServerOptions();
//   ConfigLocations in_file;
//   RLSCORE_RETURN_IF_ERROR(ApplyConfigFile("/etc/rlscore/server.textproto", &options, &in_file));
//   options.limits.max_group_size = 4096;   // a flag
//   RLSCORE_RETURN_IF_ERROR(in_file.Locate(ValidateServerOptions(options), options));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "advantage/advantage.h"
#include "engine/profiles.h"
#include "engine/run_health.h"

namespace rlscore::engine {

// Explicit limits (docs/SECURITY.md). A request over one gets RESOURCE_EXHAUSTED naming the limit;
// the server and every other request are unaffected.
struct Limits {
  uint64_t max_message_bytes = 512ull << 20;  // requests and responses
  uint32_t max_groups_per_request = 1u << 24;
  uint32_t max_group_size = 1u << 16;
  uint64_t max_completion_bytes = 1ull << 20;
  // Completions in one ScoreGroups request (all groups) or items in one Score request: bounds the
  // memory and the response of a call (about 1 KB of result per completion).
  uint32_t max_completions_per_request = 1u << 18;
  // Token ids of one completion, and tokens of one MonitorGeneration stream.
  uint32_t max_completion_tokens = 1u << 18;
  // References of one group or Score item, and the bytes of each.
  uint32_t max_references = 64;
  uint64_t max_reference_bytes = 16u << 10;
  // Unary calls being handled, queued or sending their answers at once (a call keeps its place
  // until gRPC has written its answer out, or the call is cancelled), and MonitorGeneration
  // streams open at once; past either the call is refused RESOURCE_EXHAUSTED at once (it holds no
  // memory).
  uint32_t max_concurrent_calls = 256;
  uint32_t max_streams = 1024;
  // Memory admission (admission.h): what the unary calls being handled may hold at once, each
  // charged the peak its request implies (request_cost.h: the request, its parsed form, the
  // answer); a call that would exceed it is refused RESOURCE_EXHAUSTED at once, retryably. Fits
  // a sidecar with a few GiB of memory; the largest message's ComputeAdvantages (512 MiB) needs
  // about 1.4 GiB.
  uint64_t memory_budget_bytes = 2ull << 30;
};

struct ServerOptions {
  // host:port, [::]:port or unix:/path. Port 0 picks a free port (see Server::port()).
  std::string listen_address = "127.0.0.1:50051";
  // host:port of the Prometheus endpoint; empty disables it.
  std::string metrics_address = "127.0.0.1:9464";
  // host:port of a second gRPC listener that serves only grpc.health.v1, for probes that dial an
  // address the API does not listen on (Kubernetes gRPC probes dial the Pod IP, while a sidecar's
  // API stays on 127.0.0.1 or a unix socket); empty disables it.
  std::string health_address;
  // host:port of the HTTP JSON listener (http/listener.h: OpenRLHF and slime remote
  // rewards); empty disables it.
  std::string http_address;
  // TLS on the API listener (not on the health-only one: kubelet probes speak plaintext).
  struct Tls {
    std::string cert_file;  // PEM; with key_file turns TLS on
    std::string key_file;
    std::string client_ca_file;        // PEM CAs that client certificates must chain to
    bool require_client_cert = false;  // mTLS: refuse clients without a valid certificate
    bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
  } tls;
  Limits limits;
  // SIGTERM: how long in-flight calls may take to finish before they are cancelled.
  absl::Duration drain_timeout = absl::Seconds(30);
  // For requests that leave advantage options unset, and for profiles that do.
  advantage::Options advantage;
  // Reward profiles by name; always holds "default" (the built-in reward, README "ScoreGroups").
  ProfileSet profiles = DefaultProfiles(advantage::Options{});
  // Threads that score completions; 0 means one per core.
  uint32_t scoring_threads = 0;
  // GetRunHealth's thresholds.
  HealthThresholds run_health;
  // The CUDA batch path (gpu/loader.h).
  struct Gpu {
    std::string mode = "auto";  // off | auto | require
    std::string module_path;    // empty: librlscore_gpu.so next to the binary
    // The measured crossover on an H200 host (docs/GPU.md).
    uint64_t min_rewards = 1000000;
  } gpu;
};

// The built-in configuration: what `rlscore serve` runs with when given nothing.
ServerOptions DefaultServerOptions();

// Where a config file gives each of its settings, by path: "limits.max_group_size",
// "profiles[1]" for an element of a list. With it, an error found once flags were applied on top
// of the file names the line that set the value.
class ConfigLocations {
 public:
  // Records that `where` ("server.textproto:3:3") gives `setting` the value `value` (as protobuf
  // text prints it; empty for a message or a list element, which Find does not compare).
  void Add(std::string setting, std::string where, std::string value);
  // Where the file gives `setting`, unless it gives none or `options` now holds another value
  // for it (a flag replaced it).
  std::optional<std::string> Find(std::string_view setting, const ServerOptions& options) const;
  // `status` with "where: " in front of its message when it is about a setting (SettingOf) that
  // Find locates; otherwise `status` as it is (OK stays OK).
  absl::Status Locate(const absl::Status& status, const ServerOptions& options) const;

 private:
  struct Setting {
    std::string where;
    std::string value;
  };
  absl::flat_hash_map<std::string, Setting> settings_;
};

// The setting an error of ApplyConfigText or ValidateServerOptions is about
// ("limits.max_group_size"), if it is about one.
std::optional<std::string> SettingOf(const absl::Status& status);

// Applies the text-format config in `text` on top of `*options`. `source` names it in errors,
// which carry the line and column: "server.textproto:3:7: ... no field named \"listen\"", and for
// a value that parses but is refused, the line of its setting ("server.textproto:5:1: profile
// \"p\": ..."). When `locations` is given, the file's settings are added to it.
absl::Status ApplyConfigText(std::string_view text, std::string_view source, ServerOptions* options,
                             ConfigLocations* locations = nullptr);

// Reads `path` and applies it as above. NOT_FOUND / PERMISSION_DENIED name the path.
absl::Status ApplyConfigFile(const std::string& path, ServerOptions* options,
                             ConfigLocations* locations = nullptr);

// Checks values no single field can check alone. INVALID_ARGUMENT naming the setting first, and
// carrying it (SettingOf) for ConfigLocations::Locate.
absl::Status ValidateServerOptions(const ServerOptions& options);

// The effective configuration in the file's text format (for `rlscore serve --print-config`).
std::string ToConfigText(const ServerOptions& options);

}  // namespace rlscore::engine
