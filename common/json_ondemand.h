// Reading JSON with simdjson's on-demand API so that it agrees with ParseJsonObject
// (common/json_input.h, nlohmann) on every input it accepts. The fast readers of rollout lines
// and HTTP bodies are built on these: each function answers false where a value is not one it
// reads with certainty, and the reader then hands the whole text to its nlohmann reference,
// which decides and names any error. So simdjson is the speed, and nlohmann stays the meaning.
//
//   if (json_ondemand::HasControlByte(text)) return Reference(text);
//   ondemand::parser parser = json_ondemand::NewParser();
//   ondemand::document doc;
//   if (parser.iterate(text.data(), text.size(), text.size() + json_ondemand::kPadding).get(doc))
//     return Reference(text);
//   ... fields: json_ondemand::ReadString(value, &s), json_ondemand::SkipChecked(value, 1) ...
//   if (!json_ondemand::AtEnd(doc)) return Reference(text);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "simdjson.h"

namespace rlscore::json_ondemand {

namespace ondemand = simdjson::ondemand;

// Readable bytes simdjson needs after the text it parses (of any content).
inline constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;

// A parser whose kernels keep within RLSCORE_MAX_CPU_ISA (common/cpu_features.h), as ours do:
// left to itself, simdjson takes the best that the CPU has. Every parser of these readers comes
// from here.
ondemand::parser NewParser();

// Whether `text` has a byte below 0x20. Raw control bytes are errors inside JSON strings and
// whitespace (tab, CR, LF) outside them; either way, text the reference should read.
bool HasControlByte(std::string_view text);

// Walks a value nobody uses, checking what nlohmann's parser would: every token, numbers within
// a double's range, and nesting (`depth` is the value's, the document's object being 0; a
// container at kMaxJsonDepth or deeper is refused).
bool SkipChecked(ondemand::value value, int depth);

// A string, unescaped into `out`.
bool ReadString(ondemand::value value, std::string* out);

// Appends an integer that fits 64 bits as nlohmann dumps it (-0 as 0); false for any other number,
// whose text nlohmann would change (1.50 -> 1.5, 1e2 -> 100.0), and for what is not a number.
bool AppendInteger(ondemand::value value, std::string* out);

// Appends a number as the text writes it (1.50, 1e2, 123456789012345678901234567890), as
// MemberText (common/json_input.h) gives it, once checked as SkipChecked checks it; false for
// a number out of a double's range and for what is not a number.
bool AppendNumberText(ondemand::value value, std::string* out);

// True only for a JSON null (and consumes it); false for anything else, which stays unread.
bool IsNull(ondemand::value value);

// Whether the document ends after the value read from it: trailing text is an error for
// nlohmann.
bool AtEnd(ondemand::document& doc);

// Calls on_member(key, value) for each member of `object` in order, the key unescaped; false as
// soon as a member cannot be read or on_member answers false.
template <typename OnMember>
bool ForEachMember(ondemand::object& object, OnMember&& on_member) {
  for (auto member : object) {
    ondemand::field field;
    std::string_view key;
    if (std::move(member).get(field) || field.unescaped_key(false).get(key)) return false;
    if (!on_member(key, field.value())) return false;
  }
  return true;
}

// The members of an object whose keys a reader knows: a member whose key is keys[i] goes to
// read(i, value), any other to other(key, value), and bit i of `*seen` tells that keys[i] came.
// A known key that comes twice is refused (false), like an unreadable member or a callback's
// false: nlohmann keeps the last of them, and a reader that streams sees the first.
template <size_t N, typename Read, typename Other>
bool ReadMembers(ondemand::object& object, const std::string_view (&keys)[N], Read&& read,
                 Other&& other, uint64_t* seen) {
  static_assert(N <= 64, "one bit of *seen per key");
  *seen = 0;
  return ForEachMember(object, [&](std::string_view key, ondemand::value value) {
    size_t which = 0;
    while (which < N && keys[which] != key) ++which;
    if (which == N) return other(key, value);
    if ((*seen >> which & 1) != 0) return false;
    *seen |= uint64_t{1} << which;
    return read(which, value);
  });
}

// Calls on_object(object) for each element of `array` that is an object, and on_other() for
// each other element, once SkipChecked has checked it at `depth` (the elements' depth); false as
// soon as an element cannot be read or a callback answers false.
template <typename OnObject, typename OnOther>
bool ForEachObject(ondemand::array& array, int depth, OnObject&& on_object, OnOther&& on_other) {
  for (auto element : array) {
    ondemand::value value;
    ondemand::json_type type;
    if (element.get(value) || value.type().get(type)) return false;
    if (type != ondemand::json_type::object) {
      if (!SkipChecked(value, depth) || !on_other()) return false;
      continue;
    }
    ondemand::object object;
    if (value.get_object().get(object) || !on_object(object)) return false;
  }
  return true;
}

}  // namespace rlscore::json_ondemand
