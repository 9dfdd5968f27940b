// Reward profiles as the service holds them: the scorers' Profile, the advantage options that go
// with it, and the hash every response carries (docs/DESIGN.md §1: equal hashes, equal rewards).
//
//   ProfileSet profiles = DefaultProfiles(advantage::Options{});
//   RLSCORE_RETURN_IF_ERROR(AddProfileText("name: \"short\" length { max_tokens: 4096 }", ...));
//   absl::StatusOr<const ServiceProfile*> p = profiles.Find("short");
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "advantage/advantage.h"
#include "scorers/reward.h"

namespace rlscore::config::v1 {
class Profile;
}

namespace rlscore::engine {

struct ServiceProfile {
  scorers::Profile reward;
  advantage::Options advantage;
  // Hex FNV-1a 64 of `canonical` and the rlscore version: equal hashes mean equal rewards, across
  // runs and machines.
  std::string hash;
  // The complete profile (every field set) as a config::v1::Profile in protobuf's binary
  // encoding, serialized deterministically.
  std::string canonical;
};

// Named profiles; always holds "default". Copyable; immutable once the server starts.
class ProfileSet {
 public:
  // NOT_FOUND naming the profile and the known names.
  absl::StatusOr<const ServiceProfile*> Find(std::string_view name) const;
  const std::map<std::string, ServiceProfile, std::less<>>& all() const { return profiles_; }

  // Adds (or replaces) a profile built from `proto` over the built-in defaults. INVALID_ARGUMENT
  // naming the profile and field when it cannot score.
  absl::Status Add(const config::v1::Profile& proto, const advantage::Options& advantage_defaults);

 private:
  std::map<std::string, ServiceProfile, std::less<>> profiles_;
};

// Only the built-in default profile (docs/DESIGN.md §1), with `advantage` as its advantage
// options.
ProfileSet DefaultProfiles(const advantage::Options& advantage);

// The complete proto form of a profile (every field set), as printed by --print-config.
void ProfileToProto(const ServiceProfile& profile, config::v1::Profile* out);

}  // namespace rlscore::engine
