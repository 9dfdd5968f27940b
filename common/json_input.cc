#include "common/json_input.h"

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace rlscore {
namespace {

using Json = nlohmann::json;

// Thrown from the parser callback to stop at the first container past kMaxJsonDepth.
struct TooDeep {
  size_t depth;
};

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, ".
std::string_view Reason(const Json::exception& e) {
  std::string_view what = e.what();
  if (const size_t bracket = what.find("] "); bracket != std::string_view::npos) {
    what.remove_prefix(bracket + 2);
  }
  if (const size_t colon = what.find(": ");
      colon != std::string_view::npos && what.substr(0, colon).find("parse error") == 0) {
    what.remove_prefix(colon + 2);
  }
  return what;
}

}  // namespace

absl::StatusOr<Json> ParseJsonObject(std::string_view text, std::string_view unit) {
  Json parsed;
  const Json::parser_callback_t limit_depth = [](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      throw TooDeep{static_cast<size_t>(depth) + 1};
    }
    return true;
  };
  // nlohmann reports errors, and where, only by throwing: every exception stops here.
  try {
    parsed = Json::parse(text, limit_depth);
  } catch (const Json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON at ", Sv(unit), " ", e.byte, ": ", Sv(Reason(e))));
  } catch (const Json::exception& e) {  // e.g. out_of_range: a number too large for a double
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", Sv(Reason(e))));
  } catch (const TooDeep& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: nested deeper than ",
                                                   kMaxJsonDepth, " levels (", e.depth, " seen)"));
  }
  if (!parsed.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a JSON object, got ", parsed.type_name()));
  }
  return parsed;
}

}  // namespace rlscore
