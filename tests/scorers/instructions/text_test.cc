// The text units of IFEval's checkers, at their boundaries: what NLTK's tokenizers and Python's
// str methods decide, case by case.
#include "scorers/instructions/text.h"

#include <string>

#include "gtest/gtest.h"

namespace rlscore::scorers::instructions {
namespace {

struct CountCase {
  const char* text;
  size_t expected;
};

TEST(CountWords, RunsOfWordCharacters) {
  const CountCase cases[] = {
      {"", 0},
      {"   ", 0},
      {"one", 1},
      {"one two", 2},
      {"word1, word2, word3, word4.", 4},
      {"Hyphenated-word has two word counts.", 6},
      {"don't", 2},            // \w+ stops at the apostrophe
      {"snake_case_name", 1},  // '_' is a word character
      {"3.14159", 2},
      {"café naïve", 2},       // Unicode letters are word characters
      {"日本語 テキスト", 2},  // so are CJK and kana
      {"x²", 1},               // and numbers of every kind
      {"e\xcc\x81", 1},        // a combining accent (Mn) is not: "e" then nothing
      {"a\xe2\x80\x94"
       "b",
       2},              // an em dash separates
      {"\xff\xfe", 0},  // malformed bytes are not words
  };
  for (const CountCase& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(CountWords(c.text), c.expected);
  }
}

TEST(CountSentences, PunktDecisions) {
  const CountCase cases[] = {
      {"", 0},
      {"   \n ", 0},
      {"One sentence without a stop", 1},
      {"One sentence.", 1},
      {"One. Two.", 2},
      {"One.Two.", 1},                    // no space after the period: no boundary
      {"Is it? Yes! Good.", 3},           // '?' and '!' always end a sentence
      {"Really?! Yes.", 2},               // one boundary per run of end marks
      {"Mr. Smith arrived. He sat.", 2},  // a known abbreviation before a name
      {"We met Dr. Watson. Then we left.", 2},
      {"See e.g. the table. It helps.", 2},
      {"Apples, pears, etc. are fruit.", 1},  // abbreviation before a lower-case word
      {"I like fruit etc. The end.", 2},      // ... and before a capitalised common word
      {"It was 1998. Then it ended.", 2},     // a number before a capitalised common word
      {"Chapter 3. is short.", 1},            // a number before a lower-case word
      {"J. Smith wrote it.", 1},              // an initial before an unknown name
      {"Plan A. The rest failed.", 2},        // an initial before a common word
      {"Wait... then go.", 1},                // an ellipsis before a lower-case word
      {"Wait... The door opened.", 2},        // ... and before a capitalised common word
      {"Hello world.\nNext line here.", 2},   // newlines are white space
      {"Title\nBody text without a stop", 1},
      {"He said \"Hi.\" Then he left.", 2},  // a closing quote goes with its sentence
      {"Done.\" ", 1},
      {"(Really?) Yes.", 2},
      {"**Bold.** Next sentence.", 2},
      {"xx,x. xx,x! xx/x. x{x}x? x.", 5},
      {"The U.S. is large. So is Canada.", 2},
  };
  for (const CountCase& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(CountSentences(c.text), c.expected);
  }
}

TEST(CountUpperCaseWords, TreebankTokensInUpperCase) {
  const CountCase cases[] = {
      {"", 0},
      {"HERE there are THREE FUlly CAPITAL words.", 3},
      {"DON'T", 2},  // "DO" + "N'T"
      {"don't", 0},
      {"I'M HERE", 3},     // "I" + "'M" + "HERE"
      {"CANNOT", 2},       // "CAN" + "NOT"
      {"WELL-KNOWN", 1},   // hyphenated words stay whole
      {"HELLO,WORLD", 2},  // a comma between words splits them
      {"3,000 USD", 1},    // ... not between digits
      {"A&B", 2},
      {"AND/OR", 1},  // a slash does not split
      {"U.S.A.", 1},
      {"123", 0},  // no cased character
      {"3D", 1},
      {"ÉCOLE ÉTÉ école", 2},
      {"(NASA)", 1},
      {"HELLO--WORLD", 2},
  };
  for (const CountCase& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(CountUpperCaseWords(c.text), c.expected);
  }
}

TEST(Case, IsUpperAndIsLowerAsPython) {
  EXPECT_TRUE(IsUpper("HELLO, WORLD 42!"));
  EXPECT_FALSE(IsUpper("HELLO, World"));
  EXPECT_FALSE(IsUpper("123 !"));  // nothing cased
  EXPECT_TRUE(IsUpper("ÇA VA"));
  EXPECT_TRUE(IsLower("hello, world 42!"));
  EXPECT_FALSE(IsLower("hello World"));
  EXPECT_FALSE(IsLower(""));
  EXPECT_TRUE(IsLower("ça va"));
  EXPECT_FALSE(IsLower("ǅ"));  // title case is neither
  EXPECT_EQ(Lower("ÀÉÎ ΑΒΓ Ω"), "àéî αβγ ω");
}

TEST(Strip, UnicodeWhiteSpace) {
  EXPECT_EQ(Strip(" \t\n x y \r\n"), "x y");
  EXPECT_EQ(Strip("\u00a0\u3000x\u2003"), "x");
  EXPECT_EQ(Strip("\u200bx"), "\u200bx");  // a zero-width space is not white space in Python
  EXPECT_EQ(Strip(""), "");
  EXPECT_EQ(StripLeft("  x "), "x ");
  EXPECT_EQ(StripRight("  x "), "  x");
}

TEST(NextCodePoint, MalformedBytesReadOneAtATime) {
  const std::string s = "a\xc3\xa9\xff\xe2\x82";
  size_t pos = 0;
  EXPECT_EQ(NextCodePoint(s, &pos), U'a');
  EXPECT_EQ(NextCodePoint(s, &pos), U'é');
  EXPECT_EQ(NextCodePoint(s, &pos), 0xFFFDu);
  EXPECT_EQ(pos, 4u);
  EXPECT_EQ(NextCodePoint(s, &pos), 0xFFFDu);  // a truncated sequence
  EXPECT_EQ(pos, 5u);
}

}  // namespace
}  // namespace rlscore::scorers::instructions
