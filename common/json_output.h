// Writing JSON text directly, without building a document: the strings and numbers of a result
// line appended to one buffer. The output is byte for byte what nlohmann::json::dump(-1, ' ',
// false, error_handler_t::replace) writes for the same values, so a writer built on these reads
// the same as one that fills a json object and dumps it.
//
//   std::string line = "{\"verdict\":";
//   AppendJsonString(&line, "CORRECT");
//   absl::StrAppend(&line, ",\"reward\":");
//   AppendJsonNumber(&line, 1.1);   // 1.1; NaN and infinities are null
#pragma once

#include <string>
#include <string_view>

namespace rlscore {

// `text` as a JSON string, quotes included: '"', '\\' and control characters escaped (\n, \t, ...,
// else \u00XX), other bytes as they are. Invalid UTF-8 becomes U+FFFD, as nlohmann's replace
// handler does.
void AppendJsonString(std::string* out, std::string_view text);

// The shortest text that reads back as `value` (1.1, 0.0, -0.5, 1e-05), or null when it is not
// finite.
void AppendJsonNumber(std::string* out, double value);

inline void AppendJsonBool(std::string* out, bool value) { out->append(value ? "true" : "false"); }

}  // namespace rlscore
