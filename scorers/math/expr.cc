#include "scorers/math/expr.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlscore::scorers::math {
namespace {

std::string_view ConstantName(uint32_t c) {
  switch (static_cast<Constant>(c)) {
    case Constant::kPi:
      return "pi";
    case Constant::kE:
      return "e";
    case Constant::kI:
      return "i";
    case Constant::kInfinity:
      return "inf";
  }
  return "?";
}

std::string_view RelationName(char c) {
  switch (c) {
    case '=':
      return "=";
    case '!':
      return "!=";
    case '<':
      return "<";
    case 'l':
      return "<=";
    case '>':
      return ">";
    case 'g':
      return ">=";
    case '~':
      return "~=";
  }
  return "?";
}

// The s-expression head of an operator node; empty for nodes printed another way.
std::string_view Head(Kind kind) {
  switch (kind) {
    case Kind::kAdd:
      return "+";
    case Kind::kMul:
      return "*";
    case Kind::kNeg:
      return "-";
    case Kind::kDiv:
      return "/";
    case Kind::kPow:
      return "^";
    case Kind::kFactorial:
      return "!";
    case Kind::kPlusMinus:
      return "+-";
    case Kind::kPercent:
      return "%";
    case Kind::kSet:
      return "set";
    case Kind::kTuple:
      return "tuple";
    case Kind::kUnion:
      return "union";
    default:
      return "";
  }
}

}  // namespace

uint32_t Expr::AddString(std::string_view s) {
  strings.emplace_back(s);
  return static_cast<uint32_t>(strings.size() - 1);
}

uint32_t Expr::AddNumber(BigRational value) {
  numbers.push_back(std::move(value));
  Node n{};
  n.kind = Kind::kNumber;
  n.payload = static_cast<uint32_t>(numbers.size() - 1);
  n.first_child = static_cast<uint32_t>(children.size());
  nodes.push_back(n);
  return static_cast<uint32_t>(nodes.size() - 1);
}

uint32_t Expr::AddSymbol(std::string_view name) { return AddText(Kind::kSymbol, name); }

uint32_t Expr::AddConstant(Constant c) {
  Node n{};
  n.kind = Kind::kConstant;
  n.payload = static_cast<uint32_t>(c);
  n.first_child = static_cast<uint32_t>(children.size());
  nodes.push_back(n);
  return static_cast<uint32_t>(nodes.size() - 1);
}

uint32_t Expr::AddText(Kind kind, std::string_view text) {
  uint32_t payload = AddString(text);
  Node n{};
  n.kind = kind;
  n.payload = payload;
  n.first_child = static_cast<uint32_t>(children.size());
  nodes.push_back(n);
  return static_cast<uint32_t>(nodes.size() - 1);
}

uint32_t Expr::Add(Kind kind, std::span<const uint32_t> kids, uint32_t payload, uint8_t flags) {
  Node n{};
  n.kind = kind;
  n.flags = flags;
  n.payload = payload;
  n.first_child = static_cast<uint32_t>(children.size());
  n.num_children = static_cast<uint32_t>(kids.size());
  children.insert(children.end(), kids.begin(), kids.end());
  nodes.push_back(n);
  return static_cast<uint32_t>(nodes.size() - 1);
}

uint32_t Expr::Graft(const Expr& from, uint32_t node, int plus_minus) {
  const Node& n = from.node(node);
  std::vector<uint32_t> kids;
  kids.reserve(n.num_children);
  for (uint32_t k : from.kids(node)) kids.push_back(Graft(from, k, plus_minus));
  switch (n.kind) {
    case Kind::kNumber: {
      const uint32_t copy = AddNumber(from.number(node));
      nodes[copy].flags = n.flags;
      return copy;
    }
    case Kind::kConstant:
      return AddConstant(static_cast<Constant>(n.payload));
    case Kind::kSymbol:
    case Kind::kText:
    case Kind::kChoice:
      return AddText(n.kind, from.text(node));
    case Kind::kPlusMinus:
      if (plus_minus != 0) {
        const bool plus = (plus_minus > 0) != (n.flags == 1);  // \mp flips the sign
        if (!plus) kids.back() = Add(Kind::kNeg, {kids.back()});
        return kids.size() == 1 ? kids[0] : Add(Kind::kAdd, kids);
      }
      break;
    case Kind::kFunction:
    case Kind::kRelation:
    case Kind::kWithUnit: {
      const uint32_t name = AddString(from.text(node));
      return Add(n.kind, kids, name, n.flags);
    }
    default:
      break;
  }
  const uint32_t copy = Add(n.kind, kids, n.payload, n.flags);
  nodes[copy].rows = n.rows;
  nodes[copy].cols = n.cols;
  return copy;
}

std::string Expr::DebugString(uint32_t i) const {
  if (i >= nodes.size()) return "<bad node>";
  const Node& n = nodes[i];
  std::span<const uint32_t> k = kids(i);
  std::string out;
  auto append_kids = [&](size_t from) {
    for (size_t j = from; j < k.size(); ++j) {
      out += ' ';
      out += DebugString(k[j]);
    }
  };
  switch (n.kind) {
    case Kind::kNumber:
      return number(i).ToString();
    case Kind::kSymbol:
      return std::string(text(i));
    case Kind::kConstant:
      return std::string(ConstantName(n.payload));
    case Kind::kEmptySet:
      return "emptyset";
    case Kind::kRoot:
      out = k.size() == 1 ? "(sqrt" : "(root";
      append_kids(0);
      return out + ")";
    case Kind::kFunction:
    case Kind::kChoice:
      out = "(";
      out += n.kind == Kind::kChoice ? "choice " : "";
      out += text(i);
      append_kids(0);
      return out + ")";
    case Kind::kWithUnit:
      out = "(unit ";
      out += text(i);
      append_kids(0);
      return out + ")";
    case Kind::kText: {
      out = "(text \"";
      for (char c : text(i)) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
      return out + "\")";
    }
    case Kind::kRelation: {
      out = "(rel";
      std::string_view ops = text(i);
      for (size_t j = 0; j < k.size(); ++j) {
        if (j > 0) {
          out += ' ';
          out += RelationName(j - 1 < ops.size() ? ops[j - 1] : '?');
        }
        out += ' ';
        out += DebugString(k[j]);
      }
      return out + ")";
    }
    case Kind::kInterval:
      out = (n.flags & 1) ? "(interval [" : "(interval (";
      append_kids(0);
      out += (n.flags & 2) ? " ])" : " ))";
      return out;
    case Kind::kMatrix: {
      out = "(matrix";
      for (uint32_t r = 0; r < n.rows; ++r) {
        out += " (";
        for (uint32_t c = 0; c < n.cols; ++c) {
          size_t j = size_t{r} * n.cols + c;
          if (c > 0) out += ' ';
          out += j < k.size() ? DebugString(k[j]) : "<missing>";
        }
        out += ')';
      }
      return out + ")";
    }
    default:
      out = "(";
      out += Head(n.kind);
      append_kids(0);
      return out + ")";
  }
}

}  // namespace rlscore::scorers::math
