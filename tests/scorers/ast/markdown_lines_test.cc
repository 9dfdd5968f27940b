#include "scorers/ast/markdown_lines.h"

#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace rlscore::scorers::ast {
namespace {

// The key of a one-line text.
uint64_t KeyOf(const std::string& line) {
  const LineScan scan = ScanLines(line);
  return scan.lines.at(0).key;
}

TEST(MarkdownLines, SplitsAtNewlinesLikeTreeSitterRows) {
  const LineScan scan = ScanLines("a\n\nb\r\nc");
  ASSERT_EQ(scan.lines.size(), 4u);
  EXPECT_EQ(scan.lines[0].begin, 0u);
  EXPECT_EQ(scan.lines[0].end, 1u);
  EXPECT_EQ(scan.lines[1].normalized_size, 0u);  // blank
  EXPECT_EQ(scan.lines[2].begin, 3u);
  EXPECT_EQ(scan.lines[3].begin, 6u);
  EXPECT_EQ(scan.lines[3].end, 7u);
  EXPECT_EQ(ScanLines("").lines.size(), 1u);
  EXPECT_EQ(ScanLines("x\n").lines.size(), 2u);
}

TEST(MarkdownLines, EquivalentLines) {
  struct Case {
    const char* a;
    const char* b;
  };
  const Case same[] = {
      {"We get 12 apples.", "we  get 7 APPLES."},            // case, spaces, numbers
      {"Total: 3.14159 and 1,000,000", "Total: 2.5 and 7"},  // decimals, separators
      {"- Check the sum", "* Check the sum"},                // bullets
      {"1. Check the sum", "12) Check the sum"},             // ordered items
      {"## Step 3: verify", "Step 9: verify"},               // heading marks
      {"> quoted text here", "quoted text here"},            // block quotes
      {"- [x] done item", "- [ ] done item"},                // task boxes
      {"**Step 1.** Expand", "Step 2. Expand"},              // emphasis
      {"so $x^2 + y = 4$ holds", "so $t^2 + u = 9$ holds"},  // math variables
      {"so \\(a+b\\) holds", "so \\(c+d\\) holds"},          // \( \) math
      {"call `foo(bar)` now", "call `baz(qux)` now"},        // inline code
      {"trailing spaces   ", "trailing spaces"},
  };
  for (const Case& c : same) {
    SCOPED_TRACE(std::string(c.a) + " | " + c.b);
    EXPECT_EQ(KeyOf(c.a), KeyOf(c.b));
  }
  const Case different[] = {
      {"We get apples.", "We get pears."},                     // words outside math
      {"so $\\frac{x}{2}$ holds", "so $\\sqrt{x}{2}$ holds"},  // LaTeX commands kept
      {"so $x + y$ holds", "so $x - y$ holds"},                // operators kept
      {"cost \\$5 for x", "cost \\$5 for y"},                  // an escaped dollar is text
      {"a b", "ab"},
  };
  for (const Case& c : different) {
    SCOPED_TRACE(std::string(c.a) + " | " + c.b);
    EXPECT_NE(KeyOf(c.a), KeyOf(c.b));
  }
}

// Plain prose is hashed eight bytes at a time; anything else byte by byte. Doubling every space
// forces the byte path everywhere and must not change a key.
TEST(MarkdownLines, WordAtATimeAgreesWithByteAtATime) {
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  // No backslash: "\ " is an escaped space, kept literally, so doubling it changes the line.
  const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ      .,;:!?0123$`*";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string line;
    const size_t length = next() % 120;
    for (size_t i = 0; i < length; ++i) line += alphabet[next() % alphabet.size()];
    std::string doubled;
    for (char c : line) doubled += c == ' ' ? std::string("  ") : std::string(1, c);
    SCOPED_TRACE(line);
    EXPECT_EQ(KeyOf(line), KeyOf(doubled));
    EXPECT_EQ(ScanLines(line).lines[0].normalized_size,
              ScanLines(doubled).lines[0].normalized_size);
  }
  EXPECT_EQ(KeyOf("The Quick Brown Fox Jumps Over The Lazy Dog Again And Again"),
            KeyOf("the  quick  brown  fox  jumps  over  the  lazy  dog  again  and  again"));
  EXPECT_NE(KeyOf("the quick brown fox jumps over the lazy dog again and again"),
            KeyOf("the quick brown fox jumps over the lazy cat again and again"));
}

// The screen normalises only blocks whose fingerprints recur: that is sound only if blocks with
// equal keys always have equal fingerprints. Over many short random lines from an alphabet rich in
// what normalisation folds (case, spaces, numbers, `*`, math variables, escapes, markers), every
// group of equal keys must share one fingerprint; and the raw size bounds the normalised size.
TEST(MarkdownLines, EqualKeysHaveEqualFingerprints) {
  uint64_t x = 0x2545f4914f6cdd1dULL;
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  const std::string alphabet = "aAbB  01.,$*_\\`(x-#>";
  std::map<uint64_t, uint64_t> fingerprint_of_key;
  int collisions = 0;
  for (int trial = 0; trial < 50000; ++trial) {
    std::string line;
    const size_t length = 1 + next() % 9;
    for (size_t i = 0; i < length; ++i) line += alphabet[next() % alphabet.size()];
    const LineScan scan = ScanLines(line);
    for (const TextBlock& b : scan.blocks) {
      SCOPED_TRACE(line);
      EXPECT_LE(b.normalized_size, b.raw_size);
      const auto [it, inserted] = fingerprint_of_key.emplace(b.key, b.fingerprint);
      if (!inserted) {
        ++collisions;
        EXPECT_EQ(it->second, b.fingerprint);
      }
    }
  }
  EXPECT_GT(collisions, 10000);  // the property was exercised, not vacuous
}

TEST(MarkdownLines, MathStateCarriesWithinAParagraphOnly) {
  // The display math opened on line 0 covers line 1, whose variables are abstracted...
  const LineScan a = ScanLines("$$\nx + y = 1\n$$");
  const LineScan b = ScanLines("$$\np + q = 2\n$$");
  EXPECT_EQ(a.lines[1].key, b.lines[1].key);
  // ... but an unclosed `$` does not leak past a blank line.
  const LineScan c = ScanLines("costs $5\n\nx + y");
  const LineScan d = ScanLines("costs $5\n\np + q");
  EXPECT_NE(c.lines[2].key, d.lines[2].key);
}

TEST(MarkdownLines, FindsFences) {
  const std::string text =
      "Intro\n```python title=a.py\ndef f():\n    return 1\n```\nmid\n~~~~\nraw\n~~~\nstill raw\n"
      "~~~~~\nend\n````js\nunterminated";
  const LineScan scan = ScanLines(text);
  ASSERT_EQ(scan.fences.size(), 3u);
  const Fence& py = scan.fences[0];
  EXPECT_EQ(py.language, CodeLanguage::kPython);
  EXPECT_EQ(py.info, "python title=a.py");
  EXPECT_EQ(text.substr(py.code_begin, py.code_end - py.code_begin), "def f():\n    return 1\n");
  EXPECT_EQ(py.open_line, 1u);
  EXPECT_EQ(py.end_line, 5u);
  // A closing fence needs at least the opening's length: `~~~` does not close `~~~~`.
  const Fence& raw = scan.fences[1];
  EXPECT_FALSE(raw.language.has_value());
  EXPECT_EQ(text.substr(raw.code_begin, raw.code_end - raw.code_begin), "raw\n~~~\nstill raw\n");
  // An unterminated fence runs to the end.
  const Fence& js = scan.fences[2];
  EXPECT_EQ(js.language, CodeLanguage::kJavaScript);
  EXPECT_EQ(js.code_end, text.size());
  EXPECT_EQ(js.end_line, scan.lines.size());
  for (size_t i = py.open_line; i < py.end_line; ++i) EXPECT_TRUE(scan.lines[i].in_fence);
  EXPECT_FALSE(scan.lines[0].in_fence);
  EXPECT_FALSE(scan.lines[5].in_fence);
}

TEST(MarkdownLines, FencedCodeKeysIgnoreNumbersNotNames) {
  const LineScan a = ScanLines("```py\nx = 10\n```\n```py\nx = 99\n```\n```py\ny = 10\n```");
  ASSERT_EQ(a.blocks.size(), 3u);
  for (const TextBlock& b : a.blocks) EXPECT_TRUE(b.fenced);
  EXPECT_EQ(a.blocks[0].key, a.blocks[1].key);
  EXPECT_NE(a.blocks[0].key, a.blocks[2].key);
}

// The text-level grouping follows Markdown's leaf blocks.
TEST(MarkdownLines, GroupsLinesIntoBlocks) {
  const std::string text =
      "First paragraph\nwith two lines.\n"  // 0-1: one paragraph
      "# Heading\n"                         // 2: a heading interrupts it, and is one line
      "Right after the heading.\n"          // 3
      "\n"
      "- item one\n"      // 5
      "  continued\n"     // 6: continues the item
      "- item two\n"      // 7
      "  - nested\n"      // 8
      "> quoted\n"        // 9
      "> still quoted\n"  // 10
      "\n"
      "Title\n---\n"      // 12-13: a setext heading
      "***\n"             // 14: a thematic break, no content: no block
      "```\ncode\n```\n"  // 15-17
      "after";            // 18
  const LineScan scan = ScanLines(text);
  std::vector<std::pair<size_t, size_t>> got;
  for (const TextBlock& b : scan.blocks) got.emplace_back(b.first_line, b.end_line);
  const std::vector<std::pair<size_t, size_t>> want = {
      {0, 2}, {2, 3}, {3, 4}, {5, 7}, {7, 8}, {8, 9}, {9, 11}, {12, 14}, {15, 18}, {18, 19}};
  EXPECT_EQ(got, want);
  // A block's key folds its lines' keys: equal blocks, equal keys.
  const LineScan twice = ScanLines("Some text\nover lines 1.\n\nSome  TEXT\nover lines 2.");
  ASSERT_EQ(twice.blocks.size(), 2u);
  EXPECT_EQ(twice.blocks[0].key, twice.blocks[1].key);
  EXPECT_EQ(twice.blocks[0].normalized_size, twice.blocks[1].normalized_size);
}

TEST(MarkdownLines, BacktickInfoStringWithBacktickIsNotAFence) {
  EXPECT_TRUE(ScanLines("``` a`b\ncode").fences.empty());
  EXPECT_EQ(ScanLines("~~~ a`b\ncode").fences.size(), 1u);
}

// The fingerprint taken 64 bytes at a time equals its byte-at-a-time definition: over lines of
// every byte class (runs, `*` inside and across runs, separators, punctuation, non-ASCII, `\n`)
// of every length around the 64-byte blocks, and runs and `*` stretches that cross a block; read
// alone, and read inside a longer text whose next bytes (runs, `*`, punctuation) must not count.
TEST(LineFingerprint, EqualsTheByteAtATimeDefinition) {
  std::mt19937_64 rng(3);
  static const char kBytes[] = "aZq_*** ,.,09\t\v\f\r\n$\\{}()=+-'\"#>|~`";
  for (int k = 0; k < 4000; ++k) {
    std::string line;
    const size_t length = rng() % 300;
    const bool runs_of_one_class = k % 4 == 0;
    while (line.size() < length) {
      const char c = rng() % 10 == 0 ? static_cast<char>(0x80 + rng() % 128)
                                     : kBytes[rng() % (sizeof(kBytes) - 1)];
      line.append(runs_of_one_class ? 1 + rng() % 90 : 1, c);
    }
    // The line followed by up to 70 more bytes of the kinds that would change it if counted.
    std::string text = line;
    const size_t more = rng() % 71;
    for (size_t i = 0; i < more; ++i) text += "a*=_9"[rng() % 5];
    for (const bool code : {false, true}) {
      const uint64_t want = LineFingerprintBytewise(line, code);
      for (const ScanIsa isa : {ScanIsa::kBest, ScanIsa::kPortable}) {
        ASSERT_EQ(LineFingerprint(line, line.size(), code, isa), want) << line;
        ASSERT_EQ(
            LineFingerprint(std::string_view(text).substr(0, line.size()), text.size(), code, isa),
            want)
            << text;
      }
    }
  }
  // A run that starts in one block and, through `*`, continues into the next.
  const std::string across = std::string(60, ' ') + "ab****" + std::string(70, '*') + "cd e";
  for (const ScanIsa isa : {ScanIsa::kBest, ScanIsa::kPortable}) {
    EXPECT_EQ(LineFingerprint(across, across.size(), false, isa),
              LineFingerprintBytewise(across, false));
    EXPECT_NE(LineFingerprint(across, across.size(), false, isa),
              LineFingerprint(across + " f", across.size() + 2, false, isa));
  }
  // A different punctuation byte, or one more, changes a line's fingerprint.
  EXPECT_NE(LineFingerprintBytewise("a + b", false), LineFingerprintBytewise("a - b", false));
  EXPECT_NE(LineFingerprintBytewise("f(x)", true), LineFingerprintBytewise("f(x))", true));
}

// What ScanStructure decides of a line, a fence and a block, as tuples to compare.
auto Fields(const Line& l) {
  return std::tuple(l.begin, l.end, l.content_begin, l.fingerprint, l.in_fence, l.blank);
}
auto Fields(const Fence& f) {
  return std::tuple(f.open_line, f.end_line, f.code_begin, f.code_end, f.info);
}
auto Fields(const TextBlock& b) {
  return std::tuple(b.first_line, b.end_line, b.fenced, b.fingerprint, b.raw_size);
}
template <typename T>
auto AllFields(const std::vector<T>& items) {
  std::vector<decltype(Fields(items.front()))> fields;
  for (const T& item : items) fields.push_back(Fields(item));
  return fields;
}

// Everything ScanStructure finds (lines, their kinds, content starts and fingerprints; fences;
// blocks) is the same whichever code scans, on Markdown of every construct with lines of every
// length around the 64-byte steps. Where the CPU lacks AVX-512 the best is AVX2's (ctest also
// runs this under RLSCORE_MAX_CPU_ISA=avx2), and where it lacks that too, both are portable.
TEST(ScanStructure, EveryIsaFindsTheSame) {
  if (!CpuHasVectorScan()) GTEST_LOG_(INFO) << "no AVX-512 with VBMI here: the best scan is AVX2's";
  std::mt19937_64 rng(11);
  static const char* const kPieces[] = {"Let x = 2.",
                                        "  * item",
                                        "1. first",
                                        "# Heading",
                                        "> quoted",
                                        "```python",
                                        "```",
                                        "~~~",
                                        "    code()",
                                        "---",
                                        "***",
                                        "\\[ x^2 + 1 \\]",
                                        "$a_1 + b$",
                                        "",
                                        " ",
                                        "\t\r",
                                        "***bold**",
                                        "[x] done",
                                        "caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve"};
  for (int k = 0; k < 3000; ++k) {
    std::string text;
    const size_t lines = rng() % 40;
    for (size_t i = 0; i < lines; ++i) {
      text += kPieces[rng() % (sizeof(kPieces) / sizeof(kPieces[0]))];
      if (rng() % 3 == 0) text += std::string(rng() % 140, "ab *,.(9_"[rng() % 9]);
      if (rng() % 8 != 0 || i + 1 < lines) text += '\n';
    }
    const LineScan vector = ScanStructure(text, ScanIsa::kBest);
    const LineScan portable = ScanStructure(text, ScanIsa::kPortable);
    ASSERT_EQ(AllFields(vector.lines), AllFields(portable.lines)) << text;
    ASSERT_EQ(AllFields(vector.fences), AllFields(portable.fences)) << text;
    ASSERT_EQ(AllFields(vector.blocks), AllFields(portable.blocks)) << text;
  }
}

}  // namespace
}  // namespace rlscore::scorers::ast
