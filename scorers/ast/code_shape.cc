#include "scorers/ast/code_shape.h"

#include <array>

#include "absl/container/flat_hash_map.h"

namespace rlscore::scorers::ast {
namespace {

bool IsWordStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool IsWord(char c) { return IsWordStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

void AppendShapeTokens(std::string_view code, CodeLanguage language, std::vector<uint32_t>* out) {
  const bool hash_comments = language == CodeLanguage::kPython;
  const size_t n = code.size();
  size_t i = 0;
  while (i < n) {
    const char c = code[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
    } else if (hash_comments && c == '#') {
      while (i < n && code[i] != '\n') ++i;
    } else if (!hash_comments && c == '/' && i + 1 < n && code[i + 1] == '/') {
      while (i < n && code[i] != '\n') ++i;
    } else if (!hash_comments && c == '/' && i + 1 < n && code[i + 1] == '*') {
      const size_t close = code.find("*/", i + 2);
      i = close == std::string_view::npos ? n : close + 2;
    } else if (c == '"' || c == '\'' || (c == '`' && language == CodeLanguage::kJavaScript)) {
      // Python's triple quotes span lines; other strings end at their quote or line end.
      const bool triple = hash_comments && i + 2 < n && code[i + 1] == c && code[i + 2] == c;
      if (triple) {
        const char q[] = {c, c, c};
        const size_t close = code.find(std::string_view(q, 3), i + 3);
        i = close == std::string_view::npos ? n : close + 3;
      } else {
        ++i;
        while (i < n && code[i] != c && (code[i] != '\n' || c == '`')) {
          i += code[i] == '\\' ? 2 : 1;
        }
        ++i;
      }
      out->push_back('s');
    } else if (c >= '0' && c <= '9') {
      while (i < n && (IsWord(code[i]) || code[i] == '.')) ++i;
      out->push_back('0');
    } else if (IsWordStart(c)) {
      while (i < n && IsWord(code[i])) ++i;
      out->push_back('w');
    } else {
      out->push_back(static_cast<unsigned char>(c));
      ++i;
    }
  }
}

std::vector<bool> SequencesWithRecurringWindow(std::span<const std::vector<uint32_t>> sequences,
                                               uint32_t window, uint32_t max_occurrences) {
  std::vector<bool> marked(sequences.size(), false);
  if (window == 0) return marked;
  // Occurrences of a window counted only when they do not overlap the last one counted: the
  // occurrences of a clone are disjoint, while a data literal such as {{0, 0}, {0, 0}, ...} repeats
  // its windows at every period and would otherwise count many times over.
  struct Seen {
    uint32_t count = 0;
    size_t last = 0;  // global position of the last occurrence counted
  };
  size_t windows = 0;
  for (const std::vector<uint32_t>& tokens : sequences) {
    if (tokens.size() >= window) windows += tokens.size() - window + 1;
  }
  // Fewer disjoint windows than the threshold can fit: nothing can recur (the common case for a
  // short snippet), and no table is built.
  if (windows / window + sequences.size() <= max_occurrences) return marked;
  constexpr uint64_t kBase = 0x100000001b3ULL;  // polynomial rolling hash mod 2^64
  uint64_t top = 1;                             // kBase^(window - 1)
  for (uint32_t k = 1; k < window; ++k) top *= kBase;
  // Calls `f(sequence, hash, global position)` for every window, in order.
  const auto for_each_window = [&](auto f) {
    size_t base = 0;  // positions of all sequences, end to end, a window apart
    for (size_t q = 0; q < sequences.size(); ++q) {
      const std::vector<uint32_t>& tokens = sequences[q];
      uint64_t h = 0;
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i >= window) h -= tokens[i - window] * top;
        h = h * kBase + tokens[i];
        if (i + 1 >= window) f(q, h, base + i);
      }
      base += tokens.size() + window;
    }
  };
  // First every window is counted in one of 4096 saturating buckets, with no keys and no
  // allocation: a bucket over-counts (collisions, overlaps), so a window whose bucket holds no
  // more than the threshold cannot recur, and the exact count below skips it. Most code has no
  // such bucket at all.
  constexpr int kBucketBits = 12;
  const auto bucket = [](uint64_t h) { return (h * 0x9e3779b97f4a7c15ULL) >> (64 - kBucketBits); };
  std::array<uint8_t, size_t{1} << kBucketBits> buckets{};
  bool crowded = false;
  for_each_window([&](size_t, uint64_t h, size_t) {
    uint8_t& b = buckets[bucket(h)];
    if (b < 255) ++b;
    crowded |= b > max_occurrences;
  });
  if (!crowded) return marked;
  const auto may_recur = [&](uint64_t h) { return buckets[bucket(h)] > max_occurrences; };
  absl::flat_hash_map<uint64_t, Seen> seen;
  bool any = false;
  for_each_window([&](size_t, uint64_t h, size_t at) {
    if (!may_recur(h)) return;
    Seen& s = seen[h];
    if (s.count > 0 && at - s.last < window) return;
    s.last = at;
    any |= ++s.count > max_occurrences;
  });
  if (!any) return marked;
  for_each_window([&](size_t q, uint64_t h, size_t) {
    if (!may_recur(h)) return;
    const auto it = seen.find(h);
    if (it != seen.end() && it->second.count > max_occurrences) marked[q] = true;
  });
  return marked;
}

}  // namespace rlscore::scorers::ast
