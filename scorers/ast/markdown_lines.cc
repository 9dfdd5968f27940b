#include "scorers/ast/markdown_lines.h"

#include <bit>
#include <cstring>

#include "common/cpu_features.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RLSCORE_VECTOR_SCAN 1
#endif

namespace rlscore::scorers::ast {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Character classes of the prose normaliser, one table lookup per byte.
enum CharClass : uint8_t {
  kOther,
  kSpace,
  kDigit,
  kLetter,
  kUnderscore,
  kBackslash,
  kDollar,
  kBacktick,
  kStar,
};

struct ClassTable {
  CharClass of[256];
  constexpr ClassTable() : of() {
    for (int c = 0; c < 256; ++c) of[c] = kOther;
    for (char c : {' ', '\t', '\r', '\v', '\f'}) of[static_cast<unsigned char>(c)] = kSpace;
    for (int c = '0'; c <= '9'; ++c) of[c] = kDigit;
    for (int c = 'a'; c <= 'z'; ++c) of[c] = kLetter;
    for (int c = 'A'; c <= 'Z'; ++c) of[c] = kLetter;
    of[static_cast<unsigned char>('_')] = kUnderscore;
    of[static_cast<unsigned char>('\\')] = kBackslash;
    of[static_cast<unsigned char>('$')] = kDollar;
    of[static_cast<unsigned char>('`')] = kBacktick;
    of[static_cast<unsigned char>('*')] = kStar;
  }
};
constexpr ClassTable kClasses;
CharClass ClassOf(char c) { return kClasses.of[static_cast<unsigned char>(c)]; }

// Streams normalised bytes into a hash and counts them; folds whitespace runs lazily so that
// trailing whitespace never reaches the hash. Bytes are packed eight to a word and mixed once per
// word: a multiply per byte would be the normaliser's bottleneck.
class Normalized {
 public:
  void Byte(char c) {
    if (pending_space_) {
      pending_space_ = false;
      if (size_ > 0) Put(' ');
    }
    Put(c);
  }
  void Space() { pending_space_ = true; }
  // An ASCII letter that follows another byte of the same word: no space can be pending.
  void Letter(char c) { Put(static_cast<char>(c | 0x20)); }
  // Eight normalised bytes at once, the first in the lowest byte of `v`; no space pending.
  void Eight(uint64_t v) {
    if (shift_ == 0) {
      word_ = v;
      Flush();
      word_ = 0;
    } else {
      word_ |= v << shift_;
      Flush();
      word_ = v >> (64 - shift_);
    }
    size_ += 8;
  }
  uint64_t hash() const {
    uint64_t h = (hash_ ^ word_) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29) ^ size_;
  }
  uint32_t size() const { return size_; }

 private:
  void Put(char c) {
    word_ |= static_cast<uint64_t>(static_cast<unsigned char>(c)) << shift_;
    ++size_;
    shift_ += 8;
    if (shift_ == 64) {
      Flush();
      word_ = 0;
      shift_ = 0;
    }
  }
  void Flush() {
    hash_ = (hash_ ^ word_) * 0x9e3779b97f4a7c15ULL;
    hash_ ^= hash_ >> 29;
  }
  uint64_t hash_ = 0xcbf29ce484222325ULL;
  uint64_t word_ = 0;
  uint32_t shift_ = 0;
  uint32_t size_ = 0;
  bool pending_space_ = false;
};

// Eight bytes of plain prose that normalise to themselves with case folded: ASCII letters and
// single spaces, ending with a letter (so no space is trailing). SWAR: one test per 8 bytes.
static_assert(std::endian::native == std::endian::little,
              "Normalized::Eight packs bytes as a little-endian load does");
bool PlainProse(uint64_t v) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  if ((v & kHigh) != 0) return false;  // bytes below 0x80, so no carry crosses a byte below
  const uint64_t x = v | (kOnes * 0x20);
  const uint64_t letters = (x + kOnes * 0x1f) & (kOnes * 0xfa - x) & kHigh;  // 'a' <= x <= 'z'
  const uint64_t spaces = ~((v ^ (kOnes * 0x20)) + kOnes * 0x7f) & kHigh;    // v == ' '
  return (letters | spaces) == kHigh && (spaces & (spaces << 8)) == 0 && (letters >> 63) != 0;
}

// Math and inline-code state, carried across the lines of a paragraph.
struct MathState {
  enum class Kind : uint8_t { kNone, kDollar, kDoubleDollar, kParen, kBracket, kCode };
  Kind kind = Kind::kNone;
};

// Skips leading block markers: indentation, `>`, bullets, ordered-list numbers, heading marks,
// task-list boxes.
size_t SkipMarkers(std::string_view line) {
  size_t i = 0;
  for (;;) {
    while (i < line.size() && IsSpace(line[i])) ++i;
    if (i >= line.size()) return i;
    const auto followed_by_space = [&](size_t j) {
      return j >= line.size() || line[j] == ' ' || line[j] == '\t';
    };
    const char c = line[i];
    if (c == '>') {
      ++i;
      continue;
    }
    if ((c == '-' || c == '*' || c == '+') && followed_by_space(i + 1)) {
      ++i;
      continue;
    }
    if (c == '#') {
      size_t j = i;
      while (j < line.size() && line[j] == '#' && j - i < 7) ++j;
      if (j - i <= 6 && followed_by_space(j)) {
        i = j;
        continue;
      }
      return i;
    }
    if (IsDigit(c)) {
      size_t j = i;
      while (j < line.size() && IsDigit(line[j]) && j - i < 10) ++j;
      if (j < line.size() && (line[j] == '.' || line[j] == ')') && followed_by_space(j + 1)) {
        i = j + 1;
        continue;
      }
      return i;
    }
    if (c == '[' && i + 2 < line.size() && line[i + 2] == ']' &&
        (line[i + 1] == ' ' || line[i + 1] == 'x' || line[i + 1] == 'X') &&
        followed_by_space(i + 3)) {
      i += 3;
      continue;
    }
    return i;
  }
}

// Normalises one prose line (see the header) and returns its hash and size.
Normalized NormalizeProse(std::string_view line, MathState* state) {
  // A local accumulator stays in registers; the common classes are tested before the switch,
  // whose indirect jump would mispredict on every change of class.
  Normalized normalized;
  Normalized* const out = &normalized;
  MathState local = *state;
  MathState* const math = &local;
  size_t i = SkipMarkers(line);
  const size_t n = line.size();
  while (i < n) {
    const char c = line[i];
    const CharClass cls = ClassOf(c);
    if (cls == kLetter && math->kind == MathState::Kind::kNone) {
      out->Byte(Lower(c));
      ++i;
      for (;;) {
        while (i + 8 <= n) {  // runs of words and single spaces, eight bytes at a time
          uint64_t v;
          std::memcpy(&v, line.data() + i, 8);  // little-endian: text order from the low byte
          if (!PlainProse(v)) break;
          out->Eight(v | 0x2020202020202020ULL);
          i += 8;
        }
        if (i >= n || ClassOf(line[i]) != kLetter) break;
        out->Letter(line[i++]);
      }
      continue;
    }
    if (cls == kSpace) {
      out->Space();
      ++i;
      continue;
    }
    if (cls == kOther) {
      out->Byte(c);
      ++i;
      continue;
    }
    switch (cls) {
      case kSpace:
        out->Space();
        ++i;
        break;
      case kDigit:
        // A number: digits, with `.` or `,` between digits.
        ++i;
        while (i < n && (IsDigit(line[i]) || ((line[i] == '.' || line[i] == ',') && i + 1 < n &&
                                              IsDigit(line[i + 1])))) {
          ++i;
        }
        out->Byte('0');
        break;
      case kLetter:
      case kUnderscore:
        if (math->kind != MathState::Kind::kNone) {  // an identifier in math or code: abstracted
          while (i < n && (ClassOf(line[i]) == kLetter || line[i] == '_')) ++i;
          out->Byte('v');
        } else {
          out->Byte(Lower(c));
          ++i;
          // The common case, a word of prose: letters go straight in, folded with | 0x20.
          while (i < n && ClassOf(line[i]) == kLetter) out->Letter(line[i++]);
        }
        break;
      case kBackslash: {
        if (i + 1 >= n) {
          out->Byte(c);
          ++i;
          break;
        }
        const char d = line[i + 1];
        out->Byte('\\');
        if (IsAlpha(d)) {  // a LaTeX command: kept
          ++i;
          while (i < n && IsAlpha(line[i])) out->Byte(Lower(line[i++]));
          break;
        }
        if (math->kind == MathState::Kind::kNone && (d == '(' || d == '[')) {
          math->kind = d == '(' ? MathState::Kind::kParen : MathState::Kind::kBracket;
        } else if ((d == ')' && math->kind == MathState::Kind::kParen) ||
                   (d == ']' && math->kind == MathState::Kind::kBracket)) {
          math->kind = MathState::Kind::kNone;
        }
        out->Byte(d);  // an escaped character (\$, \{, \\) is literal
        i += 2;
        break;
      }
      case kDollar: {
        const bool twice = i + 1 < n && line[i + 1] == '$';
        if (math->kind == MathState::Kind::kNone) {
          math->kind = twice ? MathState::Kind::kDoubleDollar : MathState::Kind::kDollar;
        } else if (math->kind ==
                   (twice ? MathState::Kind::kDoubleDollar : MathState::Kind::kDollar)) {
          math->kind = MathState::Kind::kNone;
        }
        out->Byte('$');
        if (twice) out->Byte('$');
        i += twice ? 2 : 1;
        break;
      }
      case kBacktick:
        if (math->kind == MathState::Kind::kNone) {
          math->kind = MathState::Kind::kCode;
        } else if (math->kind == MathState::Kind::kCode) {
          math->kind = MathState::Kind::kNone;
        }
        out->Byte('`');
        ++i;
        break;
      case kStar:
        if (math->kind != MathState::Kind::kNone) out->Byte(c);  // emphasis outside math is dropped
        ++i;
        break;
      case kOther:
        out->Byte(c);
        ++i;
        break;
    }
  }
  *state = local;
  return normalized;
}

// Code lines: case, whitespace and numbers only.
void NormalizeCode(std::string_view line, Normalized* out) {
  size_t i = 0;
  const size_t n = line.size();
  while (i < n) {
    const char c = line[i];
    if (IsSpace(c)) {
      out->Space();
      ++i;
    } else if (IsDigit(c) && (i == 0 || !(IsAlpha(line[i - 1]) || line[i - 1] == '_'))) {
      while (i < n && (IsDigit(line[i]) || line[i] == '.')) ++i;
      out->Byte('0');
    } else {
      out->Byte(Lower(c));
      ++i;
    }
  }
}

// The fence delimiter a line opens (or closes) with: its character, its length and the info
// string after it. Zero length when the line is not a delimiter.
struct Delimiter {
  char fence_char = 0;
  size_t length = 0;
  std::string_view info;
};

Delimiter ParseDelimiter(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return {};
  const char c = line[i];
  size_t j = i;
  while (j < line.size() && line[j] == c) ++j;
  if (j - i < 3) return {};
  std::string_view info = line.substr(j);
  while (!info.empty() && IsSpace(info.front())) info.remove_prefix(1);
  while (!info.empty() && IsSpace(info.back())) info.remove_suffix(1);
  if (c == '`' && info.find('`') != std::string_view::npos) return {};  // CommonMark
  return {c, j - i, info};
}

// Where a line starts a new block although the previous line was not blank: a list item, an ATX
// heading, a block quote (after a line that was not one) or a thematic break.
bool StartsBlock(std::string_view line, bool previous_quoted) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size()) return false;
  const auto space_at = [&](size_t j) {
    return j >= line.size() || line[j] == ' ' || line[j] == '\t';
  };
  const char c = line[i];
  if (c == '>') return !previous_quoted;
  if ((c == '-' || c == '*' || c == '+') && space_at(i + 1)) return true;
  if (c == '#') {
    size_t j = i;
    while (j < line.size() && line[j] == '#') ++j;
    return j - i <= 6 && space_at(j);
  }
  if (IsDigit(c)) {
    size_t j = i;
    while (j < line.size() && IsDigit(line[j]) && j - i < 10) ++j;
    return j < line.size() && (line[j] == '.' || line[j] == ')') && space_at(j + 1);
  }
  if (c == '-' || c == '*' || c == '_') {  // ---, ***, ___ (a setext underline continues instead)
    size_t n = 0;
    for (size_t j = i; j < line.size(); ++j) {
      if (line[j] == c) {
        ++n;
      } else if (line[j] != ' ' && line[j] != '\t') {
        return false;
      }
    }
    return n >= 3 && c != '-';
  }
  return false;
}

bool IsAtxHeading(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  size_t j = i;
  while (j < line.size() && line[j] == '#') ++j;
  return j > i && j - i <= 6 && (j == line.size() || line[j] == ' ' || line[j] == '\t');
}

bool IsQuoted(std::string_view line) {
  const size_t i = line.find_first_not_of(" \t");
  return i != std::string_view::npos && line[i] == '>';
}

// A line's fingerprint: a cheap function of its raw text that two lines with the same normalised
// content always share (see the header), so that only blocks whose fingerprints recur need to be
// normalised. It counts the runs of letters and `_` (a `*`, which prose normalisation may drop,
// neither ends nor starts a run) and sums a weight per punctuation byte — every byte that
// normalisation copies verbatim, that is all but letters, `_`, digits, whitespace, `*`, `.` and
// `,` (the last two can vanish into a number). A weight is two bytes, one in bits 0-7 and one in
// bits 32-39, so that a vector sums them as bytes. Each is the sum of three random bytes looked up
// by the byte's low nibble, its high nibble, and the sum of the two (mod 16): AVX2 computes it with
// three 16-entry lookups (`vpshufb`) where it has no 256-entry one, and the third term keeps two
// bytes that swap nibbles with two others from weighing the same. AVX-512 and the portable code
// read the table built from the same terms. Which values the weights take changes no result, only
// how often unequal lines share a fingerprint.
struct NibbleWeights {
  // [term][nibble]: term 0 by the low nibble, 1 by the high one, 2 by their sum mod 16.
  uint8_t low[3][16];  // low[0] in [4, 87], the others in [0, 83]: a sum in [4, 253]
  uint8_t high[3][16];
  constexpr NibbleWeights() : low(), high() {
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int t = 0; t < 3; ++t) {
      for (int n = 0; n < 16; ++n) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        low[t][n] = static_cast<uint8_t>((t == 0 ? 4 : 0) + (x & 0xFF) % 84);
        high[t][n] = static_cast<uint8_t>(x >> 8);
      }
    }
  }
};
alignas(16) constexpr NibbleWeights kNibbleWeights;

struct ByteWeights {
  uint8_t low[256];  // at least 4, so that a weight is never a class code of FingerprintTable
  uint8_t high[256];
  constexpr ByteWeights() : low(), high() {
    for (int c = 0; c < 256; ++c) {
      const int lo = c & 15;
      const int hi = c >> 4;
      const int mix = (lo + hi) & 15;
      const NibbleWeights& w = kNibbleWeights;
      low[c] = static_cast<uint8_t>(w.low[0][lo] + w.low[1][hi] + w.low[2][mix]);
      high[c] = static_cast<uint8_t>(w.high[0][lo] + w.high[1][hi] + w.high[2][mix]);
    }
  }
};
alignas(64) constexpr ByteWeights kByteWeights;
static_assert(
    [] {
      for (const uint8_t w : kByteWeights.low) {
        if (w < 4) return false;
      }
      return true;
    }(),
    "a weight must not be a class code of FingerprintTable");

struct FingerprintTable {
  // 0: separator; 1: run byte; 2: ignored; otherwise the byte's weight.
  uint64_t of[256];
  constexpr FingerprintTable(bool code) : of() {
    for (int c = 0; c < 256; ++c) {
      of[c] = kByteWeights.low[c] | static_cast<uint64_t>(kByteWeights.high[c]) << 32;
    }
    for (int c = 'a'; c <= 'z'; ++c) of[c] = 1;
    for (int c = 'A'; c <= 'Z'; ++c) of[c] = 1;
    of[static_cast<unsigned char>('_')] = 1;
    for (int c = '0'; c <= '9'; ++c) of[c] = 0;
    for (char c : {' ', '\t', '\r', '\v', '\f', '.'}) of[static_cast<unsigned char>(c)] = 0;
    if (!code) {
      of[static_cast<unsigned char>(',')] = 0;
      of[static_cast<unsigned char>('*')] = 2;
    }
  }
};
constexpr FingerprintTable kProseFingerprint(false);
constexpr FingerprintTable kCodeFingerprint(true);

// Fingerprint's definition, a byte at a time. Branch-free: a branch per byte would mispredict at
// every word boundary. `in_run` (0 or 1) carries the state of the byte before `s`.
void FingerprintBytes(std::string_view s, const FingerprintTable& table, uint64_t* runs,
                      uint64_t* weights, uint64_t* in_run) {
  for (const char c : s) {
    const uint64_t w = table.of[static_cast<unsigned char>(c)];
    const uint64_t run = w == 1;
    const uint64_t ignored = w == 2;
    *runs += run & ~*in_run;
    *in_run = run | (*in_run & ignored);
    *weights += w & (0 - static_cast<uint64_t>(w > 2));
  }
}

#if defined(__SSE2__)
// Bit k: whether byte k of the 16 at `p` lies in [lo, hi] (unsigned), from a signed compare of
// the bytes shifted so that lo becomes -128.
inline uint64_t InRange16(__m128i v, unsigned char lo, unsigned char hi) {
  const __m128i shifted = _mm_add_epi8(v, _mm_set1_epi8(static_cast<char>(-128 - lo)));
  const __m128i limit = _mm_set1_epi8(static_cast<char>(-128 + (hi - lo + 1)));
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmplt_epi8(shifted, limit)));
}
inline uint64_t Equal16(__m128i v, char c) {
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c))));
}

// The bits set in `x`. std::popcount is a call into the runtime library where the target has no
// POPCNT instruction, as the x86-64 baseline has not: it took 7 % of the structure scan.
inline uint64_t Ones(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return (x * 0x0101010101010101ULL) >> 56;
}

// The classes of FingerprintTable for 64 bytes, one bit per byte: run bytes (letters, `_`),
// ignored bytes (`*` in prose) and weighted bytes (the rest that is not a separator).
struct ByteClasses {
  uint64_t run = 0;
  uint64_t ignored = 0;
  uint64_t weighted = 0;
};
inline ByteClasses Classify64(const char* p, bool prose) {
  ByteClasses m;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    // ASCII letters are the bytes that fall in a..z once 0x20 is set.
    const uint64_t run =
        InRange16(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'z') | Equal16(v, '_');
    uint64_t separator = InRange16(v, '0', '9') | Equal16(v, ' ') | Equal16(v, '\t') |
                         InRange16(v, '\v', '\r') | Equal16(v, '.');
    uint64_t ignored = 0;
    if (prose) {
      separator |= Equal16(v, ',');
      ignored = Equal16(v, '*');
    }
    m.run |= run << (16 * k);
    m.ignored |= ignored << (16 * k);
    m.weighted |= (~(run | separator | ignored) & 0xFFFF) << (16 * k);
  }
  return m;
}

// A line's fingerprint as the classes of its 64-byte blocks come (Classify64, or TakeAvx2's):
// a run byte is in a run; an ignored byte is in one when the byte before it is, which an
// addition carries through a stretch of ignored bytes at once. `kPopcnt`: counted with the POPCNT
// instruction, in code compiled for it.
struct FingerprintSum {
  uint64_t runs = 0;
  uint64_t weights = 0;
  uint64_t in_run = 0;

  // Adds the block at `p` whose classes are `m`; the bytes of `p` outside `line` do not belong to
  // the line and count as separators.
  template <bool kPopcnt>
  void Take(ByteClasses m, const char* p, uint64_t line, const FingerprintTable& table) {
    m.run &= line;
    m.ignored &= line;
    m.weighted &= line;
    // Ignored bytes right after a byte in a run start a carried stretch; adding them to the
    // ignored mask flips that whole stretch.
    const uint64_t starts = ((m.run << 1) | in_run) & m.ignored;
    const uint64_t carried = ((m.ignored + starts) ^ m.ignored) & m.ignored;
    const uint64_t inside = m.run | carried;
    const uint64_t first = m.run & ~((inside << 1) | in_run);
    runs += kPopcnt ? static_cast<uint64_t>(__builtin_popcountll(first)) : Ones(first);
    in_run = inside >> 63;
    for (uint64_t w = m.weighted; w != 0; w &= w - 1) {
      weights += table.of[static_cast<unsigned char>(p[std::countr_zero(w)])];
    }
  }
};

// The last `size` (1 to 63) bytes of a line at `p` as a block of 64, from `p` itself where
// `readable` bytes from it allow, else copied into `spare` among spaces; with the mask of the
// line's bytes in it.
inline const char* LastBlock(const char* p, size_t size, size_t readable, char (&spare)[64],
                             uint64_t* line) {
  *line = (uint64_t{1} << size) - 1;
  if (readable >= 64) return p;
  std::memset(spare, ' ', sizeof spare);
  std::memcpy(spare, p, size);
  return spare;
}
#endif

// A line's fingerprint (see FingerprintTable): 64 bytes at a time where SSE2 is there, with
// exactly FingerprintBytes' result. The last bytes of a line are read as a whole block where
// `readable` bytes from s.data() allow, the bytes past the line masked out of every class, as
// separators would be: most lines are shorter than a block, and a byte at a time costs them more.
// (Only the lines that end within 64 bytes of the text's end are copied into a block of spaces
// first.)
uint64_t Fingerprint(std::string_view s, size_t readable, const FingerprintTable& table) {
#if defined(__SSE2__)
  const bool prose = table.of[static_cast<unsigned char>('*')] == 2;
  FingerprintSum sum;
  size_t i = 0;
  for (; i + 64 <= s.size(); i += 64) {
    sum.Take<false>(Classify64(s.data() + i, prose), s.data() + i, ~uint64_t{0}, table);
  }
  if (i < s.size()) {
    char spare[64];
    uint64_t line;
    const char* p = LastBlock(s.data() + i, s.size() - i, readable - i, spare, &line);
    sum.Take<false>(Classify64(p, prose), p, line, table);
  }
  return MixHash(sum.runs, sum.weights);
#else
  (void)readable;
  uint64_t runs = 0;
  uint64_t weights = 0;
  uint64_t in_run = 0;
  FingerprintBytes(s, table, &runs, &weights, &in_run);
  return MixHash(runs, weights);
#endif
}

#if defined(RLSCORE_VECTOR_SCAN)
#define RLSCORE_AVX2_SCAN __attribute__((target("avx2,popcnt,bmi")))

// Bit k: whether byte k of the 32 of `v` is `c`.
RLSCORE_AVX2_SCAN inline uint64_t Equal32(__m256i v, char c) {
  return static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(c))));
}

// Byte k of the result: all ones where byte k of `v` is `c`, or lies in [lo, lo + span] (unsigned:
// its distance from lo is its minimum with span).
RLSCORE_AVX2_SCAN inline __m256i EqualBytes(__m256i v, char c) {
  return _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c));
}
RLSCORE_AVX2_SCAN inline __m256i InRangeBytes(__m256i v, char lo, char span) {
  const __m256i from = _mm256_sub_epi8(v, _mm256_set1_epi8(lo));
  return _mm256_cmpeq_epi8(_mm256_min_epu8(from, _mm256_set1_epi8(span)), from);
}

// kNibbleWeights' tables, each in both 16-byte halves of a vector (vpshufb looks up per half).
struct NibbleVectors {
  __m256i low[3];
  __m256i high[3];
};

RLSCORE_AVX2_SCAN inline NibbleVectors LoadNibbleWeights() {
  NibbleVectors w;
  for (int t = 0; t < 3; ++t) {
    w.low[t] = _mm256_broadcastsi128_si256(
        _mm_load_si128(reinterpret_cast<const __m128i*>(kNibbleWeights.low[t])));
    w.high[t] = _mm256_broadcastsi128_si256(
        _mm_load_si128(reinterpret_cast<const __m128i*>(kNibbleWeights.high[t])));
  }
  return w;
}

// The weights of the bytes of `v` from one of NibbleVectors' three tables, kept where `weighted`
// is all ones and summed eight bytes a lane (vpsadbw).
RLSCORE_AVX2_SCAN inline __m256i WeightSums(const __m256i (&table)[3], __m256i v,
                                            __m256i weighted) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_and_si256(v, nibble);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
  // vpshufb looks up by the low four bits of an index below 128, so the sum is taken mod 16.
  const __m256i mix = _mm256_add_epi8(lo, hi);
  const __m256i bytes = _mm256_add_epi8(
      _mm256_add_epi8(_mm256_shuffle_epi8(table[0], lo), _mm256_shuffle_epi8(table[1], hi)),
      _mm256_shuffle_epi8(table[2], mix));
  return _mm256_sad_epu8(_mm256_and_si256(bytes, weighted), _mm256_setzero_si256());
}

// The four 64-bit lanes of `v` added.
RLSCORE_AVX2_SCAN inline uint64_t LaneTotal(__m256i v) {
  const __m128i pair = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return static_cast<uint64_t>(_mm_cvtsi128_si64(pair)) +
         static_cast<uint64_t>(_mm_extract_epi64(pair, 1));
}

// A line's block of 64 at `p`, of which the first `size` (1 to 64) bytes are the line's, into
// `sum` (runs) and `low` and `high` (weights).
RLSCORE_AVX2_SCAN inline void TakeAvx2(const char* p, size_t size, bool prose,
                                       const NibbleVectors& w, FingerprintSum* sum, __m256i* low,
                                       __m256i* high) {
  const __m256i offsets =
      _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                       22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  ByteClasses m;  // no weighted bits: the weights are summed here
  for (int k = 0; k < 2; ++k) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
    const __m256i run = _mm256_or_si256(
        InRangeBytes(_mm256_or_si256(v, _mm256_set1_epi8(0x20)), 'a', 25), EqualBytes(v, '_'));
    __m256i other = _mm256_or_si256(
        _mm256_or_si256(InRangeBytes(v, '0', 9), EqualBytes(v, ' ')),
        _mm256_or_si256(_mm256_or_si256(EqualBytes(v, '\t'), InRangeBytes(v, '\v', 2)),
                        EqualBytes(v, '.')));
    __m256i ignored = _mm256_setzero_si256();
    if (prose) {
      ignored = EqualBytes(v, '*');
      other = _mm256_or_si256(other, _mm256_or_si256(EqualBytes(v, ','), ignored));
    }
    // Signed bytes: size - 32k lies in [-31, 64].
    const __m256i in_line = _mm256_cmpgt_epi8(
        _mm256_set1_epi8(static_cast<char>(static_cast<int>(size) - 32 * k)), offsets);
    const __m256i weighted = _mm256_andnot_si256(_mm256_or_si256(run, other), in_line);
    *low = _mm256_add_epi64(*low, WeightSums(w.low, v, weighted));
    *high = _mm256_add_epi64(*high, WeightSums(w.high, v, weighted));
    const uint64_t line = static_cast<uint32_t>(_mm256_movemask_epi8(in_line));
    m.run |= (static_cast<uint32_t>(_mm256_movemask_epi8(run)) & line) << (32 * k);
    m.ignored |= (static_cast<uint32_t>(_mm256_movemask_epi8(ignored)) & line) << (32 * k);
  }
  // With no weighted bits, Take reads nothing from the table.
  sum->Take<true>(m, p, ~uint64_t{0}, kProseFingerprint);
}

// Fingerprint with AVX2, 32 bytes a step: the classes as compares, and the weights of the
// weighted bytes looked up by nibbles and summed as bytes. The last block is read whole where
// `readable` allows, else from a copy among spaces; its bytes past the line count in no class.
// Exactly Fingerprint's result.
RLSCORE_AVX2_SCAN uint64_t FingerprintAvx2(std::string_view s, size_t readable, bool prose,
                                           const NibbleVectors& w) {
  FingerprintSum sum;
  __m256i low = _mm256_setzero_si256();
  __m256i high = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 64 <= s.size(); i += 64) TakeAvx2(s.data() + i, 64, prose, w, &sum, &low, &high);
  if (i < s.size()) {
    char spare[64];
    uint64_t line;
    const char* p = LastBlock(s.data() + i, s.size() - i, readable - i, spare, &line);
    TakeAvx2(p, s.size() - i, prose, w, &sum, &low, &high);
  }
  return MixHash(sum.runs, LaneTotal(low) + (LaneTotal(high) << 32));
}

// The newlines among the `n - at` (at most 64) bytes of `p` from `at`, one bit each; the bytes
// past `n` are not read.
RLSCORE_AVX2_SCAN inline uint64_t NewlinesAtAvx2(const char* p, size_t n, size_t at) {
  char spare[64];
  const char* block = p + at;
  if (n - at < 64) {
    std::memset(spare, 0, sizeof spare);
    std::memcpy(spare, p + at, n - at);
    block = spare;
  }
  const auto low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
  const auto high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32));
  return Equal32(low, '\n') | Equal32(high, '\n') << 32;
}
#endif

#if defined(RLSCORE_VECTOR_SCAN)
// GCC 12's AVX-512 intrinsics start some results from an undefined vector (_mm512_reduce_add_epi64
// among them), which it then warns is or may be used uninitialised; none is.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#define RLSCORE_AVX512_SCAN __attribute__((target("avx512f,avx512bw,avx512vbmi,popcnt,bmi")))

// ByteWeights as 128-byte lookup tables of _mm512_permutex2var_epi8: low[0..127], low[128..255],
// then the same of high.
struct WeightVectors {
  __m512i low[4];
  __m512i high[4];
};

RLSCORE_AVX512_SCAN inline WeightVectors LoadWeights() {
  WeightVectors w;
  for (int k = 0; k < 4; ++k) {
    w.low[k] = _mm512_load_si512(kByteWeights.low + 64 * k);
    w.high[k] = _mm512_load_si512(kByteWeights.high + 64 * k);
  }
  return w;
}

// The weight byte of each byte of `v` from one of WeightVectors' tables.
RLSCORE_AVX512_SCAN inline __m512i LookUp(const __m512i* table, __m512i v) {
  const __m512i ascii = _mm512_permutex2var_epi8(table[0], v, table[1]);
  const __m512i other = _mm512_permutex2var_epi8(table[2], v, table[3]);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), ascii, other);
}

// Bit k: whether byte k of `v` is `c`; whether it lies in [lo, lo + span] (unsigned).
RLSCORE_AVX512_SCAN inline uint64_t Equal64(__m512i v, char c) {
  return _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(c));
}
RLSCORE_AVX512_SCAN inline uint64_t InRange64(__m512i v, char lo, char span) {
  return _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(lo)), _mm512_set1_epi8(span));
}

// The newlines among the `n - at` (at most 64) bytes of `p` from `at`, one bit each.
RLSCORE_AVX512_SCAN inline uint64_t NewlinesAt(const char* p, size_t n, size_t at) {
  const uint64_t valid = n - at >= 64 ? ~uint64_t{0} : (uint64_t{1} << (n - at)) - 1;
  return Equal64(_mm512_maskz_loadu_epi8(valid, p + at), '\n');
}

// Fingerprint of the `n` bytes at `p` with AVX-512: 64 bytes a step, the classes as compare
// masks, the last step a masked load (which reads nothing past the line), and the weights summed
// as bytes. Exactly Fingerprint's result.
RLSCORE_AVX512_SCAN uint64_t FingerprintAvx512(const char* p, size_t n, bool prose,
                                               const WeightVectors& w) {
  uint64_t runs = 0;
  uint64_t in_run = 0;
  __m512i low = _mm512_setzero_si512();
  __m512i high = _mm512_setzero_si512();
  for (size_t i = 0; i < n; i += 64) {
    const uint64_t line = n - i >= 64 ? ~uint64_t{0} : (uint64_t{1} << (n - i)) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(line, p + i);
    const uint64_t run =
        (InRange64(_mm512_or_si512(v, _mm512_set1_epi8(0x20)), 'a', 25) | Equal64(v, '_')) & line;
    uint64_t separator = InRange64(v, '0', 9) | Equal64(v, ' ') | Equal64(v, '\t') |
                         InRange64(v, '\v', 2) | Equal64(v, '.');
    uint64_t ignored = 0;
    if (prose) {
      separator |= Equal64(v, ',');
      ignored = Equal64(v, '*') & line;
    }
    const uint64_t weighted = ~(run | separator | ignored) & line;
    // As Fingerprint: ignored bytes right after a run byte start a carried stretch.
    const uint64_t starts = ((run << 1) | in_run) & ignored;
    const uint64_t carried = ((ignored + starts) ^ ignored) & ignored;
    const uint64_t inside = run | carried;
    runs += static_cast<uint64_t>(_mm_popcnt_u64(run & ~((inside << 1) | in_run)));
    in_run = inside >> 63;
    low = _mm512_add_epi64(low, _mm512_sad_epu8(_mm512_maskz_mov_epi8(weighted, LookUp(w.low, v)),
                                                _mm512_setzero_si512()));
    high =
        _mm512_add_epi64(high, _mm512_sad_epu8(_mm512_maskz_mov_epi8(weighted, LookUp(w.high, v)),
                                               _mm512_setzero_si512()));
  }
  const uint64_t weights = static_cast<uint64_t>(_mm512_reduce_add_epi64(low)) +
                           (static_cast<uint64_t>(_mm512_reduce_add_epi64(high)) << 32);
  return MixHash(runs, weights);
}

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // RLSCORE_VECTOR_SCAN

bool VectorScan(ScanIsa isa) { return isa == ScanIsa::kBest && CpuHasVectorScan(); }

// A prose line that normalises to nothing: after its markers, only whitespace and `*`.
bool IsBlank(std::string_view rest) {
  for (const char c : rest) {
    if (!IsSpace(c) && c != '*') return false;
  }
  return true;
}

// ScanStructure's pass over the lines, whichever way they are found: each line's kind, the fences,
// and where the content to fingerprint starts.
class LineSteps {
 public:
  explicit LineSteps(LineScan* scan) : scan_(scan) {}

  // Appends the line [begin, end) of `text`. Returns the table its content (from content_begin)
  // is fingerprinted with, or nullptr for a line without content: blank, or a fence's delimiter.
  const FingerprintTable* Add(std::string_view text, size_t begin, size_t end) {
    const std::string_view content = text.substr(begin, end - begin);
    const size_t index = scan_->lines.size();
    // Filled in place: a Line built on the stack and then copied was written a field at a time and
    // read back 16 bytes at a time, which stalled on every line (a store cannot forward to a
    // wider load).
    Line& line = scan_->lines.emplace_back();
    line.begin = begin;
    line.end = end;
    line.content_begin = begin;
    const Delimiter d = ParseDelimiter(content);
    const FingerprintTable* table = nullptr;
    if (open_ != nullptr) {
      line.in_fence = true;
      if (d.length >= open_delimiter_.length && d.fence_char == open_delimiter_.fence_char &&
          d.info.empty()) {
        line.blank = true;  // a delimiter has no content
        open_->code_end = begin;
        open_->end_line = index + 1;
        open_ = nullptr;
      } else {
        line.blank = content.find_first_not_of(" \t\r\v\f") == std::string_view::npos;
        if (!line.blank) table = &kCodeFingerprint;
      }
    } else if (d.length > 0) {
      line.in_fence = true;
      line.blank = true;
      Fence fence;
      fence.open_line = index;
      fence.code_begin = end == text.size() ? end : end + 1;
      fence.info = d.info;
      fence.language = CodeLanguageFromInfoString(d.info);
      scan_->fences.push_back(fence);
      open_ = &scan_->fences.back();
      open_delimiter_ = d;
    } else {
      line.content_begin = begin + SkipMarkers(content);
      line.blank = IsBlank(text.substr(line.content_begin, end - line.content_begin));
      if (!line.blank) table = &kProseFingerprint;
    }
    return table;
  }

  // After the last line: a fence left open runs to the end of the text.
  void Finish(size_t text_size) {
    if (open_ == nullptr) return;
    open_->code_end = text_size;
    open_->end_line = scan_->lines.size();
  }

 private:
  LineScan* const scan_;
  Fence* open_ = nullptr;  // the fence being read, if any
  Delimiter open_delimiter_;
};

// Groups the lines into text blocks the way Markdown groups them into leaf blocks (see the
// header), with each block's fingerprint and raw size.
void SegmentBlocks(std::string_view text, LineScan* scan) {
  size_t fence = 0;
  TextBlock* current = nullptr;
  bool previous_quoted = false;
  bool previous_heading = false;
  for (size_t i = 0; i < scan->lines.size(); ++i) {
    const Line& line = scan->lines[i];
    const std::string_view content = text.substr(line.begin, line.end - line.begin);
    if (fence < scan->fences.size() && scan->fences[fence].open_line == i) {
      const Fence& f = scan->fences[fence++];
      TextBlock block{f.open_line, f.end_line, kBlockKeySeed, 0, true};
      uint64_t lines = 0;
      for (size_t k = f.open_line + 1; k < f.end_line; ++k) {
        const Line& code = scan->lines[k];
        if (code.blank) continue;
        block.fingerprint = MixHash(block.fingerprint, code.fingerprint);
        block.raw_size += code.end - code.begin;
        ++lines;
      }
      block.fingerprint = MixHash(block.fingerprint, lines);
      scan->blocks.push_back(block);
      current = nullptr;
      i = f.end_line - 1;
      previous_quoted = previous_heading = false;
      continue;
    }
    if (line.blank) {
      current = nullptr;
      previous_quoted = previous_heading = false;
      continue;
    }
    if (current == nullptr || previous_heading || StartsBlock(content, previous_quoted)) {
      scan->blocks.push_back(TextBlock{i, i + 1, kBlockKeySeed, 0, false});
      current = &scan->blocks.back();
    }
    current->fingerprint = MixHash(current->fingerprint, line.fingerprint);
    current->raw_size += line.end - line.content_begin;
    current->end_line = i + 1;
    previous_quoted = IsQuoted(content);
    previous_heading = IsAtxHeading(content);
  }
}

// ScanStructure a line at a time: memchr finds each line's end.
LineScan ScanPortable(std::string_view text) {
  LineScan scan;
  scan.lines.reserve(text.size() / 48 + 1);
  LineSteps steps(&scan);
  size_t begin = 0;
  for (;;) {
    const size_t nl = text.find('\n', begin);
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    if (const FingerprintTable* table = steps.Add(text, begin, end)) {
      Line& line = scan.lines.back();
      line.fingerprint = Fingerprint(text.substr(line.content_begin, end - line.content_begin),
                                     text.size() - line.content_begin, *table);
    }
    if (nl == std::string_view::npos) break;
    begin = nl + 1;
  }
  steps.Finish(text.size());
  SegmentBlocks(text, &scan);
  return scan;
}

#if defined(RLSCORE_VECTOR_SCAN)
// ScanStructure with AVX-512: the newlines of 64 bytes at a time as one mask, whose bits are
// taken in turn (short lines share a load; a call per line to memchr was a fifth of the scan),
// and FingerprintAvx512.
RLSCORE_AVX512_SCAN LineScan ScanAvx512(std::string_view text) {
  LineScan scan;
  scan.lines.reserve(text.size() / 48 + 1);
  LineSteps steps(&scan);
  const WeightVectors weights = LoadWeights();
  const char* const p = text.data();
  const size_t n = text.size();
  size_t base = 0;  // the 64 bytes from here hold the newlines in `newlines` not yet taken
  uint64_t newlines = n > 0 ? NewlinesAt(p, n, 0) : 0;
  size_t begin = 0;
  for (;;) {
    while (newlines == 0 && base + 64 < n) {
      base += 64;
      newlines = NewlinesAt(p, n, base);
    }
    const bool last = newlines == 0;
    const size_t end = last ? n : base + static_cast<size_t>(_tzcnt_u64(newlines));
    newlines &= newlines - 1;
    if (const FingerprintTable* table = steps.Add(text, begin, end)) {
      Line& line = scan.lines.back();
      line.fingerprint = FingerprintAvx512(p + line.content_begin, end - line.content_begin,
                                           table == &kProseFingerprint, weights);
    }
    if (last) break;
    begin = end + 1;
  }
  steps.Finish(n);
  SegmentBlocks(text, &scan);
  return scan;
}

// ScanAvx512's way with AVX2 (ScanPortable's on CPUs that have AVX2 but not AVX-512 with VBMI):
// the newlines of 64 bytes as one mask, and FingerprintAvx2.
RLSCORE_AVX2_SCAN LineScan ScanAvx2(std::string_view text) {
  LineScan scan;
  scan.lines.reserve(text.size() / 48 + 1);
  LineSteps steps(&scan);
  const NibbleVectors weights = LoadNibbleWeights();
  const char* const p = text.data();
  const size_t n = text.size();
  size_t base = 0;  // the 64 bytes from here hold the newlines in `newlines` not yet taken
  uint64_t newlines = n > 0 ? NewlinesAtAvx2(p, n, 0) : 0;
  size_t begin = 0;
  for (;;) {
    while (newlines == 0 && base + 64 < n) {
      base += 64;
      newlines = NewlinesAtAvx2(p, n, base);
    }
    const bool last = newlines == 0;
    const size_t end = last ? n : base + static_cast<size_t>(_tzcnt_u64(newlines));
    newlines &= newlines - 1;
    if (const FingerprintTable* table = steps.Add(text, begin, end)) {
      Line& line = scan.lines.back();
      line.fingerprint =
          FingerprintAvx2(text.substr(line.content_begin, end - line.content_begin),
                          n - line.content_begin, table == &kProseFingerprint, weights);
    }
    if (last) break;
    begin = end + 1;
  }
  steps.Finish(n);
  SegmentBlocks(text, &scan);
  return scan;
}
#endif

// Whether `isa` runs ScanAvx2 here.
bool Avx2Scan(ScanIsa isa) {
#if defined(RLSCORE_VECTOR_SCAN)
  const CpuFeatures& cpu = Cpu();
  return isa == ScanIsa::kBest && cpu.avx2 && cpu.popcnt && cpu.bmi1;
#else
  (void)isa;
  return false;
#endif
}

}  // namespace

bool CpuHasVectorScan() {
#if defined(RLSCORE_VECTOR_SCAN)
  const CpuFeatures& cpu = Cpu();
  return cpu.avx512f && cpu.avx512bw && cpu.avx512vbmi && cpu.popcnt && cpu.bmi1;
#else
  return false;
#endif
}

uint64_t LineFingerprint(std::string_view content, size_t readable, bool code, ScanIsa isa) {
  const FingerprintTable& table = code ? kCodeFingerprint : kProseFingerprint;
#if defined(RLSCORE_VECTOR_SCAN)
  if (VectorScan(isa))
    return FingerprintAvx512(content.data(), content.size(), !code, LoadWeights());
  if (Avx2Scan(isa)) return FingerprintAvx2(content, readable, !code, LoadNibbleWeights());
#endif
  return Fingerprint(content, readable, table);
}

uint64_t LineFingerprintBytewise(std::string_view content, bool code) {
  uint64_t runs = 0;
  uint64_t weights = 0;
  uint64_t in_run = 0;
  FingerprintBytes(content, code ? kCodeFingerprint : kProseFingerprint, &runs, &weights, &in_run);
  return MixHash(runs, weights);
}

uint64_t MixHash(uint64_t h, uint64_t value) {
  // splitmix64's finaliser over h·k ^ value: order-sensitive and well spread.
  uint64_t z = (h ^ (value + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

LineScan ScanStructure(std::string_view text, ScanIsa isa) {
#if defined(RLSCORE_VECTOR_SCAN)
  if (VectorScan(isa)) return ScanAvx512(text);
  if (Avx2Scan(isa)) return ScanAvx2(text);
#endif
  return ScanPortable(text);
}

void KeyBlock(std::string_view text, size_t block, LineScan* scan) {
  TextBlock& b = scan->blocks[block];
  if (b.keyed) return;
  b.keyed = true;
  MathState math;  // math and code spans never cross a block boundary
  for (size_t i = b.first_line; i < b.end_line; ++i) {
    Line& line = scan->lines[i];
    if (line.blank) continue;
    const std::string_view content = text.substr(line.begin, line.end - line.begin);
    Normalized normalized;
    if (b.fenced) {
      NormalizeCode(content, &normalized);
    } else {
      normalized = NormalizeProse(content, &math);
    }
    line.key = MixHash(normalized.hash(), normalized.size());
    line.normalized_size = normalized.size();
    if (line.normalized_size == 0) continue;
    b.key = MixHash(b.key, line.key);
    b.normalized_size += line.normalized_size;
  }
}

LineScan ScanLines(std::string_view text) {
  LineScan scan = ScanStructure(text);
  for (size_t b = 0; b < scan.blocks.size(); ++b) KeyBlock(text, b, &scan);
  return scan;
}

}  // namespace rlscore::scorers::ast
