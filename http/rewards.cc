#include "http/rewards.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json_input.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace rlscore::http {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// End-of-sequence markers of common chat templates, as they appear when a trainer detokenises
// without skipping special tokens.
constexpr std::string_view kEndOfSequence[] = {
    "<|im_end|>", "<|endoftext|>",         "</s>",    "<|eot_id|>", "<|end_of_text|>",
    "<|eom_id|>", "<｜end▁of▁sentence｜>", "<|end|>", "<eos>",      "<end_of_turn>",
};

absl::StatusOr<Json> ParseObject(std::string_view body) { return ParseJsonObject(body, "byte"); }

// One reference: a string, or a number or boolean as its JSON text.
absl::Status AddReference(const Json& value, std::string_view where, v1::Group* group) {
  if (value.is_string()) {
    group->add_references(value.get_ref<const std::string&>());
  } else if (value.is_number() || value.is_boolean()) {
    group->add_references(value.dump());
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        Sv(where), ": expected a string, a number or a list of them, got ", value.type_name()));
  }
  return absl::OkStatus();
}

// A label is the reference, or a list of equivalent references (any may match); null is none.
absl::Status AddReferences(const Json& label, std::string_view where, v1::Group* group) {
  if (label.is_null()) return absl::OkStatus();
  if (!label.is_array()) return AddReference(label, where, group);
  for (size_t i = 0; i < label.size(); ++i) {
    RLSCORE_RETURN_IF_ERROR(AddReference(label[i], absl::StrCat(Sv(where), "[", i, "]"), group));
  }
  return absl::OkStatus();
}

// The field `key` as an array of `n` entries (n = 0: any length), or an error naming it.
absl::StatusOr<const Json*> ArrayField(const Json& body, std::string_view key, size_t n,
                                       bool required) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    if (required) return absl::InvalidArgumentError(absl::StrCat("\"", Sv(key), "\" is missing"));
    return nullptr;
  }
  if (!it->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", Sv(key), "\": expected a list, got ", it->type_name()));
  }
  if (n != 0 && it->size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", Sv(key), "\" has ", it->size(), " entries but \"query\" has ", n));
  }
  return &*it;
}

// Where `needle` first occurs in `text`, or npos: Knuth-Morris-Pratt, O(|text| + |needle|) on
// any input (a plain find is O(|text| x |needle|) on "aaa...a" against "aa...ab", and both are
// the caller's).
size_t FindLinear(std::string_view text, std::string_view needle) {
  std::vector<size_t> border(needle.size() + 1, 0);
  for (size_t i = 1, k = 0; i < needle.size(); ++i) {
    while (k > 0 && needle[i] != needle[k]) k = border[k];
    if (needle[i] == needle[k]) ++k;
    border[i + 1] = k;
  }
  for (size_t i = 0, k = 0; i < text.size(); ++i) {
    while (k > 0 && text[i] != needle[k]) k = border[k];
    if (text[i] == needle[k]) ++k;
    if (k == needle.size()) return i + 1 - k;
  }
  return std::string_view::npos;
}

// The response part of an OpenRLHF query. Sets *found to false when `prompt` is not in it.
std::string ResponseOf(std::string_view query, std::string_view prompt, bool* found) {
  *found = true;
  if (prompt.empty()) return std::string(query);
  if (absl::StartsWith(Sv(query), Sv(prompt))) return std::string(query.substr(prompt.size()));
  const size_t at = FindLinear(query, prompt);
  *found = at != std::string_view::npos;
  return std::string(*found ? query.substr(at + prompt.size()) : query);
}

void AddCompletion(std::string text, v1::Group* group) {
  v1::Completion* completion = group->add_completions();
  if (StripEndOfSequence(&text)) completion->set_finished(true);
  completion->set_text(std::move(text));
}

}  // namespace

bool StripEndOfSequence(std::string* text) {
  bool stripped = false;
  for (bool again = true; again;) {
    again = false;
    const size_t end = text->find_last_not_of(" \t\r\n");
    text->resize(end == std::string::npos ? 0 : end + 1);
    for (std::string_view marker : kEndOfSequence) {
      if (absl::EndsWith(*text, Sv(marker))) {
        text->resize(text->size() - marker.size());
        stripped = again = true;
        break;
      }
    }
  }
  return stripped;
}

absl::StatusOr<v1::ScoreGroupsRequest> OpenRlhfToRequest(std::string_view body,
                                                         uint64_t* prompts_not_found) {
  absl::StatusOr<Json> parsed = ParseObject(body);
  if (!parsed.ok()) return parsed.status();
  absl::StatusOr<const Json*> queries = ArrayField(*parsed, "query", 0, /*required=*/true);
  if (!queries.ok()) return queries.status();
  const size_t n = (*queries)->size();
  absl::StatusOr<const Json*> prompts = ArrayField(*parsed, "prompts", n, /*required=*/false);
  if (!prompts.ok()) return prompts.status();
  absl::StatusOr<const Json*> labels = ArrayField(*parsed, "labels", n, /*required=*/false);
  if (!labels.ok()) return labels.status();

  v1::ScoreGroupsRequest request;
  const Json null_json;
  const Json* previous_prompt = nullptr;
  const Json* previous_label = nullptr;
  v1::Group* group = nullptr;
  for (size_t i = 0; i < n; ++i) {
    const Json& query = (**queries)[i];
    if (!query.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"query\"[", i, "]: expected a string, got ", query.type_name()));
    }
    const Json& prompt = *prompts == nullptr ? null_json : (**prompts)[i];
    if (!prompt.is_null() && !prompt.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"prompts\"[", i, "]: expected a string, got ", prompt.type_name()));
    }
    const Json& label = *labels == nullptr ? null_json : (**labels)[i];
    // Samples of one prompt arrive together: they form a group (without prompts, each sample
    // is a group of its own).
    const bool same_group = group != nullptr && !prompt.is_null() && *previous_prompt == prompt &&
                            *previous_label == label;
    if (!same_group) {
      group = request.add_groups();
      if (!prompt.is_null()) group->set_prompt_id(absl::StrCat("openrlhf/", i));
      RLSCORE_RETURN_IF_ERROR(AddReferences(label, absl::StrCat("\"labels\"[", i, "]"), group));
    }
    previous_prompt = &prompt;
    previous_label = &label;
    bool found = true;
    AddCompletion(ResponseOf(query.get_ref<const std::string&>(),
                             prompt.is_null() ? "" : prompt.get_ref<const std::string&>(), &found),
                  group);
    if (!found && prompts_not_found != nullptr) ++*prompts_not_found;
  }
  return request;
}

std::string OpenRlhfReply(const v1::ScoreGroupsResponse& response) {
  OrderedJson rewards = OrderedJson::array(), scores = OrderedJson::array();
  OrderedJson accuracy = OrderedJson::array(), format = OrderedJson::array(),
              repetition = OrderedJson::array(), length = OrderedJson::array(),
              truncated = OrderedJson::array(), num_tokens = OrderedJson::array();
  for (int i = 0; i < response.results_size(); ++i) {
    const v1::CompletionResult& r = response.results(i);
    rewards.push_back(response.rewards(i));
    scores.push_back(r.components().accuracy());
    accuracy.push_back(r.components().accuracy());
    format.push_back(r.components().format());
    repetition.push_back(r.components().repetition());
    length.push_back(r.components().length());
    truncated.push_back(r.anatomy().truncated() ? 1.0 : 0.0);
    num_tokens.push_back(r.num_tokens());
  }
  OrderedJson reply;
  reply["rewards"] = std::move(rewards);
  reply["scores"] = std::move(scores);
  reply["extra_logs"] = {
      {"rlscore_accuracy", std::move(accuracy)},     {"rlscore_format", std::move(format)},
      {"rlscore_repetition", std::move(repetition)}, {"rlscore_length", std::move(length)},
      {"rlscore_truncated", std::move(truncated)},   {"rlscore_num_tokens", std::move(num_tokens)}};
  return reply.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

absl::StatusOr<v1::ScoreGroupsRequest> SlimeToRequest(std::string_view body) {
  absl::StatusOr<Json> parsed = ParseObject(body);
  if (!parsed.ok()) return parsed.status();
  const auto response = parsed->find("response");
  if (response == parsed->end() || !response->is_string()) {
    return absl::InvalidArgumentError(
        response == parsed->end()
            ? std::string("\"response\" is missing")
            : absl::StrCat("\"response\": expected a string, got ", response->type_name()));
  }
  v1::ScoreGroupsRequest request;
  v1::Group* group = request.add_groups();
  if (const auto label = parsed->find("label"); label != parsed->end()) {
    RLSCORE_RETURN_IF_ERROR(AddReferences(*label, "\"label\"", group));
  }
  AddCompletion(response->get<std::string>(), group);
  return request;
}

std::string SlimeReply(const v1::ScoreGroupsResponse& response) {
  return OrderedJson(response.rewards_size() > 0 ? response.rewards(0) : 0.0).dump();
}

std::string ErrorReply(std::string_view message) {
  OrderedJson reply;
  reply["error"] = std::string(message);
  return reply.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace rlscore::http
