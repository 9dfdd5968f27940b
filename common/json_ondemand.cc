#include "common/json_ondemand.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RLSCORE_VECTOR_STRINGS 1
#endif

#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/cpu_features.h"
#include "common/json_input.h"

namespace rlscore::json_ondemand {
namespace {

#if defined(RLSCORE_VECTOR_STRINGS)
// GCC 12's AVX-512 intrinsics start some results from an undefined vector, which it then warns
// is or may be used uninitialised; none is.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#define RLSCORE_AVX512_STRINGS \
  __attribute__((target("avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi")))

// What the byte after a backslash stands for, for the escapes of one byte (\" \\ \/ \b \f \n
// \r \t); 0 for every other byte, \u among them.
struct EscapeTable {
  uint8_t of[128];
  constexpr EscapeTable() : of() {
    of[static_cast<unsigned char>('"')] = '"';
    of[static_cast<unsigned char>('\\')] = '\\';
    of[static_cast<unsigned char>('/')] = '/';
    of[static_cast<unsigned char>('b')] = '\b';
    of[static_cast<unsigned char>('f')] = '\f';
    of[static_cast<unsigned char>('n')] = '\n';
    of[static_cast<unsigned char>('r')] = '\r';
    of[static_cast<unsigned char>('t')] = '\t';
  }
};
alignas(64) constexpr EscapeTable kEscapes;

constexpr size_t kNotPlain = ~size_t{0};

// Unescapes the JSON string whose text (after its opening quote) starts at `in`, 64 bytes a step:
// backslashes and quotes as compare masks, the escaped bytes translated with one table lookup,
// and what stays packed with vpcompressb. Writes at most `limit` + 63 bytes to `out` and returns
// how many are the string; kNotPlain when it has an escape other than the one-byte ones (\u,
// or an invalid one) or its closing quote is not within `limit` bytes. Reads up to 63 bytes past
// `limit`, which simdjson's padding allows.
RLSCORE_AVX512_STRINGS size_t UnescapePlain(const char* in, size_t limit, char* out) {
  const __m512i table_low = _mm512_load_si512(kEscapes.of);
  const __m512i table_high = _mm512_load_si512(kEscapes.of + 64);
  const __m512i backslash = _mm512_set1_epi8('\\');
  const __m512i quote = _mm512_set1_epi8('"');
  size_t written = 0;
  uint64_t carried = 0;  // 1 when the step before ended on a backslash that escapes this byte 0
  for (size_t at = 0; at < limit; at += 64) {
    __m512i v = _mm512_loadu_si512(in + at);
    const uint64_t backslashes = _mm512_cmpeq_epi8_mask(v, backslash);
    const uint64_t quotes = _mm512_cmpeq_epi8_mask(v, quote);
    if ((backslashes | quotes | carried) == 0) {
      _mm512_storeu_si512(out + written, v);
      written += 64;
      continue;
    }
    // A backslash escapes the byte after it unless it is itself escaped: in a run of backslashes
    // the first, third, ... escape. Subtracting each run's first bit from the run shifted up by
    // one, with every odd bit set, carries through the run and leaves bits that alternate from
    // its start, whichever parity that start has; xor with the odd bits makes them the escaping
    // backslashes, and the bytes they escape, at once (no step per backslash).
    constexpr uint64_t kOdd = 0xAAAAAAAAAAAAAAAAULL;
    const uint64_t candidates = backslashes & ~carried;
    const uint64_t code = (((candidates << 1) | kOdd) - candidates) ^ kOdd;
    const uint64_t escapers = code & backslashes;
    const uint64_t escaped = code ^ (backslashes | carried);
    const uint64_t closing = quotes & ~escaped;
    const unsigned end = closing == 0 ? 64 : static_cast<unsigned>(_tzcnt_u64(closing));
    const uint64_t inside = end == 64 ? ~uint64_t{0} : (uint64_t{1} << end) - 1;
    if ((escaped & inside) != 0) {
      const __m512i meant = _mm512_permutex2var_epi8(table_low, v, table_high);
      const uint64_t unknown = (_mm512_testn_epi8_mask(meant, meant) | _mm512_movepi8_mask(v));
      if ((unknown & escaped & inside) != 0) return kNotPlain;
      v = _mm512_mask_mov_epi8(v, escaped, meant);
    }
    const uint64_t kept = inside & ~escapers;
    _mm512_storeu_si512(out + written, _mm512_maskz_compress_epi8(kept, v));
    written += static_cast<size_t>(_mm_popcnt_u64(kept));
    if (closing != 0) return at + end < limit ? written : kNotPlain;
    carried = escapers >> 63;
  }
  return kNotPlain;
}

// HasControlByte with one unsigned compare per 64 bytes, the last 64 a masked load. AVX-512BW
// only, as its caller checks: the compiler may use any extension a function's target names.
__attribute__((target("avx512f,avx512bw"))) bool HasControlByteAvx512(std::string_view text) {
  const __m512i space = _mm512_set1_epi8(0x20);
  const char* const p = text.data();
  const size_t n = text.size();
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    const __mmask64 below = _mm512_cmplt_epu8_mask(_mm512_loadu_si512(p + i), space) |
                            _mm512_cmplt_epu8_mask(_mm512_loadu_si512(p + i + 64), space) |
                            _mm512_cmplt_epu8_mask(_mm512_loadu_si512(p + i + 128), space) |
                            _mm512_cmplt_epu8_mask(_mm512_loadu_si512(p + i + 192), space);
    if (below != 0) return true;
  }
  for (; i < n; i += 64) {
    const __mmask64 valid = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    if (_mm512_mask_cmplt_epu8_mask(valid, _mm512_maskz_loadu_epi8(valid, p + i), space) != 0) {
      return true;
    }
  }
  return false;
}

// HasControlByte with AVX2 over the whole 128-byte steps of `text`, four 32-byte compares a step;
// the bytes after the last whole step are the caller's.
__attribute__((target("avx2"))) bool HasControlByteAvx2(std::string_view text) {
  const __m256i limit = _mm256_set1_epi8(0x1F);
  for (size_t i = 0; i + 128 <= text.size(); i += 128) {
    __m256i any = _mm256_setzero_si256();
    for (int k = 0; k < 4; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(text.data() + i) + k);
      any = _mm256_or_si256(any, _mm256_cmpeq_epi8(_mm256_min_epu8(v, limit), v));
    }
    if (_mm256_movemask_epi8(any) != 0) return true;
  }
  return false;
}

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // RLSCORE_VECTOR_STRINGS

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
#if defined(RLSCORE_VECTOR_STRINGS)
  // Most strings escape only with one-byte escapes (newlines, LaTeX's backslashes): unescaped
  // straight into `out`, 64 bytes a step, rather than by simdjson (a step per escape) into its
  // buffer and then copied. Any other string takes simdjson's way.
  static const bool vector =
      Cpu().avx512bw && Cpu().avx512vbmi && Cpu().avx512vbmi2 && Cpu().popcnt && Cpu().bmi1;
  if (vector) {
    const std::string_view token = value.raw_json_token();  // the quoted text; not consumed
    if (token.size() >= 2 && token.front() == '"') {
      const size_t limit = token.size() - 1;
      out->resize(limit + 63);
      const size_t size = UnescapePlain(token.data() + 1, limit, out->data());
      if (size != kNotPlain) {
        out->resize(size);
        ondemand::raw_json_string raw;
        return !value.get_raw_json_string().get(raw);  // consumes the string
      }
    }
  }
#endif
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

bool AppendNumberText(ondemand::value value, std::string* out) {
  // The token runs to the next one, spaces included (raw control bytes, tabs among them, are
  // left to the reference before this is called). Not consumed: get_double checks it.
  std::string_view token = value.raw_json_token();
  double d;
  if (value.get_double().get(d)) return false;
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  out->append(token);
  return true;
}

bool AtEnd(ondemand::document& doc) {
  const char* trailing = nullptr;
  return doc.current_location().get(trailing) == simdjson::OUT_OF_BOUNDS;
}

ondemand::parser NewParser() {
  // Once, before the first parser allocates its kernels (an atomic store in simdjson). AVX2's
  // kernels need more than AVX2 (PCLMULQDQ): on a CPU without them simdjson's own choice is
  // below AVX2 anyway, and stays.
  [[maybe_unused]] static const bool capped = [] {
    const std::optional<CpuIsa> cap = CpuIsaFromEnvironment();
    if (!cap.has_value() || *cap == CpuIsa::kAvx512) return false;
    const simdjson::implementation* kernels =
        simdjson::get_available_implementations()[*cap == CpuIsa::kSse2 ? "fallback" : "haswell"];
    if (kernels == nullptr || !kernels->supported_by_runtime_system()) return false;
    simdjson::get_active_implementation() = kernels;
    return true;
  }();
  return ondemand::parser();
}

bool HasControlByte(std::string_view text) {
  size_t i = 0;
#if defined(RLSCORE_VECTOR_STRINGS)
  static const bool vector = Cpu().avx512f && Cpu().avx512bw;
  if (vector) return HasControlByteAvx512(text);
  static const bool avx2 = Cpu().avx2;
  if (avx2) {
    if (HasControlByteAvx2(text)) return true;
    i = text.size() / 128 * 128;  // the rest as below
  }
#endif
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
