// The answer parser: tokens from the normalising lexer (lexer.h), then a Pratt parser with one
// token of lookahead (a few more for mixed numbers), no backtracking. Every recursive path goes
// through ParseExpr() or the unbraced branch of ParseArg(), both of which count depth, so the C++
// stack is bounded by ParseLimits::max_depth (clamped to kHardMaxDepth); every node goes through
// Make(), which counts nodes, tree height and budget steps.
//
// Binding powers, loosest first: top-level list (',' ';' "and" "or") < relation chain < \cup <
// + - \pm \mp < * / \times \cdot \div and implicit multiplication < unary - + \pm < ^ (right
// associative) < postfix ! and %.
#include "scorers/math/parser.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "scorers/math/chars.h"
#include "scorers/math/lexer.h"

namespace rlscore::scorers::math {
namespace {

// Whatever ParseLimits says, recursion never goes deeper than this (a few hundred bytes of stack
// per level): a caller on a small thread stack is safe with any limits.
constexpr uint32_t kHardMaxDepth = 256;

constexpr int kPrecRelation = 10;
constexpr int kPrecUnion = 20;
constexpr int kPrecAdd = 30;
constexpr int kPrecMul = 40;
constexpr int kPrecUnary = 50;
constexpr int kPrecPow = 60;

bool IsOp(const Token& t, char op) { return t.kind == TokenKind::kOp && t.op == op; }
bool IsCommand(const Token& t, std::string_view name) {
  return t.kind == TokenKind::kCommand && t.text == name;
}
bool IsWord(const Token& t, std::string_view lower) {
  return t.kind == TokenKind::kWord && EqualsLower(t.text, lower);
}
bool IsPlainInteger(const Token& t) {
  if (t.kind != TokenKind::kNumber || t.digits.empty()) return false;
  return std::all_of(t.digits.begin(), t.digits.end(), IsDigit);
}
// Words that separate the parts of a list answer ("3 and 5").
bool IsConnector(const Token& t) { return IsWord(t, "and") || IsWord(t, "or"); }

bool IsTrigName(std::string_view name) {
  return name == "sin" || name == "cos" || name == "tan" || name == "sec" || name == "csc" ||
         name == "cot";
}

// A word with a fixed mathematical meaning (so an answer made of it is not a text answer).
bool IsMathWord(std::string_view w) {
  return IsFunctionName(w) || IsGreekName(w) || w == "sqrt" || EqualsLower(w, "pi") ||
         EqualsLower(w, "inf") || EqualsLower(w, "infinity") || EqualsLower(w, "infty") ||
         NumberWordValue(w) >= 0 || (w.size() >= 2 && !UnitName(w).empty());
}

// Two-letter English words that make an answer a text answer ("no", "ok").
constexpr std::string_view kShortWords[] = {"no", "ok", "an", "is", "it", "on", "at", "to", "up",
                                            "of", "by", "be", "do", "go", "if", "so", "we", "he"};

bool IsTextyWord(const Token& t) {
  std::string_view w = t.text;
  if (IsMathWord(w) || EqualsLower(w, "and") || EqualsLower(w, "or")) return false;
  if (w.size() >= 3 || (t.text_mode && w.size() >= 2)) return true;
  for (std::string_view s : kShortWords) {
    if (EqualsLower(w, s)) return true;
  }
  return false;
}

std::string TokenText(const Token& t) {
  switch (t.kind) {
    case TokenKind::kNumber:
      return t.digits;
    case TokenKind::kOp:
      return std::string(1, t.op);
    default:
      return std::string(t.text);
  }
}

class DepthGuard {
 public:
  explicit DepthGuard(uint32_t& depth) : depth_(depth) { ++depth_; }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  uint32_t& depth_;
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ParseLimits& limits, Budget& budget)
      : tokens_(std::move(tokens)),
        limits_(limits),
        max_depth_(std::min(limits.max_depth, kHardMaxDepth)),
        budget_(budget) {}

  absl::StatusOr<Expr> Run() {
    // Quotes anywhere and sentence punctuation at the end carry no meaning.
    std::erase_if(tokens_,
                  [](const Token& t) { return t.kind == TokenKind::kPunct && t.op == '"'; });
    while (!tokens_.empty() && (tokens_.back().kind == TokenKind::kPunct ||
                                IsOp(tokens_.back(), ',') || IsOp(tokens_.back(), ';'))) {
      tokens_.pop_back();
    }
    if (tokens_.empty()) return absl::InvalidArgumentError("empty answer");
    Token end;
    end.kind = TokenKind::kEnd;
    end.text = "end of answer";
    tokens_.push_back(std::move(end));

    uint32_t root = 0;
    if (std::optional<char> letter = ChoiceLetter()) {
      RLSCORE_ASSIGN_OR_RETURN(root, MakeText(Kind::kChoice, std::string(1, *letter)));
    } else if (IsTextAnswer()) {
      RLSCORE_ASSIGN_OR_RETURN(root, MakeText(Kind::kText, NormalisedText()));
    } else {
      // "x \in [0, 1)": the set is the answer, and "x \in (0, 1)" an open interval.
      bool membership = tokens_.size() > 2 && IsCommand(tokens_[1], "in") &&
                        ((tokens_[0].kind == TokenKind::kWord && tokens_[0].text.size() == 1) ||
                         (tokens_[0].kind == TokenKind::kCommand && IsGreekName(tokens_[0].text)));
      if (membership) pos_ = 2;
      RLSCORE_ASSIGN_OR_RETURN(root, ParseTopList());
      if (Peek().kind != TokenKind::kEnd) return Unexpected("after a complete answer");
      if (membership) root = AsIntervalIfPair(root);
    }
    expr_.root = root;
    return std::move(expr_);
  }

 private:
  // ---- tokens ----
  Token& Peek(size_t k = 0) { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  Token& Next() {
    Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  absl::Status Unexpected(std::string_view where) {
    const Token& t = Peek();
    if (t.kind == TokenKind::kCommand && !IsPrimaryCommand(t.text)) {
      return absl::InvalidArgumentError(absl::StrCat("unsupported command \\", Sv(t.text)));
    }
    std::string text = t.kind == TokenKind::kNumber ? t.digits : std::string(t.text);
    return absl::InvalidArgumentError(absl::StrCat("unexpected '", text, "' ", Sv(where)));
  }
  absl::Status Expect(char op, std::string_view what) {
    if (!IsOp(Peek(), op)) return Unexpected(absl::StrCat("where ", Sv(what), " was expected"));
    Next();
    return absl::OkStatus();
  }
  absl::Status DepthExceeded() const {
    return absl::ResourceExhaustedError(
        absl::StrCat("answer nested deeper than max_depth (", max_depth_, ")"));
  }

  // ---- nodes: every node is made here, so node count, height and steps are all bounded ----
  absl::Status Reserve(uint32_t height) {
    if (expr_.nodes.size() >= limits_.max_nodes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("answer has more than max_nodes (", limits_.max_nodes, ") nodes"));
    }
    if (height > max_depth_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("expression tree deeper than max_depth (", max_depth_, ")"));
    }
    if (!budget_.Spend(1)) {
      return absl::ResourceExhaustedError("step budget exhausted while parsing the answer");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<uint32_t> Make(Kind kind, std::span<const uint32_t> kids, uint32_t payload = 0,
                                uint8_t flags = 0) {
    uint32_t height = 1;
    for (uint32_t k : kids) height = std::max<uint32_t>(height, heights_[k] + 1u);
    RLSCORE_RETURN_IF_ERROR(Reserve(height));
    heights_.push_back(height);
    return expr_.Add(kind, kids, payload, flags);
  }
  absl::StatusOr<uint32_t> Make(Kind kind, std::initializer_list<uint32_t> kids,
                                uint32_t payload = 0, uint8_t flags = 0) {
    return Make(kind, std::span<const uint32_t>(kids.begin(), kids.size()), payload, flags);
  }
  absl::StatusOr<uint32_t> MakeNamed(Kind kind, std::string_view name,
                                     std::span<const uint32_t> kids) {
    RLSCORE_ASSIGN_OR_RETURN(uint32_t node, Make(kind, kids));
    expr_.nodes[node].payload = expr_.AddString(name);
    return node;
  }
  absl::StatusOr<uint32_t> MakeNamed(Kind kind, std::string_view name,
                                     std::initializer_list<uint32_t> kids) {
    return MakeNamed(kind, name, std::span<const uint32_t>(kids.begin(), kids.size()));
  }
  absl::StatusOr<uint32_t> MakeText(Kind kind, std::string_view text) {
    RLSCORE_RETURN_IF_ERROR(Reserve(1));
    heights_.push_back(1);
    return expr_.AddText(kind, text);
  }
  absl::StatusOr<uint32_t> MakeConstant(Constant c) {
    RLSCORE_RETURN_IF_ERROR(Reserve(1));
    heights_.push_back(1);
    return expr_.AddConstant(c);
  }
  absl::StatusOr<uint32_t> MakeNumber(BigRational value, size_t decimals = 0) {
    RLSCORE_RETURN_IF_ERROR(Reserve(1));
    heights_.push_back(1);
    uint32_t node = expr_.AddNumber(std::move(value));
    expr_.nodes[node].flags = static_cast<uint8_t>(std::min<size_t>(decimals, 255));
    return node;
  }
  // A number token (consumed here).
  // "A.BrC" (A.B with C repeating) is (ABC - AB) / (10^|B| (10^|C| - 1)), exactly.
  absl::StatusOr<uint32_t> RepeatingDecimal(std::string_view digits) {
    size_t dot = digits.find('.');
    size_t r = digits.find('r');
    std::string_view a = digits.substr(0, dot);
    std::string_view b = digits.substr(dot + 1, r - dot - 1);
    std::string_view c = digits.substr(r + 1);
    if (!budget_.Spend(digits.size())) {
      return absl::ResourceExhaustedError("step budget exhausted reading a number");
    }
    std::optional<BigInt> abc = BigInt::FromString(absl::StrCat("0", Sv(a), Sv(b), Sv(c)));
    std::optional<BigInt> ab = BigInt::FromString(absl::StrCat("0", Sv(a), Sv(b)));
    std::optional<BigInt> den =
        BigInt::FromString(std::string(c.size(), '9') + std::string(b.size(), '0'));
    if (!abc.has_value() || !ab.has_value() || !den.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("malformed number '", Sv(digits), "'"));
    }
    std::optional<BigRational> v = BigRational::Make(*abc - *ab, *den, budget_);
    if (!v.has_value()) return absl::ResourceExhaustedError("step budget exhausted");
    return MakeNumber(*std::move(v));
  }

  absl::StatusOr<uint32_t> NumberNode(const Token& t) {
    if (t.digits.find('r') != std::string::npos) return RepeatingDecimal(t.digits);
    // "1e99999": beyond the exponents exact arithmetic takes, a number no answer is (WRONG),
    // not a budget that ran out (unscorable).
    if (const size_t e = t.digits.find('e'); e != std::string::npos) {
      size_t d = e + 1;
      if (d < t.digits.size() && (t.digits[d] == '-' || t.digits[d] == '+')) ++d;
      while (d < t.digits.size() && t.digits[d] == '0') ++d;
      if (t.digits.size() - d > 4 ||
          (t.digits.size() - d == 4 && t.digits.compare(d, 4, "1000") > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("exponent out of range in '", t.digits, "'"));
      }
    }
    std::optional<BigRational> v = BigRational::FromDecimal(t.digits, budget_);
    if (!v.has_value()) {
      if (budget_.exceeded) {
        return absl::ResourceExhaustedError("step budget exhausted reading a number");
      }
      return absl::InvalidArgumentError(absl::StrCat("malformed number '", t.digits, "'"));
    }
    size_t decimals = 0;
    size_t dot = t.digits.find('.');
    if (dot != std::string::npos) {
      size_t e = t.digits.find('e', dot);
      decimals = (e == std::string::npos ? t.digits.size() : e) - dot - 1;
    }
    return MakeNumber(*std::move(v), decimals);
  }

  absl::StatusOr<uint32_t> Negate(uint32_t x) {
    if (expr_.nodes[x].kind == Kind::kNumber) {  // "-3" is the number -3, not (- 3)
      BigRational& v = expr_.numbers[expr_.nodes[x].payload];
      std::optional<BigRational> neg = BigRational::Sub(BigRational(0), v, budget_);
      if (!neg.has_value()) return absl::ResourceExhaustedError("step budget exhausted");
      v = *std::move(neg);
      return x;
    }
    return Make(Kind::kNeg, {x});
  }
  absl::StatusOr<uint32_t> Product(const std::vector<uint32_t>& factors) {
    if (factors.size() == 1) return factors[0];
    return Make(Kind::kMul, factors);
  }
  bool IsInfinite(uint32_t x) const {
    const Node& n = expr_.nodes[x];
    if (n.kind == Kind::kConstant) return n.payload == static_cast<uint32_t>(Constant::kInfinity);
    if (n.kind == Kind::kNeg) return IsInfinite(expr_.children[n.first_child]);
    return false;
  }
  // Operands of \cup: "(1,2)" there is an open interval, not a pair.
  uint32_t AsIntervalIfPair(uint32_t x) {
    Node& n = expr_.nodes[x];
    if (n.kind == Kind::kTuple && n.num_children == 2) {
      n.kind = Kind::kInterval;
      n.flags = 0;
    }
    return x;
  }

  // ---- whole-answer forms ----
  // "C", "(C)", "C)", "\text{(C)}": a single capital A-E is a multiple-choice letter.
  std::optional<char> ChoiceLetter() {
    size_t n = tokens_.size() - 1;  // without the end sentinel
    size_t i = 0;
    if (n >= 2 && IsOp(tokens_[0], '(')) i = 1;
    if (i >= n) return std::nullopt;
    const Token& t = tokens_[i];
    if (t.kind != TokenKind::kWord || t.text.size() != 1 || t.text[0] < 'A' || t.text[0] > 'E') {
      return std::nullopt;
    }
    size_t rest = n - i - 1;
    if (rest == 0 && i == 0) return t.text[0];
    if (rest == 1 && IsOp(tokens_[i + 1], ')')) return t.text[0];
    // "(B) 7": a labelled option is its letter. The label must be parenthesised and followed by
    // a value, not by an operator, a bracket or "and" ("(A) and (C)" is a list).
    if (i == 1 && rest >= 2 && IsOp(tokens_[2], ')')) {
      const Token& next = tokens_[3];
      bool value = next.kind == TokenKind::kNumber ||
                   (next.kind == TokenKind::kWord && !IsConnector(next)) ||
                   (next.kind == TokenKind::kCommand && IsPrimaryCommand(next.text));
      if (value && !next.space_before) value = false;  // "(A)B" is a product
      if (value) return t.text[0];
    }
    return std::nullopt;
  }
  // Only words (at least one of them a real word, not a symbol or a known math name) and
  // punctuation.
  bool IsTextAnswer() const {
    bool texty = false;
    for (size_t i = 0; i + 1 < tokens_.size(); ++i) {
      const Token& t = tokens_[i];
      if (t.kind == TokenKind::kWord) {
        texty = texty || IsTextyWord(t);
        continue;
      }
      if (t.kind == TokenKind::kPunct) continue;
      if (t.kind == TokenKind::kOp &&
          std::string_view(",;-'!()").find(t.op) != std::string_view::npos) {
        continue;
      }
      return false;
    }
    return texty;
  }
  // Lower case, single spaces, punctuation dropped except inner '-' and '\''.
  std::string NormalisedText() const {
    std::string out;
    bool separate = false;
    bool glue = false;
    for (size_t i = 0; i + 1 < tokens_.size(); ++i) {
      const Token& t = tokens_[i];
      if (t.kind == TokenKind::kWord) {
        if (!out.empty() && !glue && (separate || t.space_before)) out += ' ';
        for (char c : t.text) out += Lower(c);
        separate = glue = false;
      } else if ((IsOp(t, '-') || IsOp(t, '\'')) && !t.space_before && !out.empty() &&
                 tokens_[i + 1].kind == TokenKind::kWord && !tokens_[i + 1].space_before) {
        out += t.op;
        glue = true;
      } else {
        separate = true;
      }
    }
    return out;
  }

  // ---- lists and expressions ----
  // A list without brackets is a bare list (kBareList: unordered). When both ';' and ',' separate
  // it, ';' separates solutions and ',' their components: "p=5, q=2; p=7, q=2" is two pairs.
  absl::StatusOr<uint32_t> ParseTopList() {
    std::vector<uint32_t> items;
    std::vector<uint32_t> group;  // the ','-separated run since the last ';'
    bool semicolon = false;
    auto close_group = [&]() -> absl::Status {
      if (group.size() == 1) {
        items.push_back(group[0]);
      } else {
        RLSCORE_ASSIGN_OR_RETURN(uint32_t g, Make(Kind::kTuple, group, 0, kBareList));
        items.push_back(g);
      }
      group.clear();
      return absl::OkStatus();
    };
    for (;;) {
      RLSCORE_ASSIGN_OR_RETURN(uint32_t item, ParseExpr(0));
      group.push_back(item);
      if (IsOp(Peek(), ';')) {
        Next();
        semicolon = true;
        RLSCORE_RETURN_IF_ERROR(close_group());
        continue;
      }
      if (IsOp(Peek(), ',') || IsConnector(Peek())) {
        // "3, 4, and 5": the Oxford comma's connector separates nothing more.
        if (!IsConnector(Next()) && IsConnector(Peek())) Next();
        continue;
      }
      break;
    }
    if (!semicolon) {
      items = std::move(group);
    } else {
      RLSCORE_RETURN_IF_ERROR(close_group());
    }
    if (items.size() == 1) return items[0];
    return Make(Kind::kTuple, items, 0, kBareList);
  }

  absl::StatusOr<uint32_t> ParseExpr(int min_prec) {
    DepthGuard guard(depth_);
    if (depth_ > max_depth_) return DepthExceeded();
    RLSCORE_ASSIGN_OR_RETURN(uint32_t left, ParsePrefix());
    for (;;) {
      const Token& t = Peek();
      if (t.kind == TokenKind::kRelation) {
        if (min_prec > kPrecRelation) break;
        std::vector<uint32_t> operands{left};
        std::string ops;
        while (Peek().kind == TokenKind::kRelation) {
          ops += Next().op;
          RLSCORE_ASSIGN_OR_RETURN(uint32_t rhs, ParseExpr(kPrecRelation + 1));
          operands.push_back(rhs);
        }
        RLSCORE_ASSIGN_OR_RETURN(left, MakeNamed(Kind::kRelation, ops, operands));
        continue;
      }
      if (IsOp(t, 'U')) {
        if (min_prec > kPrecUnion) break;
        std::vector<uint32_t> parts{AsIntervalIfPair(left)};
        while (IsOp(Peek(), 'U')) {
          Next();
          RLSCORE_ASSIGN_OR_RETURN(uint32_t rhs, ParseExpr(kPrecUnion + 1));
          parts.push_back(AsIntervalIfPair(rhs));
        }
        RLSCORE_ASSIGN_OR_RETURN(left, Make(Kind::kUnion, parts));
        continue;
      }
      if (IsOp(t, '+') || IsOp(t, '-')) {
        if (min_prec > kPrecAdd) break;
        std::vector<uint32_t> terms{left};
        while (IsOp(Peek(), '+') || IsOp(Peek(), '-')) {
          bool minus = Next().op == '-';
          RLSCORE_ASSIGN_OR_RETURN(uint32_t rhs, ParseExpr(kPrecAdd + 1));
          if (minus) {
            RLSCORE_ASSIGN_OR_RETURN(rhs, Negate(rhs));
          }
          terms.push_back(rhs);
        }
        RLSCORE_ASSIGN_OR_RETURN(left, Make(Kind::kAdd, terms));
        continue;
      }
      if (IsOp(t, 'P') || IsOp(t, 'M')) {
        if (min_prec > kPrecAdd) break;
        uint8_t mp = Next().op == 'M' ? 1 : 0;
        RLSCORE_ASSIGN_OR_RETURN(uint32_t rhs, ParseExpr(kPrecAdd + 1));
        RLSCORE_ASSIGN_OR_RETURN(left, Make(Kind::kPlusMinus, {left, rhs}, 0, mp));
        continue;
      }
      if (IsOp(t, '*') || IsOp(t, '/') || UnitAhead() || StartsImplicitFactorAfter(left, t)) {
        if (min_prec > kPrecMul) break;
        RLSCORE_ASSIGN_OR_RETURN(left, ParseProductTail(left));
        continue;
      }
      if (IsCommand(t, "bmod") || IsCommand(t, "mod") || IsCommand(t, "pmod")) {
        // "17 \bmod 5" is 2; "x \equiv 3 \pmod{7}" is x = (3 mod 7).
        if (min_prec > kPrecMul) break;
        Next();
        RLSCORE_ASSIGN_OR_RETURN(uint32_t modulus, ParseExpr(kPrecMul + 1));
        RLSCORE_ASSIGN_OR_RETURN(left, MakeNamed(Kind::kFunction, "mod", {left, modulus}));
        continue;
      }
      if (t.kind == TokenKind::kPunct && t.op == ':' && Peek(1).kind != TokenKind::kEnd) {
        // A ratio "7:32" is the value 7/32; "V_1 : V_2 = 11 : 21" a labelled one.
        if (min_prec > kPrecMul) break;
        Next();
        RLSCORE_ASSIGN_OR_RETURN(uint32_t rhs, ParseExpr(kPrecMul + 1));
        RLSCORE_ASSIGN_OR_RETURN(left, Make(Kind::kDiv, {left, rhs}));
        continue;
      }
      if (IsOp(t, '^')) {
        if (min_prec > kPrecPow) break;
        Next();
        RLSCORE_ASSIGN_OR_RETURN(uint32_t exponent, ParseExponent());
        RLSCORE_ASSIGN_OR_RETURN(left, Make(Kind::kPow, {left, exponent}));
        continue;
      }
      if (IsOp(t, '!')) {
        Next();
        RLSCORE_ASSIGN_OR_RETURN(left, Make(Kind::kFactorial, {left}));
        continue;
      }
      if (IsOp(t, '%')) {
        Next();
        RLSCORE_ASSIGN_OR_RETURN(left, Make(Kind::kPercent, {left}));
        continue;
      }
      if (IsOp(t, 'D')) {  // a degree sign
        Next();
        if (angle_depth_ > 0) {
          // Inside sin/cos/...: degrees are an angle unit, 30° = 30·π/180.
          RLSCORE_ASSIGN_OR_RETURN(uint32_t pi, MakeConstant(Constant::kPi));
          RLSCORE_ASSIGN_OR_RETURN(uint32_t deg, MakeNumber(BigRational(180)));
          RLSCORE_ASSIGN_OR_RETURN(uint32_t scale, Make(Kind::kDiv, {pi, deg}));
          RLSCORE_ASSIGN_OR_RETURN(left, Make(Kind::kMul, {left, scale}));
        }
        continue;
      }
      break;
    }
    return left;
  }

  // After `left`, at '*', '/', a unit or the start of an implicit factor.
  absl::StatusOr<uint32_t> ParseProductTail(uint32_t left) {
    std::vector<uint32_t> factors{left};
    for (;;) {
      const Token& t = Peek();
      if (UnitAhead()) {
        RLSCORE_ASSIGN_OR_RETURN(uint32_t value, Product(factors));
        return ParseUnitSuffix(value);
      }
      if (IsOp(t, '*')) {
        Next();
        RLSCORE_ASSIGN_OR_RETURN(uint32_t rhs, ParseExpr(kPrecMul + 1));
        factors.push_back(rhs);
      } else if (IsOp(t, '/')) {
        Next();
        RLSCORE_ASSIGN_OR_RETURN(uint32_t num, Product(factors));
        RLSCORE_ASSIGN_OR_RETURN(uint32_t den, ParseExpr(kPrecMul + 1));
        RLSCORE_ASSIGN_OR_RETURN(uint32_t quotient, Make(Kind::kDiv, {num, den}));
        factors.assign(1, quotient);
      } else if (StartsImplicitFactorAfter(factors.back(), t)) {
        RLSCORE_ASSIGN_OR_RETURN(uint32_t rhs, ParseExpr(kPrecMul + 1));
        factors.push_back(rhs);
      } else {
        break;
      }
    }
    return Product(factors);
  }

  bool IsPrimaryCommand(std::string_view name) const {
    return name == "frac" || name == "sqrt" || name == "binom" || name == "pi" || name == "infty" ||
           name == "sum" || name == "prod" || name == "lim" || name == "lfloor" ||
           name == "lceil" || name == "i" || IsFunctionName(name) || IsGreekName(name);
  }
  // As StartsImplicitFactor(), and a number may also follow a factorial ("2!\,4!" is 2!·4!) or a
  // closing parenthesis it is glued to ("(1+2i)6" is (1+2i)·6).
  bool StartsImplicitFactorAfter(uint32_t left, const Token& t) const {
    if (t.kind == TokenKind::kNumber && !t.space_before && pos_ > 0 &&
        IsOp(tokens_[pos_ - 1], ')')) {
      return true;
    }
    return StartsImplicitFactor(t) ||
           (t.kind == TokenKind::kNumber && expr_.nodes[left].kind == Kind::kFactorial);
  }

  // Can `t` begin the right factor of an implicit multiplication ("2x", "x(y+1)", "2\pi")?
  // A number cannot ("2 3" is no product) unless it is the rest of a split token ("\frac123"),
  // nor can a bracket that could open an interval.
  bool StartsImplicitFactor(const Token& t) const {
    switch (t.kind) {
      case TokenKind::kNumber:
        return t.split;
      case TokenKind::kWord:
        return !IsConnector(t) && !IsWord(t, "per");
      case TokenKind::kCommand:
        return IsPrimaryCommand(t.text);
      case TokenKind::kBeginEnv:
        return true;
      case TokenKind::kOp:
        return t.op == '(' || t.op == '{' || (t.op == '|' && abs_depth_ == 0);
      default:
        return false;
    }
  }

  // ---- units ----
  // The unit a word names here (after a value), or "" when it is not one. Single letters name
  // units only inside \text{}/\mathrm{} ("5\,\mathrm{m}"); math-mode "5m" is 5·m.
  std::string UnitOf(const Token& t, bool after_slash) const {
    if (t.kind != TokenKind::kWord) return "";
    std::string_view u = UnitName(t.text);
    if (!u.empty()) {
      if (t.text_mode || after_slash || t.text.size() >= 2) {
        if (!t.text_mode && EqualsLower(t.text, "in")) return "";
        return std::string(u);
      }
      return "";
    }
    if (after_slash || t.text.size() < 2 || IsMathWord(t.text) || IsConnector(t) ||
        IsWord(t, "per") || NumberWordValue(t.text) >= 0) {
      return "";
    }
    // Any other word in \text{} after a value is a unit we do not know ("5 \text{apples}").
    std::string lower;
    for (char c : t.text) lower += Lower(c);
    if (t.text_mode) return lower;
    // Plain text: "12 apples" — a word of 3+ letters after a number that ends the answer or
    // one part of it.
    if (t.text.size() >= 3 && t.space_before && pos_ > 0 &&
        tokens_[pos_ - 1].kind == TokenKind::kNumber) {
      const Token& after = tokens_[std::min(pos_ + 1, tokens_.size() - 1)];
      if (after.kind == TokenKind::kEnd || IsOp(after, ',') || IsOp(after, ';') ||
          IsConnector(after)) {
        return lower;
      }
    }
    return "";
  }
  bool IsSquareWord(const Token& t) const {
    return IsWord(t, "square") || IsWord(t, "sq") || IsWord(t, "cubic");
  }
  // "1,000.99m²": a one-letter unit glued to a number and raised to a power that ends the answer
  // (or one part of it) is a unit; "5m" alone stays 5·m.
  bool GluedPoweredUnit() const {
    const Token& t = tokens_[pos_];
    if (t.kind != TokenKind::kWord || t.text.size() != 1 || t.space_before || t.text_mode ||
        pos_ == 0 || tokens_[pos_ - 1].kind != TokenKind::kNumber || UnitName(t.text).empty()) {
      return false;
    }
    const Token& after = tokens_[std::min(pos_ + 3, tokens_.size() - 1)];
    return IsOp(tokens_[std::min(pos_ + 1, tokens_.size() - 1)], '^') &&
           IsPlainInteger(tokens_[std::min(pos_ + 2, tokens_.size() - 1)]) &&
           (after.kind == TokenKind::kEnd || IsOp(after, ',') || IsOp(after, ';'));
  }
  // "5 m", "9.8 m/s^2", "5 s;": a one-letter unit after a number that ends the answer (or one
  // part of it, or starts "/unit"); "5m" and "5 m + 2" stay products.
  bool SpacedLetterUnit() const {
    const Token& t = tokens_[pos_];
    if (t.kind != TokenKind::kWord || t.text.size() != 1 || !t.space_before || t.text_mode ||
        pos_ == 0 || tokens_[pos_ - 1].kind != TokenKind::kNumber || UnitName(t.text).empty()) {
      return false;
    }
    const Token& after = tokens_[std::min(pos_ + 1, tokens_.size() - 1)];
    if (after.kind == TokenKind::kEnd || IsOp(after, ',') || IsOp(after, ';')) return true;
    if (IsOp(after, '/'))
      return !UnitOf(tokens_[std::min(pos_ + 2, tokens_.size() - 1)], true).empty();
    return false;
  }
  bool UnitAhead() const {
    const Token& t = tokens_[pos_];
    if (GluedPoweredUnit() || SpacedLetterUnit()) return true;
    if (IsSquareWord(t))
      return !UnitOf(tokens_[std::min(pos_ + 1, tokens_.size() - 1)], true).empty();
    return !UnitOf(t, false).empty();
  }
  // One unit name with its power: "cm", "square feet" (ft^2), "m^3".
  absl::StatusOr<std::string> ParseOneUnit(bool after_slash) {
    // The power is kept as digits and appended once at the end: building it in a std::string on
    // one branch trips GCC 12's -Wmaybe-uninitialized at -O3.
    std::string_view square;
    if (IsSquareWord(Peek())) square = IsWord(Next(), "cubic") ? "3" : "2";
    std::string unit = UnitOf(Peek(), after_slash || !square.empty());
    if (unit.empty() && (GluedPoweredUnit() || SpacedLetterUnit())) {
      unit = std::string(UnitName(Peek().text));
    }
    if (unit.empty()) return Unexpected("where a unit was expected");
    Next();
    std::string digits(square);
    if (IsOp(Peek(), '^')) {
      size_t save = pos_;
      Next();
      bool braced = IsOp(Peek(), '{');
      if (braced) Next();
      // "m^{-2}": a negative power only in braces.
      const bool negative = braced && IsOp(Peek(), '-');
      if (negative) Next();
      if (IsPlainInteger(Peek()) && (!braced || IsOp(Peek(1), '}'))) {
        digits = absl::StrCat(negative ? "-" : "", Next().digits);
        if (braced) Next();
      } else {
        pos_ = save;
      }
    }
    if (!digits.empty()) {
      unit.push_back('^');
      unit.append(digits);
    }
    return unit;
  }
  absl::StatusOr<uint32_t> ParseUnitSuffix(uint32_t value) {
    RLSCORE_ASSIGN_OR_RETURN(std::string unit, ParseOneUnit(false));
    for (;;) {  // "km/h", "m/s^2", "meters per second", "\text{kcal m}^{-2}\text{ yr}^{-1}"
      const bool slash = IsOp(Peek(), '/') || IsWord(Peek(), "per");
      if (slash && !UnitOf(Peek(1), true).empty()) {
        Next();
        RLSCORE_ASSIGN_OR_RETURN(std::string denominator, ParseOneUnit(true));
        absl::StrAppend(&unit, "/", denominator);
      } else if (Peek().text_mode && !UnitOf(Peek(), true).empty()) {
        RLSCORE_ASSIGN_OR_RETURN(std::string factor, ParseOneUnit(true));
        absl::StrAppend(&unit, " ", factor);
      } else {
        break;
      }
    }
    return MakeNamed(Kind::kWithUnit, unit, {value});
  }

  // ---- prefix and primary ----
  absl::StatusOr<uint32_t> ParsePrefix() {
    const Token& t = Peek();
    if (IsOp(t, '-')) {
      Next();
      RLSCORE_ASSIGN_OR_RETURN(uint32_t x, ParseExpr(kPrecUnary));
      return Negate(x);
    }
    if (IsOp(t, '+')) {
      Next();
      return ParseExpr(kPrecUnary);
    }
    if (IsOp(t, 'P') || IsOp(t, 'M')) {
      uint8_t mp = Next().op == 'M' ? 1 : 0;
      RLSCORE_ASSIGN_OR_RETURN(uint32_t x, ParseExpr(kPrecUnary));
      return Make(Kind::kPlusMinus, {x}, 0, mp);
    }
    return ParsePrimary();
  }

  absl::StatusOr<uint32_t> ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case TokenKind::kNumber:
        return ParseNumber();
      case TokenKind::kWord:
        return ParseWord();
      case TokenKind::kCommand:
        return ParseCommand();
      case TokenKind::kBeginEnv:
        return ParseMatrix();
      case TokenKind::kOp:
        if (t.op == '(' || t.op == '[') return ParseBracketed();
        if (t.op == '{') return ParseBraced();
        if (t.op == 'S') return ParseSetLiteral();
        if (t.op == '|') return ParseAbs();
        break;
      case TokenKind::kEnd:
        return absl::InvalidArgumentError("the answer ends where a value was expected");
      default:
        break;
    }
    return Unexpected("where a value was expected");
  }

  // The number of tokens at `i` forming an integer argument of \frac: "{12}" (3) or a single
  // digit "1" (1); 0 when there is none.
  size_t IntArgAt(size_t i) const {
    if (i + 2 < tokens_.size() && IsOp(tokens_[i], '{') && IsPlainInteger(tokens_[i + 1]) &&
        IsOp(tokens_[i + 2], '}')) {
      return 3;
    }
    if (i < tokens_.size() && IsPlainInteger(tokens_[i]) && tokens_[i].digits.size() == 1) {
      return 1;
    }
    return 0;
  }
  // "\frac{1}{2}", "\frac12", "\frac1{2}" with integer parts, at `i`.
  bool IntegerFracAt(size_t i) const {
    if (i >= tokens_.size() || !IsCommand(tokens_[i], "frac")) return false;
    if (i + 1 < tokens_.size() && IsPlainInteger(tokens_[i + 1]) &&
        tokens_[i + 1].digits.size() == 2) {
      return true;
    }
    size_t a = IntArgAt(i + 1);
    return a > 0 && IntArgAt(i + 1 + a) > 0;
  }

  absl::StatusOr<uint32_t> ParseNumber() {
    if (IsPlainInteger(Peek())) {
      // Mixed numbers: "3\frac{1}{2}" and "3 1/2" are 3 + 1/2.
      if (IntegerFracAt(pos_ + 1)) {
        RLSCORE_ASSIGN_OR_RETURN(uint32_t whole, NumberNode(Next()));
        RLSCORE_ASSIGN_OR_RETURN(uint32_t frac, ParsePrimary());
        return Make(Kind::kAdd, {whole, frac});
      }
      if (IsPlainInteger(Peek(1)) && Peek(1).space_before && IsOp(Peek(2), '/') &&
          IsPlainInteger(Peek(3)) && !IsOp(Peek(4), '^')) {
        RLSCORE_ASSIGN_OR_RETURN(uint32_t whole, NumberNode(Next()));
        RLSCORE_ASSIGN_OR_RETURN(uint32_t num, NumberNode(Next()));
        Next();
        RLSCORE_ASSIGN_OR_RETURN(uint32_t den, NumberNode(Next()));
        RLSCORE_ASSIGN_OR_RETURN(uint32_t frac, Make(Kind::kDiv, {num, den}));
        return Make(Kind::kAdd, {whole, frac});
      }
    }
    return NumberNode(Next());
  }

  // A single letter (already consumed), with its subscript: e and i are constants unless
  // subscripted.
  absl::StatusOr<uint32_t> ParseLetter(std::string_view letter) {
    if (IsOp(Peek(), '_')) {
      RLSCORE_ASSIGN_OR_RETURN(std::string sub, ParseSubscript());
      return MakeText(Kind::kSymbol, absl::StrCat(Sv(letter), "_", sub));
    }
    // An index of \sum, \prod or \lim is a variable even when it is "i" or "e".
    if (std::find(bound_.begin(), bound_.end(), letter) != bound_.end()) {
      return MakeText(Kind::kSymbol, letter);
    }
    if (letter == "e") return MakeConstant(Constant::kE);
    if (letter == "i") return MakeConstant(Constant::kI);
    return MakeText(Kind::kSymbol, letter);
  }
  // At '_': "x_1", "a_{n+1}" (the subscript's tokens, concatenated), "x_i".
  absl::StatusOr<std::string> ParseSubscript() {
    Next();
    std::string sub;
    if (IsOp(Peek(), '{')) {
      Next();
      size_t open = 1;
      for (;;) {
        const Token& t = Peek();
        if (t.kind == TokenKind::kEnd) return Unexpected("inside a subscript");
        if (IsOp(t, '{')) ++open;
        if (IsOp(t, '}') && --open == 0) break;
        sub += TokenText(Next());
      }
      Next();
    } else {
      Token& t = Peek();
      if (t.kind == TokenKind::kNumber) {
        sub = Next().digits;
      } else if (t.kind == TokenKind::kWord) {
        sub = std::string(t.text.substr(0, 1));
        TakeFirstLetter(t);
      } else if (t.kind == TokenKind::kCommand) {
        sub = std::string(Next().text);
      } else {
        return Unexpected("as a subscript");
      }
    }
    if (sub.empty()) return absl::InvalidArgumentError("empty subscript");
    return sub;
  }
  // Consumes the first letter of a word token ("xy" → "y" is left).
  void TakeFirstLetter(Token& t) {
    if (t.text.size() <= 1) {
      Next();
      return;
    }
    t.text.remove_prefix(1);
    t.space_before = false;
    t.split = true;
  }

  absl::StatusOr<uint32_t> ParseWord() {
    Token& t = Peek();
    std::string_view w = t.text;
    if (w.size() >= 2) {
      if (IsFunctionName(w)) {
        Next();
        return ParseFunction(w);
      }
      if (w == "sqrt") {
        Next();
        return ParseSqrt();
      }
      if (EqualsLower(w, "pi")) {
        Next();
        return MakeConstant(Constant::kPi);
      }
      if (EqualsLower(w, "inf") || EqualsLower(w, "infinity") || EqualsLower(w, "infty")) {
        Next();
        return MakeConstant(Constant::kInfinity);
      }
      if (IsGreekName(w)) {
        Next();
        return ParseLetter(w);
      }
      if (int n = NumberWordValue(w); n >= 0) {
        Next();
        return MakeNumber(BigRational(n));
      }
      if (IsConnector(t)) return Unexpected("where a value was expected");
      if (!UnitName(w).empty()) {
        return absl::InvalidArgumentError(absl::StrCat("unit '", Sv(w), "' without a value"));
      }
      // A run of letters in math is a product of symbols ("xy"), or starts with a function
      // written without a backslash ("sinx").
      for (std::string_view f :
           {"arcsin", "arccos", "arctan", "sqrt", "sin", "cos", "tan", "log", "ln", "exp", "pi"}) {
        if (w.starts_with(f)) {
          t.text.remove_prefix(f.size());
          t.space_before = false;
          if (f == "pi") return MakeConstant(Constant::kPi);
          if (f == "sqrt") return ParseSqrt();
          return ParseFunction(f);
        }
      }
    }
    std::string_view letter = w.substr(0, 1);
    TakeFirstLetter(t);
    return ParseLetter(letter);
  }

  absl::StatusOr<uint32_t> ParseCommand() {
    std::string_view name = Next().text;
    if (name == "frac") {
      RLSCORE_ASSIGN_OR_RETURN(uint32_t num, ParseArg(false));
      RLSCORE_ASSIGN_OR_RETURN(uint32_t den, ParseArg(false));
      return Make(Kind::kDiv, {num, den});
    }
    if (name == "sqrt") return ParseSqrt();
    if (name == "binom") {
      RLSCORE_ASSIGN_OR_RETURN(uint32_t n, ParseArg(false));
      RLSCORE_ASSIGN_OR_RETURN(uint32_t k, ParseArg(false));
      return MakeNamed(Kind::kFunction, "binom", {n, k});
    }
    if (name == "pi") return MakeConstant(Constant::kPi);
    if (name == "infty") return MakeConstant(Constant::kInfinity);
    if (name == "i") return MakeConstant(Constant::kI);
    if (name == "emptyset") return Make(Kind::kEmptySet, std::span<const uint32_t>());
    if (name == "lfloor" || name == "lceil") {
      std::string_view close = name == "lfloor" ? "rfloor" : "rceil";
      RLSCORE_ASSIGN_OR_RETURN(uint32_t x, ParseExpr(0));
      if (!IsCommand(Peek(), close))
        return Unexpected(absl::StrCat("where \\", Sv(close), " was expected"));
      Next();
      return MakeNamed(Kind::kFunction, name == "lfloor" ? "floor" : "ceil", {x});
    }
    if (name == "sum" || name == "prod" || name == "lim") return ParseBigOperator(name);
    if (IsFunctionName(name)) return ParseFunction(name);
    if (IsGreekName(name)) return ParseLetter(name);
    return absl::InvalidArgumentError(absl::StrCat("unsupported command \\", Sv(name)));
  }

  // "\sum_{k=1}^{n} body", "\prod_{k=1}^{n} body": (sum body k lo hi); "\lim_{x \to a} body":
  // (lim body x a). The body is one term ("\sum_{k=1}^{4} k^2 + 1" is the sum, plus 1); the
  // index is bound inside it.
  absl::StatusOr<uint32_t> ParseBigOperator(std::string_view name) {
    const bool limit = name == "lim";
    RLSCORE_RETURN_IF_ERROR(Expect('_', absl::StrCat("the index of \\", Sv(name))));
    const bool braced = IsOp(Peek(), '{');
    if (braced) Next();
    const Token& index = Peek();
    std::string_view var;
    if (index.kind == TokenKind::kWord && index.text.size() == 1) {
      var = index.text;
    } else if (index.kind == TokenKind::kCommand && IsGreekName(index.text)) {
      var = index.text;
    } else {
      return Unexpected(absl::StrCat("where the index of \\", Sv(name), " was expected"));
    }
    Next();
    if (limit) {
      if (!IsCommand(Peek(), "to") && !IsCommand(Peek(), "rightarrow")) {
        return Unexpected("where \\to was expected");
      }
      Next();
    } else if (Peek().kind != TokenKind::kRelation || Peek().op != '=') {
      return Unexpected("where '=' was expected");
    } else {
      Next();
    }
    RLSCORE_ASSIGN_OR_RETURN(uint32_t from, ParseExpr(kPrecRelation + 1));
    if (braced) RLSCORE_RETURN_IF_ERROR(Expect('}', "'}'"));
    std::optional<uint32_t> to;
    if (!limit) {
      RLSCORE_RETURN_IF_ERROR(Expect('^', absl::StrCat("the upper bound of \\", Sv(name))));
      RLSCORE_ASSIGN_OR_RETURN(to, ParseArg(true));
    }
    bound_.push_back(var);
    absl::StatusOr<uint32_t> body = ParseExpr(kPrecMul);
    bound_.pop_back();
    if (!body.ok()) return body.status();
    RLSCORE_ASSIGN_OR_RETURN(uint32_t symbol, MakeText(Kind::kSymbol, var));
    if (limit) return MakeNamed(Kind::kFunction, name, {*body, symbol, from});
    return MakeNamed(Kind::kFunction, name, {*body, symbol, from, *to});
  }

  // The argument of \frac, \sqrt, \binom (`whole_number` false: LaTeX reads one character, so
  // "\frac12" is 1/2) or of ^ and _ (`whole_number` true: "2^10" is 2^{10} as plain text means).
  absl::StatusOr<uint32_t> ParseArg(bool whole_number) {
    Token& t = Peek();
    if (IsOp(t, '{')) {
      Next();
      if (IsOp(Peek(), '}')) return absl::InvalidArgumentError("empty {} argument");
      RLSCORE_ASSIGN_OR_RETURN(uint32_t x, ParseExpr(0));
      RLSCORE_RETURN_IF_ERROR(Expect('}', "'}'"));
      return x;
    }
    DepthGuard guard(depth_);
    if (depth_ > max_depth_) return DepthExceeded();
    if (t.kind == TokenKind::kNumber) {
      if (!whole_number && t.digits.size() > 1 && IsDigit(t.digits[0])) {
        Token one;
        one.kind = TokenKind::kNumber;
        one.digits = t.digits.substr(0, 1);
        t.digits.erase(0, 1);
        t.space_before = false;
        t.split = true;
        return NumberNode(one);
      }
      return NumberNode(Next());
    }
    if (t.kind == TokenKind::kWord && t.text.size() > 1 && !IsMathWord(t.text)) {
      std::string_view letter = t.text.substr(0, 1);
      TakeFirstLetter(t);
      return ParseLetter(letter);
    }
    return ParsePrimary();
  }

  // After '^': a braced group, a signed atom, or an atom; right associative ("2^3^2").
  absl::StatusOr<uint32_t> ParseExponent() {
    DepthGuard guard(depth_);
    if (depth_ > max_depth_) return DepthExceeded();
    uint32_t x = 0;
    if (IsOp(Peek(), '-') || IsOp(Peek(), '+')) {
      bool minus = Next().op == '-';
      RLSCORE_ASSIGN_OR_RETURN(x, ParseArg(true));
      if (minus) {
        RLSCORE_ASSIGN_OR_RETURN(x, Negate(x));
      }
    } else {
      RLSCORE_ASSIGN_OR_RETURN(x, ParseArg(true));
    }
    if (IsOp(Peek(), '^')) {
      Next();
      RLSCORE_ASSIGN_OR_RETURN(uint32_t y, ParseExponent());
      RLSCORE_ASSIGN_OR_RETURN(x, Make(Kind::kPow, {x, y}));
    }
    return x;
  }

  absl::StatusOr<uint32_t> ParseSqrt() {
    std::optional<uint32_t> index;
    if (IsOp(Peek(), '[')) {
      Next();
      RLSCORE_ASSIGN_OR_RETURN(index, ParseExpr(0));
      RLSCORE_RETURN_IF_ERROR(Expect(']', "']'"));
    }
    RLSCORE_ASSIGN_OR_RETURN(uint32_t radicand, ParseArg(false));
    if (index.has_value()) return Make(Kind::kRoot, {radicand, *index});
    return Make(Kind::kRoot, {radicand});
  }

  // "\sin x", "\sin(x)", "\sin^2 x" (sin x)^2, "\sin^{-1} x" arcsin x, "\log_2 8" (log 8 2).
  absl::StatusOr<uint32_t> ParseFunction(std::string_view name) {
    std::string fname(name);
    std::optional<uint32_t> power;
    std::optional<uint32_t> base;
    for (int i = 0; i < 2; ++i) {
      if (IsOp(Peek(), '^') && !power.has_value()) {
        Next();
        bool inverse = IsTrigName(fname) && ((IsOp(Peek(), '{') && IsOp(Peek(1), '-') &&
                                              Peek(2).digits == "1" && IsOp(Peek(3), '}')) ||
                                             (IsOp(Peek(), '-') && Peek(1).digits == "1"));
        if (inverse) {
          pos_ += IsOp(Peek(), '{') ? 4 : 2;
          fname = "arc" + fname;
          continue;
        }
        RLSCORE_ASSIGN_OR_RETURN(power, ParseExponent());
      } else if (IsOp(Peek(), '_') && fname == "log" && !base.has_value()) {
        Next();
        RLSCORE_ASSIGN_OR_RETURN(base, ParseArg(true));
      }
    }
    if (fname == "lg") {
      fname = "log";
      RLSCORE_ASSIGN_OR_RETURN(base, MakeNumber(BigRational(10)));
    }
    std::vector<uint32_t> args;
    // The argument of a trigonometric function is an angle: a degree sign in it counts.
    struct AngleScope {
      int* depth;
      bool active;
      ~AngleScope() {
        if (active) --*depth;
      }
    } angle_scope{&angle_depth_, IsTrigName(fname)};
    if (angle_scope.active) ++angle_depth_;
    if (IsOp(Peek(), '(')) {  // "f(x)", "gcd(a, b)"
      Next();
      int saved_abs = abs_depth_;
      abs_depth_ = 0;
      for (;;) {
        RLSCORE_ASSIGN_OR_RETURN(uint32_t a, ParseExpr(0));
        args.push_back(a);
        if (!IsOp(Peek(), ',')) break;
        Next();
      }
      abs_depth_ = saved_abs;
      RLSCORE_RETURN_IF_ERROR(Expect(')', "')'"));
    } else if (IsOp(Peek(), '{')) {
      RLSCORE_ASSIGN_OR_RETURN(uint32_t a, ParseArg(true));
      args.push_back(a);
    } else {
      // Unparenthesised: the argument runs over implicit factors up to the next function
      // ("\sin 2x \cos x" is sin(2x)·cos(x)).
      const Token& t = Peek();
      if (!StartsImplicitFactor(t) && t.kind != TokenKind::kNumber && !IsOp(t, '-')) {
        return Unexpected(absl::StrCat("where the argument of ", fname, " was expected"));
      }
      std::vector<uint32_t> factors;
      RLSCORE_ASSIGN_OR_RETURN(uint32_t first, ParseExpr(kPrecMul + 1));
      factors.push_back(first);
      while (StartsImplicitFactor(Peek()) && !StartsFunction(Peek()) && !IsOp(Peek(), '(') &&
             !UnitAhead()) {
        RLSCORE_ASSIGN_OR_RETURN(uint32_t f, ParseExpr(kPrecMul + 1));
        factors.push_back(f);
      }
      RLSCORE_ASSIGN_OR_RETURN(uint32_t a, Product(factors));
      args.push_back(a);
    }
    if (base.has_value()) args.push_back(*base);
    RLSCORE_ASSIGN_OR_RETURN(uint32_t call, MakeNamed(Kind::kFunction, fname, args));
    if (power.has_value()) return Make(Kind::kPow, {call, *power});
    return call;
  }
  bool StartsFunction(const Token& t) const {
    return (t.kind == TokenKind::kCommand || t.kind == TokenKind::kWord) &&
           (IsFunctionName(t.text) || t.text == "sqrt");
  }

  // "(a)" group, "(a, b)" pair (an open interval when an end is infinite), "[a, b)" interval,
  // "(1, 2, 3)" tuple.
  absl::StatusOr<uint32_t> ParseBracketed() {
    char open = Next().op;
    int saved_abs = abs_depth_;
    abs_depth_ = 0;
    std::vector<uint32_t> items;
    for (;;) {
      RLSCORE_ASSIGN_OR_RETURN(uint32_t item, ParseExpr(0));
      items.push_back(item);
      // "(0;-2;6)": where ',' is the decimal comma, ';' separates coordinates.
      if (!IsOp(Peek(), ',') && !IsOp(Peek(), ';')) break;
      Next();
    }
    abs_depth_ = saved_abs;
    if (!IsOp(Peek(), ')') && !IsOp(Peek(), ']'))
      return Unexpected("where ')' or ']' was expected");
    char close = Next().op;
    bool matched = (open == '(') == (close == ')');
    if (items.size() == 2) {
      if (matched && open == '(' && !IsInfinite(items[0]) && !IsInfinite(items[1])) {
        return Make(Kind::kTuple, items);
      }
      uint8_t flags = static_cast<uint8_t>((open == '[' ? 1 : 0) | (close == ']' ? 2 : 0));
      return Make(Kind::kInterval, items, 0, flags);
    }
    if (!matched) return absl::InvalidArgumentError("mismatched brackets");
    if (items.size() == 1) return items[0];
    return Make(Kind::kTuple, items);
  }
  // "{x}" groups, "{1, 2}" is a set, "{}" the empty set.
  absl::StatusOr<uint32_t> ParseBraced() {
    Next();
    if (IsOp(Peek(), '}')) {
      Next();
      return Make(Kind::kEmptySet, std::span<const uint32_t>());
    }
    RLSCORE_ASSIGN_OR_RETURN(std::vector<uint32_t> items, ParseItems());
    if (items.size() == 1 && IsCommand(Peek(), "choose")) {  // "{n \choose k}"
      Next();
      RLSCORE_ASSIGN_OR_RETURN(uint32_t k, ParseExpr(0));
      RLSCORE_RETURN_IF_ERROR(Expect('}', "'}'"));
      return MakeNamed(Kind::kFunction, "binom", {items[0], k});
    }
    RLSCORE_RETURN_IF_ERROR(Expect('}', "'}'"));
    if (items.size() == 1) return items[0];
    return Make(Kind::kSet, items);
  }
  // "\{1, 2\}", "\{\}".
  absl::StatusOr<uint32_t> ParseSetLiteral() {
    Next();
    if (IsOp(Peek(), 'T')) {
      Next();
      return Make(Kind::kEmptySet, std::span<const uint32_t>());
    }
    RLSCORE_ASSIGN_OR_RETURN(std::vector<uint32_t> items, ParseItems());
    RLSCORE_RETURN_IF_ERROR(Expect('T', "'\\}'"));
    return Make(Kind::kSet, items);
  }
  absl::StatusOr<std::vector<uint32_t>> ParseItems() {
    int saved_abs = abs_depth_;
    abs_depth_ = 0;
    std::vector<uint32_t> items;
    for (;;) {
      RLSCORE_ASSIGN_OR_RETURN(uint32_t item, ParseExpr(0));
      items.push_back(item);
      if (!IsOp(Peek(), ',') && !IsOp(Peek(), ';')) break;
      Next();
    }
    abs_depth_ = saved_abs;
    return items;
  }
  absl::StatusOr<uint32_t> ParseAbs() {
    Next();
    ++abs_depth_;
    RLSCORE_ASSIGN_OR_RETURN(uint32_t x, ParseExpr(0));
    --abs_depth_;
    RLSCORE_RETURN_IF_ERROR(Expect('|', "a closing '|'"));
    return MakeNamed(Kind::kFunction, "abs", {x});
  }

  // \begin{pmatrix} a & b \\ c & d \end{pmatrix} (also bmatrix, Bmatrix, matrix, smallmatrix,
  // array; vmatrix is the determinant of the matrix).
  absl::StatusOr<uint32_t> ParseMatrix() {
    std::string_view env = Next().text;
    bool det = env == "vmatrix" || env == "Vmatrix";
    if (!det && env != "pmatrix" && env != "bmatrix" && env != "Bmatrix" && env != "matrix" &&
        env != "smallmatrix" && env != "array") {
      return absl::InvalidArgumentError(absl::StrCat("unsupported environment ", Sv(env)));
    }
    std::vector<uint32_t> cells;
    size_t rows = 0;
    size_t cols = 0;
    while (Peek().kind != TokenKind::kEndEnv) {
      size_t row_cols = 0;
      for (;;) {
        RLSCORE_ASSIGN_OR_RETURN(uint32_t cell, ParseExpr(0));
        cells.push_back(cell);
        ++row_cols;
        if (!IsOp(Peek(), '&')) break;
        Next();
      }
      if (rows > 0 && row_cols != cols) {
        return absl::InvalidArgumentError("matrix rows of different lengths");
      }
      cols = row_cols;
      ++rows;
      if (IsOp(Peek(), 'N')) {
        Next();
        continue;
      }
      if (Peek().kind != TokenKind::kEndEnv) return Unexpected("inside a matrix");
    }
    if (Next().text != env) {
      return absl::InvalidArgumentError(
          absl::StrCat("\\begin{", Sv(env), "} closed by another \\end"));
    }
    if (rows == 0) return absl::InvalidArgumentError("empty matrix");
    if (rows > UINT16_MAX || cols > UINT16_MAX) {
      return absl::ResourceExhaustedError("matrix larger than 65535 rows or columns");
    }
    RLSCORE_ASSIGN_OR_RETURN(uint32_t m, Make(Kind::kMatrix, cells));
    expr_.nodes[m].rows = static_cast<uint16_t>(rows);
    expr_.nodes[m].cols = static_cast<uint16_t>(cols);
    if (det) return MakeNamed(Kind::kFunction, "det", {m});
    return m;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  const ParseLimits& limits_;
  uint32_t max_depth_;
  Budget& budget_;
  uint32_t depth_ = 0;
  int abs_depth_ = 0;                    // inside |...|, a '|' closes rather than opens
  int angle_depth_ = 0;                  // inside the argument of sin, cos, tan, sec, csc, cot
  std::vector<std::string_view> bound_;  // indices of the \sum / \prod / \lim being read
  Expr expr_;
  std::vector<uint32_t> heights_;  // of each node of expr_
};

}  // namespace

absl::StatusOr<Expr> ParseAnswer(std::string_view text, const ParseLimits& limits, Budget& budget) {
  if (text.size() > limits.max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("answer is ", text.size(), " bytes, over max_bytes (", limits.max_bytes, ")"));
  }
  if (budget.exceeded) return absl::ResourceExhaustedError("step budget already exhausted");
  std::vector<Token> tokens;
  RLSCORE_RETURN_IF_ERROR(Lex(text, budget, tokens));
  return Parser(std::move(tokens), limits, budget).Run();
}

}  // namespace rlscore::scorers::math
