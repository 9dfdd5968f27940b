#include "cli/health.h"

#include <grpcpp/grpcpp.h>

#include <iostream>

#include "cli/flags.h"
#include "service/health_check.h"

namespace rlscore::cli {

int RunHealthCommand(std::span<const std::string> args) {
  std::string address = "127.0.0.1:50051", service;
  uint64_t timeout_secs = 5;
  bool help = false;
  FlagSet flags("rlscore health");
  flags.Add({"address", "ADDR", "the server: host:port or unix:/path (default 127.0.0.1:50051)",
             [&](std::string_view v) {
               address = std::string(v);
               return absl::OkStatus();
             }});
  flags.Add({"service", "NAME",
             "the service to ask about: empty for the whole server (default), "
             "rlscore.v1.ScoringService, rlscore.gpu",
             [&](std::string_view v) {
               service = std::string(v);
               return absl::OkStatus();
             }});
  flags.Add({"timeout-secs", "N", "how long to wait for the answer (default 5)",
             [&](std::string_view v) { return ParseUint64(v, &timeout_secs); }});
  flags.Add(
      {"help", "", "show this help", [&](std::string_view v) { return ParseBool(v, &help); }});
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(args);
  absl::Status status = parsed.status();
  if (status.ok()) status = parsed->ApplyAll();
  if (status.ok() && !parsed->positional().empty()) {
    status = absl::InvalidArgumentError("unexpected argument \"" + parsed->positional()[0] + "\"");
  }
  if (status.ok() && (timeout_secs == 0 || timeout_secs > 3600)) {
    status = absl::InvalidArgumentError("--timeout-secs must be between 1 and 3600");
  }
  if (!status.ok()) {
    std::cerr << "rlscore health: " << status.message() << "\n";
    return 2;
  }
  if (help) {
    std::cout << flags.Usage();
    return 0;
  }

  const absl::StatusOr<service::HealthState> state =
      service::CheckHealth(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()),
                           service, absl::Seconds(static_cast<int64_t>(timeout_secs)));
  const std::string what = service.empty() ? address : address + " (" + service + ")";
  if (!state.ok()) {
    std::cerr << "rlscore health: " << what << ": " << state.status().message() << "\n";
    return 1;
  }
  std::cout << what << ": " << service::HealthStateName(*state) << "\n";
  return *state == service::HealthState::kServing ? 0 : 1;
}

}  // namespace rlscore::cli
