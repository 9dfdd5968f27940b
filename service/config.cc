#include "service/config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "rlscore/config/v1/server_config.pb.h"
#include "service/advantage_mapping.h"

namespace rlscore::service {
namespace {

namespace pb = ::google::protobuf;

// Keeps the first parse error with its position (1-based, as editors show them).
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(std::string_view source) : source_(source) {}

  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (error_.empty())
      error_ = absl::StrCat(source_, ":", line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}

  const std::string& error() const { return error_; }

 private:
  std::string source_;
  std::string error_;
};

// The fields of HealthThresholds, which the file's RunHealthThresholds names the same: one list
// for reading and writing the file.
#define RLSCORE_RUN_HEALTH_FIELDS(X)   \
  X(recent_batches)                    \
  X(baseline_batches)                  \
  X(min_baseline_batches)              \
  X(zero_variance_batch_warn)          \
  X(zero_variance_recent_warn)         \
  X(zero_variance_recent_critical)     \
  X(mean_length_growth_warn)           \
  X(mean_length_growth_critical)       \
  X(max_length_growth_warn)            \
  X(max_length_growth_critical)        \
  X(truncation_warn)                   \
  X(truncation_critical)               \
  X(repetition_warn)                   \
  X(repetition_critical)               \
  X(format_without_accuracy_rise_warn) \
  X(format_without_accuracy_rise_critical)

// Every run_health field of the file that is set, over the defaults.
void ApplyRunHealth(const config::v1::RunHealthThresholds& in, HealthThresholds* t) {
#define RLSCORE_APPLY(field) \
  if (in.has_##field()) t->field = in.field();
  RLSCORE_RUN_HEALTH_FIELDS(RLSCORE_APPLY)
#undef RLSCORE_APPLY
}

void RunHealthToProto(const HealthThresholds& t, config::v1::RunHealthThresholds* out) {
#define RLSCORE_SET(field) out->set_##field(t.field);
  RLSCORE_RUN_HEALTH_FIELDS(RLSCORE_SET)
#undef RLSCORE_SET
}

#undef RLSCORE_RUN_HEALTH_FIELDS

absl::Status Apply(const config::v1::ServerConfig& file, ServerOptions* options) {
  if (file.has_listen_address()) options->listen_address = file.listen_address();
  if (file.has_metrics_address()) options->metrics_address = file.metrics_address();
  if (file.has_http_address()) options->http_address = file.http_address();
  if (file.has_health_address()) options->health_address = file.health_address();
  if (file.has_drain_timeout_secs()) {
    options->drain_timeout = absl::Seconds(file.drain_timeout_secs());
  }
  const config::v1::Limits& limits = file.limits();
  if (limits.has_max_message_bytes())
    options->limits.max_message_bytes = limits.max_message_bytes();
  if (limits.has_max_groups_per_request()) {
    options->limits.max_groups_per_request = limits.max_groups_per_request();
  }
  if (limits.has_max_group_size()) options->limits.max_group_size = limits.max_group_size();
  if (limits.has_max_completions_per_request()) {
    options->limits.max_completions_per_request = limits.max_completions_per_request();
  }
  if (limits.has_max_completion_bytes()) {
    options->limits.max_completion_bytes = limits.max_completion_bytes();
  }
  if (limits.has_max_completion_tokens()) {
    options->limits.max_completion_tokens = limits.max_completion_tokens();
  }
  if (limits.has_max_references()) options->limits.max_references = limits.max_references();
  if (limits.has_max_reference_bytes()) {
    options->limits.max_reference_bytes = limits.max_reference_bytes();
  }
  if (limits.has_max_concurrent_calls()) {
    options->limits.max_concurrent_calls = limits.max_concurrent_calls();
  }
  if (limits.has_max_streams()) options->limits.max_streams = limits.max_streams();
  if (file.has_tls()) {
    const config::v1::Tls& tls = file.tls();
    if (tls.has_cert_file()) options->tls.cert_file = tls.cert_file();
    if (tls.has_key_file()) options->tls.key_file = tls.key_file();
    if (tls.has_client_ca_file()) options->tls.client_ca_file = tls.client_ca_file();
    if (tls.has_require_client_cert()) {
      options->tls.require_client_cert = tls.require_client_cert();
    }
  }
  if (file.has_advantage()) {
    absl::Status status = ApplyAdvantageOptions(file.advantage(), &options->advantage);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("advantage: ", status.message()));
    }
    // The built-in default profile follows the server's advantage defaults.
    options->profiles = DefaultProfiles(options->advantage);
  }
  for (const config::v1::Profile& profile : file.profiles()) {
    RLSCORE_RETURN_IF_ERROR(options->profiles.Add(profile, options->advantage));
  }
  if (file.has_scoring_threads()) options->scoring_threads = file.scoring_threads();
  if (file.gpu().has_mode()) options->gpu.mode = file.gpu().mode();
  if (file.gpu().has_module_path()) options->gpu.module_path = file.gpu().module_path();
  if (file.gpu().has_min_rewards()) options->gpu.min_rewards = file.gpu().min_rewards();
  if (file.has_run_health()) ApplyRunHealth(file.run_health(), &options->run_health);
  return absl::OkStatus();
}

}  // namespace

ServerOptions DefaultServerOptions() { return ServerOptions{}; }

absl::Status ApplyConfigText(std::string_view text, std::string_view source,
                             ServerOptions* options) {
  config::v1::ServerConfig file;
  FirstErrorCollector errors(source);
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &file)) {
    return absl::InvalidArgumentError(errors.error().empty()
                                          ? absl::StrCat(Sv(source), ": not a valid ServerConfig")
                                          : errors.error());
  }
  absl::Status status = Apply(file, options);
  if (!status.ok())
    return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", status.message()));
  return absl::OkStatus();
}

absl::Status ApplyConfigFile(const std::string& path, ServerOptions* options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string reason =
        absl::StrCat("cannot read config file ", path, ": ", std::strerror(err));
    return err == EACCES ? absl::PermissionDeniedError(reason) : absl::NotFoundError(reason);
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ApplyConfigText(text.str(), path, options);
}

absl::Status ValidateServerOptions(const ServerOptions& options) {
  if (options.listen_address.empty()) {
    return absl::InvalidArgumentError("listen_address is empty: give host:port or unix:/path");
  }
  if (options.limits.max_message_bytes == 0 || options.limits.max_message_bytes > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("limits.max_message_bytes is ", options.limits.max_message_bytes,
                     ": it must be between 1 and ", INT_MAX, " (gRPC's largest message)"));
  }
  if (options.limits.max_groups_per_request == 0) {
    return absl::InvalidArgumentError("limits.max_groups_per_request must be at least 1");
  }
  if (options.limits.max_group_size == 0) {
    return absl::InvalidArgumentError("limits.max_group_size must be at least 1");
  }
  if (options.limits.max_completion_bytes == 0) {
    return absl::InvalidArgumentError("limits.max_completion_bytes must be at least 1");
  }
  if (options.drain_timeout < absl::ZeroDuration() || options.drain_timeout > absl::Hours(24)) {
    return absl::InvalidArgumentError("drain_timeout_secs must be between 0 and 86400");
  }
  if (options.scoring_threads > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("scoring_threads is ", options.scoring_threads, ": at most 1024"));
  }
  if (options.limits.max_completions_per_request == 0) {
    return absl::InvalidArgumentError("limits.max_completions_per_request must be at least 1");
  }
  if (options.limits.max_completion_tokens == 0 || options.limits.max_references == 0 ||
      options.limits.max_reference_bytes == 0 || options.limits.max_concurrent_calls == 0 ||
      options.limits.max_streams == 0) {
    return absl::InvalidArgumentError(
        "limits.max_completion_tokens, max_references, max_reference_bytes, "
        "max_concurrent_calls and max_streams must each be at least 1");
  }
  if (options.tls.cert_file.empty() != options.tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls: cert_file (--tls-cert) and key_file (--tls-key) go together");
  }
  if (!options.tls.enabled() &&
      (!options.tls.client_ca_file.empty() || options.tls.require_client_cert)) {
    return absl::InvalidArgumentError(
        "tls: client_ca_file and require_client_cert need cert_file and key_file");
  }
  if (options.tls.require_client_cert && options.tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "tls.require_client_cert needs client_ca_file (--tls-client-ca) to verify clients with");
  }
  if (options.gpu.mode != "off" && options.gpu.mode != "auto" && options.gpu.mode != "require") {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu.mode (--gpu) must be off, auto or require, not \"", options.gpu.mode, "\""));
  }
  if (const std::string bad = ValidateHealthThresholds(options.run_health); !bad.empty()) {
    return absl::InvalidArgumentError(bad);
  }
  const double tau = options.advantage.zero_variance_threshold;
  if (!std::isfinite(tau) || tau < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("advantage.zero_variance_threshold must be finite and >= 0, got ", tau));
  }
  return absl::OkStatus();
}

std::string ToConfigText(const ServerOptions& options) {
  config::v1::ServerConfig file;
  file.set_listen_address(options.listen_address);
  file.set_metrics_address(options.metrics_address);
  file.set_http_address(options.http_address);
  file.set_health_address(options.health_address);
  file.set_drain_timeout_secs(static_cast<uint32_t>(absl::ToInt64Seconds(options.drain_timeout)));
  config::v1::Limits* limits = file.mutable_limits();
  limits->set_max_message_bytes(options.limits.max_message_bytes);
  limits->set_max_groups_per_request(options.limits.max_groups_per_request);
  limits->set_max_group_size(options.limits.max_group_size);
  limits->set_max_completion_bytes(options.limits.max_completion_bytes);
  limits->set_max_completions_per_request(options.limits.max_completions_per_request);
  limits->set_max_completion_tokens(options.limits.max_completion_tokens);
  limits->set_max_references(options.limits.max_references);
  limits->set_max_reference_bytes(options.limits.max_reference_bytes);
  limits->set_max_concurrent_calls(options.limits.max_concurrent_calls);
  limits->set_max_streams(options.limits.max_streams);
  if (options.tls.enabled()) {
    config::v1::Tls* tls = file.mutable_tls();
    tls->set_cert_file(options.tls.cert_file);
    tls->set_key_file(options.tls.key_file);
    if (!options.tls.client_ca_file.empty()) tls->set_client_ca_file(options.tls.client_ca_file);
    tls->set_require_client_cert(options.tls.require_client_cert);
  }
  AdvantageOptionsToProto(options.advantage, file.mutable_advantage());
  for (const auto& [name, profile] : options.profiles.all()) {
    ProfileToProto(profile, file.add_profiles());
  }
  file.set_scoring_threads(options.scoring_threads);
  file.mutable_gpu()->set_mode(options.gpu.mode);
  if (!options.gpu.module_path.empty())
    file.mutable_gpu()->set_module_path(options.gpu.module_path);
  file.mutable_gpu()->set_min_rewards(options.gpu.min_rewards);
  RunHealthToProto(options.run_health, file.mutable_run_health());
  std::string text;
  pb::TextFormat::PrintToString(file, &text);
  return text;
}

}  // namespace rlscore::service
