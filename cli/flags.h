// Kebab-case command-line flags (`--max-message-bytes=N` or `--max-message-bytes N`), declared as a
// table so `--help` is generated from the same place that parses.
//
//   uint32_t group_size = 0;
//   FlagSet flags("rlscore serve");
//   flags.Add({"max-group-size", "N", "most completions in one group",
//              [&](std::string_view v) { return ParseUint32(v, &group_size); }});
//   absl::StatusOr<ParsedFlags> parsed = flags.Parse(args);
//   if (!parsed.ok()) ...                     // "unknown flag --max-grup-size"
//   RLSCORE_RETURN_IF_ERROR(parsed->ApplyAll());
//
// Values are applied only when the caller says so, so a command can apply one flag (--config)
// before the others and let the rest override what it loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rlscore::cli {

struct Flag {
  std::string name;        // without the leading "--"
  std::string value_name;  // e.g. "N", "ADDR"; empty for a switch that takes no value
  std::string help;
  // Called with the value ("true" for a switch given without one).
  std::function<absl::Status(std::string_view)> apply;
};

class FlagSet;

// The outcome of FlagSet::Parse(): which flags were given, in order, and the other arguments.
// It holds copies of the flags it saw, so it may outlive the FlagSet.
class ParsedFlags {
 public:
  bool Has(std::string_view name) const;
  // The last value given for `name`.
  std::optional<std::string> Get(std::string_view name) const;
  // Applies every given flag in order, except those named in `skip`. Errors are prefixed with the
  // flag ("--max-group-size: ...").
  absl::Status ApplyAll(std::span<const std::string_view> skip = {}) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend class FlagSet;
  std::vector<std::pair<Flag, std::string>> values_;
  std::vector<std::string> positional_;
};

// Not thread-safe; build it, then Parse() as often as you like.
class FlagSet {
 public:
  explicit FlagSet(std::string command) : command_(std::move(command)) {}

  void Add(Flag flag) { flags_.push_back(std::move(flag)); }

  // INVALID_ARGUMENT for an unknown flag or a missing value, naming it. "--" ends the flags.
  absl::StatusOr<ParsedFlags> Parse(std::span<const std::string> args) const;

  // "Usage: <command> [flags]" and one line per flag.
  std::string Usage() const;

 private:
  const Flag* Find(std::string_view name) const;

  std::string command_;
  std::vector<Flag> flags_;
};

// Value parsers for Flag::apply; ParsedFlags::ApplyAll() adds the flag's name to their errors.
absl::Status ParseUint64(std::string_view text, uint64_t* out);
absl::Status ParseUint32(std::string_view text, uint32_t* out);
absl::Status ParseBool(std::string_view text, bool* out);

}  // namespace rlscore::cli
