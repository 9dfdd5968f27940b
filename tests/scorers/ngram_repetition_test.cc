// Tests of scorers/ngram_repetition.h: the loop rule (the default) and the literal rule, against
// brute-force references, under hash collisions and at 1 MB; the number-run rule; word
// normalisation; and the open-r1 smooth penalty against values computed the way open-r1 does.
#include "scorers/ngram_repetition.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "gtest/gtest.h"

namespace rlscore::scorers {
namespace {

std::vector<uint64_t> Words(std::string_view text) { return WordHashes(NormalizedWords(text)); }

std::string Repeat(std::string_view s, size_t times) {
  std::string out;
  for (size_t i = 0; i < times; ++i) out.append(s);
  return out;
}

std::string RandomText(std::mt19937_64& rng, size_t bytes) {
  std::uniform_int_distribution<int> letter('a', 'z');
  std::uniform_int_distribution<int> word_len(4, 9);
  std::string text;
  text.reserve(bytes + 16);
  while (text.size() < bytes) {
    const int len = word_len(rng);
    for (int i = 0; i < len; ++i) text.push_back(static_cast<char>(letter(rng)));
    text.push_back(' ');
  }
  return text;
}

// O(L²·n) reference: the first window whose occurrence count among the windows up to and
// including it exceeds the threshold.
NgramReport BruteForce(const std::vector<uint64_t>& t, uint32_t n, uint32_t max_occurrences) {
  NgramReport r;
  if (t.size() < n) return r;
  for (size_t j = 0; j + n <= t.size(); ++j) {
    uint32_t count = 0;
    size_t first = j;
    for (size_t i = 0; i <= j; ++i) {
      if (std::equal(t.begin() + static_cast<std::ptrdiff_t>(i),
                     t.begin() + static_cast<std::ptrdiff_t>(i + n),
                     t.begin() + static_cast<std::ptrdiff_t>(j))) {
        if (count == 0) first = i;
        ++count;
      }
    }
    if (count > max_occurrences) {
      r.fired = true;
      r.token_offset = j;
      r.first_token_offset = first;
      r.occurrences = count;
      return r;
    }
  }
  return r;
}

// O(L²·n) reference of the loop rule, from its statement: the first window that is at least the
// (max_occurrences + 1)th occurrence of its n-gram while, of the last `window` window starts up to
// and including it, at least min_recurring_percent percent start an n-gram that occurred before
// within recurrence_distance starts.
NgramReport BruteForceLoop(const std::vector<uint64_t>& t, const NgramOptions& o) {
  NgramReport r;
  if (t.size() < o.n) return r;
  const auto same = [&](size_t a, size_t b) {
    return std::equal(t.begin() + static_cast<std::ptrdiff_t>(a),
                      t.begin() + static_cast<std::ptrdiff_t>(a + o.n),
                      t.begin() + static_cast<std::ptrdiff_t>(b));
  };
  const auto recurs = [&](size_t j) {
    for (size_t d = 1; d <= o.recurrence_distance && d <= j; ++d) {
      if (same(j - d, j)) return true;
    }
    return false;
  };
  for (size_t j = 0; j + o.n <= t.size(); ++j) {
    uint32_t count = 0;
    size_t first = j;
    for (size_t i = 0; i <= j; ++i) {
      if (same(i, j)) {
        if (count == 0) first = i;
        ++count;
      }
    }
    if (count <= o.max_occurrences) continue;
    const size_t span = std::min<size_t>(j + 1, o.window);
    size_t recurring = 0;
    for (size_t i = j + 1 - span; i <= j; ++i) recurring += recurs(i);
    const size_t percent = recurring * 100 / span;
    if (percent < o.min_recurring_percent) continue;
    r.fired = true;
    r.token_offset = j;
    r.first_token_offset = first;
    r.occurrences = count;
    r.recurring_percent = static_cast<uint32_t>(percent);
    return r;
  }
  return r;
}

NgramOptions Literal(uint32_t n, uint32_t max_occurrences) {
  NgramOptions o;
  o.n = n;
  o.max_occurrences = max_occurrences;
  o.rule = NgramRule::kLiteral;
  return o;
}

void ExpectSameReport(const NgramReport& got, const NgramReport& want) {
  EXPECT_EQ(got.fired, want.fired);
  if (got.fired && want.fired) {
    EXPECT_EQ(got.token_offset, want.token_offset);
    EXPECT_EQ(got.first_token_offset, want.first_token_offset);
    EXPECT_EQ(got.occurrences, want.occurrences);
    EXPECT_EQ(got.recurring_percent, want.recurring_percent);
  }
}

TEST(Repetition, StopsAtFourthOccurrence) {
  constexpr std::string_view kPhrase = "Wait, let me double check the previous step. But wait, ";
  const std::string text = Repeat(kPhrase, 10);
  const std::vector<Word> words = NormalizedWords(text);
  // Independently: each repetition is 10 words, so the 4th begins at word 30, and its first
  // character is at byte 3 · |phrase|.
  const std::vector<Word> phrase_words = NormalizedWords(kPhrase);
  ASSERT_EQ(phrase_words.size(), 10u);
  ASSERT_EQ(words.size(), 100u);
  const size_t fourth_word = 3 * phrase_words.size();

  const NgramReport r = FindRepeatedNgram(WordHashes(words), NgramOptions{});
  ASSERT_TRUE(r.fired);
  EXPECT_EQ(r.token_offset, fourth_word);
  EXPECT_EQ(r.first_token_offset, 0u);
  EXPECT_EQ(r.occurrences, 4u);
  EXPECT_EQ(words[r.token_offset].offset, 3 * kPhrase.size());
  EXPECT_EQ(text.substr(words[r.token_offset].offset, 4), "Wait");
}

TEST(Repetition, ReportsOffsetsWithBase) {
  constexpr std::string_view kPhrase = "Wait, let me double check the previous step. But wait, ";
  const std::string text = Repeat(kPhrase, 4);
  const std::vector<Word> words = NormalizedWords(text, /*base_offset=*/1000);
  const NgramReport r = FindRepeatedNgram(WordHashes(words), NgramOptions{});
  ASSERT_TRUE(r.fired);
  EXPECT_EQ(words[r.token_offset].offset, 1000 + 3 * kPhrase.size());
}

TEST(Repetition, LiteralThresholdIsExactlyThree) {
  // Eight distinct words: the 8-gram is the whole phrase, and no other 8-gram repeats when the
  // copies are separated by a unique word. The literal rule fires at the 4th copy; the loop rule
  // does not, since the other 8 of every 9 positions are new.
  constexpr std::string_view kPhrase = "one two three four five six seven eight ";
  for (size_t copies = 1; copies <= 6; ++copies) {
    SCOPED_TRACE(absl::StrCat("copies ", copies));
    std::string text;
    for (size_t i = 0; i < copies; ++i) absl::StrAppend(&text, Sv(kPhrase), "sep", i, " ");
    const std::vector<Word> words = NormalizedWords(text);
    EXPECT_FALSE(FindRepeatedWords(words, NgramOptions{}).fired);
    const NgramReport r = FindRepeatedNgram(WordHashes(words), Literal(8, 3));
    EXPECT_EQ(r.fired, copies >= 4);
    if (copies >= 4) {
      EXPECT_EQ(r.token_offset, 27u);  // 3 copies of 9 words before the 4th
      EXPECT_EQ(r.first_token_offset, 0u);
      EXPECT_EQ(r.occurrences, 4u);
    }
  }
}

TEST(Repetition, OverlappingOccurrencesCount) {
  // 11 identical tokens hold four 8-grams, at 0, 1, 2, 3; 10 hold three.
  for (size_t len = 0; len <= 16; ++len) {
    SCOPED_TRACE(absl::StrCat("len ", len));
    const std::vector<uint64_t> t(len, 42);
    const NgramReport r = FindRepeatedNgram(t, NgramOptions{});
    EXPECT_EQ(r.fired, len >= 11);
    if (r.fired) {
      EXPECT_EQ(r.token_offset, 3u);
      EXPECT_EQ(r.first_token_offset, 0u);
    }
  }
}

TEST(Repetition, TokenIds) {
  // A 20-token loop of vocabulary ids repeated: fires at the start of the 4th copy.
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 5; ++i) ids.push_back(151643 + i);  // a preamble
  for (int copy = 0; copy < 6; ++copy) {
    for (uint64_t i = 0; i < 20; ++i) ids.push_back(1000 + i * 7);
  }
  const NgramReport r = FindRepeatedNgram(ids, NgramOptions{});
  ASSERT_TRUE(r.fired);
  EXPECT_EQ(r.token_offset, 5u + 3 * 20);
  EXPECT_EQ(r.first_token_offset, 5u);
  EXPECT_EQ(r.occurrences, 4u);
}

TEST(Repetition, Table) {
  struct Case {
    std::vector<uint64_t> tokens;
    uint32_t n;
    uint32_t max_occurrences;
    bool fired;
    size_t token_offset;
    size_t first_token_offset;
  };
  const Case cases[] = {
      {{}, 1, 0, false, 0, 0},
      {{7}, 1, 0, true, 0, 0},   // threshold 0: the first occurrence crosses it
      {{7}, 2, 0, false, 0, 0},  // fewer tokens than n
      {{1, 2, 1, 2}, 2, 1, true, 2, 0},
      {{1, 2, 3, 1, 2}, 2, 1, true, 3, 0},
      {{1, 2, 3, 2, 3}, 2, 1, true, 3, 1},
      {{1, 2, 3, 4, 5}, 1, 0, true, 0, 0},
      {{1, 2, 3, 4, 5}, 1, 1, false, 0, 0},
      {{5, 5, 5}, 2, 1, true, 1, 0},  // overlapping
      {{5, 5, 5}, 2, 2, false, 0, 0},
      {{1, 2, 3}, 3, 0, true, 0, 0},
      {{0, std::numeric_limits<uint64_t>::max(), 0, std::numeric_limits<uint64_t>::max()},
       2,
       1,
       true,
       2,
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.tokens) +
                 absl::StrCat(" n=", c.n, " max=", c.max_occurrences));
    const NgramReport r = FindRepeatedNgram(c.tokens, Literal(c.n, c.max_occurrences));
    EXPECT_EQ(r.fired, c.fired);
    if (c.fired) {
      EXPECT_EQ(r.token_offset, c.token_offset);
      EXPECT_EQ(r.first_token_offset, c.first_token_offset);
      EXPECT_EQ(r.occurrences, c.max_occurrences + 1);
    }
  }
}

TEST(Repetition, ZeroNDoesNotFire) {
  const std::vector<uint64_t> t(10, 1);
  EXPECT_FALSE(FindRepeatedNgram(t, NgramOptions{0, 0}).fired);
  EXPECT_EQ(SmoothRepetitionPenalty(t, 0, -1.0), 0.0);
}

// FindRepeatedNgram reads long sequences in runs of words: the same reports as the stream fed
// one token at a time, where the firing falls in any run and counting starts in any of them.
TEST(Repetition, LongSequencesMatchTheStreamAcrossRuns) {
  std::mt19937_64 rng(20261207);
  int fired = 0;
  int late = 0;  // fired past the first runs, where the table has grown from its first size
  constexpr int kTrials = 300;
  for (int trial = 0; trial < kTrials; ++trial) {
    NgramOptions options;
    options.n = 1 + static_cast<uint32_t>(rng() % 8);
    options.max_occurrences = static_cast<uint32_t>(rng() % 5);
    options.rule = rng() % 4 == 0 ? NgramRule::kLiteral : NgramRule::kLoop;
    // A clean stretch of many distinct tokens, then a loop of a short phrase from a random
    // place (or none), then clean again: the firing lands anywhere in the first 7,000.
    std::vector<uint64_t> t(rng() % 7000);
    const size_t loop_at = rng() % (t.size() + 1);
    const size_t loop_length = rng() % 3 == 0 ? 0 : rng() % 2000;
    const size_t period = 1 + rng() % 12;
    for (size_t i = 0; i < t.size(); ++i) {
      t[i] =
          i >= loop_at && i < loop_at + loop_length ? (i - loop_at) % period : 100 + rng() % 50000;
    }
    SCOPED_TRACE(testing::Message()
                 << "trial " << trial << ": " << t.size() << " tokens, loop at " << loop_at
                 << " for " << loop_length << ", period " << period << ", n=" << options.n);
    NgramStream stream(options);
    for (const uint64_t token : t) {
      if (stream.Push(token)) break;
    }
    const NgramReport got = FindRepeatedNgram(t, options);
    ExpectSameReport(got, stream.report());
    fired += got.fired ? 1 : 0;
    late += got.fired && got.token_offset > 4096 ? 1 : 0;
  }
  EXPECT_GT(fired, kTrials / 4);
  EXPECT_LT(fired, kTrials - kTrials / 10);
  EXPECT_GT(late, 5);
}

TEST(Repetition, MatchesBruteForceOnRandomSequences) {
  std::mt19937_64 rng(20250101);
  int fired[2] = {0, 0};
  int total = 0;
  for (uint64_t alphabet : {2u, 3u, 4u}) {
    for (uint32_t n = 1; n <= 6; ++n) {
      for (uint32_t max_occurrences = 0; max_occurrences <= 4; ++max_occurrences) {
        for (int trial = 0; trial < 40; ++trial) {
          std::uniform_int_distribution<size_t> len_dist(0, 64);
          std::uniform_int_distribution<uint64_t> tok_dist(0, alphabet - 1);
          std::vector<uint64_t> t(len_dist(rng));
          for (uint64_t& x : t) x = tok_dist(rng);
          NgramOptions loop;
          loop.n = n;
          loop.max_occurrences = max_occurrences;
          loop.window = 1 + static_cast<uint32_t>(rng() % 40);
          loop.min_recurring_percent = 1 + static_cast<uint32_t>(rng() % 100);
          loop.recurrence_distance = 1 + static_cast<uint32_t>(rng() % 30);
          SCOPED_TRACE(::testing::PrintToString(t) +
                       absl::StrCat(" n=", n, " max=", max_occurrences, " window=", loop.window,
                                    " percent=", loop.min_recurring_percent,
                                    " distance=", loop.recurrence_distance));
          const NgramReport want = BruteForce(t, n, max_occurrences);
          ExpectSameReport(FindRepeatedNgram(t, Literal(n, max_occurrences)), want);
          const NgramReport want_loop = BruteForceLoop(t, loop);
          ExpectSameReport(FindRepeatedNgram(t, loop), want_loop);
          fired[0] += want.fired ? 1 : 0;
          fired[1] += want_loop.fired ? 1 : 0;
          ++total;
        }
      }
    }
  }
  // Both outcomes must be well represented for the comparisons to mean anything.
  for (const int f : fired) {
    EXPECT_GT(f, total / 10);
    EXPECT_LT(f, total - total / 10);
  }
}

// Phrases that honest reasoning reuses: the same 8 words four times and more, among new text.
// The literal rule pays them a penalty; the loop rule does not, however close they come.
TEST(Repetition, ReuseAmongNewTextIsNotALoop) {
  std::mt19937_64 rng(5);
  for (const size_t gap : {12u, 40u, 150u, 1500u}) {
    SCOPED_TRACE(absl::StrCat("gap ", gap));
    std::string text;
    for (int i = 0; i < 12; ++i) {
      absl::StrAppend(&text, RandomText(rng, gap * 6),
                      "the number of ways to choose the red balls ");
    }
    const std::vector<Word> words = NormalizedWords(text);
    EXPECT_FALSE(FindRepeatedWords(words, NgramOptions{}).fired);
    EXPECT_TRUE(FindRepeatedWords(words, Literal(8, 3)).fired);
  }
}

// A loop that starts after honest text fires once 60 % of the last 200 positions recur: with a
// period of 10 words after 500 fresh ones, positions 510 onward recur (their 8-gram occurred 10
// before), so the 120th of them, position 629, is the first at 60 %; its 8-gram began at 509.
TEST(Repetition, ALoopAfterHonestTextFiresWhenItFillsTheWindow) {
  std::vector<uint64_t> t;
  for (uint64_t i = 0; i < 500; ++i) t.push_back(1'000'000 + i);
  for (int i = 0; i < 400; ++i) t.push_back(7 + i % 10);
  const NgramReport r = FindRepeatedNgram(t, NgramOptions{});
  ASSERT_TRUE(r.fired);
  EXPECT_EQ(r.token_offset, 629u);
  EXPECT_EQ(r.first_token_offset, 509u);
  EXPECT_EQ(r.occurrences, 13u);  // 509, 519, ..., 629
  EXPECT_EQ(r.recurring_percent, 60u);
  // The literal rule knows at the 4th occurrence of the first repeated 8-gram: 500 + 3 · 10.
  EXPECT_EQ(FindRepeatedNgram(t, Literal(8, 3)).token_offset, 530u);
  // A period longer than the recurrence distance is not a loop to this rule.
  std::vector<uint64_t> slow;
  for (int i = 0; i < 4000; ++i) slow.push_back(i % 401);
  EXPECT_FALSE(FindRepeatedNgram(slow, NgramOptions{}).fired);
  NgramOptions wider;
  wider.recurrence_distance = 401;
  EXPECT_TRUE(FindRepeatedNgram(slow, wider).fired);
}

// A Chinese sentence looped until truncation, written without spaces as Chinese is: the loop rule
// sees its characters, so it fires as an English loop does; an honest Chinese derivation, which
// reuses phrases, does not.
TEST(Repetition, ChineseLoopsFireAndChineseReasoningDoesNot) {
  std::string loop = "我们先计算总和。";
  for (int i = 0; i < 200; ++i) loop += "所以答案是四十二，我们再检查一遍这个结果。";
  const NgramReport r = FindRepeatedWords(NormalizedWords(loop), NgramOptions{});
  ASSERT_TRUE(r.fired);
  EXPECT_GE(r.recurring_percent, 60u);
  const std::string honest =
      "设这个数为x。根据题意，x的平方减去三倍的x等于十。整理得到x的平方减去三x减去十等于零。"
      "因式分解得到x减五乘以x加二等于零，所以x等于五或者x等于负二。题目要求正数，所以x等于五。"
      "我们再检查一遍：五的平方是二十五，三倍的五是十五，二十五减去十五等于十，符合题意。"
      "再看负二：负二的平方是四，三倍的负二是负六，四减去负六等于十，也符合方程但不是正数。"
      "因此满足条件的正数只有五，答案是五。";
  EXPECT_FALSE(FindRepeatedWords(NormalizedWords(honest), NgramOptions{}).fired);
}

// Counting: every number is new, so no n-gram recurs, but more than 512 numbers in a row fire.
TEST(Repetition, CountingRunsFire) {
  std::string counting = "The list:";
  for (int i = 1; i <= 2758; ++i) absl::StrAppend(&counting, " ", i, ",");
  const std::vector<Word> words = NormalizedWords(counting);
  const NgramReport r = FindRepeatedWords(words, NgramOptions{});
  ASSERT_TRUE(r.fired);
  EXPECT_TRUE(r.number_run);
  EXPECT_EQ(r.first_token_offset, 2u);  // "the", "list", then 1
  EXPECT_EQ(r.token_offset, 2u + 512);  // the 513th number, 513
  EXPECT_EQ(r.occurrences, 513u);
  EXPECT_EQ(counting.substr(words[r.token_offset].offset, 4), "513,");
  EXPECT_FALSE(FindRepeatedWords(words, Literal(8, 3)).fired);  // the literal rule has no runs
  NgramOptions off;
  off.max_number_run = 0;
  EXPECT_FALSE(FindRepeatedWords(words, off).fired);
  // A word between numbers ends a run; decimals and coordinates are several numbers each.
  std::string table;
  for (int i = 1; i <= 2000; ++i) absl::StrAppend(&table, " n=", i, ":", i * i);
  EXPECT_FALSE(FindRepeatedWords(NormalizedWords(table), NgramOptions{}).fired);
  const std::vector<Word> decimals = NormalizedWords("3.14 x2 2x 0x1F 12");
  ASSERT_EQ(decimals.size(), 6u);
  const bool numbers[] = {true, true, false, false, false, true};
  for (size_t i = 0; i < decimals.size(); ++i) EXPECT_EQ(decimals[i].number, numbers[i]) << i;
}

// Thue–Morse sequences over {a, b} of length 2^k and their complements have equal polynomial
// hashes mod 2^64 for every odd base once k >= 10, whatever value each token is mapped to first:
// the difference factors as (b - a)·Π(B^(2^i) - 1), which holds at least 64 factors of two. Any
// rolling polynomial hash therefore collides on them, and a table that trusted the hash alone
// would count the two windows as one n-gram. (scorers/ngram_repetition.cc rolls such a hash; should
// it stop doing so, this test still holds but no longer exercises a collision.)
std::vector<uint64_t> ThueMorse(size_t length, uint64_t a, uint64_t b) {
  std::vector<uint64_t> t(length);
  for (size_t i = 0; i < length; ++i) t[i] = (std::popcount(i) % 2 == 0) ? a : b;
  return t;
}

uint64_t PolynomialHash(const std::vector<uint64_t>& t, uint64_t base) {
  uint64_t h = 0;
  for (uint64_t x : t) h = h * base + x;
  return h;
}

TEST(Repetition, CollidingWindowsAreDistinct) {
  constexpr size_t kN = 2048;
  const std::vector<uint64_t> x = ThueMorse(kN, 3, 9);
  const std::vector<uint64_t> y = ThueMorse(kN, 9, 3);
  // The premise: x and y collide for arbitrary odd bases and token maps.
  for (uint64_t base : {3ULL, 0x9e3779b97f4a7c15ULL, 0x100000001b3ULL, 1000003ULL}) {
    EXPECT_EQ(PolynomialHash(x, base), PolynomialHash(y, base)) << base;
  }
  // x, y, x, y, x with a unique separator token after each block, so only whole blocks repeat.
  std::vector<uint64_t> seq;
  uint64_t separator = 1000;
  const std::vector<uint64_t>* blocks[] = {&x, &y, &x, &y, &x};
  std::vector<size_t> starts;
  for (const std::vector<uint64_t>* block : blocks) {
    starts.push_back(seq.size());
    seq.insert(seq.end(), block->begin(), block->end());
    seq.push_back(separator++);
  }
  // Three x's cross a threshold of 2 only at the third x; hash-only counting would fire at the
  // second x (x, y, x).
  NgramReport r = FindRepeatedNgram(seq, Literal(kN, 2));
  ASSERT_TRUE(r.fired);
  EXPECT_EQ(r.token_offset, starts[4]);
  EXPECT_EQ(r.first_token_offset, starts[0]);
  // Three x's and two y's: a threshold of 3 never fires (hash-only would at the 2nd y).
  EXPECT_FALSE(FindRepeatedNgram(seq, Literal(kN, 3)).fired);
  // Smooth penalty: the window count minus 2 repeated x's and 1 repeated y are distinct.
  const double total = static_cast<double>(seq.size() - kN + 1);
  EXPECT_DOUBLE_EQ(SmoothRepetitionPenalty(seq, kN, -1.0), -(1.0 - (total - 3.0) / total));
}

TEST(Repetition, RandomTextDoesNotFire) {
  std::mt19937_64 rng(7);
  const std::string text = RandomText(rng, 100'000);
  EXPECT_FALSE(FindRepeatedNgram(Words(text), NgramOptions{}).fired);
  std::vector<uint64_t> ids(100'000);
  for (uint64_t& id : ids) id = rng();
  EXPECT_FALSE(FindRepeatedNgram(ids, NgramOptions{}).fired);
  EXPECT_FALSE(FindRepeatedNgram(ids, Literal(1, 1)).fired);
}

TEST(Repetition, OneMegabyteTerminates) {
  std::mt19937_64 rng(11);
  const std::string random_text = RandomText(rng, 1 << 20);
  const std::vector<uint64_t> random_words = Words(random_text);
  EXPECT_FALSE(FindRepeatedNgram(random_words, NgramOptions{}).fired);
  EXPECT_EQ(SmoothRepetitionPenalty(random_words, 8, -1.0), 0.0);

  // One word repeated over 1 MB: fires at once by default, never with an unreachable threshold
  // (a full scan that hits one entry every step).
  const std::string loop = Repeat("again ", (1 << 20) / 6);
  const std::vector<uint64_t> loop_words = Words(loop);
  const NgramReport r = FindRepeatedNgram(loop_words, NgramOptions{});
  ASSERT_TRUE(r.fired);
  EXPECT_EQ(r.token_offset, 3u);
  EXPECT_FALSE(
      FindRepeatedNgram(loop_words, NgramOptions{8, std::numeric_limits<uint32_t>::max()}).fired);
  const double total = static_cast<double>(loop_words.size() - 7);
  EXPECT_DOUBLE_EQ(SmoothRepetitionPenalty(loop_words, 8, -1.0), -(1.0 - 1.0 / total));
}

TEST(NormalizedWords, SplitsFoldsAndOffsets) {
  struct Case {
    std::string text;
    std::vector<std::string> words;  // normalised
    std::vector<size_t> offsets;
  };
  const Case cases[] = {
      {"", {}, {}},
      {"  ,.; ", {}, {}},
      {"Hello, WORLD!", {"hello", "world"}, {0, 7}},
      {"x^2+3y=10", {"x", "2", "3y", "10"}, {0, 2, 4, 7}},
      {"don't stop", {"don", "t", "stop"}, {0, 4, 6}},
      {"\\frac{a}{b}", {"frac", "a", "b"}, {1, 6, 9}},
      {"naïve café", {"naïve", "café"}, {0, 7}},    // non-ASCII bytes stay in the word
      {"ÉCOLE école", {"École", "école"}, {0, 7}},  // only ASCII letters fold
      {"tab\tnew\nline", {"tab", "new", "line"}, {0, 4, 8}},
      {"a_b-c", {"a", "b", "c"}, {0, 2, 4}},
      // Chinese and Japanese characters are a word each; CJK, fullwidth and general punctuation
      // separate; other non-ASCII stays in the word (the fullwidth "Ａ" too).
      {"我们再检查", {"我", "们", "再", "检", "查"}, {0, 3, 6, 9, 12}},
      {"x=1，再算。OK", {"x", "1", "再", "算", "ok"}, {0, 2, 6, 9, 15}},
      {"ひらがなABC", {"ひ", "ら", "が", "な", "abc"}, {0, 3, 6, 9, 12}},
      {"don’t “stop”—now…", {"don", "t", "stop", "now"}, {0, 6, 11, 21}},
      {"A∩B ＡＢ", {"a∩b", "ＡＢ"}, {0, 6}},
      {"café\xe4\xb8x", {"café\xe4\xb8x"}, {0}},  // a broken sequence stays word bytes
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const std::vector<Word> words = NormalizedWords(c.text, 5);
    ASSERT_EQ(words.size(), c.words.size());
    for (size_t i = 0; i < words.size(); ++i) {
      SCOPED_TRACE(c.words[i]);
      EXPECT_EQ(words[i].offset, c.offsets[i] + 5);
      // The hash of a word is the hash of its normalised spelling.
      const std::vector<Word> alone = NormalizedWords(c.words[i]);
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(words[i].hash, alone[0].hash);
    }
  }
}

TEST(NormalizedWords, CaseFoldsAndDistinguishes) {
  EXPECT_EQ(Words("Wait WAIT wait"), std::vector<uint64_t>(3, Words("wait")[0]));
  EXPECT_NE(Words("École")[0], Words("école")[0]);
  // Different words hash differently: as many distinct hashes as distinct spellings among a few
  // hundred thousand random words.
  std::mt19937_64 rng(3);
  const std::string text = RandomText(rng, 2'000'000);
  std::set<std::string> spellings;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = text.find(' ', begin);
    spellings.insert(text.substr(begin, end - begin));
    begin = end + 1;
  }
  const std::vector<uint64_t> hashes = Words(text);
  const std::set<uint64_t> distinct(hashes.begin(), hashes.end());
  EXPECT_GT(hashes.size(), spellings.size());  // the premise: some words repeat
  EXPECT_EQ(distinct.size(), spellings.size());
}

TEST(NormalizedWords, WordHashesKeepsOrder) {
  const std::vector<Word> words = NormalizedWords("b a b");
  const std::vector<uint64_t> hashes = WordHashes(words);
  ASSERT_EQ(hashes.size(), 3u);
  EXPECT_EQ(hashes[0], hashes[2]);
  EXPECT_NE(hashes[0], hashes[1]);
  EXPECT_TRUE(WordHashes({}).empty());
}

TEST(SmoothRepetitionPenalty, MatchesOpenR1) {
  struct Case {
    std::string text;
    uint32_t n;
    double max_penalty;
    double expected;  // as open-r1 computes it: (1 - unique / total) * max_penalty
  };
  const Case cases[] = {
      {"this this this this this", 2, -1.0, (1.0 - 1.0 / 4.0) * -1.0},
      {"this is a this is a test", 2, -1.0, (1.0 - 4.0 / 6.0) * -1.0},
      {"this is a this is a test", 3, -2.0, (1.0 - 4.0 / 5.0) * -2.0},
      {"this is a test", 2, -1.0, 0.0},
      {"this is a test", 4, -1.0, 0.0},
      {"this is a test", 5, -1.0, 0.0},  // fewer words than n
      {"", 2, -1.0, 0.0},
      {"a a", 1, -1.0, (1.0 - 1.0 / 2.0) * -1.0},
      {"A a, A!", 1, -0.5, (1.0 - 1.0 / 3.0) * -0.5},  // normalised words
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.text, " n=", c.n, " max_penalty=", c.max_penalty));
    EXPECT_EQ(SmoothRepetitionPenalty(Words(c.text), c.n, c.max_penalty), c.expected);
  }
}

TEST(SmoothRepetitionPenalty, Goldens) {
  EXPECT_DOUBLE_EQ(SmoothRepetitionPenalty(Words("this this this this this"), 2, -1.0), -0.75);
  EXPECT_NEAR(SmoothRepetitionPenalty(Words("this is a this is a test"), 2, -1.0), -1.0 / 3.0,
              1e-15);
  EXPECT_NEAR(SmoothRepetitionPenalty(Words("this is a this is a test"), 3, -2.0), -0.4, 1e-15);
}

TEST(SmoothRepetitionPenalty, NoRepetitionIsPositiveZero) {
  const double p = SmoothRepetitionPenalty(Words("one two three"), 1, -1.0);
  EXPECT_EQ(p, 0.0);
  EXPECT_FALSE(std::signbit(p));
}

TEST(SmoothRepetitionPenalty, MatchesSetCountOnRandomSequences) {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint64_t> t(std::uniform_int_distribution<size_t>(0, 40)(rng));
    for (uint64_t& x : t) x = rng() % 3;
    const uint32_t n = static_cast<uint32_t>(1 + rng() % 5);
    SCOPED_TRACE(::testing::PrintToString(t) + absl::StrCat(" n=", n));
    double expected = 0.0;
    if (t.size() >= n) {
      std::vector<std::vector<uint64_t>> grams;
      for (size_t i = 0; i + n <= t.size(); ++i) {
        grams.emplace_back(t.begin() + static_cast<std::ptrdiff_t>(i),
                           t.begin() + static_cast<std::ptrdiff_t>(i + n));
      }
      const double total = static_cast<double>(grams.size());
      std::sort(grams.begin(), grams.end());
      const double unique =
          static_cast<double>(std::unique(grams.begin(), grams.end()) - grams.begin());
      expected = (1.0 - unique / total) * -1.0 + 0.0;
    }
    EXPECT_EQ(SmoothRepetitionPenalty(t, n, -1.0), expected);
  }
}

}  // namespace
}  // namespace rlscore::scorers

namespace rlscore::scorers {
namespace {

// Sequences that fire and that do not: random over a small vocabulary (chance repeats), random
// over a large one (none), and a generation that falls into a loop after a random prefix.
std::vector<std::vector<uint64_t>> StreamCases(std::mt19937_64& rng) {
  std::vector<std::vector<uint64_t>> cases;
  for (int k = 0; k < 300; ++k) {
    std::vector<uint64_t> t(1 + rng() % 600);
    const uint64_t vocab = k % 3 == 0 ? 3 : k % 3 == 1 ? 40 : 1000000;
    for (uint64_t& v : t) v = rng() % vocab;
    if (k % 5 == 0) {  // a loop of period 1..30 after the prefix
      const size_t period = 1 + rng() % 30;
      const size_t prefix = t.size();
      for (size_t i = 0; i < 8 * period + 40; ++i)
        t.push_back(t[prefix - 1 - (i % period) % prefix]);
    }
    cases.push_back(std::move(t));
  }
  return cases;
}

TEST(NgramStream, StopsExactlyWhereTheBatchRuleFires) {
  std::mt19937_64 rng(20261201);
  for (const NgramOptions options :
       {NgramOptions{}, NgramOptions{3, 2}, NgramOptions{1, 0}, NgramOptions{12, 5}}) {
    for (const std::vector<uint64_t>& tokens : StreamCases(rng)) {
      SCOPED_TRACE(testing::Message() << "n=" << options.n << " max=" << options.max_occurrences
                                      << " length=" << tokens.size());
      const NgramReport batch = FindRepeatedNgram(tokens, options);
      NgramStream stream(options);
      size_t stopped_at = tokens.size();
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (stream.Push(tokens[i])) {
          stopped_at = i;
          break;
        }
      }
      ASSERT_EQ(stream.fired(), batch.fired);
      if (!batch.fired) continue;
      EXPECT_EQ(stream.report().token_offset, batch.token_offset);
      EXPECT_EQ(stream.report().first_token_offset, batch.first_token_offset);
      EXPECT_EQ(stream.report().occurrences, batch.occurrences);
      // It fires on the token that completes the occurrence, not later.
      EXPECT_EQ(stopped_at, batch.token_offset + options.n - 1);
      // And no shorter prefix fires in the batch rule.
      const std::span<const uint64_t> before(tokens.data(), stopped_at);
      EXPECT_FALSE(FindRepeatedNgram(before, options).fired);
    }
  }
}

// PushWords takes runs of words on a path of its own: it must report exactly what PushWord does
// one word at a time, with the rule's options drawn at random (short windows and reaches, shares
// from 1 to 100 %, number runs off or of 1 to 6), the words cut into runs of every size, and
// counting that starts, fires or is cut off by a number run inside a run. So must PushWordKeys,
// the same runs given as hashes and number flags.
TEST(NgramStream, PushWordsReportsWhatPushWordDoes) {
  std::mt19937_64 rng(20261206);
  int fired[3] = {0, 0, 0};  // by an n-gram, by a number run, not at all
  for (int trial = 0; trial < 3000; ++trial) {
    NgramOptions options;
    options.n = static_cast<uint32_t>(rng() % 7);
    options.max_occurrences = static_cast<uint32_t>(rng() % 5);
    options.rule = rng() % 4 == 0 ? NgramRule::kLiteral : NgramRule::kLoop;
    options.window = 1 + static_cast<uint32_t>(rng() % 40);
    options.min_recurring_percent = 1 + static_cast<uint32_t>(rng() % 100);
    options.recurrence_distance = 1 + static_cast<uint32_t>(rng() % 60);
    options.max_number_run = static_cast<uint32_t>(rng() % 7);
    const uint64_t alphabet = 2 + rng() % 12;
    std::vector<Word> words(rng() % 300);
    for (size_t i = 0; i < words.size(); ++i) {
      const uint64_t token = rng() % alphabet;
      // Tokens 0 and 1 are numbers, so that some runs of them are long.
      words[i] = Word{ngram_internal::Mix(token + 1), i, token < 2};
    }
    SCOPED_TRACE(testing::Message()
                 << "trial " << trial << ": n=" << options.n << " max=" << options.max_occurrences
                 << " window=" << options.window << " percent=" << options.min_recurring_percent
                 << " distance=" << options.recurrence_distance << " run=" << options.max_number_run
                 << " words=" << words.size());
    NgramStream one(options);
    for (const Word& word : words) {
      if (one.PushWord(word)) break;
    }
    std::vector<uint64_t> hashes;
    std::vector<uint8_t> numbers;
    for (const Word& word : words) {
      hashes.push_back(word.hash);
      numbers.push_back(word.number ? 1 : 0);
    }
    NgramStream runs(options), keys(options);
    bool runs_fired = false, keys_fired = false;
    for (size_t at = 0; at < words.size() && !runs_fired;) {
      const size_t take = std::min<size_t>(words.size() - at, 1 + rng() % 64);
      runs_fired = runs.PushWords(std::span<const Word>(words.data() + at, take));
      keys_fired =
          keys.PushWordKeys(std::span<const uint64_t>(hashes.data() + at, take), &numbers[at]);
      ASSERT_EQ(keys_fired, runs_fired);
      at += take;
    }
    ASSERT_EQ(keys.tokens(), runs.tokens());
    EXPECT_EQ(keys.report().token_offset, runs.report().token_offset);
    EXPECT_EQ(keys.report().first_token_offset, runs.report().first_token_offset);
    EXPECT_EQ(keys.report().number_run, runs.report().number_run);
    EXPECT_EQ(keys.report().recurring_percent, runs.report().recurring_percent);
    ASSERT_EQ(runs_fired, one.fired());
    ASSERT_EQ(runs.fired(), one.fired());
    // A run that fires stops at the word that fired: both streams hold the same words.
    ASSERT_EQ(runs.tokens(), one.tokens());
    EXPECT_EQ(runs.counting(), one.counting());
    EXPECT_EQ(runs.distinct(), one.distinct());
    ++fired[!one.fired() ? 2 : one.report().number_run ? 1 : 0];
    if (!one.fired()) continue;
    EXPECT_EQ(runs.report().number_run, one.report().number_run);
    EXPECT_EQ(runs.report().token_offset, one.report().token_offset);
    EXPECT_EQ(runs.report().first_token_offset, one.report().first_token_offset);
    EXPECT_EQ(runs.report().occurrences, one.report().occurrences);
    EXPECT_EQ(runs.report().recurring_percent, one.report().recurring_percent);
  }
  // Every outcome is well represented.
  for (const int f : fired) EXPECT_GT(f, 300);
}

TEST(NgramStream, IgnoresTokensAfterFiringAndBoundsItsMemory) {
  NgramStream stream(NgramOptions{});
  for (int i = 0; i < 11; ++i) stream.Push(7);  // eleven identical tokens hold four 8-grams
  ASSERT_TRUE(stream.fired());
  const NgramReport first = stream.report();
  EXPECT_FALSE(stream.Push(7));
  EXPECT_EQ(stream.report().token_offset, first.token_offset);
  EXPECT_EQ(stream.tokens(), 11u);

  // The literal rule counts every window. Per token at most 16 bytes of token storage (the vector
  // doubles) and four 16-byte slots (the table doubles at load 1/2, so it is at least a quarter
  // full).
  NgramStream counted(Literal(8, 3));
  for (uint64_t i = 0; i < 100000; ++i) counted.Push(i);
  EXPECT_FALSE(counted.fired());
  EXPECT_TRUE(counted.counting());
  EXPECT_EQ(counted.distinct(), 100000u - 7u);
  EXPECT_LE(counted.MemoryBytes(), 100000u * (16 + 4 * 16));

  // The loop rule on text that never recurs keeps only the near chains: the tokens and a fixed
  // 20 KiB.
  NgramStream fresh(NgramOptions{});
  for (uint64_t i = 0; i < 100000; ++i) fresh.Push(i);
  EXPECT_FALSE(fresh.fired());
  EXPECT_FALSE(fresh.counting());
  EXPECT_EQ(fresh.distinct(), 0u);
  EXPECT_LE(fresh.MemoryBytes(), 100000u * 16 + 24576);
}

// Pieces cut anywhere, inside a three-byte character too (the splitter holds one across pieces):
// ASCII, two-byte letters, CJK characters and punctuation, and broken sequences.
TEST(WordSplitter, AnySplitOfATextGivesItsNormalizedWords) {
  std::mt19937_64 rng(5);
  static const char* const kParts[] = {"a",  "b", "X", "0",  "9",    " ",    ".",    ",",
                                       "\n", "<", "/", "é",  "\x80", "我",   "们",   "，",
                                       "。", "—", "“", "ひ", "∩",    "\xe4", "\xb8", "\xef"};
  for (int k = 0; k < 500; ++k) {
    std::string text;
    const size_t parts = rng() % 120;
    for (size_t i = 0; i < parts; ++i) text += kParts[rng() % std::size(kParts)];
    if (k % 7 == 0) text += std::string(37, 'q');  // a word longer than a hash chunk
    const size_t base = rng() % 1000;
    const std::vector<Word> whole = NormalizedWords(text, base);
    std::vector<Word> pieces;
    WordSplitter splitter(base);
    const auto keep = [&pieces](const Word& w) { pieces.push_back(w); };
    for (size_t at = 0; at < text.size();) {
      const size_t len = std::min<size_t>(text.size() - at, rng() % 9);  // empty pieces too
      splitter.Feed(std::string_view(text).substr(at, len), keep);
      at += len;
    }
    splitter.Finish(keep);
    ASSERT_EQ(pieces.size(), whole.size()) << text;
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(pieces[i].hash, whole[i].hash) << text;
      EXPECT_EQ(pieces[i].offset, whole[i].offset) << text;
      EXPECT_EQ(pieces[i].number, whole[i].number) << text;
    }
    EXPECT_EQ(splitter.offset(), base + text.size());
  }
}

// The text scan splits as it goes and stops at the first firing: it must report exactly what the
// two-step scan reports, for loops and number runs that fire on either side of its 4096-byte
// pieces, multi-byte characters cut by them, and texts that never fire.
TEST(FindRepeatedWordsInText, MatchesSplittingFirst) {
  std::mt19937_64 rng(11);
  static const char* const kParts[] = {"alpha ", "beta ", "gamma, ", "delta. ",  "Ω ",  "我们",
                                       "，",     "7 ",    "42 ",     "x\n",      "é ",  "—",
                                       "sigma ", "tau ",  "\xe4",    "upsilon ", "phi "};
  const std::string loop = "so the answer must be the same as before, wait, let me check. ";
  int fired = 0;
  for (int k = 0; k < 300; ++k) {
    std::string text = RandomText(rng, rng() % 12000);
    const size_t parts = rng() % 400;
    for (size_t i = 0; i < parts; ++i) text += kParts[rng() % std::size(kParts)];
    if (k % 3 == 0) text += Repeat(loop, 5 + rng() % 60);
    if (k % 5 == 0) {
      for (int i = 0; i < 530; ++i) absl::StrAppend(&text, i, " ");
    }
    text += RandomText(rng, rng() % 3000);
    for (const NgramRule rule : {NgramRule::kLoop, NgramRule::kLiteral}) {
      NgramOptions options;
      options.rule = rule;
      const std::vector<Word> words = NormalizedWords(text);
      const NgramReport want = FindRepeatedWords(words, options);
      const TextNgramReport got = FindRepeatedWordsInText(text, options);
      ASSERT_EQ(got.report.fired, want.fired) << k;
      if (!want.fired) continue;
      ++fired;
      EXPECT_EQ(got.report.number_run, want.number_run) << k;
      EXPECT_EQ(got.report.token_offset, want.token_offset) << k;
      EXPECT_EQ(got.report.first_token_offset, want.first_token_offset) << k;
      EXPECT_EQ(got.report.occurrences, want.occurrences) << k;
      EXPECT_EQ(got.report.recurring_percent, want.recurring_percent) << k;
      EXPECT_EQ(got.char_offset, words[want.token_offset].offset) << k;
      EXPECT_EQ(got.first_char_offset, words[want.first_token_offset].offset) << k;
    }
  }
  EXPECT_GT(fired, 150);  // the loops and runs above do fire, under both rules
}

// Pieces as dense in words as text can be, a word ending every other byte or closer (one-letter
// words, ideographs that are words of their own, glued to letters), read with the rule that
// never fires, so that every word of every piece is pushed, and with the loop rule, whose verdict
// must be the two-step scan's.
TEST(FindRepeatedWordsInText, TakesTheDensestPieces) {
  std::mt19937_64 rng(29);
  for (int k = 0; k < 20; ++k) {
    std::string text;
    while (text.size() < 5 * 4096 + rng() % 4096) {
      if (rng() % 2 == 0) {
        text += static_cast<char>('a' + rng() % 26);
        text += rng() % 3 == 0 ? "" : rng() % 2 == 0 ? " " : ".";
      } else {
        const auto code = static_cast<uint32_t>(0x4E00 + rng() % 20000);
        text += static_cast<char>(0xE0 | (code >> 12));
        text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        text += static_cast<char>(0x80 | (code & 0x3F));
      }
    }
    const std::vector<Word> words = NormalizedWords(text);
    ASSERT_GT(words.size(), text.size() / 3) << k;
    NgramOptions options;
    options.rule = NgramRule::kLiteral;
    options.max_occurrences = std::numeric_limits<uint32_t>::max();
    EXPECT_EQ(FindRepeatedWords(words, options).fired, false);
    EXPECT_EQ(FindRepeatedWordsInText(text, options).report.fired, false);
    // The loop rule's verdict on the same text, both ways.
    const NgramReport want = FindRepeatedWords(words, NgramOptions{});
    const TextNgramReport got = FindRepeatedWordsInText(text, NgramOptions{});
    ASSERT_EQ(got.report.fired, want.fired) << k;
    if (want.fired) {
      EXPECT_EQ(got.report.token_offset, want.token_offset) << k;
    }
  }
}

// A sink of words in memory, which takes a block's words at once (WordSplitter::Feed).
class WordSink {
 public:
  explicit WordSink(std::vector<Word>* words) : words_(words) {}
  void operator()(const Word& w) { words_->push_back(w); }
  Word* Room() {
    words_->resize(words_->size() + WordSplitter::kBlockWords);
    return words_->data() + words_->size() - WordSplitter::kBlockWords;
  }
  void Took(size_t count) { words_->resize(words_->size() - WordSplitter::kBlockWords + count); }

 private:
  std::vector<Word>* words_;
};

// A sink that keeps only what the n-gram rule reads of each word, and takes a block's words at
// once in that form (WordSplitter::KeyRoom).
class KeySink {
 public:
  void operator()(const Word& w) {
    hashes.push_back(w.hash);
    numbers.push_back(w.number ? 1 : 0);
  }
  WordSplitter::KeyRoom Keys() {
    hashes.resize(hashes.size() + WordSplitter::kBlockWords);
    numbers.resize(numbers.size() + WordSplitter::kBlockWords);
    return {hashes.data() + hashes.size() - WordSplitter::kBlockWords,
            numbers.data() + numbers.size() - WordSplitter::kBlockWords};
  }
  void Took(size_t count) {
    hashes.resize(hashes.size() - WordSplitter::kBlockWords + count);
    numbers.resize(numbers.size() - WordSplitter::kBlockWords + count);
  }

  std::vector<uint64_t> hashes;
  std::vector<uint8_t> numbers;
};

// Feed takes 64 bytes at a time where it can, and gives exactly the words of its byte-at-a-time
// definition, whether it hashes a block's words in vector lanes (where the CPU has them) or one
// at a time, and whether it hands them over one by one, into a sink's memory or as their hashes
// and number flags only: long texts of every byte class (runs longer than a block and than a hash
// chunk; three-byte characters that separate words, that are word bytes, or that are words of
// their own, and broken sequences), cut into pieces of every size around the blocks.
TEST(WordSplitter, BlocksGiveTheBytewiseWords) {
  std::mt19937_64 rng(7);
  static const char* const kParts[] = {"a",
                                       "Z",
                                       "q",
                                       "0",
                                       "7",
                                       " ",
                                       ".",
                                       ",",
                                       "\n",
                                       "_",
                                       "<",
                                       "é",
                                       "ß",
                                       "→",
                                       "≤",
                                       "’",
                                       "…",
                                       "\x80",
                                       "\xe2\x80x",
                                       "\xe2\x80\xe2\x80\x94",
                                       "\xff",
                                       "我",
                                       "我们的答案是四十二",
                                       "の",
                                       "。",
                                       "—",
                                       "\xe4",
                                       "Mississippi",
                                       "12345678901234567890"};
  for (int k = 0; k < 1500; ++k) {
    std::string text;
    const size_t parts = rng() % 400;
    const bool ascii_only = k % 3 != 0;  // most blocks take the block path
    for (size_t i = 0; i < parts; ++i) {
      const char* part = kParts[rng() % std::size(kParts)];
      if (ascii_only && static_cast<unsigned char>(part[0]) >= 0x80) continue;
      text.append(rng() % 8 == 0 ? 70 + rng() % 60 : 1, part[0]);
      if (part[1] != '\0') text += part + 1;
    }
    const size_t base = rng() % 1000;
    std::vector<Word> blocks, scalar_blocks, sunk, bytes;
    WordSplitter by_blocks(base), by_scalar_blocks(base), into_sink(base), into_keys(base),
        bytewise(base);
    by_scalar_blocks.UseVectorWords(false);
    const auto keep_blocks = [&blocks](const Word& w) { blocks.push_back(w); };
    const auto keep_scalar_blocks = [&scalar_blocks](const Word& w) { scalar_blocks.push_back(w); };
    const auto keep_bytes = [&bytes](const Word& w) { bytes.push_back(w); };
    WordSink sink(&sunk);
    KeySink keys;
    for (size_t at = 0; at < text.size();) {
      const size_t len = std::min<size_t>(text.size() - at, rng() % 200);
      const std::string_view piece = std::string_view(text).substr(at, len);
      by_blocks.Feed(piece, keep_blocks);
      by_scalar_blocks.Feed(piece, keep_scalar_blocks);
      into_sink.Feed(piece, sink);
      into_keys.Feed(piece, keys);
      bytewise.FeedBytewise(piece, keep_bytes);
      at += len;
    }
    by_blocks.Finish(keep_blocks);
    by_scalar_blocks.Finish(keep_scalar_blocks);
    into_sink.Finish(sink);
    into_keys.Finish(keys);
    bytewise.Finish(keep_bytes);
    for (const std::vector<Word>* got : {&blocks, &scalar_blocks, &sunk}) {
      ASSERT_EQ(got->size(), bytes.size()) << text;
      for (size_t i = 0; i < bytes.size(); ++i) {
        ASSERT_EQ((*got)[i].hash, bytes[i].hash) << i << " " << text;
        ASSERT_EQ((*got)[i].offset, bytes[i].offset) << i << " " << text;
        ASSERT_EQ((*got)[i].number, bytes[i].number) << i << " " << text;
      }
    }
    ASSERT_EQ(keys.hashes.size(), bytes.size()) << text;
    for (size_t i = 0; i < bytes.size(); ++i) {
      ASSERT_EQ(keys.hashes[i], bytes[i].hash) << i << " " << text;
      ASSERT_EQ(keys.numbers[i], bytes[i].number ? 1 : 0) << i << " " << text;
    }
  }
}

// The blocks classify every byte value as the bytewise definition does, at every place of a
// block: texts of random bytes, a third over all 256 values, a third letters and digits, a third
// the bytes at either end of their ranges and just outside them; split with vector lanes where
// the CPU has them and one at a time (ctest also runs this file under RLSCORE_MAX_CPU_ISA=avx2,
// where no split uses lanes).
TEST(WordSplitter, BlocksClassifyEveryByteValueAsTheBytewiseDefinition) {
  std::mt19937_64 rng(17);
  static const char kEdges[] = "/09:@AZ[`az{";
  for (int k = 0; k < 3000; ++k) {
    std::string text(64 + rng() % 200, ' ');
    for (char& c : text) {
      const uint64_t pick = rng() % 3;
      c = pick == 0   ? kEdges[rng() % (sizeof(kEdges) - 1)]
          : pick == 1 ? static_cast<char>(rng() % 256)
                      : "abcXYZ0189"[rng() % 10];
    }
    std::vector<Word> vector_words, scalar_words, bytes;
    WordSplitter by_blocks, by_scalar_blocks, bytewise;
    by_scalar_blocks.UseVectorWords(false);
    by_blocks.Feed(text, [&](const Word& w) { vector_words.push_back(w); });
    by_blocks.Finish([&](const Word& w) { vector_words.push_back(w); });
    by_scalar_blocks.Feed(text, [&](const Word& w) { scalar_words.push_back(w); });
    by_scalar_blocks.Finish([&](const Word& w) { scalar_words.push_back(w); });
    bytewise.FeedBytewise(text, [&](const Word& w) { bytes.push_back(w); });
    bytewise.Finish([&](const Word& w) { bytes.push_back(w); });
    for (const std::vector<Word>* got : {&vector_words, &scalar_words}) {
      ASSERT_EQ(got->size(), bytes.size()) << testing::PrintToString(text);
      for (size_t i = 0; i < bytes.size(); ++i) {
        ASSERT_EQ((*got)[i].hash, bytes[i].hash) << i << " " << testing::PrintToString(text);
        ASSERT_EQ((*got)[i].offset, bytes[i].offset) << i;
        ASSERT_EQ((*got)[i].number, bytes[i].number) << i;
      }
    }
  }
}

// A stream built on another's released memory (what the batch scans do on each thread) reports
// what a fresh one does, whatever the previous stream held: its table, tokens and window.
// The loop rule as stated, with an ordered map of every n-gram seen (no hashing, no near table):
// O(L log L), so it reaches the lengths and distances of real completions that the brute force
// above cannot.
NgramReport MapLoop(const std::vector<uint64_t>& t, const NgramOptions& o) {
  struct Seen {
    uint32_t count = 0;
    size_t first = 0;
    size_t last = 0;
  };
  std::map<std::vector<uint64_t>, Seen> seen;
  std::vector<bool> recurs;
  NgramReport r;
  for (size_t j = 0; j + o.n <= t.size(); ++j) {
    Seen& s = seen[std::vector<uint64_t>(t.begin() + static_cast<std::ptrdiff_t>(j),
                                         t.begin() + static_cast<std::ptrdiff_t>(j + o.n))];
    recurs.push_back(s.count > 0 && j - s.last <= o.recurrence_distance);
    if (s.count++ == 0) s.first = j;
    s.last = j;
    if (s.count <= o.max_occurrences) continue;
    const size_t span = std::min<size_t>(j + 1, o.window);
    const size_t recurring = static_cast<size_t>(
        std::count(recurs.end() - static_cast<std::ptrdiff_t>(span), recurs.end(), true));
    if (recurring * 100 / span < o.min_recurring_percent) continue;
    r.fired = true;
    r.token_offset = j;
    r.first_token_offset = s.first;
    r.occurrences = s.count;
    r.recurring_percent = static_cast<uint32_t>(recurring * 100 / span);
    return r;
  }
  return r;
}

// Appends a phrase of up to 30 tokens copied from anywhere before.
void AppendReuse(std::mt19937_64& rng, std::vector<uint64_t>* t) {
  const size_t from = rng() % t->size();
  const size_t copy = std::min<size_t>(1 + rng() % 30, t->size() - from);
  for (size_t i = 0; i < copy; ++i) t->push_back((*t)[from + i]);
}

// Appends a loop: the last 1 to 60 tokens, repeated 1 to 8 times.
void AppendLoop(std::mt19937_64& rng, std::vector<uint64_t>* t) {
  const size_t period = 1 + rng() % 60;
  const size_t base = t->size() - std::min(period, t->size());
  for (size_t i = 0, reps = period * (1 + rng() % 8); i < reps; ++i) {
    t->push_back((*t)[base + i % period]);
  }
}

// Expects a stream fed `t` a token at a time, and FindRepeatedNgram, to give the rule's report
// (MapLoop); returns the stream, for the path it took.
NgramStream ExpectTheRulesReport(const std::vector<uint64_t>& t, const NgramOptions& o, int k) {
  SCOPED_TRACE(absl::StrCat("case ", k, " n=", o.n, " max=", o.max_occurrences,
                            " window=", o.window, " percent=", o.min_recurring_percent,
                            " distance=", o.recurrence_distance, " length=", t.size()));
  const NgramReport want = MapLoop(t, o);
  NgramStream stream(o);
  for (const uint64_t x : t) {
    if (stream.Push(x)) break;
  }
  ExpectSameReport(stream.report(), want);
  ExpectSameReport(FindRepeatedNgram(t, o), want);
  return stream;
}

// Long sequences whose recurrences come and go (phrases reused at every distance, then loops), so
// that the stream starts counting at every kind of point, or never: the reports are the rule's.
TEST(NgramStream, StartingToCountLateGivesTheRulesReport) {
  std::mt19937_64 rng(20261205);
  int counted = 0, not_counted = 0, fired = 0;
  for (int k = 0; k < 240; ++k) {
    NgramOptions o;
    o.n = static_cast<uint32_t>(1 + rng() % 10);
    o.max_occurrences = static_cast<uint32_t>(k % 3 == 0 ? 20 + rng() % 20 : rng() % 5);
    o.window = static_cast<uint32_t>(1 + rng() % 250);
    o.min_recurring_percent = static_cast<uint32_t>(rng() % 101);
    o.recurrence_distance = static_cast<uint32_t>(k % 4 == 0 ? 1 + rng() % 8 : 1 + rng() % 600);
    // Fresh words, and phrases copied from anywhere before (reuse), now and then a loop.
    std::vector<uint64_t> t;
    const size_t length = 200 + rng() % 3000;
    while (t.size() < length) {
      const uint64_t pick = rng() % (k % 2 == 0 ? 9 : 10);  // even cases: no loops
      if (pick < 6 || t.size() < 20) {
        for (uint64_t i = rng() % 20; i > 0; --i) t.push_back(1000 + rng() % 100000);
      } else if (pick < 9) {
        AppendReuse(rng, &t);
      } else {
        AppendLoop(rng, &t);
      }
    }
    const NgramStream stream = ExpectTheRulesReport(t, o, k);
    (stream.counting() ? counted : not_counted) += 1;
    fired += stream.fired() ? 1 : 0;
  }
  std::printf("never counted %d, counted without firing %d, fired %d\n", not_counted,
              counted - fired, fired);
  // Every path was taken: never counting, counting without firing, and firing.
  EXPECT_GT(not_counted, 10);
  EXPECT_GT(counted - fired, 10);
  EXPECT_GT(fired, 10);
}

// Before it counts, the loop rule bounds the recurring share from above in a table of 4,096
// buckets. With a reach of thousands of positions nearly every bucket holds a recent window, so
// the bound reaches the minimum in text that never recurs, at every point of the window's
// filling: the stream must then check exactly, and still give the rule's report.
TEST(NgramStream, LeavingTheBoundGivesTheRulesReport) {
  std::mt19937_64 rng(20261206);
  int within_bound = 0, left_bound = 0, counted = 0, fired = 0;
  for (int k = 0; k < 160; ++k) {
    NgramOptions o;
    o.n = static_cast<uint32_t>(1 + rng() % 10);
    o.max_occurrences = static_cast<uint32_t>(k % 5 == 0 ? 20 + rng() % 20 : rng() % 5);
    o.window = static_cast<uint32_t>(1 + rng() % 250);
    o.min_recurring_percent = static_cast<uint32_t>(1 + rng() % 100);
    o.recurrence_distance =
        static_cast<uint32_t>(k % 4 == 0 ? 1 + rng() % 400 : 400 + rng() % 32000);
    // Fresh words; some cases reuse phrases from anywhere before, some end in a loop.
    std::vector<uint64_t> t;
    const size_t length = 200 + rng() % 6000;
    const bool reuse = k % 3 == 0;
    while (t.size() < length) {
      if (!reuse || rng() % 4 != 0 || t.size() < 20) {
        for (uint64_t i = rng() % 20; i > 0; --i) t.push_back(rng());
      } else {
        AppendReuse(rng, &t);
      }
    }
    if (k % 2 == 1) AppendLoop(rng, &t);
    const NgramStream stream = ExpectTheRulesReport(t, o, k);
    if (stream.bounded()) {
      ++within_bound;
    } else if (!stream.counting()) {
      ++left_bound;
    } else {
      ++counted;
    }
    fired += stream.fired() ? 1 : 0;
  }
  std::printf("within the bound %d, left it without counting %d, counted %d, fired %d\n",
              within_bound, left_bound, counted, fired);
  EXPECT_GT(within_bound, 10);
  EXPECT_GT(left_bound, 10);
  EXPECT_GT(counted - fired, 10);
  EXPECT_GT(fired, 10);
}

TEST(NgramStream, ReusedStorageStartsEmpty) {
  std::mt19937_64 rng(9);
  NgramStream::Storage storage;
  for (int k = 0; k < 200; ++k) {
    NgramOptions options;
    options.rule = k % 3 == 0 ? NgramRule::kLiteral : NgramRule::kLoop;
    options.n = static_cast<uint32_t>(1 + rng() % 9);
    options.window = static_cast<uint32_t>(1 + rng() % 300);
    std::vector<uint64_t> tokens(rng() % 3000);
    const uint64_t vocabulary = 2 + rng() % 500;
    for (uint64_t& t : tokens) t = rng() % vocabulary;
    NgramStream fresh(options);
    NgramStream reused(options, std::move(storage));
    for (const uint64_t t : tokens) ASSERT_EQ(reused.Push(t), fresh.Push(t)) << k;
    EXPECT_EQ(reused.fired(), fresh.fired());
    EXPECT_EQ(reused.report().token_offset, fresh.report().token_offset);
    EXPECT_EQ(reused.report().occurrences, fresh.report().occurrences);
    EXPECT_EQ(reused.distinct(), fresh.distinct());
    storage = std::move(reused).Release();
  }
}

}  // namespace
}  // namespace rlscore::scorers
