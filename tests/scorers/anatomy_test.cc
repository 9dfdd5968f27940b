// Tests of scorers/anatomy.h: the structure rules of docs/DESIGN.md §1, every look-alike tag the
// scanner must flag and the ordinary text it must not, exact byte offsets, the incident's <think>
// loops, inputs of megabytes that a backtracking scanner would choke on, and a seeded property loop
// against a brute-force reference (exact tags by string comparison, look-alikes by std::regex,
// well-formedness from docs/DESIGN.md §1's wording rather than from per-rule diagnostics).
#include "scorers/anatomy.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::scorers {
namespace {

using ::testing::ElementsAreArray;
using namespace std::string_literals;

using M = Malformation;

// Stands for "the size of the text" in expected diagnostic offsets.
constexpr size_t kEnd = SIZE_MAX;

constexpr TagPolicy kDefault{};
constexpr TagPolicy kPrefilled{.think_prefilled = true, .require_answer_tags = false};
constexpr TagPolicy kTags{.think_prefilled = false, .require_answer_tags = true};
constexpr TagPolicy kPrefilledTags{.think_prefilled = true, .require_answer_tags = true};

std::string_view KindName(M kind) {
  switch (kind) {
    case M::kLookAlikeTag:
      return "kLookAlikeTag";
    case M::kRepeatedThinkOpen:
      return "kRepeatedThinkOpen";
    case M::kRepeatedThinkClose:
      return "kRepeatedThinkClose";
    case M::kNestedThink:
      return "kNestedThink";
    case M::kThinkCloseBeforeOpen:
      return "kThinkCloseBeforeOpen";
    case M::kThinkOpenNotFirst:
      return "kThinkOpenNotFirst";
    case M::kThinkNotClosed:
      return "kThinkNotClosed";
    case M::kMissingThink:
      return "kMissingThink";
    case M::kEmptyAnswer:
      return "kEmptyAnswer";
    case M::kAnswerTagMisplaced:
      return "kAnswerTagMisplaced";
    case M::kMissingAnswerTags:
      return "kMissingAnswerTags";
  }
  return "?";
}

// "kind@offset", with "@end" for the size of the text, so a failure prints readably.
std::string Describe(M kind, size_t offset, size_t size) {
  return absl::StrCat(Sv(KindName(kind)), "@",
                      offset == size || offset == kEnd ? "end" : absl::StrCat(offset));
}

std::vector<std::string> Describe(const std::vector<Diagnostic>& diags, size_t size) {
  std::vector<std::string> out;
  for (const Diagnostic& d : diags) out.push_back(Describe(d.kind, d.offset, size));
  return out;
}

struct Expected {
  M kind;
  size_t offset;
};

std::vector<std::string> Describe(const std::vector<Expected>& diags, size_t size) {
  std::vector<std::string> out;
  for (const Expected& d : diags) out.push_back(Describe(d.kind, d.offset, size));
  return out;
}

size_t Count(const Anatomy& a, M kind) {
  return static_cast<size_t>(std::count_if(a.diagnostics.begin(), a.diagnostics.end(),
                                           [kind](const Diagnostic& d) { return d.kind == kind; }));
}

bool SortedByOffset(const Anatomy& a) {
  return std::is_sorted(
      a.diagnostics.begin(), a.diagnostics.end(),
      [](const Diagnostic& x, const Diagnostic& y) { return x.offset < y.offset; });
}

// Invariants every parse must satisfy, whatever the input.
void ExpectInvariants(std::string_view text, const Anatomy& a) {
  const size_t n = text.size();
  EXPECT_TRUE(SortedByOffset(a));
  EXPECT_EQ(a.malformed_tags, Count(a, M::kLookAlikeTag));
  EXPECT_LE(a.reasoning_begin, a.reasoning_end);
  EXPECT_LE(a.reasoning_end, n);
  EXPECT_LE(a.answer_begin, a.answer_end);
  EXPECT_EQ(a.answer_end, n);
  if (!a.has_think_close) {
    EXPECT_EQ(a.answer_begin, n);
  }
  if (a.has_answer_tag) {
    EXPECT_LE(a.answer_begin, a.answer_tag_begin);
    EXPECT_LE(a.answer_tag_begin, a.answer_tag_end);
    EXPECT_LE(a.answer_tag_end, n);
  }
  for (const Diagnostic& d : a.diagnostics) {
    EXPECT_LE(d.offset, n);
  }
  for (const Tag& t : a.tags) {
    ASSERT_LE(t.offset + t.length, n);
    std::string_view want = t.kind == TagKind::kThinkOpen    ? "<think>"
                            : t.kind == TagKind::kThinkClose ? "</think>"
                            : t.kind == TagKind::kAnswerOpen ? "<answer>"
                                                             : "</answer>";
    EXPECT_EQ(text.substr(t.offset, t.length), want);
  }
}

// ---------------------------------------------------------------------------------------------
// Structure rules.

struct Case {
  std::string name;
  std::string text;
  TagPolicy policy;
  std::vector<Expected> diagnostics;  // empty: well-formed
  std::string reasoning;
  std::string answer;
  std::optional<std::string> answer_tag;  // content of the last <answer> pair in the answer
};

TEST(Anatomy, StructureTable) {
  const std::vector<Case> cases = {
      {"canonical",
       "<think>2+2 is 4</think> The answer is \\boxed{4}.",
       kDefault,
       {},
       "2+2 is 4",
       " The answer is \\boxed{4}.",
       std::nullopt},
      {"leading whitespace, CRLF",
       "\r\n \t<think>\r\nr\r\n</think>\r\n42\r\n",
       kDefault,
       {},
       "\r\nr\r\n",
       "\r\n42\r\n",
       std::nullopt},
      {"prefilled", "r</think>42", kPrefilled, {}, "r", "42", std::nullopt},
      {"prefilled, but emits its own think",
       "<think>r</think>42",
       kPrefilled,
       {{M::kRepeatedThinkOpen, 0}, {M::kNestedThink, 0}},
       "<think>r",
       "42",
       std::nullopt},
      {"prefilled, never closed",
       "r and r",
       kPrefilled,
       {{M::kThinkNotClosed, kEnd}},
       "r and r",
       "",
       std::nullopt},
      {"prefilled, two closes",
       "a</think>b</think>c",
       kPrefilled,
       {{M::kRepeatedThinkClose, 10}},
       "a",
       "c",
       std::nullopt},
      {"prefilled, answer tags required and present",
       "r</think><answer>4</answer>",
       kPrefilledTags,
       {},
       "r",
       "<answer>4</answer>",
       "4"},
      {"answer tags required and present",
       "<think>r</think> so <answer>42</answer>",
       kTags,
       {},
       "r",
       " so <answer>42</answer>",
       "42"},
      {"answer tags optional and present",
       "<think>r</think> so <answer>42</answer>",
       kDefault,
       {},
       "r",
       " so <answer>42</answer>",
       "42"},
      {"answer tags required and missing",
       "<think>r</think> 42",
       kTags,
       {{M::kMissingAnswerTags, kEnd}},
       "r",
       " 42",
       std::nullopt},
      {"two answer pairs: the last one is the content",
       "<think>r</think><answer>1</answer><answer>2</answer>",
       kTags,
       {{M::kAnswerTagMisplaced, 34}},
       "r",
       "<answer>1</answer><answer>2</answer>",
       "2"},
      {"two answer pairs, tags optional",
       "<think>r</think><answer>1</answer><answer>2</answer>",
       kDefault,
       {{M::kAnswerTagMisplaced, 34}},
       "r",
       "<answer>1</answer><answer>2</answer>",
       "2"},
      {"answer tags only inside the reasoning",
       "<think>r <answer>5</answer></think>5",
       kTags,
       {{M::kAnswerTagMisplaced, 9}, {M::kAnswerTagMisplaced, 18}, {M::kMissingAnswerTags, kEnd}},
       "r <answer>5</answer>",
       "5",
       std::nullopt},
      {"answer tags inside the reasoning, tags optional",
       "<think>r <answer>5</answer></think>5",
       kDefault,
       {{M::kAnswerTagMisplaced, 9}, {M::kAnswerTagMisplaced, 18}},
       "r <answer>5</answer>",
       "5",
       std::nullopt},
      {"answer tags before the think",
       "<answer>5</answer><think>r</think>5",
       kDefault,
       {{M::kAnswerTagMisplaced, 0}, {M::kAnswerTagMisplaced, 9}, {M::kThinkOpenNotFirst, 18}},
       "r",
       "5",
       std::nullopt},
      {"unclosed answer tag",
       "<think>r</think><answer>5",
       kDefault,
       {{M::kAnswerTagMisplaced, 16}},
       "r",
       "<answer>5",
       std::nullopt},
      {"stray answer close",
       "<think>r</think>5</answer>",
       kDefault,
       {{M::kAnswerTagMisplaced, 17}},
       "r",
       "5</answer>",
       std::nullopt},
      {"nested answer tags",
       "<think>r</think><answer>a<answer>b</answer>",
       kTags,
       {{M::kAnswerTagMisplaced, 25}},
       "r",
       "<answer>a<answer>b</answer>",
       "b"},
      {"answer close before open",
       "<think>r</think></answer>5<answer>",
       kTags,
       {{M::kAnswerTagMisplaced, 16}, {M::kAnswerTagMisplaced, 26}, {M::kMissingAnswerTags, kEnd}},
       "r",
       "</answer>5<answer>",
       std::nullopt},
      {"no tags at all",
       "just an answer 42",
       kDefault,
       {{M::kMissingThink, kEnd}},
       "just an answer 42",
       "",
       std::nullopt},
      {"empty text", "", kDefault, {{M::kMissingThink, kEnd}}, "", "", std::nullopt},
      {"empty text, prefilled, tags required",
       "",
       kPrefilledTags,
       {{M::kThinkNotClosed, kEnd}, {M::kMissingAnswerTags, kEnd}},
       "",
       "",
       std::nullopt},
      {"think never closed: the answer only in the reasoning",
       "<think>the answer is 42",
       kDefault,
       {{M::kThinkNotClosed, kEnd}},
       "the answer is 42",
       "",
       std::nullopt},
      {"think never closed, answer tags in the reasoning",
       "<think>so <answer>42</answer>",
       kTags,
       {{M::kAnswerTagMisplaced, 10},
        {M::kAnswerTagMisplaced, 20},
        {M::kThinkNotClosed, kEnd},
        {M::kMissingAnswerTags, kEnd}},
       "so <answer>42</answer>",
       "",
       std::nullopt},
      {"empty answer",
       "<think>r</think>",
       kDefault,
       {{M::kEmptyAnswer, kEnd}},
       "r",
       "",
       std::nullopt},
      {"whitespace-only answer",
       "<think>r</think> \r\n\t\f\v ",
       kDefault,
       {{M::kEmptyAnswer, kEnd}},
       "r",
       " \r\n\t\f\v ",
       std::nullopt},
      {"close before open (a model that assumes a prefilled template)",
       "r</think>42",
       kDefault,
       {{M::kThinkCloseBeforeOpen, 1}},
       "r",
       "42",
       std::nullopt},
      {"close, then a think block",
       "</think><think>r</think>a",
       kDefault,
       {{M::kThinkCloseBeforeOpen, 0}, {M::kThinkOpenNotFirst, 8}, {M::kRepeatedThinkClose, 16}},
       "r",
       "a",
       std::nullopt},
      {"think not first",
       "Sure! <think>r</think>a",
       kDefault,
       {{M::kThinkOpenNotFirst, 6}},
       "r",
       "a",
       std::nullopt},
      {"two think blocks",
       "<think>a</think><think>b</think>c",
       kDefault,
       {{M::kRepeatedThinkOpen, 16}, {M::kRepeatedThinkClose, 24}},
       "a",
       "c",
       std::nullopt},
      {"nested think",
       "<think>a<think>b</think></think>c",
       kDefault,
       {{M::kRepeatedThinkOpen, 8}, {M::kNestedThink, 8}, {M::kRepeatedThinkClose, 24}},
       "a<think>b",
       "c",
       std::nullopt},
      {"multiple closes: the answer is after the last",
       "<think>a</think>b</think>c",
       kDefault,
       {{M::kRepeatedThinkClose, 17}},
       "a",
       "c",
       std::nullopt},
      {"think tag in the answer",
       "<think>a</think>b<think>c",
       kDefault,
       {{M::kRepeatedThinkOpen, 17}},
       "a",
       "b<think>c",
       std::nullopt},
      {"math and other markup are not tags",
       "<think>if a < b and x<=y then a<<b, i<n; 3 <4 <br> <tool> </div> x < answer, "
       "a < thinking time, <thi</think>a < b",
       kDefault,
       {},
       "if a < b and x<=y then a<<b, i<n; 3 <4 <br> <tool> </div> x < answer, "
       "a < thinking time, <thi",
       "a < b",
       std::nullopt},
      {"invalid UTF-8 is just bytes",
       "<think>\xc3\x28 \xff\xfe</think>\x80\xbf 7",
       kDefault,
       {},
       "\xc3\x28 \xff\xfe",
       "\x80\xbf 7",
       std::nullopt},
      {"a byte-order mark is not whitespace",
       "\xef\xbb\xbf<think>r</think>a",
       kDefault,
       {{M::kThinkOpenNotFirst, 3}},
       "r",
       "a",
       std::nullopt},
      {"NUL bytes", "<think>a\0b</think>c\0"s, kDefault, {}, "a\0b"s, "c\0"s, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Anatomy a = ParseAnatomy(c.text, c.policy);
    ExpectInvariants(c.text, a);
    EXPECT_THAT(Describe(a.diagnostics, c.text.size()),
                ElementsAreArray(Describe(c.diagnostics, c.text.size())));
    EXPECT_EQ(a.WellFormed(), c.diagnostics.empty());
    EXPECT_EQ(a.malformed_tags, 0u);
    EXPECT_EQ(a.reasoning(c.text), c.reasoning);
    EXPECT_EQ(a.answer(c.text), c.answer);
    ASSERT_EQ(a.has_answer_tag, c.answer_tag.has_value());
    if (c.answer_tag.has_value()) {
      EXPECT_EQ(c.text.substr(a.answer_tag_begin, a.answer_tag_end - a.answer_tag_begin),
                *c.answer_tag);
    }
  }
}

TEST(Anatomy, ExactOffsets) {
  //                 0 2      9 11      19 20      28 30       39
  const std::string text = "  <think>ab</think>\n<answer>42</answer>";
  const Anatomy a = ParseAnatomy(text, kTags);
  EXPECT_TRUE(a.WellFormed());
  ASSERT_EQ(a.tags.size(), 4u);
  const TagKind kinds[] = {TagKind::kThinkOpen, TagKind::kThinkClose, TagKind::kAnswerOpen,
                           TagKind::kAnswerClose};
  const size_t offsets[] = {2, 11, 20, 30};
  const size_t lengths[] = {7, 8, 8, 9};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a.tags[i].kind, kinds[i]);
    EXPECT_EQ(a.tags[i].offset, offsets[i]);
    EXPECT_EQ(a.tags[i].length, lengths[i]);
  }
  EXPECT_EQ(a.reasoning_begin, 9u);
  EXPECT_EQ(a.reasoning_end, 11u);
  EXPECT_TRUE(a.has_think_close);
  EXPECT_EQ(a.answer_begin, 19u);
  EXPECT_EQ(a.answer_end, 39u);
  EXPECT_TRUE(a.has_answer_tag);
  EXPECT_EQ(a.answer_tag_begin, 28u);
  EXPECT_EQ(a.answer_tag_end, 30u);
}

TEST(Anatomy, EmptyAnswerSectionSitsAtTheEnd) {
  const std::string text = "<think>r";
  const Anatomy a = ParseAnatomy(text, kDefault);
  EXPECT_FALSE(a.has_think_close);
  EXPECT_EQ(a.answer_begin, text.size());
  EXPECT_EQ(a.answer_end, text.size());
  EXPECT_EQ(a.reasoning_begin, 7u);
  EXPECT_EQ(a.reasoning_end, text.size());
}

// ---------------------------------------------------------------------------------------------
// Look-alikes: each fragment must be flagged exactly once, both inside the reasoning and at the
// very end of the text (where "<think" has nothing after it).

TEST(Anatomy, LookAlikesAreFlagged) {
  const std::vector<std::string> fragments = {
      "<think",       "<think\n",    "<think\t",  "</ think>",  "< think>",   "< /think>",
      "<\nthink>",    "<  think  >", "<think >",  "</think >",  "<thinking>", "</thinking>",
      "< thinking >", "<THINK>",     "<Think>",   "</THINK>",   "<think/>",   "<thinkthink>",
      "<think\r\n",   "<answer",     "<answer\n", "</ answer>", "< answer>",  "<answer >",
      "</answer >",   "<answers>",   "<ANSWER>",  "<Answer>",   "</Answer>",  "<answer/>",
      "< / answer >",
  };
  for (const std::string& f : fragments) {
    SCOPED_TRACE(absl::StrCat("fragment \"", f, "\""));
    {
      SCOPED_TRACE("in the reasoning");
      const std::string text = absl::StrCat("<think>r ", f, " s</think>a");
      const Anatomy a = ParseAnatomy(text, kDefault);
      ExpectInvariants(text, a);
      EXPECT_THAT(Describe(a.diagnostics, text.size()),
                  ElementsAreArray({Describe(M::kLookAlikeTag, 9, text.size())}));
      EXPECT_EQ(a.malformed_tags, 1u);
      EXPECT_EQ(a.tags.size(), 2u);  // a look-alike is not a tag
      EXPECT_EQ(a.reasoning(text), absl::StrCat("r ", f, " s"));
      EXPECT_EQ(a.answer(text), "a");
    }
    {
      SCOPED_TRACE("at the end");
      const std::string text = absl::StrCat("<think>r</think>a ", f);
      const Anatomy a = ParseAnatomy(text, kDefault);
      ExpectInvariants(text, a);
      EXPECT_THAT(Describe(a.diagnostics, text.size()),
                  ElementsAreArray({Describe(M::kLookAlikeTag, 18, text.size())}));
      EXPECT_EQ(a.malformed_tags, 1u);
    }
  }
}

// Decision: '<' followed by whitespace is only a look-alike when a '>' closes the name, so prose
// such as "x < answer" or "a < thinking" is not flagged; HTML-ish tags other than think/answer
// ("<br>", "<tool>") are text.
TEST(Anatomy, OrdinaryTextIsNotFlagged) {
  const std::vector<std::string> fragments = {
      "a < b",
      "x<y",
      "x<=y",
      "a<<b",
      "<br>",
      "<tool>",
      "</div>",
      "i<n",
      "<-",
      "<",
      "</",
      "< /",
      "<t>",
      "<thi",
      "< think",
      "< think about it",
      "x < answer, y",
      "a < thinking time",
      "<ans wer>",
      "<a href=x>",
      "<\xff>",
      "<<<",
      "< /answer is",
      "<\x80think>",
  };
  for (const std::string& f : fragments) {
    SCOPED_TRACE(absl::StrCat("fragment \"", f, "\""));
    for (const std::string& text :
         {absl::StrCat("<think>r ", f, " s</think>a"), absl::StrCat("<think>r</think>a ", f)}) {
      const Anatomy a = ParseAnatomy(text, kDefault);
      ExpectInvariants(text, a);
      EXPECT_TRUE(a.WellFormed()) << testing::PrintToString(Describe(a.diagnostics, text.size()));
      EXPECT_EQ(a.malformed_tags, 0u);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The incident (seed/incident-postmortem.txt, Mechanism 2): reflection loops full of tags.

constexpr std::string_view kWait =
    "Wait, let me double check... but wait, consider another case...";

TEST(Anatomy, IncidentLoopOfThinkOpens) {
  std::string text = "<think>Let me solve.\n";
  for (int i = 0; i < 500; ++i) absl::StrAppend(&text, "<think>\n", Sv(kWait), "\n");
  absl::StrAppend(&text, "</think>The answer is 7.");
  const Anatomy a = ParseAnatomy(text, kDefault);
  ExpectInvariants(text, a);
  EXPECT_FALSE(a.WellFormed());
  EXPECT_EQ(a.tags.size(), 502u);
  EXPECT_EQ(Count(a, M::kRepeatedThinkOpen), 500u);
  EXPECT_EQ(Count(a, M::kNestedThink), 500u);
  EXPECT_EQ(a.diagnostics.size(), 1000u);
  ASSERT_FALSE(a.diagnostics.empty());
  EXPECT_EQ(a.diagnostics.front().offset, 21u);
  EXPECT_EQ(a.malformed_tags, 0u);
  EXPECT_EQ(a.reasoning_begin, 7u);
  EXPECT_EQ(a.answer(text), "The answer is 7.");
}

TEST(Anatomy, IncidentLoopOfSpacedCloses) {
  std::string text = "<think>x\n";
  for (int i = 0; i < 400; ++i) absl::StrAppend(&text, Sv(kWait), "\n</ think>\n");
  absl::StrAppend(&text, "The answer is 7.");
  const Anatomy a = ParseAnatomy(text, kDefault);
  ExpectInvariants(text, a);
  EXPECT_FALSE(a.WellFormed());
  EXPECT_EQ(a.malformed_tags, 400u);
  EXPECT_EQ(Count(a, M::kThinkNotClosed), 1u);
  EXPECT_EQ(a.diagnostics.size(), 401u);
  EXPECT_EQ(a.diagnostics.back().kind, M::kThinkNotClosed);
  EXPECT_FALSE(a.has_think_close);
  EXPECT_EQ(a.answer(text), "");  // the "answer" is inside the unclosed reasoning: it earns nothing
  EXPECT_EQ(a.reasoning_end, text.size());
}

TEST(Anatomy, IncidentNothingButThinkOpens) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "<think>";
  const Anatomy a = ParseAnatomy(text, kDefault);
  ExpectInvariants(text, a);
  EXPECT_EQ(Count(a, M::kRepeatedThinkOpen), 499u);
  EXPECT_EQ(Count(a, M::kNestedThink), 499u);
  EXPECT_EQ(Count(a, M::kThinkNotClosed), 1u);
  EXPECT_EQ(a.diagnostics.size(), 999u);
  EXPECT_EQ(a.reasoning_begin, 7u);
  EXPECT_EQ(a.reasoning_end, 3500u);
}

// ---------------------------------------------------------------------------------------------
// Megabyte inputs: the scan must stay linear. Only termination and counts are checked; timing is
// the benchmark's business.

constexpr size_t kFiveMegabytes = 5 << 20;

std::string Repeat(std::string_view unit, size_t total_bytes) {
  std::string s;
  s.reserve(total_bytes + unit.size());
  while (s.size() + unit.size() <= total_bytes) s.append(unit);
  return s;
}

TEST(Anatomy, HugeInputOfLessThan) {
  const std::string text(kFiveMegabytes, '<');
  const Anatomy a = ParseAnatomy(text, kDefault);
  EXPECT_TRUE(a.tags.empty());
  EXPECT_EQ(a.malformed_tags, 0u);
  EXPECT_THAT(Describe(a.diagnostics, text.size()),
              ElementsAreArray({Describe(M::kMissingThink, kEnd, text.size())}));
}

TEST(Anatomy, HugeInputOfUnclosedThink) {
  const std::string text = Repeat("<think", kFiveMegabytes);
  const Anatomy a = ParseAnatomy(text, kDefault);
  EXPECT_TRUE(a.tags.empty());
  EXPECT_EQ(a.malformed_tags, text.size() / 6);
  EXPECT_EQ(a.diagnostics.size(), text.size() / 6 + 1);
  EXPECT_EQ(a.diagnostics.back().kind, M::kMissingThink);
}

TEST(Anatomy, HugeInputOfThinkOpens) {
  const std::string text = Repeat("<think>", kFiveMegabytes);
  const size_t n = text.size() / 7;
  const Anatomy a = ParseAnatomy(text, kDefault);
  EXPECT_EQ(a.tags.size(), n);
  EXPECT_EQ(Count(a, M::kRepeatedThinkOpen), n - 1);
  EXPECT_EQ(Count(a, M::kNestedThink), n - 1);
  EXPECT_EQ(a.diagnostics.size(), 2 * (n - 1) + 1);
  EXPECT_TRUE(SortedByOffset(a));
}

TEST(Anatomy, HugeInputsOfSpacedCandidates) {
  {
    SCOPED_TRACE("\"</ think\" without '>'");
    const std::string text = Repeat("</ think", kFiveMegabytes);
    const Anatomy a = ParseAnatomy(text, kDefault);
    EXPECT_EQ(a.malformed_tags, 0u);
  }
  {
    SCOPED_TRACE("\"< \" repeated");
    const std::string text = Repeat("< ", kFiveMegabytes);
    const Anatomy a = ParseAnatomy(text, kDefault);
    EXPECT_EQ(a.malformed_tags, 0u);
  }
  {
    SCOPED_TRACE("'<', megabytes of whitespace, then the name");
    const std::string text = "<" + std::string(kFiveMegabytes, ' ') + "think>";
    const Anatomy a = ParseAnatomy(text, kDefault);
    EXPECT_EQ(a.malformed_tags, 1u);
  }
  {
    SCOPED_TRACE("\"< think\", megabytes of letters, then '>'");
    const std::string text = "< think" + std::string(kFiveMegabytes, 'g') + ">";
    const Anatomy a = ParseAnatomy(text, kDefault);
    EXPECT_EQ(a.malformed_tags, 1u);
  }
}

// ---------------------------------------------------------------------------------------------
// Property loop against a brute-force reference.

struct RefTag {
  TagKind kind;
  size_t offset;
};

std::vector<RefTag> ReferenceTags(std::string_view text) {
  std::vector<RefTag> out;
  const std::pair<std::string_view, TagKind> names[] = {{"<think>", TagKind::kThinkOpen},
                                                        {"</think>", TagKind::kThinkClose},
                                                        {"<answer>", TagKind::kAnswerOpen},
                                                        {"</answer>", TagKind::kAnswerClose}};
  for (size_t i = 0; i < text.size(); ++i) {
    for (const auto& [name, kind] : names) {
      if (text.substr(i, name.size()) == name) out.push_back({kind, i});
    }
  }
  return out;
}

// The look-alike rule of anatomy.cc, restated as regular expressions tried at every '<'.
class ReferenceLookAlikes {
 public:
  size_t Count(const std::string& text) const {
    size_t count = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '<') continue;
      const auto begin = text.begin() + static_cast<std::ptrdiff_t>(i);
      const auto flags = std::regex_constants::match_continuous;
      if (std::regex_search(begin, text.end(), exact_, flags)) continue;
      if (std::regex_search(begin, text.end(), unspaced_, flags) ||
          std::regex_search(begin, text.end(), spaced_, flags)) {
        ++count;
      }
    }
    return count;
  }

 private:
  const std::regex exact_{"</?(think|answer)>"};
  const std::regex unspaced_{"</?(think|answer)", std::regex::icase};
  const std::regex spaced_{R"(<(\s+/?\s*|/\s+)(think|answer)[a-z]*\s*>)", std::regex::icase};
};

bool AllSpace(std::string_view s) {
  return s.find_first_not_of(" \t\n\r\f\v") == std::string_view::npos;
}

// Well-formedness as docs/DESIGN.md §1 words it, without reference to the individual diagnostics.
bool ReferenceWellFormed(const std::string& text, const TagPolicy& policy, size_t look_alikes) {
  if (look_alikes != 0) return false;
  std::vector<size_t> opens, closes, answer_opens, answer_closes;
  for (const RefTag& t : ReferenceTags(text)) {
    switch (t.kind) {
      case TagKind::kThinkOpen:
        opens.push_back(t.offset);
        break;
      case TagKind::kThinkClose:
        closes.push_back(t.offset);
        break;
      case TagKind::kAnswerOpen:
        answer_opens.push_back(t.offset);
        break;
      case TagKind::kAnswerClose:
        answer_closes.push_back(t.offset);
        break;
    }
  }
  if (closes.size() != 1) return false;
  if (policy.think_prefilled) {
    if (!opens.empty()) return false;
  } else {
    if (opens.size() != 1 || opens[0] > closes[0]) return false;
    if (!AllSpace(std::string_view(text).substr(0, opens[0]))) return false;
  }
  const size_t answer_begin = closes[0] + 8;
  if (AllSpace(std::string_view(text).substr(answer_begin))) return false;
  if (answer_opens.size() != answer_closes.size() || answer_opens.size() > 1) return false;
  if (answer_opens.size() == 1 &&
      !(answer_begin <= answer_opens[0] && answer_opens[0] < answer_closes[0])) {
    return false;
  }
  if (policy.require_answer_tags && answer_opens.empty()) return false;
  return true;
}

TEST(Anatomy, MatchesReferenceOnRandomCompletions) {
  const std::vector<std::string_view> text_pieces = {"a",    "x",  " ", "\n",  "\r\n",  "\t",
                                                     "<",    ">",  "/", "=",   "think", "answer",
                                                     "Wait", "<=", "4", "ing", "T"};
  const std::vector<std::string_view> tag_pieces = {
      "<think>", "</think>",   "<answer>",  "</answer>", "<think",    "< think>", "</ think>",
      "<THINK>", "<thinking>", "<answer >", "< answer",  "</Answer>", "<think >"};
  std::mt19937 rng(20240611);
  auto pick = [&rng](const std::vector<std::string_view>& v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  auto chance = [&rng](double p) { return std::bernoulli_distribution(p)(rng); };
  auto junk = [&](std::string* s, double tag_probability) {
    const int n = std::uniform_int_distribution<int>(0, 8)(rng);
    for (int i = 0; i < n; ++i)
      s->append(chance(tag_probability) ? pick(tag_pieces) : pick(text_pieces));
  };
  const ReferenceLookAlikes reference_look_alikes;
  size_t well_formed = 0;
  size_t malformed = 0;
  size_t with_look_alikes = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    TagPolicy policy;
    policy.think_prefilled = chance(0.3);
    policy.require_answer_tags = chance(0.3);
    // Mostly completion-shaped, so that both outcomes are common.
    std::string text;
    if (chance(0.3)) text += pick({" ", "\n", "\r\n"});
    if (chance(policy.think_prefilled ? 0.1 : 0.9)) text += "<think>";
    junk(&text, 0.05);
    if (chance(0.9)) text += "</think>";
    junk(&text, 0.05);
    if (chance(0.5)) {
      text += "<answer>";
      junk(&text, 0.02);
      text += "</answer>";
    }
    junk(&text, 0.05);
    SCOPED_TRACE(absl::StrCat("iteration ", iter, " text \"", text, "\" prefilled ",
                              policy.think_prefilled, " tags ", policy.require_answer_tags));
    const Anatomy a = ParseAnatomy(text, policy);
    ExpectInvariants(text, a);
    const std::vector<RefTag> ref_tags = ReferenceTags(text);
    ASSERT_EQ(a.tags.size(), ref_tags.size());
    for (size_t i = 0; i < ref_tags.size(); ++i) {
      EXPECT_EQ(a.tags[i].kind, ref_tags[i].kind);
      EXPECT_EQ(a.tags[i].offset, ref_tags[i].offset);
    }
    const size_t look_alikes = reference_look_alikes.Count(text);
    ASSERT_EQ(a.malformed_tags, look_alikes);
    const bool want = ReferenceWellFormed(text, policy, look_alikes);
    ASSERT_EQ(a.WellFormed(), want) << testing::PrintToString(Describe(a.diagnostics, text.size()));
    if (want) {
      ++well_formed;
      const size_t close = text.find("</think>");
      const size_t begin = policy.think_prefilled ? 0 : text.find("<think>") + 7;
      EXPECT_EQ(a.reasoning(text), std::string_view(text).substr(begin, close - begin));
      EXPECT_EQ(a.answer(text), std::string_view(text).substr(close + 8));
    } else {
      ++malformed;
    }
    if (look_alikes > 0) ++with_look_alikes;
  }
  // Both outcomes must be exercised, or the loop proves nothing.
  EXPECT_GT(well_formed, 2000u);
  EXPECT_GT(malformed, 2000u);
  EXPECT_GT(with_look_alikes, 500u);
}

}  // namespace
}  // namespace rlscore::scorers
