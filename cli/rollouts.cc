#include "cli/rollouts.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/enum_names.h"
#include "common/json_input.h"
#include "common/json_ondemand.h"
#include "common/json_output.h"
#include "common/status_macros.h"
#include "common/strings.h"

namespace rlscore::cli {
namespace {

constexpr std::string_view kInstructionIdList = "instruction_id_list";

using Json = nlohmann::json;

std::string FieldError(std::string_view key, std::string_view what, const Json& got) {
  return absl::StrCat("field \"", Sv(key), "\": expected ", Sv(what), ", got ", got.type_name());
}

// The integer of a number nlohmann holds as a double, where the double is a whole number below
// 2^53, past which doubles no longer hold every integer: pandas writes an integer column that
// has a missing value as floats (812.0), as Python's json writes a NumPy float. nullopt for
// any other value.
std::optional<int64_t> WholeDouble(const Json& value) {
  if (!value.is_number_float()) return std::nullopt;
  const double d = value.get<double>();
  constexpr double kAllIntegersBelow = 9007199254740992.0;  // 2^53
  if (!(std::fabs(d) < kAllIntegersBelow) || d != std::trunc(d)) return std::nullopt;
  return static_cast<int64_t>(d);
}

// A prompt id is a string, or an integer kept as its decimal text (datasets often number their
// prompts): 17, 17.0 and "17" name the same prompt.
absl::Status ReadPromptId(const Json& line, std::string_view key, std::string* out) {
  const auto it = line.find(key);
  if (it == line.end() || it->is_null()) return absl::OkStatus();
  if (it->is_string()) {
    *out = it->get_ref<const std::string&>();
  } else if (it->is_number_integer()) {
    *out = it->dump();
  } else if (const std::optional<int64_t> whole = WholeDouble(*it)) {
    *out = absl::StrCat(*whole);
  } else {
    return absl::InvalidArgumentError(FieldError(key, "a string or an integer", *it));
  }
  return absl::OkStatus();
}

// A count: a non-negative integer, or a whole number written as a double (7.0). `where` names
// the value in errors: field "num_tokens", or field "token_ids"[3].
absl::Status ReadUint32(const Json& value, std::string_view where, uint32_t* out) {
  uint64_t v = 0;
  if (value.is_number_unsigned()) {
    v = value.get<uint64_t>();
  } else if (const std::optional<int64_t> whole = WholeDouble(value); whole && *whole >= 0) {
    v = static_cast<uint64_t>(*whole);
  } else if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    v = static_cast<uint64_t>(value.get<int64_t>());
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(where), ": expected a non-negative integer, got ",
                     value.is_number() ? value.dump() : value.type_name()));
  }
  if (v > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(where), ": ", value.dump(), " does not fit in 32 bits"));
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

// A reference is a string; a number or a boolean as the line writes it (a dataset's answer
// column is often numeric: 1.50 stays "1.50", an integer past 64 bits keeps every digit); or
// (task IF) an instruction list as a JSON object, kept as its text. `text` is the line.
absl::Status ReadReferences(const Json& line, std::string_view text, std::string_view key,
                            v1::ScoreItem* item) {
  const auto it = line.find(key);
  if (it == line.end() || it->is_null()) return absl::OkStatus();
  if (it->is_string()) {
    item->add_references(it->get_ref<const std::string&>());
    return absl::OkStatus();
  }
  if (it->is_number() || it->is_boolean()) {
    item->add_references(MemberText(text, key).value_or(it->dump()));
    return absl::OkStatus();
  }
  if (it->is_object() && it->contains(kInstructionIdList)) {
    item->add_references(it->dump(-1, ' ', false, Json::error_handler_t::replace));
    return absl::OkStatus();
  }
  if (!it->is_array()) {
    return absl::InvalidArgumentError(FieldError(
        key, "a string, a number, a boolean, an instruction list object or a list of them", *it));
  }
  std::optional<std::string> written;  // the list as the line writes it, once a number needs it
  std::vector<std::string_view> elements;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& ref = (*it)[i];
    if (ref.is_object() && ref.contains(kInstructionIdList)) {
      item->add_references(ref.dump(-1, ' ', false, Json::error_handler_t::replace));
    } else if (ref.is_string()) {
      item->add_references(ref.get_ref<const std::string&>());
    } else if (ref.is_number() || ref.is_boolean()) {
      if (!written.has_value()) {
        written = MemberText(text, key);
        if (written.has_value()) elements = ElementTexts(*written);
      }
      item->add_references(i < elements.size() ? std::string(elements[i]) : ref.dump());
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("field \"", Sv(key), "\"[", i,
                       "]: expected a string, a number or a boolean, got ", ref.type_name()));
    }
  }
  return absl::OkStatus();
}

// An IFEval row ({"instruction_id_list": [...], "kwargs": [...]} beside the response) carries its
// reference in those two keys: with no other reference, they are the reference of task IF.
void ReadInstructionList(const Json& line, v1::ScoreItem* item) {
  if (item->references_size() > 0) return;
  const auto ids = line.find(kInstructionIdList);
  if (ids == line.end() || ids->is_null()) return;
  Json reference = Json::object();
  reference[kInstructionIdList] = *ids;
  if (const auto kwargs = line.find("kwargs"); kwargs != line.end()) reference["kwargs"] = *kwargs;
  item->add_references(reference.dump(-1, ' ', false, Json::error_handler_t::replace));
  if (item->task() == v1::TASK_UNSPECIFIED) item->set_task(v1::TASK_INSTRUCTION_FOLLOWING);
}

absl::Status ReadFields(const Json& line, std::string_view line_text, const FieldNames& names,
                        Rollout* rollout) {
  v1::ScoreItem& item = rollout->item;
  v1::Completion& completion = *item.mutable_completion();

  if (const auto it = line.find(names.id); it != line.end()) {
    rollout->id_json = it->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  RLSCORE_RETURN_IF_ERROR(ReadPromptId(line, names.prompt_id, item.mutable_prompt_id()));

  const auto text = line.find(names.completion);
  if (text == line.end() || text->is_null()) {
    return absl::InvalidArgumentError(absl::StrCat("field \"", names.completion, "\" is missing"));
  }
  RLSCORE_RETURN_IF_ERROR(ReadCompletion(*text, names.completion, completion.mutable_text()));

  RLSCORE_RETURN_IF_ERROR(ReadReferences(line, line_text, names.reference, &item));
  if (names.references != names.reference) {
    RLSCORE_RETURN_IF_ERROR(ReadReferences(line, line_text, names.references, &item));
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
  ReadInstructionList(line, &item);
  return absl::OkStatus();
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
  if (upper == "TASK_IF" || upper == "TASK_IFEVAL") upper = "TASK_INSTRUCTION_FOLLOWING";
  v1::Task task = v1::TASK_UNSPECIFIED;
  if (!v1::Task_Parse(upper, &task)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown task \"", Clip(name),
                     "\"; expected math, multiple_choice, exact, numeric, external or if"));
  }
  return task;
}

absl::StatusOr<Rollout> ParseRollout(std::string_view line, const FieldNames& names) {
  absl::StatusOr<Json> parsed = ParseJsonObject(line, "column");
  if (!parsed.ok()) return parsed.status();
  Rollout rollout;
  RLSCORE_RETURN_IF_ERROR(ReadFields(*parsed, line, names, &rollout));
  // An id is echoed as the line writes it where nlohmann's dump would change it: a number it
  // holds as a double (rounded past 64 bits, so that two ids would come out the same), a list
  // or an object (keys sorted, and their numbers so rounded).
  if (const auto id = parsed->find(names.id);
      id != parsed->end() && (id->is_number_float() || id->is_structured())) {
    if (std::optional<std::string> text = MemberText(line, names.id)) {
      rollout.id_json = *std::move(text);
    }
  }
  return rollout;
}

namespace {

// simdjson's on-demand reading of a rollout line. Each function answers false where the line is
// not one it reads with certainty; ParseRollout then reads it (and names any error).
namespace ondemand = simdjson::ondemand;
static_assert(kRolloutLinePadding >= json_ondemand::kPadding);
using json_ondemand::IsNull;
using json_ondemand::ReadString;
using json_ondemand::SkipChecked;

// simdjson reads an unsigned integer only where the number's text ends with its digits: "7.0",
// "7e0", "-0" and numbers past 64 bits are refused, and left to the reference reader. One parse
// per number: asking for its type first would parse it twice, which for a line of token ids is
// a tenth of its time.
bool ReadUint32(ondemand::value value, uint32_t* out) {
  uint64_t v;
  if (value.get_uint64().get(v) || v > std::numeric_limits<uint32_t>::max()) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// A string, or an integer that fits 64 bits as its decimal text (as the nlohmann reader keeps it).
bool ReadPromptId(ondemand::value value, std::string* out) {
  ondemand::json_type type;
  if (value.type().get(type)) return false;
  if (type == ondemand::json_type::string) return ReadString(value, out);
  out->clear();
  return type == ondemand::json_type::number && json_ondemand::AppendInteger(value, out);
}

// The id as nlohmann dumps it, for the forms whose dump is certain: a string, an integer that
// fits 64 bits, a boolean, null.
bool ReadId(ondemand::value value, std::string* id_json) {
  ondemand::json_type type;
  if (value.type().get(type)) return false;
  switch (type) {
    case ondemand::json_type::string: {
      std::string_view s;
      if (value.get_string().get(s)) return false;
      AppendJsonString(id_json, s);
      return true;
    }
    case ondemand::json_type::number:
      return json_ondemand::AppendInteger(value, id_json);
    case ondemand::json_type::boolean: {
      bool b;
      if (value.get_bool().get(b)) return false;
      AppendJsonBool(id_json, b);
      return true;
    }
    case ondemand::json_type::null:
      if (!IsNull(value)) return false;
      id_json->append("null");
      return true;
    default:
      return false;  // arrays and objects: nlohmann sorts keys and respaces; left to it
  }
}

// A string member's value in `*s`, or nullopt for a value of any other type, which SkipChecked
// checks at `depth`; false where the value cannot be read.
bool StringOrChecked(ondemand::value value, int depth, std::optional<std::string_view>* s) {
  s->reset();
  ondemand::json_type type;
  if (value.type().get(type)) return false;
  if (type != ondemand::json_type::string) return SkipChecked(value, depth);
  std::string_view view;
  if (value.get_string().get(view)) return false;
  *s = view;
  return true;
}

// A message's content as ContentText reads it: a string, or text parts joined. `*text` is
// nullopt where ContentText's would be (no text part, a part that is not an object, a text part
// whose text is not a string); false where the value cannot be read with certainty. The views
// point into the parser's string buffer and live as long as the document. `depth`: the value's.
bool ReadContent(ondemand::value value, int depth,
                 std::optional<std::vector<std::string_view>>* text) {
  text->reset();
  ondemand::json_type type;
  if (value.type().get(type)) return false;
  if (type == ondemand::json_type::string) {
    std::string_view s;
    if (value.get_string().get(s)) return false;
    text->emplace(1, s);
    return true;
  }
  if (type != ondemand::json_type::array) return SkipChecked(value, depth);
  ondemand::array parts;
  if (value.get_array().get(parts)) return false;
  std::vector<std::string_view> joined;
  bool usable = true;  // no part made ContentText give up
  const auto part = [&](ondemand::object& object) {
    static constexpr std::string_view kPartKeys[] = {"type", "text"};
    std::optional<std::string_view> part_type, part_text;
    const auto read = [&](size_t which, ondemand::value v) {
      return StringOrChecked(v, depth + 2, which == 0 ? &part_type : &part_text);
    };
    const auto other = [depth](std::string_view, ondemand::value v) {
      return SkipChecked(v, depth + 2);
    };
    uint64_t seen = 0;
    if (!json_ondemand::ReadMembers(object, kPartKeys, read, other, &seen)) return false;
    if (part_type != "text") return true;
    if (part_text.has_value()) {
      joined.push_back(*part_text);
    } else {
      usable = false;
    }
    return true;
  };
  const auto not_a_part = [&usable] {
    usable = false;
    return true;
  };
  if (!json_ondemand::ForEachObject(parts, depth + 1, part, not_a_part)) return false;
  if (usable && !joined.empty()) *text = std::move(joined);
  return true;
}

// A message's depth as SkipChecked counts it: the list is a member of the line's object (1).
constexpr int kMessageDepth = 2;

// A completion as ReadCompletion reads it: a string, or a chat message list whose last assistant
// message's text is scored. Every message is read, since the list streams past; each assistant
// message's text replaces the one before. A list whose last assistant message has no text, or
// that has none, is left to the reference, which names the error.
bool ReadCompletionText(ondemand::value value, std::string* out) {
  ondemand::json_type type;
  if (value.type().get(type)) return false;
  if (type == ondemand::json_type::string) return ReadString(value, out);
  if (type != ondemand::json_type::array) return false;
  ondemand::array messages;
  if (value.get_array().get(messages)) return false;
  bool found = false;
  const auto message = [&](ondemand::object& object) {
    static constexpr std::string_view kMessageKeys[] = {"role", "content"};
    std::optional<std::string_view> role;
    std::optional<std::vector<std::string_view>> content;
    const auto read = [&](size_t which, ondemand::value v) {
      return which == 0 ? StringOrChecked(v, kMessageDepth + 1, &role)
                        : ReadContent(v, kMessageDepth + 1, &content);
    };
    const auto other = [](std::string_view, ondemand::value v) {
      return SkipChecked(v, kMessageDepth + 1);
    };
    uint64_t seen = 0;
    if (!json_ondemand::ReadMembers(object, kMessageKeys, read, other, &seen)) return false;
    if (role != "assistant") return true;
    // Unless a later assistant message has text, the reference's error.
    found = content.has_value();
    if (found) {
      out->clear();
      for (const std::string_view part : *content) out->append(part);
    }
    return true;
  };
  if (!json_ondemand::ForEachObject(messages, kMessageDepth, message, [] { return true; })) {
    return false;
  }
  return found;
}

// One reference as ReadReferences writes it: a string, or a number or a boolean as its text.
bool ReadReference(ondemand::value value, ondemand::json_type type, std::string* out) {
  switch (type) {
    case ondemand::json_type::string:
      return ReadString(value, out);
    case ondemand::json_type::number:
      return json_ondemand::AppendNumberText(value, out);
    case ondemand::json_type::boolean: {
      bool b;
      if (value.get_bool().get(b)) return false;
      AppendJsonBool(out, b);
      return true;
    }
    default:
      return false;  // instruction lists and errors: left to the reference
  }
}

// A reference or a list of them, appended to `out`; null adds nothing.
bool ReadReferences(ondemand::value value, std::vector<std::string>* out) {
  ondemand::json_type type;
  if (value.type().get(type)) return false;
  if (type == ondemand::json_type::null) return IsNull(value);
  if (type != ondemand::json_type::array) return ReadReference(value, type, &out->emplace_back());
  ondemand::array array;
  if (value.get_array().get(array)) return false;
  for (auto element : array) {
    ondemand::value v;
    if (element.get(v) || v.type().get(type) || !ReadReference(v, type, &out->emplace_back())) {
      return false;
    }
  }
  return true;
}

bool ReadTokenIds(ondemand::value value, v1::Completion* completion) {
  ondemand::array array;
  if (value.get_array().get(array)) return false;
  for (auto element : array) {
    ondemand::value v;
    uint32_t id;
    if (element.get(v) || !ReadUint32(v, &id)) return false;
    completion->add_token_ids(id);
  }
  return true;
}

}  // namespace

struct RolloutReader::Parser {
  ondemand::parser parser = json_ondemand::NewParser();
};

RolloutReader::RolloutReader(FieldNames names, TreeLimit tree_limit)
    : names_(std::move(names)),
      tree_limit_(tree_limit),
      names_distinct_([this] {
        const std::string* keys[] = {
            &names_.id,         &names_.prompt_id,        &names_.completion, &names_.reference,
            &names_.references, &names_.num_tokens,       &names_.token_ids,  &names_.finished,
            &names_.task,       &names_.external_accuracy};
        for (size_t i = 0; i < std::size(keys); ++i) {
          for (size_t j = i + 1; j < std::size(keys); ++j) {
            if (*keys[i] == *keys[j]) return false;
          }
        }
        return true;
      }()),
      parser_(std::make_unique<Parser>()) {}

RolloutReader::~RolloutReader() = default;

void RolloutReader::Recycle(std::string* text) {
  if (spare_texts_.size() == kSpareTexts || spare_bytes_ + text->capacity() > kSpareTextBytes) {
    return;
  }
  spare_bytes_ += text->capacity();
  spare_texts_.push_back(std::move(*text));
  text->clear();  // a moved-from string is valid but unspecified
}

absl::StatusOr<Rollout> RolloutReader::Read(std::string_view line) {
  padded_.assign(line.data(), line.size());
  padded_.append(kRolloutLinePadding, ' ');
  return ReadPadded(std::string_view(padded_.data(), line.size()));
}

absl::StatusOr<Rollout> RolloutReader::ReadPadded(std::string_view line) {
  // JsonTreeBytes charges at most 1 + 128 bytes a byte of text (a '[' or '{').
  constexpr uint64_t kMaxTreeBytesPerByte = 129;
  if (tree_limit_.bytes != 0 && line.size() > tree_limit_.bytes / kMaxTreeBytesPerByte) {
    if (const uint64_t tree = JsonTreeBytes(line, CountJsonShape(line)); tree > tree_limit_.bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("the line would take about ", tree, " bytes to hold as JSON; at most ",
                       tree_limit_.bytes, " (", Sv(tree_limit_.name), ")"));
    }
  }
  // Raw control bytes are errors inside strings and whitespace (tab, CR) outside: either way a
  // line simdjson might read differently from nlohmann, so the reference reads it.
  if (names_distinct_ && !json_ondemand::HasControlByte(line)) {
    Rollout rollout;
    if (ReadFast(line, &rollout)) return rollout;
  }
  ++deferred_;
  return ParseRollout(line, names_);
}

bool RolloutReader::ReadFast(std::string_view line, Rollout* rollout) {
  // simdjson sizes its buffers (about 6 bytes a byte of line) to each line longer than all before.
  // Growing them twofold keeps the old ones from piling up in the thread's heap, whose every new
  // page is a page fault (13 sizes on the kit's corpus, 4 this way); past a few MiB a line gets
  // buffers of its own size, as before.
  constexpr size_t kMaxDoubling = size_t{4} << 20;
  ondemand::parser& parser = parser_->parser;
  if (line.size() > parser.capacity()) {
    const size_t capacity =
        std::min(parser.max_capacity(),
                 std::max(line.size(), std::min(2 * parser.capacity(), kMaxDoubling)));
    if (parser.allocate(capacity, parser.max_depth()) != simdjson::SUCCESS) return false;
  }
  ondemand::document doc;
  if (parser.iterate(line.data(), line.size(), line.size() + kRolloutLinePadding).get(doc)) {
    return false;
  }
  ondemand::object object;
  if (doc.get_object().get(object)) return false;
  v1::ScoreItem& item = rollout->item;
  v1::Completion& completion = *item.mutable_completion();
  // nlohmann keeps the last of a key given twice; a reader that streams sees the first. Leave
  // such lines to it.
  enum Field {
    kId,
    kPromptId,
    kCompletion,
    kReference,
    kReferences,
    kNumTokens,
    kTokenIds,
    kFinished,
    kTask,
    kExternalAccuracy,
    kFields
  };
  const std::string_view keys[kFields] = {
      names_.id,         names_.prompt_id,        names_.completion, names_.reference,
      names_.references, names_.num_tokens,       names_.token_ids,  names_.finished,
      names_.task,       names_.external_accuracy};
  std::vector<std::string> references[2];  // "reference" first, then "references"
  const auto read = [&](size_t which, ondemand::value value) {
    bool ok = false;
    switch (static_cast<Field>(which)) {
      case kId:
        ok = ReadId(value, &rollout->id_json);
        break;
      case kPromptId:
        ok = IsNull(value) || ReadPromptId(value, item.mutable_prompt_id());
        break;
      case kCompletion: {
        std::string* text = completion.mutable_text();
        if (!spare_texts_.empty()) {
          // Its size is kept too: ReadString zeroes only what the text grows past it.
          text->swap(spare_texts_.back());
          spare_texts_.pop_back();
          spare_bytes_ -= text->capacity();
        }
        ok = ReadCompletionText(value, text);
        break;
      }
      case kReference:
      case kReferences:
        ok = ReadReferences(value, &references[which - kReference]);
        break;
      case kNumTokens: {
        uint32_t n = 0;
        if (IsNull(value)) {
          ok = true;
        } else if ((ok = ReadUint32(value, &n))) {
          completion.set_num_tokens(n);
        }
        break;
      }
      case kTokenIds:
        ok = IsNull(value) || ReadTokenIds(value, &completion);
        break;
      case kFinished: {
        bool finished = false;
        if (IsNull(value)) {
          ok = true;
        } else if ((ok = !value.get_bool().get(finished))) {
          completion.set_finished(finished);
        }
        break;
      }
      case kTask: {
        std::string_view name;
        if (IsNull(value)) {
          ok = true;
        } else if (!value.get_string().get(name)) {
          absl::StatusOr<v1::Task> task = ParseTask(name);
          ok = task.ok();
          if (ok) item.set_task(*task);
        }
        break;
      }
      case kExternalAccuracy: {
        double accuracy = 0;
        if (IsNull(value)) {
          ok = true;
        } else if ((ok = !value.get_double().get(accuracy))) {
          completion.set_external_accuracy(accuracy);
        }
        break;
      }
      case kFields:
        break;
    }
    return ok;
  };
  const auto other = [](std::string_view key, ondemand::value value) {
    // An IFEval row: the reference reads its instruction list.
    return key != kInstructionIdList && SkipChecked(value, 1);
  };
  uint64_t seen = 0;
  if (!json_ondemand::ReadMembers(object, keys, read, other, &seen)) return false;
  if (!json_ondemand::AtEnd(doc) || (seen >> kCompletion & 1) == 0) return false;
  for (std::vector<std::string>& list : references) {
    for (std::string& r : list) item.add_references(std::move(r));
  }
  return true;
}

void AppendResult(std::string* out, uint64_t line, std::string_view id_json,
                  const v1::ScoreItem& item, const v1::CompletionResult& result, double reward) {
  absl::StrAppend(out, "{\"line\":", line);
  if (!id_json.empty()) absl::StrAppend(out, ",\"id\":", Sv(id_json));
  out->append(",\"prompt_id\":");
  AppendJsonString(out, item.prompt_id());
  out->append(",\"reward\":");
  AppendJsonNumber(out, reward);
  absl::StrAppend(out, ",\"verdict\":\"", Sv(VerdictName(result.verdict())), "\"");
  const v1::RewardComponents& c = result.components();
  out->append(",\"components\":{\"accuracy\":");
  AppendJsonNumber(out, c.accuracy());
  out->append(",\"format\":");
  AppendJsonNumber(out, c.format());
  out->append(",\"repetition\":");
  AppendJsonNumber(out, c.repetition());
  out->append(",\"length\":");
  AppendJsonNumber(out, c.length());
  out->append("},\"extracted_answer\":");
  AppendJsonString(out, result.extracted_answer());
  absl::StrAppend(out, ",\"num_tokens\":", result.num_tokens(), ",\"tokens_estimated\":");
  AppendJsonBool(out, result.tokens_estimated());
  out->append(",\"well_formed\":");
  AppendJsonBool(out, result.anatomy().well_formed());
  out->append(",\"truncated\":");
  AppendJsonBool(out, result.anatomy().truncated());
  out->append(",\"format_gated\":");
  AppendJsonBool(out, result.format_gated());
  if (result.has_repetition()) {
    const v1::RepetitionReport& r = result.repetition();
    absl::StrAppend(out, ",\"repetition\":{\"detector\":\"",
                    Sv(RepetitionDetectorName(r.detector())),
                    "\",\"char_offset\":", r.char_offset(), ",\"token_offset\":", r.token_offset(),
                    ",\"first_char_offset\":", r.first_char_offset(),
                    ",\"occurrences\":", r.occurrences(), ",\"detail\":");
    AppendJsonString(out, r.detail());
    out->push_back('}');
  }
  if (!result.detail().empty()) {
    out->append(",\"detail\":");
    AppendJsonString(out, result.detail());
  }
  if (result.instructions_size() > 0) {
    out->append(",\"instructions\":[");
    for (int i = 0; i < result.instructions_size(); ++i) {
      const v1::InstructionResult& r = result.instructions(i);
      out->append(i == 0 ? "{\"id\":" : ",{\"id\":");
      AppendJsonString(out, r.id());
      out->append(",\"strict\":");
      AppendJsonBool(out, r.strict());
      out->append(",\"loose\":");
      AppendJsonBool(out, r.loose());
      out->push_back('}');
    }
    out->push_back(']');
  }
  out->append("}\n");
}

void AppendError(std::string* out, uint64_t line, std::string_view message) {
  absl::StrAppend(out, "{\"line\":", line, ",\"error\":");
  AppendJsonString(out, message);
  out->append("}\n");
}

}  // namespace rlscore::cli
