#include "cli/flags.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/strings.h"

namespace rlscore::cli {

using ::rlscore::Sv;

bool ParsedFlags::Has(std::string_view name) const { return Get(name).has_value(); }

std::optional<std::string> ParsedFlags::Get(std::string_view name) const {
  std::optional<std::string> value;
  for (const auto& [flag, v] : values_) {
    if (flag.name == name) value = v;
  }
  return value;
}

absl::Status ParsedFlags::ApplyAll(std::span<const std::string_view> skip) const {
  for (const auto& [flag, value] : values_) {
    if (std::find(skip.begin(), skip.end(), flag.name) != skip.end()) continue;
    absl::Status status = flag.apply(value);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("--", flag.name, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

const Flag* FlagSet::Find(std::string_view name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

absl::StatusOr<ParsedFlags> FlagSet::Parse(std::span<const std::string> args) const {
  ParsedFlags parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--") {
      for (++i; i < args.size(); ++i) parsed.positional_.push_back(args[i]);
      break;
    }
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      parsed.positional_.emplace_back(arg);
      continue;
    }
    arg.remove_prefix(2);
    std::string_view name = arg;
    std::optional<std::string> value;
    if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = std::string(arg.substr(eq + 1));
    }
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", Sv(name), " (see ", command_, " --help)"));
    }
    if (!value.has_value()) {
      if (flag->value_name.empty()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", Sv(name), " needs a value: --",
                                                       Sv(name), "=", flag->value_name));
      }
    }
    parsed.values_.emplace_back(*flag, std::move(*value));
  }
  return parsed;
}

std::string FlagSet::Usage() const {
  std::string usage = absl::StrCat("Usage: ", command_, " [flags]\n\nFlags:\n");
  for (const Flag& flag : flags_) {
    const std::string head = flag.value_name.empty()
                                 ? absl::StrCat("--", flag.name)
                                 : absl::StrCat("--", flag.name, "=", flag.value_name);
    absl::StrAppendFormat(&usage, "  %-34s %s\n", head, flag.help);
  }
  return usage;
}

absl::Status ParseUint64(std::string_view text, uint64_t* out) {
  uint64_t value = 0;
  if (text.empty() || text[0] == '-' || !absl::SimpleAtoi(Sv(text), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", Sv(text), "\" is not a non-negative integer"));
  }
  *out = value;
  return absl::OkStatus();
}

absl::Status ParseUint32(std::string_view text, uint32_t* out) {
  uint64_t value = 0;
  absl::Status status = ParseUint64(text, &value);
  if (!status.ok()) return status;
  if (value > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(text), " is above ", std::numeric_limits<uint32_t>::max()));
  }
  *out = static_cast<uint32_t>(value);
  return absl::OkStatus();
}

absl::Status ParseBool(std::string_view text, bool* out) {
  const std::string lower = absl::AsciiStrToLower(Sv(text));
  if (lower == "true" || lower == "1" || lower == "yes") {
    *out = true;
  } else if (lower == "false" || lower == "0" || lower == "no") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("\"", Sv(text), "\" is not true or false"));
  }
  return absl::OkStatus();
}

}  // namespace rlscore::cli
