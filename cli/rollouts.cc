#include "cli/rollouts.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/json_input.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace rlscore::cli {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

std::string FieldError(std::string_view key, std::string_view what, const Json& got) {
  return absl::StrCat("field \"", Sv(key), "\": expected ", Sv(what), ", got ", got.type_name());
}

absl::Status ReadString(const Json& line, std::string_view key, std::string* out) {
  const auto it = line.find(key);
  if (it == line.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_string()) return absl::InvalidArgumentError(FieldError(key, "a string", *it));
  *out = it->get_ref<const std::string&>();
  return absl::OkStatus();
}

// `where` names the value in errors: field "num_tokens", or field "token_ids"[3].
absl::Status ReadUint32(const Json& value, std::string_view where, uint32_t* out) {
  if (!value.is_number_integer() || (!value.is_number_unsigned() && value.get<int64_t>() < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(where), ": expected a non-negative integer, got ",
                     value.is_number() ? value.dump() : value.type_name()));
  }
  const uint64_t v = value.get<uint64_t>();
  if (v > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(where), ": ", v, " does not fit in 32 bits"));
  }
  *out = static_cast<uint32_t>(v);
  return absl::OkStatus();
}

// The text of a message's content: a string, or a list of parts whose "text" parts are joined
// (the OpenAI format).
std::optional<std::string> ContentText(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return std::nullopt;
  std::string text;
  bool any = false;
  for (const Json& part : content) {
    if (!part.is_object()) return std::nullopt;
    const auto type = part.find("type");
    const auto part_text = part.find("text");
    if (type == part.end() || *type != "text") continue;
    if (part_text == part.end() || !part_text->is_string()) return std::nullopt;
    text += part_text->get_ref<const std::string&>();
    any = true;
  }
  return any ? std::optional<std::string>(std::move(text)) : std::nullopt;
}

// A completion is a string, or a chat message list whose last assistant message is scored.
absl::Status ReadCompletion(const Json& value, std::string_view key, std::string* out) {
  if (value.is_string()) {
    *out = value.get_ref<const std::string&>();
    return absl::OkStatus();
  }
  if (!value.is_array()) {
    return absl::InvalidArgumentError(
        FieldError(key, "a string or a list of chat messages", value));
  }
  for (size_t i = value.size(); i-- > 0;) {
    const Json& message = value[i];
    if (!message.is_object()) continue;
    const auto role = message.find("role");
    if (role == message.end() || *role != "assistant") continue;
    const auto content = message.find("content");
    std::optional<std::string> text =
        content == message.end() ? std::nullopt : ContentText(*content);
    if (!text.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field \"", Sv(key), "\"[", i,
          "]: the last assistant message has no text content (a string or text parts)"));
    }
    *out = *std::move(text);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("field \"", Sv(key), "\": a message list without an assistant message"));
}

absl::Status ReadReferences(const Json& line, std::string_view key, v1::ScoreItem* item) {
  const auto it = line.find(key);
  if (it == line.end() || it->is_null()) return absl::OkStatus();
  if (it->is_string()) {
    item->add_references(it->get_ref<const std::string&>());
    return absl::OkStatus();
  }
  if (!it->is_array()) {
    return absl::InvalidArgumentError(FieldError(key, "a string or a list of strings", *it));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& ref = (*it)[i];
    if (!ref.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field \"", Sv(key), "\"[", i, "]: expected a string, got ", ref.type_name()));
    }
    item->add_references(ref.get_ref<const std::string&>());
  }
  return absl::OkStatus();
}

absl::Status ReadFields(const Json& line, const FieldNames& names, Rollout* rollout) {
  v1::ScoreItem& item = rollout->item;
  v1::Completion& completion = *item.mutable_completion();

  if (const auto it = line.find(names.id); it != line.end()) {
    rollout->id_json = it->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  RLSCORE_RETURN_IF_ERROR(ReadString(line, names.prompt_id, item.mutable_prompt_id()));

  const auto text = line.find(names.completion);
  if (text == line.end() || text->is_null()) {
    return absl::InvalidArgumentError(absl::StrCat("field \"", names.completion, "\" is missing"));
  }
  RLSCORE_RETURN_IF_ERROR(ReadCompletion(*text, names.completion, completion.mutable_text()));

  RLSCORE_RETURN_IF_ERROR(ReadReferences(line, names.reference, &item));
  if (names.references != names.reference) {
    RLSCORE_RETURN_IF_ERROR(ReadReferences(line, names.references, &item));
  }

  if (const auto it = line.find(names.num_tokens); it != line.end() && !it->is_null()) {
    uint32_t n = 0;
    RLSCORE_RETURN_IF_ERROR(ReadUint32(*it, absl::StrCat("field \"", names.num_tokens, "\""), &n));
    completion.set_num_tokens(n);
  }
  if (const auto it = line.find(names.token_ids); it != line.end() && !it->is_null()) {
    if (!it->is_array()) {
      return absl::InvalidArgumentError(FieldError(names.token_ids, "a list of integers", *it));
    }
    completion.mutable_token_ids()->Reserve(static_cast<int>(it->size()));
    for (size_t i = 0; i < it->size(); ++i) {
      uint32_t id = 0;
      RLSCORE_RETURN_IF_ERROR(
          ReadUint32((*it)[i], absl::StrCat("field \"", names.token_ids, "\"[", i, "]"), &id));
      completion.add_token_ids(id);
    }
  }
  if (const auto it = line.find(names.finished); it != line.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError(FieldError(names.finished, "true or false", *it));
    }
    completion.set_finished(it->get<bool>());
  }
  if (const auto it = line.find(names.task); it != line.end() && !it->is_null()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(FieldError(names.task, "a string", *it));
    }
    absl::StatusOr<v1::Task> task = ParseTask(it->get_ref<const std::string&>());
    if (!task.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("field \"", names.task, "\": ", task.status().message()));
    }
    item.set_task(*task);
  }
  if (const auto it = line.find(names.external_accuracy); it != line.end() && !it->is_null()) {
    if (!it->is_number()) {
      return absl::InvalidArgumentError(FieldError(names.external_accuracy, "a number", *it));
    }
    completion.set_external_accuracy(it->get<double>());
  }
  return absl::OkStatus();
}

std::string EnumSuffix(const std::string& proto_name, std::string_view prefix) {
  return std::string(absl::StripPrefix(proto_name, Sv(prefix)));
}

}  // namespace

absl::Status RenameField(std::string_view assignment, FieldNames* names) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == assignment.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected FIELD=KEY, e.g. completion=response; got \"", Sv(assignment), "\""));
  }
  const std::string_view field = assignment.substr(0, eq);
  std::string key(assignment.substr(eq + 1));
  struct Entry {
    std::string_view field;
    std::string* key;
  };
  const Entry entries[] = {{"id", &names->id},
                           {"prompt_id", &names->prompt_id},
                           {"completion", &names->completion},
                           {"reference", &names->reference},
                           {"references", &names->references},
                           {"num_tokens", &names->num_tokens},
                           {"token_ids", &names->token_ids},
                           {"finished", &names->finished},
                           {"task", &names->task},
                           {"external_accuracy", &names->external_accuracy}};
  std::string known;
  for (const Entry& e : entries) {
    if (e.field == field) {
      *e.key = std::move(key);
      return absl::OkStatus();
    }
    absl::StrAppend(&known, known.empty() ? "" : ", ", Sv(e.field));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown field \"", Sv(field), "\"; the fields are ", known));
}

absl::StatusOr<v1::Task> ParseTask(std::string_view name) {
  std::string upper = absl::AsciiStrToUpper(Sv(name));
  if (!absl::StartsWith(upper, "TASK_")) upper = absl::StrCat("TASK_", upper);
  v1::Task task = v1::TASK_UNSPECIFIED;
  if (!v1::Task_Parse(upper, &task)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown task \"", Sv(name),
                     "\"; expected math, multiple_choice, exact, numeric or external"));
  }
  return task;
}

absl::StatusOr<Rollout> ParseRollout(std::string_view line, const FieldNames& names) {
  absl::StatusOr<Json> parsed = ParseJsonObject(line, "column");
  if (!parsed.ok()) return parsed.status();
  Rollout rollout;
  RLSCORE_RETURN_IF_ERROR(ReadFields(*parsed, names, &rollout));
  return rollout;
}

std::string FormatResult(uint64_t line, std::string_view id_json, const v1::ScoreItem& item,
                         const v1::CompletionResult& result, double reward) {
  OrderedJson out;
  out["prompt_id"] = item.prompt_id();
  out["reward"] = reward;
  out["verdict"] = EnumSuffix(v1::Verdict_Name(result.verdict()), "VERDICT_");
  const v1::RewardComponents& c = result.components();
  out["components"] = {{"accuracy", c.accuracy()},
                       {"format", c.format()},
                       {"repetition", c.repetition()},
                       {"length", c.length()}};
  out["extracted_answer"] = result.extracted_answer();
  out["num_tokens"] = result.num_tokens();
  out["tokens_estimated"] = result.tokens_estimated();
  out["well_formed"] = result.anatomy().well_formed();
  out["truncated"] = result.anatomy().truncated();
  out["format_gated"] = result.format_gated();
  if (result.has_repetition()) {
    const v1::RepetitionReport& r = result.repetition();
    out["repetition"] = {
        {"detector", EnumSuffix(v1::RepetitionDetector_Name(r.detector()), "REPETITION_DETECTOR_")},
        {"char_offset", r.char_offset()},
        {"token_offset", r.token_offset()},
        {"first_char_offset", r.first_char_offset()},
        {"occurrences", r.occurrences()},
        {"detail", r.detail()}};
  }
  if (!result.detail().empty()) out["detail"] = result.detail();
  // "line" and the id in front of the rest.
  const std::string rest = out.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  return absl::StrCat("{\"line\":", line, id_json.empty() ? "" : ",\"id\":", Sv(id_json), ",",
                      absl::string_view(rest).substr(1));
}

std::string FormatError(uint64_t line, std::string_view message) {
  OrderedJson out;
  out["line"] = line;
  out["error"] = std::string(message);
  return out.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace rlscore::cli
