#include "http/rewards.h"

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json_input.h"
#include "common/json_ondemand.h"
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

// One reference: a string, or a number or boolean as its JSON text. `written` is the value as
// the body writes it (MemberText), or empty: a number nlohmann holds as a double is taken as
// written, as its dump would round an integer past 64 bits (a right answer would then be WRONG)
// and respell a fraction (1.50 as 1.5).
absl::Status AddReference(const Json& value, std::string_view written, std::string_view where,
                          v1::Group* group) {
  if (value.is_string()) {
    group->add_references(value.get_ref<const std::string&>());
  } else if (value.is_number_float() && !written.empty()) {
    group->add_references(std::string(written));
  } else if (value.is_number() || value.is_boolean()) {
    group->add_references(value.dump());
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        Sv(where), ": expected a string, a number or a list of them, got ", value.type_name()));
  }
  return absl::OkStatus();
}

// Whether a label holds a number nlohmann holds as a double: only then is its written text read.
bool HoldsDouble(const Json& label) {
  if (label.is_array()) {
    return std::any_of(label.begin(), label.end(),
                       [](const Json& v) { return v.is_number_float(); });
  }
  return label.is_number_float();
}

// A label is the reference, or a list of equivalent references (any may match); null is none.
// `written` as for AddReference.
absl::Status AddReferences(const Json& label, std::string_view written, std::string_view where,
                           v1::Group* group) {
  if (label.is_null()) return absl::OkStatus();
  if (!label.is_array()) return AddReference(label, written, where, group);
  const std::vector<std::string_view> elements = ElementTexts(written);
  for (size_t i = 0; i < label.size(); ++i) {
    RLSCORE_RETURN_IF_ERROR(AddReference(label[i], i < elements.size() ? elements[i] : "",
                                         absl::StrCat(Sv(where), "[", i, "]"), group));
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

// Samples of one prompt arrive together and form a group; without prompts, each sample is a
// group of its own.
class GroupBuilder {
 public:
  GroupBuilder(v1::ScoreGroupsRequest* request, uint64_t* prompts_not_found)
      : request_(request), prompts_not_found_(prompts_not_found) {}

  // Sample `i`: its completion joins the previous sample's group when `same_group` (the same
  // prompt and label), or starts a group whose references `add_references` sets.
  absl::Status Add(size_t i, std::string_view query, const std::string_view* prompt,
                   bool same_group, const std::function<absl::Status(v1::Group*)>& add_references) {
    if (!same_group) {
      group_ = request_->add_groups();
      if (prompt != nullptr) group_->set_prompt_id(absl::StrCat("openrlhf/", i));
      RLSCORE_RETURN_IF_ERROR(add_references(group_));
    }
    bool found = true;
    AddCompletion(ResponseOf(query, prompt == nullptr ? "" : *prompt, &found), group_);
    if (!found && prompts_not_found_ != nullptr) ++*prompts_not_found_;
    return absl::OkStatus();
  }

 private:
  v1::ScoreGroupsRequest* const request_;
  uint64_t* const prompts_not_found_;
  v1::Group* group_ = nullptr;
};

}  // namespace

absl::StatusOr<v1::ScoreGroupsRequest> OpenRlhfReference(std::string_view body,
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

  // The labels as the body writes them, read once a label holds a double.
  std::optional<std::string> labels_written;
  std::vector<std::string_view> label_texts;
  const auto written = [&](size_t i, const Json& label) -> std::string_view {
    if (!HoldsDouble(label)) return {};
    if (!labels_written.has_value()) {
      labels_written = MemberText(body, "labels").value_or("");
      label_texts = ElementTexts(*labels_written);
    }
    return i < label_texts.size() ? label_texts[i] : std::string_view();
  };

  v1::ScoreGroupsRequest request;
  GroupBuilder groups(&request, prompts_not_found);
  const Json null_json;
  const Json* previous_prompt = nullptr;
  const Json* previous_label = nullptr;
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
    const bool same_group = previous_prompt != nullptr && !prompt.is_null() &&
                            *previous_prompt == prompt && *previous_label == label;
    previous_prompt = &prompt;
    previous_label = &label;
    const std::string_view prompt_text =
        prompt.is_null() ? std::string_view() : prompt.get_ref<const std::string&>();
    RLSCORE_RETURN_IF_ERROR(
        groups.Add(i, query.get_ref<const std::string&>(),
                   prompt.is_null() ? nullptr : &prompt_text, same_group, [&](v1::Group* group) {
                     return AddReferences(label, written(i, label),
                                          absl::StrCat("\"labels\"[", i, "]"), group);
                   }));
  }
  return request;
}

absl::StatusOr<v1::ScoreGroupsRequest> SlimeReference(std::string_view body) {
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
    const std::string written =
        HoldsDouble(*label) ? MemberText(body, "label").value_or("") : std::string();
    RLSCORE_RETURN_IF_ERROR(AddReferences(*label, written, "\"label\"", group));
  }
  AddCompletion(response->get<std::string>(), group);
  return request;
}

namespace {

thread_local uint64_t reference_reads = 0;

// The fast readings, with simdjson: what they cannot read with certainty they leave to the
// reference (nullopt), so answers and errors are the reference's for every body.
namespace ondemand = simdjson::ondemand;
using json_ondemand::IsNull;
using json_ondemand::SkipChecked;

// A label as the fast path reads it: null, or references (strings, integers, booleans as their
// JSON text), alone or in a list. Equal labels are equal JSON values, as nlohmann compares them.
struct Label {
  enum class Kind { kNull, kOne, kList } kind = Kind::kNull;
  std::vector<std::pair<ondemand::json_type, std::string>> references;
  bool operator==(const Label&) const = default;
};

bool ReadReference(ondemand::value value, std::pair<ondemand::json_type, std::string>* out) {
  if (value.type().get(out->first)) return false;
  switch (out->first) {
    case ondemand::json_type::string:
      return json_ondemand::ReadString(value, &out->second);
    case ondemand::json_type::boolean: {
      bool b;
      if (value.get_bool().get(b)) return false;
      out->second = b ? "true" : "false";
      return true;
    }
    case ondemand::json_type::number:
      // Integers only: nlohmann reformats floats (1.50 -> 1.5) and compares 1 and 1.0 equal.
      return json_ondemand::AppendInteger(value, &out->second);
    default:
      return false;
  }
}

bool ReadLabel(ondemand::value value, Label* label) {
  ondemand::json_type type;
  if (value.type().get(type)) return false;
  if (type == ondemand::json_type::null) return IsNull(value);
  if (type != ondemand::json_type::array) {
    label->kind = Label::Kind::kOne;
    return ReadReference(value, &label->references.emplace_back());
  }
  label->kind = Label::Kind::kList;
  ondemand::array array;
  if (value.get_array().get(array)) return false;
  for (auto element : array) {
    ondemand::value v;
    if (element.get(v) || !ReadReference(v, &label->references.emplace_back())) return false;
  }
  return true;
}

void AddLabel(const Label& label, v1::Group* group) {
  for (const auto& [type, text] : label.references) group->add_references(text);
}

// A thread's parser and padded copy of the body; both grow to the largest body it has read.
struct FastParser {
  ondemand::parser parser = json_ondemand::NewParser();
  std::string padded;

  // The body's object, or false: for a control byte (or an unparsable body).
  bool Start(std::string_view body, ondemand::document* doc, ondemand::object* object) {
    if (json_ondemand::HasControlByte(body)) return false;
    padded.assign(body.data(), body.size());
    padded.append(json_ondemand::kPadding, ' ');
    return !parser.iterate(padded.data(), body.size(), padded.size()).get(*doc) &&
           !doc->get_object().get(*object);
  }
};

FastParser& ThreadParser() {
  thread_local FastParser parser;
  return parser;
}

// Reads each field of `object` with `read(which, value)`, `which` its index in `keys`, and skips
// the others; a known key read twice, a field `read` refuses, or trailing text: false.
template <size_t N, typename Read>
bool ReadFields(ondemand::document& doc, ondemand::object& object,
                const std::string_view (&keys)[N], Read read) {
  uint64_t seen = 0;
  return json_ondemand::ReadMembers(
             object, keys, read,
             [](std::string_view, ondemand::value value) { return SkipChecked(value, 1); },
             &seen) &&
         json_ondemand::AtEnd(doc);
}

std::optional<v1::ScoreGroupsRequest> OpenRlhfFast(std::string_view body,
                                                   uint64_t* prompts_not_found) {
  FastParser& fast = ThreadParser();
  ondemand::document doc;
  ondemand::object object;
  if (!fast.Start(body, &doc, &object)) return std::nullopt;
  bool has_query = false;
  std::vector<std::string_view> queries;  // views into the parser's string buffer
  std::vector<std::string_view> prompts;
  std::vector<bool> prompt_is_null;
  std::vector<Label> labels;
  bool has_prompts = false, has_labels = false;
  static constexpr std::string_view kKeys[] = {"query", "prompts", "labels"};
  const bool read = ReadFields(doc, object, kKeys, [&](size_t which, ondemand::value value) {
    if (which != 0 && IsNull(value)) return true;
    ondemand::array array;
    if (value.get_array().get(array)) return false;
    for (auto element : array) {
      ondemand::value v;
      if (element.get(v)) return false;
      std::string_view s;
      if (which == 0) {
        if (v.get_string().get(s)) return false;
        queries.push_back(s);
      } else if (which == 1) {
        const bool null = IsNull(v);
        if (!null && v.get_string().get(s)) return false;
        prompts.push_back(s);
        prompt_is_null.push_back(null);
      } else if (!ReadLabel(v, &labels.emplace_back())) {
        return false;
      }
    }
    (which == 0 ? has_query : which == 1 ? has_prompts : has_labels) = true;
    return true;
  });
  const size_t n = queries.size();
  if (!read || !has_query || (has_prompts && prompts.size() != n) ||
      (has_labels && labels.size() != n)) {
    return std::nullopt;
  }
  v1::ScoreGroupsRequest request;
  GroupBuilder groups(&request, prompts_not_found);
  const Label none;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view* prompt = has_prompts && !prompt_is_null[i] ? &prompts[i] : nullptr;
    const Label& label = has_labels ? labels[i] : none;
    const bool same_group = i > 0 && prompt != nullptr && !prompt_is_null[i - 1] &&
                            prompts[i - 1] == *prompt &&
                            (has_labels ? labels[i - 1] : none) == label;
    groups
        .Add(i, queries[i], prompt, same_group,
             [&](v1::Group* group) {
               AddLabel(label, group);
               return absl::OkStatus();
             })
        .IgnoreError();  // adding read references cannot fail
  }
  return request;
}

std::optional<v1::ScoreGroupsRequest> SlimeFast(std::string_view body) {
  FastParser& fast = ThreadParser();
  ondemand::document doc;
  ondemand::object object;
  if (!fast.Start(body, &doc, &object)) return std::nullopt;
  std::string response;
  bool has_response = false;
  Label label;
  static constexpr std::string_view kKeys[] = {"response", "label"};
  const bool read = ReadFields(doc, object, kKeys, [&](size_t which, ondemand::value value) {
    if (which == 1) return ReadLabel(value, &label);
    has_response = true;
    return json_ondemand::ReadString(value, &response);
  });
  if (!read || !has_response) return std::nullopt;
  v1::ScoreGroupsRequest request;
  v1::Group* group = request.add_groups();
  AddLabel(label, group);
  AddCompletion(std::move(response), group);
  return request;
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
  // The fast reading counts prompts not found only after it has read the whole body.
  if (std::optional<v1::ScoreGroupsRequest> request = OpenRlhfFast(body, prompts_not_found)) {
    return *std::move(request);
  }
  ++reference_reads;
  return OpenRlhfReference(body, prompts_not_found);
}

absl::StatusOr<v1::ScoreGroupsRequest> SlimeToRequest(std::string_view body) {
  if (std::optional<v1::ScoreGroupsRequest> request = SlimeFast(body)) return *std::move(request);
  ++reference_reads;
  return SlimeReference(body);
}

uint64_t ReferenceReadsOnThisThread() { return reference_reads; }

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

std::string SlimeReply(const v1::ScoreGroupsResponse& response) {
  return OrderedJson(response.rewards_size() > 0 ? response.rewards(0) : 0.0).dump();
}

std::string ErrorReply(std::string_view message) {
  OrderedJson reply;
  reply["error"] = std::string(message);
  return reply.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace rlscore::http
