#include "scorers/math/lexer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "scorers/math/chars.h"

namespace rlscore::scorers::math {
namespace {

template <size_t N>
bool Contains(const std::string_view (&table)[N], std::string_view s) {
  for (std::string_view t : table) {
    if (t == s) return true;
  }
  return false;
}

struct Alias {
  std::string_view from;
  std::string_view to;
};

// Commands that only affect typesetting: dropped.
constexpr std::string_view kSkipCommands[] = {
    "left",        "right",    "big",        "Big",          "bigg",         "Bigg",
    "bigl",        "bigr",     "Bigl",       "Bigr",         "biggl",        "biggr",
    "Biggl",       "Biggr",    "middle",     "quad",         "qquad",        "enspace",
    "thinspace",   "medspace", "thickspace", "negthinspace", "displaystyle", "textstyle",
    "scriptstyle", "limits",   "nolimits",   "hline",        "mathstrut",    "strut",
    "hfill",       "nonumber", "notag",      "relax"};
// Commands whose delimiter may be "." (no delimiter): "\left." is dropped whole.
constexpr std::string_view kDelimiterSizers[] = {"left",  "right", "big",   "Big",   "bigg",
                                                 "Bigg",  "bigl",  "bigr",  "Bigl",  "Bigr",
                                                 "biggl", "biggr", "Biggl", "Biggr", "middle"};
// Commands whose braced argument is text: its letters become words (text_mode).
constexpr std::string_view kTextCommands[] = {
    "text", "textbf", "textit", "textrm",       "textsf", "texttt", "textnormal",
    "mbox", "hbox",   "mathrm", "operatorname", "textup", "emph"};
// Commands whose braced argument is kept as if the command were not there.
constexpr std::string_view kTransparentCommands[] = {
    "boxed",      "fbox",       "mathbf",  "mathit",     "mathbb",   "mathcal", "mathsf",
    "mathnormal", "boldsymbol", "bm",      "hat",        "bar",      "vec",     "overline",
    "underline",  "tilde",      "widehat", "widetilde",  "dot",      "ddot",    "overrightarrow",
    "mathscr",    "mathfrak",   "pmb",     "underbrace", "overbrace"};
constexpr std::string_view kDegreeCommands[] = {"circ", "degree"};
constexpr Alias kCommandAliases[] = {{"dfrac", "frac"},
                                     {"tfrac", "frac"},
                                     {"cfrac", "frac"},
                                     {"dbinom", "binom"},
                                     {"tbinom", "binom"},
                                     {"varnothing", "emptyset"},
                                     {"varepsilon", "epsilon"},
                                     {"varphi", "phi"},
                                     {"vartheta", "theta"},
                                     {"varrho", "rho"},
                                     {"varsigma", "sigma"},
                                     {"varpi", "pi"},
                                     {"imath", "i"},
                                     {"arccot", "arccot"},
                                     {"tg", "tan"},
                                     {"ctg", "cot"},
                                     {"infin", "infty"}};
struct CommandOp {
  std::string_view name;
  TokenKind kind;
  char op;
};
constexpr CommandOp kCommandOps[] = {{"times", TokenKind::kOp, '*'},
                                     {"cdot", TokenKind::kOp, '*'},
                                     {"ast", TokenKind::kOp, '*'},
                                     {"div", TokenKind::kOp, '/'},
                                     {"pm", TokenKind::kOp, 'P'},
                                     {"mp", TokenKind::kOp, 'M'},
                                     {"cup", TokenKind::kOp, 'U'},
                                     {"lbrace", TokenKind::kOp, 'S'},
                                     {"rbrace", TokenKind::kOp, 'T'},
                                     {"vert", TokenKind::kOp, '|'},
                                     {"lvert", TokenKind::kOp, '|'},
                                     {"rvert", TokenKind::kOp, '|'},
                                     {"langle", TokenKind::kOp, '('},
                                     {"rangle", TokenKind::kOp, ')'},
                                     {"lbrack", TokenKind::kOp, '['},
                                     {"rbrack", TokenKind::kOp, ']'},
                                     {"ne", TokenKind::kRelation, '!'},
                                     {"neq", TokenKind::kRelation, '!'},
                                     {"le", TokenKind::kRelation, 'l'},
                                     {"leq", TokenKind::kRelation, 'l'},
                                     {"leqslant", TokenKind::kRelation, 'l'},
                                     {"leqq", TokenKind::kRelation, 'l'},
                                     {"ge", TokenKind::kRelation, 'g'},
                                     {"geq", TokenKind::kRelation, 'g'},
                                     {"geqslant", TokenKind::kRelation, 'g'},
                                     {"geqq", TokenKind::kRelation, 'g'},
                                     {"lt", TokenKind::kRelation, '<'},
                                     {"gt", TokenKind::kRelation, '>'},
                                     {"approx", TokenKind::kRelation, '~'},
                                     {"equiv", TokenKind::kRelation, '='}};

// Words dropped wherever they appear: currency and angle units (units and degrees are ignored
// when only one side carries them, docs/VERIFIER.md).
constexpr std::string_view kDroppedWords[] = {"dollars", "dollar", "usd",
                                              "degrees", "degree", "deg"};

struct Utf8Rule {
  std::string_view bytes;
  TokenKind kind;  // kPunct with op 0: dropped; op ' ': a space; op '^': superscript `text`
  char op;
  std::string_view text;
};
constexpr Utf8Rule kUtf8Rules[] = {
    {"\xE2\x88\x92", TokenKind::kOp, '-', ""},             // U+2212 minus sign
    {"\xE2\x80\x93", TokenKind::kOp, '-', ""},             // en dash
    {"\xE2\x80\x94", TokenKind::kOp, '-', ""},             // em dash
    {"\xEF\xB9\xA3", TokenKind::kOp, '-', ""},             // small hyphen-minus
    {"\xEF\xBC\x8D", TokenKind::kOp, '-', ""},             // full-width hyphen-minus
    {"\xEF\xBC\x8B", TokenKind::kOp, '+', ""},             // full-width plus
    {"\xC3\x97", TokenKind::kOp, '*', ""},                 // ×
    {"\xC2\xB7", TokenKind::kOp, '*', ""},                 // ·
    {"\xE2\x8B\x85", TokenKind::kOp, '*', ""},             // ⋅
    {"\xE2\x88\x99", TokenKind::kOp, '*', ""},             // ∙
    {"\xC3\xB7", TokenKind::kOp, '/', ""},                 // ÷
    {"\xE2\x88\xAA", TokenKind::kOp, 'U', ""},             // ∪
    {"\xC2\xB1", TokenKind::kOp, 'P', ""},                 // ±
    {"\xE2\x88\x93", TokenKind::kOp, 'M', ""},             // ∓
    {"\xE2\x9F\xA8", TokenKind::kOp, '(', ""},             // ⟨
    {"\xE2\x9F\xA9", TokenKind::kOp, ')', ""},             // ⟩
    {"\xE2\x80\x99", TokenKind::kOp, '\'', ""},            // ’
    {"\xE2\x89\xA4", TokenKind::kRelation, 'l', ""},       // ≤
    {"\xE2\x89\xA5", TokenKind::kRelation, 'g', ""},       // ≥
    {"\xE2\x89\xA0", TokenKind::kRelation, '!', ""},       // ≠
    {"\xE2\x89\x88", TokenKind::kRelation, '~', ""},       // ≈
    {"\xCF\x80", TokenKind::kCommand, 0, "pi"},            // π
    {"\xE2\x88\x9E", TokenKind::kCommand, 0, "infty"},     // ∞
    {"\xE2\x88\x85", TokenKind::kCommand, 0, "emptyset"},  // ∅
    {"\xE2\x88\x9A", TokenKind::kCommand, 0, "sqrt"},      // √
    {"\xCE\xB1", TokenKind::kCommand, 0, "alpha"},         // α
    {"\xCE\xB2", TokenKind::kCommand, 0, "beta"},          // β
    {"\xCE\xB3", TokenKind::kCommand, 0, "gamma"},         // γ
    {"\xCE\xB4", TokenKind::kCommand, 0, "delta"},         // δ
    {"\xCE\xB5", TokenKind::kCommand, 0, "epsilon"},       // ε
    {"\xCE\xB8", TokenKind::kCommand, 0, "theta"},         // θ
    {"\xCE\xBB", TokenKind::kCommand, 0, "lambda"},        // λ
    {"\xCE\xBC", TokenKind::kCommand, 0, "mu"},            // μ
    {"\xCF\x83", TokenKind::kCommand, 0, "sigma"},         // σ
    {"\xCF\x86", TokenKind::kCommand, 0, "phi"},           // φ
    {"\xCF\x89", TokenKind::kCommand, 0, "omega"},         // ω
    {"\xC2\xB2", TokenKind::kPunct, '^', "2"},             // ²
    {"\xC2\xB3", TokenKind::kPunct, '^', "3"},             // ³
    {"\xC2\xB9", TokenKind::kPunct, '^', "1"},             // ¹
    {"\xE2\x81\xB0", TokenKind::kPunct, '^', "0"},         // ⁰
    {"\xE2\x81\xB4", TokenKind::kPunct, '^', "4"},         // ⁴
    {"\xE2\x81\xB5", TokenKind::kPunct, '^', "5"},         // ⁵
    {"\xE2\x81\xB6", TokenKind::kPunct, '^', "6"},         // ⁶
    {"\xE2\x81\xB7", TokenKind::kPunct, '^', "7"},         // ⁷
    {"\xE2\x81\xB8", TokenKind::kPunct, '^', "8"},         // ⁸
    {"\xE2\x81\xB9", TokenKind::kPunct, '^', "9"},         // ⁹
    {"\xC2\xB0", TokenKind::kPunct, 'd', ""},              // ° (degree: dropped)
    {"\xC2\xA0", TokenKind::kPunct, ' ', ""},              // no-break space
    {"\xE2\x80\x89", TokenKind::kPunct, ' ', ""},          // thin space
    {"\xE2\x80\xAF", TokenKind::kPunct, ' ', ""},          // narrow no-break space
    {"\xE2\x80\x8B", TokenKind::kPunct, 0, ""},            // zero-width space
    {"\xE2\x82\xAC", TokenKind::kPunct, 0, ""},            // €
    {"\xC2\xA3", TokenKind::kPunct, 0, ""},                // £
    {"\xC2\xA5", TokenKind::kPunct, 0, ""},                // ¥
    {"\xE2\x80\x9C", TokenKind::kPunct, '"', ""},          // “
    {"\xE2\x80\x9D", TokenKind::kPunct, '"', ""},          // ”
};

struct UnitEntry {
  std::string_view word;  // lower case
  std::string_view unit;
};
constexpr UnitEntry kUnits[] = {{"km", "km"},
                                {"kilometer", "km"},
                                {"kilometers", "km"},
                                {"kilometre", "km"},
                                {"kilometres", "km"},
                                {"m", "m"},
                                {"meter", "m"},
                                {"meters", "m"},
                                {"metre", "m"},
                                {"metres", "m"},
                                {"cm", "cm"},
                                {"centimeter", "cm"},
                                {"centimeters", "cm"},
                                {"centimetre", "cm"},
                                {"centimetres", "cm"},
                                {"mm", "mm"},
                                {"millimeter", "mm"},
                                {"millimeters", "mm"},
                                {"millimetre", "mm"},
                                {"millimetres", "mm"},
                                {"mi", "mi"},
                                {"mile", "mi"},
                                {"miles", "mi"},
                                {"ft", "ft"},
                                {"foot", "ft"},
                                {"feet", "ft"},
                                {"in", "in"},
                                {"inch", "in"},
                                {"inches", "in"},
                                {"yd", "yd"},
                                {"yard", "yd"},
                                {"yards", "yd"},
                                {"kg", "kg"},
                                {"kilogram", "kg"},
                                {"kilograms", "kg"},
                                {"kilo", "kg"},
                                {"kilos", "kg"},
                                {"g", "g"},
                                {"gram", "g"},
                                {"grams", "g"},
                                {"mg", "mg"},
                                {"milligram", "mg"},
                                {"milligrams", "mg"},
                                {"lb", "lb"},
                                {"lbs", "lb"},
                                {"pound", "lb"},
                                {"pounds", "lb"},
                                {"oz", "oz"},
                                {"ounce", "oz"},
                                {"ounces", "oz"},
                                {"ton", "t"},
                                {"tons", "t"},
                                {"tonne", "t"},
                                {"tonnes", "t"},
                                {"s", "s"},
                                {"sec", "s"},
                                {"secs", "s"},
                                {"second", "s"},
                                {"seconds", "s"},
                                {"ms", "ms"},
                                {"millisecond", "ms"},
                                {"milliseconds", "ms"},
                                {"min", "min"},
                                {"mins", "min"},
                                {"minute", "min"},
                                {"minutes", "min"},
                                {"h", "h"},
                                {"hr", "h"},
                                {"hrs", "h"},
                                {"hour", "h"},
                                {"hours", "h"},
                                {"day", "day"},
                                {"days", "day"},
                                {"week", "week"},
                                {"weeks", "week"},
                                {"month", "month"},
                                {"months", "month"},
                                {"year", "year"},
                                {"years", "year"},
                                {"yr", "year"},
                                {"yrs", "year"},
                                {"mph", "mi/h"},
                                {"kph", "km/h"},
                                {"kmh", "km/h"},
                                {"l", "l"},
                                {"liter", "l"},
                                {"liters", "l"},
                                {"litre", "l"},
                                {"litres", "l"},
                                {"ml", "ml"},
                                {"milliliter", "ml"},
                                {"milliliters", "ml"},
                                {"millilitre", "ml"},
                                {"millilitres", "ml"},
                                {"gal", "gal"},
                                {"gallon", "gal"},
                                {"gallons", "gal"},
                                {"cent", "cent"},
                                {"cents", "cent"},
                                {"acre", "acre"},
                                {"acres", "acre"},
                                {"hectare", "ha"},
                                {"hectares", "ha"},
                                {"unit", "unit"},
                                {"units", "unit"}};

constexpr std::string_view kOnes[] = {"zero",    "one",     "two",       "three",    "four",
                                      "five",    "six",     "seven",     "eight",    "nine",
                                      "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                                      "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
constexpr std::string_view kTens[] = {"twenty", "thirty",  "forty",  "fifty",
                                      "sixty",  "seventy", "eighty", "ninety"};

constexpr std::string_view kFunctions[] = {
    "sin",    "cos",  "tan",  "sec",  "csc",  "cot", "arcsin", "arccos", "arctan",
    "arccot", "sinh", "cosh", "tanh", "coth", "ln",  "log",    "lg",     "exp",
    "det",    "gcd",  "lcm",  "max",  "min",  "abs", "floor",  "ceil"};

constexpr std::string_view kGreek[] = {
    "alpha",   "beta",   "gamma", "delta",   "epsilon", "zeta",    "eta",   "theta", "iota",
    "kappa",   "lambda", "mu",    "nu",      "xi",      "omicron", "rho",   "sigma", "tau",
    "upsilon", "phi",    "chi",   "psi",     "omega",   "Gamma",   "Delta", "Theta", "Lambda",
    "Xi",      "Pi",     "Sigma", "Upsilon", "Phi",     "Psi",     "Omega"};

// A command name the lexer or the parser interprets (for reading a doubled backslash).
bool IsKnownCommand(std::string_view name) {
  static constexpr std::string_view kPrimary[] = {
      "frac",   "sqrt",   "binom", "pi",    "infty",    "in",     "emptyset", "begin",     "end",
      "lfloor", "rfloor", "lceil", "rceil", "i",        "choose", "bmod",     "pmod",      "mod",
      "sum",    "prod",   "notin", "cap",   "setminus", "lim",    "to",       "rightarrow"};
  if (Contains(kPrimary, name) || Contains(kSkipCommands, name) || Contains(kTextCommands, name) ||
      Contains(kTransparentCommands, name) || Contains(kDegreeCommands, name) ||
      Contains(kFunctions, name) || Contains(kGreek, name)) {
    return true;
  }
  for (const CommandOp& o : kCommandOps) {
    if (o.name == name) return true;
  }
  for (const Alias& a : kCommandAliases) {
    if (a.from == name) return true;
  }
  return false;
}

class Lexer {
 public:
  Lexer(std::string_view src, Budget& budget, std::vector<Token>& out)
      : src_(src), budget_(budget), out_(out) {}

  absl::Status Run() {
    // A bare ',' groups thousands only when every ',' between digits is followed by exactly
    // three: in "27,54,108,135,189" none does (a list), in "7,425,000" all do.
    for (size_t i = 1; i + 1 < src_.size(); ++i) {
      if (src_[i] == ',' && IsDigit(src_[i - 1]) && IsDigit(src_[i + 1]) && !ThreeDigitsAt(i + 1)) {
        bare_comma_groups_ = false;
        break;
      }
    }
    while (p_ < src_.size()) {
      absl::Status s = Step();
      if (!s.ok()) return s;
    }
    if (!braces_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unbalanced braces: ", braces_.size(), " '{' never closed"));
    }
    return absl::OkStatus();
  }

 private:
  enum Brace : uint8_t { kNormal, kTransparent, kTextBrace };

  char At(size_t i) const { return i < src_.size() ? src_[i] : '\0'; }
  bool StartsWith(size_t i, std::string_view s) const {
    return i <= src_.size() && src_.substr(i).substr(0, s.size()) == s;
  }
  void SkipSpaces() {
    while (At(p_) == ' ' || At(p_) == '\t' || At(p_) == '\n' || At(p_) == '\r') ++p_;
  }

  absl::Status Emit(TokenKind kind, char op, std::string_view text) {
    if (!budget_.Spend(1)) {
      return absl::ResourceExhaustedError("step budget exhausted while reading the answer");
    }
    Token t;
    t.kind = kind;
    t.op = op;
    t.text = text;
    t.space_before = space_;
    t.text_mode = text_depth_ > 0;
    space_ = false;
    out_.push_back(std::move(t));
    return absl::OkStatus();
  }

  absl::Status Step() {
    char c = src_[p_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '~') {
      space_ = true;
      ++p_;
      return absl::OkStatus();
    }
    if (c == '$') {  // math delimiters and currency alike
      ++p_;
      return absl::OkStatus();
    }
    if (IsDigit(c) || (c == '.' && IsDigit(At(p_ + 1)))) return Number();
    if (IsAlpha(c)) return Letters();
    if (c == '\\') return Backslash();
    if (static_cast<unsigned char>(c) >= 0x80) return Utf8();
    ++p_;
    switch (c) {
      case '{':
        if (text_depth_ > 0) {  // braces inside text only group
          braces_.push_back(kTransparent);
          return absl::OkStatus();
        }
        braces_.push_back(kNormal);
        return Emit(TokenKind::kOp, '{', "{");
      case '}': {
        if (braces_.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("unbalanced braces: '}' at byte ", p_ - 1, " closes nothing"));
        }
        Brace b = static_cast<Brace>(braces_.back());
        braces_.pop_back();
        if (b == kTextBrace) --text_depth_;
        if (b != kNormal) return absl::OkStatus();
        return Emit(TokenKind::kOp, '}', "}");
      }
      case '(':
      case '[':
        ++paren_depth_;
        return Emit(TokenKind::kOp, c, src_.substr(p_ - 1, 1));
      case ')':
      case ']':
        if (paren_depth_ > 0) --paren_depth_;
        return Emit(TokenKind::kOp, c, src_.substr(p_ - 1, 1));
      case '=':
        if (At(p_) == '=') ++p_;
        return Emit(TokenKind::kRelation, '=', "=");
      case '<':
        if (At(p_) == '=') {
          ++p_;
          return Emit(TokenKind::kRelation, 'l', "<=");
        }
        return Emit(TokenKind::kRelation, '<', "<");
      case '>':
        if (At(p_) == '=') {
          ++p_;
          return Emit(TokenKind::kRelation, 'g', ">=");
        }
        return Emit(TokenKind::kRelation, '>', ">");
      case '!':
        if (At(p_) == '=') {
          ++p_;
          return Emit(TokenKind::kRelation, '!', "!=");
        }
        return Emit(TokenKind::kOp, '!', "!");
      case '^':
        if (SkipDegreeSuperscript()) return EmitDegree();
        return Emit(TokenKind::kOp, '^', "^");
      case '+':
      case '-':
      case '*':
      case '/':
      case '_':
      case ',':
      case ';':
      case '|':
      case '&':
      case '%':
      case '\'':
        return Emit(TokenKind::kOp, c, src_.substr(p_ - 1, 1));
      case '.':
      case ':':
      case '?':
      case '"':
        return Emit(TokenKind::kPunct, c, src_.substr(p_ - 1, 1));
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("unsupported character '", std::string(1, c), "' at byte ", p_ - 1));
    }
  }

  // Length of a thousands separator at `i` ("," outside brackets, "{,}", "\,", "\ ", thin
  // spaces), 0 when there is none.
  size_t SeparatorAt(size_t i) const {
    // ",\!" is the MATH dataset's own thousands separator ("10,\!000"): unambiguous anywhere.
    if (StartsWith(i, ",\\!")) {  // "11,\! 111": spaces may follow
      size_t n = 3;
      while (At(i + n) == ' ') ++n;
      return n;
    }
    if (At(i) == ',') return paren_depth_ == 0 && bare_comma_groups_ ? 1 : 0;
    if (At(i) == ' ' && At(i + 1) != ' ') return 1;  // "1 000 000"; ThreeDigitsAt() decides
    if (StartsWith(i, "{,}")) return 3;
    if (StartsWith(i, "\\,") || StartsWith(i, "\\ ")) return 2;
    if (StartsWith(i, "\xE2\x80\x89") || StartsWith(i, "\xE2\x80\xAF")) return 3;
    if (StartsWith(i, "\xC2\xA0")) return 2;
    return 0;
  }
  bool ThreeDigitsAt(size_t i) const {
    return IsDigit(At(i)) && IsDigit(At(i + 1)) && IsDigit(At(i + 2)) && !IsDigit(At(i + 3));
  }

  // The number of digits of "\overline{ddd}" at `i`, 0 when there is none.
  size_t RepetendAt(size_t i) const {
    if (!StartsWith(i, "\\overline{")) return 0;
    size_t j = i + 10;
    while (IsDigit(At(j))) ++j;
    return At(j) == '}' ? j - i - 10 : 0;
  }

  absl::Status Number() {
    std::string digits;
    size_t start = p_;
    while (IsDigit(At(p_))) digits += src_[p_++];
    // Thousands groups: a first group of 1-3 digits not starting with 0, then groups of exactly
    // three ("1,000,000"; "1,2" and "0,100" are not numbers but lists).
    if (!digits.empty() && digits.size() <= 3 && digits[0] != '0') {
      for (;;) {
        size_t sep = SeparatorAt(p_);
        if (sep == 0 || !ThreeDigitsAt(p_ + sep)) break;
        digits.append(src_.substr(p_ + sep, 3));
        p_ += sep + 3;
      }
    }
    bool decimal = false;
    if (At(p_) == '.' && (IsDigit(At(p_ + 1)) || RepetendAt(p_ + 1) > 0)) {
      decimal = true;
      digits += '.';
      ++p_;
      while (IsDigit(At(p_))) digits += src_[p_++];
      // "0.1\overline{6}": the repeating digits follow an 'r' ("0.1r6").
      if (size_t len = RepetendAt(p_); len > 0) {
        digits += 'r';
        digits.append(src_.substr(p_ + 10, len));
        p_ += 10 + len + 1;
      }
    } else if (!digits.empty() && StartsWith(p_, "{,}") && IsDigit(At(p_ + 3))) {
      // "3{,}5": the decimal comma of European LaTeX (a proper group of three was taken above).
      decimal = true;
      digits += '.';
      p_ += 3;
      while (IsDigit(At(p_))) digits += src_[p_++];
    }
    // A numeral in another base, "1011_2" or "1011_{2}" (MATH's number-theory answers): its
    // value in decimal, when every digit is below the base and it fits in 64 bits.
    if (!decimal && At(p_) == '_') {
      size_t q = p_ + 1;
      const bool braced = At(q) == '{';
      if (braced) ++q;
      uint64_t base = 0;
      while (IsDigit(At(q)) && base <= 36) base = base * 10 + static_cast<uint64_t>(At(q++) - '0');
      if (braced && At(q) == '}') ++q;
      if (base >= 2 && base <= 36 && (!braced || src_[q - 1] == '}')) {
        uint64_t value = 0;
        bool ok = digits.size() <= 64;
        for (char c : digits) {
          const uint64_t d = static_cast<uint64_t>(c - '0');
          if (d >= base || value > (UINT64_MAX - d) / base) ok = false;
          if (ok) value = value * base + d;
        }
        if (ok) {
          p_ = q;
          absl::Status st = Emit(TokenKind::kNumber, 0, src_.substr(start, p_ - start));
          if (st.ok()) out_.back().digits = std::to_string(value);
          return st;
        }
      }
    }
    // Scientific notation: 3.1e8, 2E-3 (but "2e" and "2ex" are 2·e and 2·e·x).
    if ((At(p_) == 'e' || At(p_) == 'E') &&
        (IsDigit(At(p_ + 1)) ||
         ((At(p_ + 1) == '-' || At(p_ + 1) == '+') && IsDigit(At(p_ + 2))))) {
      digits += 'e';
      ++p_;
      if (At(p_) == '-' || At(p_) == '+') digits += src_[p_++];
      while (IsDigit(At(p_))) digits += src_[p_++];
    }
    absl::Status s = Emit(TokenKind::kNumber, 0, src_.substr(start, p_ - start));
    if (s.ok()) out_.back().digits = std::move(digits);
    return s;
  }

  absl::Status Letters() {
    size_t start = p_;
    while (IsAlpha(At(p_)) ||
           (text_depth_ > 0 && At(p_) == '\'' && p_ > start && IsAlpha(At(p_ + 1)))) {
      ++p_;
    }
    std::string_view word = src_.substr(start, p_ - start);
    // "twenty-one": one number word.
    int tens = NumberWordValue(word);
    if (tens >= 20 && tens <= 90 && tens % 10 == 0 && At(p_) == '-' && IsAlpha(At(p_ + 1))) {
      size_t end = p_ + 1;
      while (IsAlpha(At(end))) ++end;
      int ones = NumberWordValue(src_.substr(p_ + 1, end - p_ - 1));
      if (ones >= 1 && ones <= 9) {
        p_ = end;
        word = src_.substr(start, p_ - start);
      }
    }
    for (std::string_view d : kDroppedWords) {
      if (EqualsLower(word, d)) {
        if (d.starts_with("deg")) return EmitDegree();
        space_ = true;
        return absl::OkStatus();
      }
    }
    if (EqualsLower(word, "percent")) return Emit(TokenKind::kOp, '%', "%");
    return Emit(TokenKind::kWord, 0, word);
  }

  // A degree sign: the marker token 'D', which the parser turns into ·π/180 inside a
  // trigonometric argument and drops elsewhere (docs/VERIFIER.md).
  absl::Status EmitDegree() {
    SkipDegreeScale();
    return Emit(TokenKind::kOp, 'D', "\xC2\xB0");
  }

  // After a degree sign: "°C", "^\circ F" — the scale letter goes with it.
  void SkipDegreeScale() {
    size_t q = p_;
    auto skip_spacing = [&] {
      for (;;) {
        if (At(q) == ' ' || At(q) == '~') {
          ++q;
        } else if (At(q) == '\\' && (At(q + 1) == ',' || At(q + 1) == ';' || At(q + 1) == ' ')) {
          q += 2;
        } else {
          return;
        }
      }
    };
    skip_spacing();
    if ((At(q) == 'C' || At(q) == 'F') && !IsAlpha(At(q + 1))) {
      p_ = q + 1;
    } else {
      // "^\circ \text{C}", "^\circ\mathrm{F}": the scale letter in a text command.
      for (std::string_view command : {"\\text{", "\\mathrm{", "\\textrm{"}) {
        if (!StartsWith(q, command)) continue;
        size_t r = q + command.size();
        while (At(r) == ' ') ++r;
        if (At(r) != 'C' && At(r) != 'F') break;
        ++r;
        while (At(r) == ' ') ++r;
        if (At(r) == '}') p_ = r + 1;
        break;
      }
    }
    space_ = true;
  }

  // At the character after '^': "^\circ" or "^{\circ}" (with spaces) is a degree sign.
  bool SkipDegreeSuperscript() {
    size_t q = p_;
    while (At(q) == ' ') ++q;
    bool braced = At(q) == '{';
    if (braced) {
      ++q;
      while (At(q) == ' ') ++q;
    }
    if (!StartsWith(q, "\\circ") || IsAlpha(At(q + 5))) return false;
    q += 5;
    if (braced) {
      while (At(q) == ' ') ++q;
      if (At(q) != '}') return false;
      ++q;
    }
    p_ = q;
    SkipDegreeScale();
    return true;
  }

  absl::Status Backslash() {
    char c = At(p_ + 1);
    if (IsAlpha(c)) {
      size_t start = p_ + 1;
      p_ = start;
      while (IsAlpha(At(p_))) ++p_;
      return Command(src_.substr(start, p_ - start));
    }
    if (c == '\0') return absl::InvalidArgumentError("dangling '\\' at the end of the answer");
    p_ += 2;
    switch (c) {
      case ',':
      case ';':
      case ':':
      case '!':
      case ' ':
        space_ = true;
        return absl::OkStatus();
      case '$':
      case '(':
      case ')':
      case '[':
      case ']':
        return absl::OkStatus();
      case '%':
        return Emit(TokenKind::kOp, '%', "%");
      case '{':
        ++paren_depth_;
        return Emit(TokenKind::kOp, 'S', "\\{");
      case '}':
        if (paren_depth_ > 0) --paren_depth_;
        return Emit(TokenKind::kOp, 'T', "\\}");
      case '\\': {
        // "\\\\frac", "\\\\boxed": a backslash doubled by a JSON or Python escaping mistake,
        // which Math-Verify also reads through. Only before a command this lexer knows and
        // outside environments, where "\\\\" is a row break and a cell may start with letters.
        if (env_depth_ == 0 && IsAlpha(At(p_))) {
          size_t end = p_;
          while (IsAlpha(At(end))) ++end;
          const std::string_view name = src_.substr(p_, end - p_);
          if (IsKnownCommand(name)) {
            p_ = end;
            return Command(name);
          }
        }
        // A row break may carry extra spacing: "\\\\[4pt]", "\\\\[2mm]".
        if (At(p_) == '[') {
          size_t q = p_ + 1;
          while (q < src_.size() && q - p_ < 16 && src_[q] != ']' && src_[q] != '[') ++q;
          if (At(q) == ']') p_ = q + 1;
        }
        return Emit(TokenKind::kOp, 'N', "\\\\");
      }
      case '|':
        return Emit(TokenKind::kOp, '|', "|");
      case '_':
        return Emit(TokenKind::kOp, '_', "_");
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("unsupported command '\\", std::string(1, c), "'"));
    }
  }

  // Reads "{name}" after \begin or \end.
  absl::Status EnvName(std::string_view& name) {
    SkipSpaces();
    if (At(p_) != '{') return absl::InvalidArgumentError("\\begin or \\end without {name}");
    size_t start = ++p_;
    while (IsAlpha(At(p_)) || At(p_) == '*') ++p_;
    if (At(p_) != '}') return absl::InvalidArgumentError("malformed environment name");
    name = src_.substr(start, p_ - start);
    ++p_;
    return absl::OkStatus();
  }

  absl::Status Command(std::string_view name) {
    // "\quadx_2": spacing glued to the letters after it (NuminaMath writes this).
    if (!IsKnownCommand(name)) {
      for (std::string_view spacing : {"qquad", "quad"}) {
        if (name.size() > spacing.size() && name.starts_with(spacing)) {
          p_ -= name.size() - spacing.size();
          space_ = true;
          return absl::OkStatus();
        }
      }
    }
    if (Contains(kSkipCommands, name)) {
      if (Contains(kDelimiterSizers, name)) {
        SkipSpaces();
        if (At(p_) == '.') ++p_;  // "\right." is no delimiter at all
      }
      space_ = true;
      return absl::OkStatus();
    }
    if (Contains(kDegreeCommands, name)) return EmitDegree();
    bool text = Contains(kTextCommands, name);
    if (text || Contains(kTransparentCommands, name)) {
      size_t save = p_;
      SkipSpaces();
      if (At(p_) == '{') {
        ++p_;
        braces_.push_back(text ? kTextBrace : kTransparent);
        if (text) {
          ++text_depth_;
          space_ = true;
        }
      } else {
        p_ = save;
      }
      return absl::OkStatus();
    }
    if (name == "begin" || name == "end") {
      std::string_view env;
      absl::Status s = EnvName(env);
      if (!s.ok()) return s;
      if (name == "begin" && env == "array") {  // drop the column spec "{cc|c}"
        SkipSpaces();
        if (At(p_) == '{') {
          while (p_ < src_.size() && src_[p_] != '}') ++p_;
          if (At(p_) != '}') return absl::InvalidArgumentError("unterminated array column spec");
          ++p_;
        }
      }
      if (name == "begin") {
        ++env_depth_;
      } else if (env_depth_ > 0) {
        --env_depth_;
      }
      return Emit(name == "begin" ? TokenKind::kBeginEnv : TokenKind::kEndEnv, 0, env);
    }
    for (const CommandOp& o : kCommandOps) {
      if (o.name == name) {
        if (o.kind == TokenKind::kOp && (o.op == 'S' || o.op == '(' || o.op == '[')) {
          ++paren_depth_;
        } else if (o.kind == TokenKind::kOp && (o.op == 'T' || o.op == ')' || o.op == ']')) {
          if (paren_depth_ > 0) --paren_depth_;
        }
        return Emit(o.kind, o.op, name);
      }
    }
    for (const Alias& a : kCommandAliases) {
      if (a.from == name) return Emit(TokenKind::kCommand, 0, a.to);
    }
    return Emit(TokenKind::kCommand, 0, name);
  }

  absl::Status Utf8() {
    for (const Utf8Rule& r : kUtf8Rules) {
      if (!StartsWith(p_, r.bytes)) continue;
      p_ += r.bytes.size();
      if (r.kind != TokenKind::kPunct || r.op == '"') return Emit(r.kind, r.op, r.text);
      switch (r.op) {
        case ' ':
          space_ = true;
          return absl::OkStatus();
        case 'd':
          return EmitDegree();
        case '^': {
          absl::Status s = Emit(TokenKind::kOp, '^', "^");
          if (!s.ok()) return s;
          s = Emit(TokenKind::kNumber, 0, r.text);
          if (s.ok()) out_.back().digits = std::string(r.text);
          return s;
        }
        default:
          return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("unsupported character at byte ", p_));
  }

  std::string_view src_;
  Budget& budget_;
  std::vector<Token>& out_;
  size_t p_ = 0;
  bool space_ = false;
  int text_depth_ = 0;
  int paren_depth_ = 0;            // of ( [ \{ — a bare ',' inside them separates items
  int env_depth_ = 0;              // of \begin{…}
  bool bare_comma_groups_ = true;  // a bare ',' may separate thousands (see Run())
  std::vector<uint8_t> braces_;
};

}  // namespace

absl::Status Lex(std::string_view text, Budget& budget, std::vector<Token>& tokens) {
  return Lexer(text, budget, tokens).Run();
}

std::string_view UnitName(std::string_view word) {
  for (const UnitEntry& u : kUnits) {
    if (EqualsLower(word, u.word)) return u.unit;
  }
  return "";
}

int NumberWordValue(std::string_view word) {
  for (size_t i = 0; i < std::size(kOnes); ++i) {
    if (EqualsLower(word, kOnes[i])) return static_cast<int>(i);
  }
  for (size_t i = 0; i < std::size(kTens); ++i) {
    if (EqualsLower(word, kTens[i])) return static_cast<int>(20 + 10 * i);
  }
  size_t dash = word.find('-');
  if (dash != std::string_view::npos) {
    int tens = NumberWordValue(word.substr(0, dash));
    int ones = NumberWordValue(word.substr(dash + 1));
    if (tens >= 20 && tens % 10 == 0 && ones >= 1 && ones <= 9) return tens + ones;
  }
  return -1;
}

bool IsFunctionName(std::string_view word) { return Contains(kFunctions, word); }

bool IsGreekName(std::string_view word) { return Contains(kGreek, word); }

}  // namespace rlscore::scorers::math
