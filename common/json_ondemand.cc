#include "common/json_ondemand.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/json_input.h"

namespace rlscore::json_ondemand {
namespace {

bool SkipContainerChecked(ondemand::value value, ondemand::json_type type, int depth) {
  if (depth >= kMaxJsonDepth) return false;
  if (type == ondemand::json_type::array) {
    ondemand::array array;
    if (value.get_array().get(array)) return false;
    for (auto element : array) {
      ondemand::value v;
      if (element.get(v) || !SkipChecked(v, depth + 1)) return false;
    }
    return true;
  }
  ondemand::object object;
  if (value.get_object().get(object)) return false;
  return ForEachMember(
      object, [depth](std::string_view, ondemand::value v) { return SkipChecked(v, depth + 1); });
}

}  // namespace

bool SkipChecked(ondemand::value value, int depth) {
  ondemand::json_type type;
  if (value.type().get(type)) return false;
  switch (type) {
    case ondemand::json_type::array:
    case ondemand::json_type::object:
      return SkipContainerChecked(value, type, depth);
    case ondemand::json_type::string: {
      std::string_view s;
      return !value.get_string().get(s);
    }
    case ondemand::json_type::number: {
      double d;
      return !value.get_double().get(d);
    }
    case ondemand::json_type::boolean: {
      bool b;
      return !value.get_bool().get(b);
    }
    case ondemand::json_type::null: {
      bool is_null = false;
      return !value.is_null().get(is_null) && is_null;
    }
  }
  return false;
}

bool ReadString(ondemand::value value, std::string* out) {
  std::string_view s;
  if (value.get_string().get(s)) return false;
  out->assign(s.data(), s.size());
  return true;
}

bool IsNull(ondemand::value value) {
  ondemand::json_type type;
  bool is_null = false;
  return !value.type().get(type) && type == ondemand::json_type::null &&
         !value.is_null().get(is_null) && is_null;
}

bool AppendInteger(ondemand::value value, std::string* out) {
  ondemand::number_type type;
  if (value.get_number_type().get(type)) return false;
  if (type == ondemand::number_type::signed_integer) {
    int64_t v;
    if (value.get_int64().get(v)) return false;
    absl::StrAppend(out, v);
    return true;
  }
  uint64_t v;
  if (type != ondemand::number_type::unsigned_integer || value.get_uint64().get(v)) return false;
  absl::StrAppend(out, v);
  return true;
}

bool AtEnd(ondemand::document& doc) {
  const char* trailing = nullptr;
  return doc.current_location().get(trailing) == simdjson::OUT_OF_BOUNDS;
}

bool HasControlByte(std::string_view text) {
  size_t i = 0;
#if defined(__SSE2__)
  // 64 bytes at a time: a byte is below 0x20 when its unsigned minimum with 0x1F is itself.
  // Every rollout line passes here whole, so this runs at the speed of simdjson's own first pass
  // rather than at a third of it.
  const __m128i limit = _mm_set1_epi8(0x1F);
  const auto below = [&limit](const char* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm_cmpeq_epi8(_mm_min_epu8(v, limit), v);
  };
  for (; i + 64 <= text.size(); i += 64) {
    const char* p = text.data() + i;
    const __m128i any = _mm_or_si128(_mm_or_si128(below(p), below(p + 16)),
                                     _mm_or_si128(below(p + 32), below(p + 48)));
    if (_mm_movemask_epi8(any) != 0) return true;
  }
#endif
  // Eight bytes at a time: a byte below 0x20 borrows from its own high bit when 0x20 is taken
  // from it; bytes of 0x80 and above are masked out by ~word.
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    if (((word - 0x20 * kOnes) & ~word & 0x80 * kOnes) != 0) return true;
  }
  for (; i < text.size(); ++i) {
    if (static_cast<unsigned char>(text[i]) < 0x20) return true;
  }
  return false;
}

}  // namespace rlscore::json_ondemand
