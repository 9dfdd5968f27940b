#include "engine/config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "engine/advantage_mapping.h"
#include "rlscore/config/v1/server_config.pb.h"

namespace rlscore::engine {
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

// The effective configuration as the file's message (ToConfigText prints it).
config::v1::ServerConfig ToConfigProto(const ServerOptions& options);

// The payload that names the setting an error is about (SettingOf).
constexpr std::string_view kSettingPayload = "rlscore.dev/config-setting";

absl::Status SettingError(std::string_view setting, std::string_view message) {
  absl::Status status = absl::InvalidArgumentError(Sv(message));
  status.SetPayload(Sv(kSettingPayload), absl::Cord(Sv(setting)));
  return status;
}

// The value of the singular field at `path` ("limits.max_group_size") of `root` as protobuf text
// prints it; nullopt when the path names no such field or the field is not set.
std::optional<std::string> PrintedValue(const pb::Message& root, std::string_view path) {
  const pb::Message* message = &root;
  const std::vector<std::string> parts = absl::StrSplit(Sv(path), '.');
  for (size_t i = 0; i < parts.size(); ++i) {
    const pb::FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(parts[i]);
    const pb::Reflection* reflection = message->GetReflection();
    if (field == nullptr || field->is_repeated() || !reflection->HasField(*message, field)) {
      return std::nullopt;
    }
    if (i + 1 == parts.size()) {
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) return std::nullopt;
      std::string value;
      pb::TextFormat::PrintFieldValueToString(*message, field, -1, &value);
      return value;
    }
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) return std::nullopt;
    message = &reflection->GetMessage(*message, field);
  }
  return std::nullopt;
}

// Adds every setting of `message` (parsed from `source`, with its positions in `tree`) to
// `locations`, under `prefix`.
void RecordSettings(const pb::Message& message, const pb::TextFormat::ParseInfoTree& tree,
                    std::string_view source, const std::string& prefix,
                    ConfigLocations* locations) {
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const bool nested = field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int index = field->is_repeated() ? i : -1;
      const pb::TextFormat::ParseLocation at = tree.GetLocation(field, index);
      if (at.line < 0) continue;  // set by the parser without text of its own
      const std::string setting = field->is_repeated()
                                      ? absl::StrCat(prefix, field->name(), "[", i, "]")
                                      : absl::StrCat(prefix, field->name());
      std::string value;
      if (!nested && !field->is_repeated()) {
        pb::TextFormat::PrintFieldValueToString(message, field, -1, &value);
      }
      locations->Add(setting, absl::StrCat(Sv(source), ":", at.line + 1, ":", at.column + 1),
                     value);
      const pb::TextFormat::ParseInfoTree* inner =
          nested ? tree.GetTreeForNested(field, index) : nullptr;
      if (inner != nullptr) {
        const pb::Message& child = field->is_repeated()
                                       ? reflection->GetRepeatedMessage(message, field, i)
                                       : reflection->GetMessage(message, field);
        RecordSettings(child, *inner, source, setting + ".", locations);
      }
    }
  }
}

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
  if (limits.has_memory_budget_bytes()) {
    options->limits.memory_budget_bytes = limits.memory_budget_bytes();
  }
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
    if (!status.ok())
      return SettingError("advantage", absl::StrCat("advantage: ", status.message()));
    // The built-in default profile follows the server's advantage defaults.
    options->profiles = DefaultProfiles(options->advantage);
  }
  for (int i = 0; i < file.profiles_size(); ++i) {
    const absl::Status added = options->profiles.Add(file.profiles(i), options->advantage);
    if (!added.ok()) {
      return SettingError(absl::StrCat("profiles[", i, "]"),
                          std::string_view(added.message().data(), added.message().size()));
    }
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

absl::Status ApplyConfigText(std::string_view text, std::string_view source, ServerOptions* options,
                             ConfigLocations* locations) {
  config::v1::ServerConfig file;
  FirstErrorCollector errors(source);
  pb::TextFormat::ParseInfoTree tree;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(std::string(text), &file)) {
    return absl::InvalidArgumentError(errors.error().empty()
                                          ? absl::StrCat(Sv(source), ": not a valid ServerConfig")
                                          : errors.error());
  }
  ConfigLocations own;
  ConfigLocations* in_file = locations != nullptr ? locations : &own;
  RecordSettings(file, tree, source, "", in_file);
  const absl::Status status = Apply(file, options);
  if (status.ok()) return absl::OkStatus();
  // The line of the refused setting (no flag has been applied yet), else the file.
  const absl::Status located = in_file->Locate(status, *options);
  if (located.message() != status.message()) return located;
  return absl::InvalidArgumentError(absl::StrCat(Sv(source), ": ", status.message()));
}

absl::Status ApplyConfigFile(const std::string& path, ServerOptions* options,
                             ConfigLocations* locations) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string reason =
        absl::StrCat("cannot read config file ", path, ": ", std::strerror(err));
    return err == EACCES ? absl::PermissionDeniedError(reason) : absl::NotFoundError(reason);
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ApplyConfigText(text.str(), path, options, locations);
}

absl::Status ValidateServerOptions(const ServerOptions& options) {
  if (options.listen_address.empty()) {
    return SettingError("listen_address", "listen_address is empty: give host:port or unix:/path");
  }
  const Limits& limits = options.limits;
  if (limits.max_message_bytes == 0 || limits.max_message_bytes > INT_MAX) {
    return SettingError(
        "limits.max_message_bytes",
        absl::StrCat("limits.max_message_bytes is ", limits.max_message_bytes,
                     ": it must be between 1 and ", INT_MAX, " (gRPC's largest message)"));
  }
  const std::pair<const char*, uint64_t> at_least_one[] = {
      {"max_groups_per_request", limits.max_groups_per_request},
      {"max_group_size", limits.max_group_size},
      {"max_completion_bytes", limits.max_completion_bytes},
      {"max_completions_per_request", limits.max_completions_per_request},
      {"max_completion_tokens", limits.max_completion_tokens},
      {"max_references", limits.max_references},
      {"max_reference_bytes", limits.max_reference_bytes},
      {"max_concurrent_calls", limits.max_concurrent_calls},
      {"max_streams", limits.max_streams},
      {"memory_budget_bytes", limits.memory_budget_bytes},
  };
  for (const auto& [name, value] : at_least_one) {
    if (value == 0) {
      const std::string setting = absl::StrCat("limits.", name);
      return SettingError(setting, absl::StrCat(setting, " must be at least 1"));
    }
  }
  if (options.drain_timeout < absl::ZeroDuration() || options.drain_timeout > absl::Hours(24)) {
    return SettingError("drain_timeout_secs", "drain_timeout_secs must be between 0 and 86400");
  }
  if (options.scoring_threads > 1024) {
    return SettingError("scoring_threads", absl::StrCat("scoring_threads is ",
                                                        options.scoring_threads, ": at most 1024"));
  }
  const ServerOptions::Tls& tls = options.tls;
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return SettingError(tls.cert_file.empty() ? "tls.key_file" : "tls.cert_file",
                        "tls: cert_file (--tls-cert) and key_file (--tls-key) go together");
  }
  if (!tls.enabled() && (!tls.client_ca_file.empty() || tls.require_client_cert)) {
    return SettingError(
        tls.client_ca_file.empty() ? "tls.require_client_cert" : "tls.client_ca_file",
        "tls: client_ca_file and require_client_cert need cert_file and key_file");
  }
  if (tls.require_client_cert && tls.client_ca_file.empty()) {
    return SettingError(
        "tls.require_client_cert",
        "tls.require_client_cert needs client_ca_file (--tls-client-ca) to verify clients with");
  }
  if (options.gpu.mode != "off" && options.gpu.mode != "auto" && options.gpu.mode != "require") {
    return SettingError("gpu.mode",
                        absl::StrCat("gpu.mode (--gpu) must be off, auto or require, not \"",
                                     options.gpu.mode, "\""));
  }
  if (const std::string bad = ValidateHealthThresholds(options.run_health); !bad.empty()) {
    // Its message starts with the setting: "run_health.recent_batches must be ...".
    return SettingError(bad.substr(0, bad.find(' ')), bad);
  }
  const double tau = options.advantage.zero_variance_threshold;
  if (!std::isfinite(tau) || tau < 0) {
    return SettingError(
        "advantage.zero_variance_threshold",
        absl::StrCat("advantage.zero_variance_threshold must be finite and >= 0, got ", tau));
  }
  return absl::OkStatus();
}

std::optional<std::string> SettingOf(const absl::Status& status) {
  const auto setting = status.GetPayload(Sv(kSettingPayload));
  if (!setting.has_value()) return std::nullopt;
  return std::string(*setting);
}

void ConfigLocations::Add(std::string setting, std::string where, std::string value) {
  settings_[std::move(setting)] = Setting{std::move(where), std::move(value)};
}

std::optional<std::string> ConfigLocations::Find(std::string_view setting,
                                                 const ServerOptions& options) const {
  const auto it = settings_.find(Sv(setting));
  if (it == settings_.end()) return std::nullopt;
  if (!it->second.value.empty()) {
    const std::optional<std::string> now = PrintedValue(ToConfigProto(options), setting);
    if (now.has_value() && *now != it->second.value) return std::nullopt;
  }
  return it->second.where;
}

absl::Status ConfigLocations::Locate(const absl::Status& status,
                                     const ServerOptions& options) const {
  const std::optional<std::string> setting = SettingOf(status);
  if (!setting.has_value()) return status;
  const std::optional<std::string> where = Find(*setting, options);
  if (!where.has_value()) return status;
  absl::Status located(status.code(), absl::StrCat(*where, ": ", status.message()));
  located.SetPayload(Sv(kSettingPayload), absl::Cord(*setting));
  return located;
}

namespace {

config::v1::ServerConfig ToConfigProto(const ServerOptions& options) {
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
  limits->set_memory_budget_bytes(options.limits.memory_budget_bytes);
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
  return file;
}

}  // namespace

std::string ToConfigText(const ServerOptions& options) {
  std::string text;
  pb::TextFormat::PrintToString(ToConfigProto(options), &text);
  return text;
}

}  // namespace rlscore::engine
