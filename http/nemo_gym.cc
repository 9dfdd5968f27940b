#include "http/nemo_gym.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_input.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace rlscore::http {
namespace {

using Json = nlohmann::json;

absl::Status FieldError(std::string_view where, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(Sv(where), ": ", Sv(problem)));
}

// The text of an item's parts of type `part_type` (e.g. "output_text"), appended to `out`.
absl::Status AppendParts(const Json& item, std::string_view list, std::string_view part_type,
                         const std::string& where, std::string* out) {
  const auto parts = item.find(std::string(list));
  if (parts == item.end() || parts->is_null()) return absl::OkStatus();
  if (!parts->is_array()) {
    return FieldError(absl::StrCat(where, ".", Sv(list)), "expected a list");
  }
  for (size_t k = 0; k < parts->size(); ++k) {
    const Json& part = (*parts)[k];
    const std::string at = absl::StrCat(where, ".", Sv(list), "[", k, "]");
    if (!part.is_object()) return FieldError(at, "expected an object");
    const auto type = part.find("type");
    // A reasoning summary's parts may come without a type; a message's must have one.
    const bool untyped = type == part.end() && list == "summary";
    if (!untyped && (type == part.end() || !type->is_string())) {
      return FieldError(at, "\"type\" is required (a string)");
    }
    if (!untyped && type->get_ref<const std::string&>() != part_type) continue;  // refusals...
    const auto text = part.find("text");
    if (text == part.end() || !text->is_string()) {
      return FieldError(absl::StrCat(at, ".text"), "expected a string");
    }
    out->append(text->get_ref<const std::string&>());
  }
  return absl::OkStatus();
}

// NeMo Gym's datasets write answers as \( ... \) or $ ... $ (its math server strips them too).
std::string StripDelimiters(std::string answer) {
  const std::string_view a = answer;
  if (a.size() >= 4 && a.starts_with("\\(") && a.ends_with("\\)")) {
    return std::string(a.substr(2, a.size() - 4));
  }
  if (a.size() >= 2 && a.starts_with("$") && a.ends_with("$")) {
    return std::string(a.substr(1, a.size() - 2));
  }
  return answer;
}

}  // namespace

absl::StatusOr<NemoGymVerify> NemoGymToRequest(std::string_view body) {
  absl::StatusOr<Json> parsed = ParseJsonObject(body, "byte");
  if (!parsed.ok()) return parsed.status();
  NemoGymVerify verify;
  verify.body = *std::move(parsed);
  const Json& root = verify.body;

  const auto response = root.find("response");
  if (response == root.end() || !response->is_object()) {
    return FieldError("response", "required: the policy model's Responses API object");
  }
  const auto output = response->find("output");
  if (output == response->end() || !output->is_array()) {
    return FieldError("response.output", "required: a list of output items");
  }
  std::string answer;
  std::string reasoning;
  for (size_t i = 0; i < output->size(); ++i) {
    const Json& item = (*output)[i];
    const std::string where = absl::StrCat("response.output[", i, "]");
    if (!item.is_object()) return FieldError(where, "expected an object");
    const auto type = item.find("type");
    if (type == item.end() || !type->is_string()) {
      return FieldError(absl::StrCat(where, ".type"), "required: every output item has a type");
    }
    const std::string& kind = type->get_ref<const std::string&>();
    if (kind == "message") {
      RLSCORE_RETURN_IF_ERROR(AppendParts(item, "content", "output_text", where, &answer));
    } else if (kind == "reasoning") {
      std::string text;
      RLSCORE_RETURN_IF_ERROR(AppendParts(item, "summary", "summary_text", where, &text));
      RLSCORE_RETURN_IF_ERROR(AppendParts(item, "content", "reasoning_text", where, &text));
      if (!reasoning.empty() && !text.empty()) reasoning.push_back('\n');
      reasoning += text;
    }
    // Tool calls and their outputs are not scored.
  }

  v1::Group& group = *verify.request.add_groups();
  if (const auto ids = root.find("instruction_id_list"); ids != root.end() && !ids->is_null()) {
    Json reference = Json::object();
    reference["instruction_id_list"] = *ids;
    if (const auto kwargs = root.find("kwargs"); kwargs != root.end()) {
      reference["kwargs"] = *kwargs;
    }
    group.set_task(v1::TASK_INSTRUCTION_FOLLOWING);
    group.add_references(reference.dump(-1, ' ', false, Json::error_handler_t::replace));
  } else {
    const auto expected = root.find("expected_answer");
    if (expected == root.end() || expected->is_null()) {
      return FieldError("expected_answer",
                        "required (or an instruction_id_list for instruction following)");
    }
    if (!expected->is_string() && !expected->is_number()) {
      return FieldError("expected_answer",
                        absl::StrCat("expected a string, got ", expected->type_name()));
    }
    group.set_task(v1::TASK_MATH);
    // A number as the body writes it: a double's dump would round an integer past 64 bits.
    std::string text = expected->is_string() ? expected->get<std::string>() : expected->dump();
    if (expected->is_number_float()) text = MemberText(body, "expected_answer").value_or(text);
    group.add_references(StripDelimiters(text));
  }
  if (const auto question = root.find("question");
      question != root.end() && question->is_string()) {
    group.set_prompt_id(question->get<std::string>().substr(0, 256));
  }
  std::string completion = answer.find("</think>") != std::string::npos
                               ? std::move(answer)
                               : absl::StrCat("<think>", reasoning, "</think>", answer);
  group.add_completions()->set_text(std::move(completion));
  return verify;
}

std::string NemoGymReply(const NemoGymVerify& verify, const v1::ScoreGroupsResponse& response) {
  Json reply = verify.body;
  const v1::CompletionResult* result = response.results_size() > 0 ? &response.results(0) : nullptr;
  const double reward = response.rewards_size() > 0 ? response.rewards(0) : 0.0;
  reply["reward"] = reward;
  reply["library_reward"] = result != nullptr ? result->components().accuracy() : 0.0;
  if (result != nullptr && !result->extracted_answer().empty()) {
    reply["extracted_answer"] = result->extracted_answer();
  } else {
    reply["extracted_answer"] = nullptr;
  }
  if (!reply.contains("expected_answer")) reply["expected_answer"] = nullptr;
  reply["judge_evaluations"] = nullptr;
  if (result != nullptr) {
    Json details = {{"verdict", v1::Verdict_Name(result->verdict())},
                    {"accuracy", result->components().accuracy()},
                    {"format", result->components().format()},
                    {"repetition", result->components().repetition()},
                    {"length", result->components().length()},
                    {"profile_hash", response.profile_hash()}};
    if (!result->detail().empty()) details["detail"] = result->detail();
    if (result->instructions_size() > 0) {
      Json instructions = Json::array();
      for (const v1::InstructionResult& i : result->instructions()) {
        instructions.push_back({{"id", i.id()}, {"strict", i.strict()}, {"loose", i.loose()}});
      }
      details["instructions"] = std::move(instructions);
    }
    reply["rlscore"] = std::move(details);
  }
  return reply.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string NemoGymErrorReply(std::string_view message) {
  return Json{{"detail", std::string(message)}}.dump(-1, ' ', false,
                                                     Json::error_handler_t::replace);
}

}  // namespace rlscore::http
