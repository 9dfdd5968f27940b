// Big integers as sign + magnitude over base-2^32 limbs (little-endian), and normalised rationals
// on top. Algorithms are the textbook ones — schoolbook multiplication, Knuth's Algorithm D
// (TAOCP vol. 2, §4.3.1, in the form of Hacker's Delight's divmnu) for division, Euclid for gcd —
// because operands are answers of at most a few thousand bits. What matters here is that every
// operation that can grow is priced before it runs: Budget::Spend is charged in limb operations
// and results larger than budget.max_integer_bits are refused before the work is done.
#include "scorers/math/big_rational.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlscore::scorers::math {
namespace {

using Limbs = std::vector<uint32_t>;

constexpr uint64_t kBase = uint64_t{1} << 32;
constexpr uint32_t kChunk = 1'000'000'000;  // 10^9: decimal digits are converted nine at a time
constexpr uint32_t kPow10[] = {1,       10,        100,        1'000,       10'000,
                               100'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000};

void Trim(Limbs& a) {
  while (!a.empty() && a.back() == 0) a.pop_back();
}

size_t BitLength(const Limbs& a) {
  if (a.empty()) return 0;
  return (a.size() - 1) * 32 + static_cast<size_t>(32 - std::countl_zero(a.back()));
}

int CompareMag(const Limbs& a, const Limbs& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

Limbs AddMag(const Limbs& a, const Limbs& b) {
  const Limbs& big = a.size() >= b.size() ? a : b;
  const Limbs& small = a.size() >= b.size() ? b : a;
  Limbs r(big.size() + 1);
  uint64_t carry = 0;
  for (size_t i = 0; i < big.size(); ++i) {
    const uint64_t s = uint64_t{big[i]} + (i < small.size() ? small[i] : 0) + carry;
    r[i] = static_cast<uint32_t>(s);
    carry = s >> 32;
  }
  r[big.size()] = static_cast<uint32_t>(carry);
  Trim(r);
  return r;
}

// REQUIRES: a >= b.
Limbs SubMag(const Limbs& a, const Limbs& b) {
  Limbs r(a.size());
  uint64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const uint64_t d = uint64_t{a[i]} - (i < b.size() ? b[i] : 0) - borrow;
    r[i] = static_cast<uint32_t>(d);
    borrow = d >> 63;  // a wrapped difference has its top bit set
  }
  Trim(r);
  return r;
}

// Schoolbook: a.size() * b.size() limb multiply-adds. (2^32-1)^2 + 2(2^32-1) fits in 64 bits.
Limbs MulMag(const Limbs& a, const Limbs& b) {
  if (a.empty() || b.empty()) return {};
  Limbs r(a.size() + b.size(), 0);
  for (size_t i = 0; i < a.size(); ++i) {
    const uint64_t ai = a[i];
    if (ai == 0) continue;
    uint64_t carry = 0;
    for (size_t j = 0; j < b.size(); ++j) {
      const uint64_t t = ai * b[j] + r[i + j] + carry;
      r[i + j] = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    r[i + b.size()] = static_cast<uint32_t>(carry);
  }
  Trim(r);
  return r;
}

// a = a * m + add.
void MulSmallAdd(Limbs& a, uint32_t m, uint32_t add) {
  uint64_t carry = add;
  for (uint32_t& limb : a) {
    const uint64_t t = uint64_t{limb} * m + carry;
    limb = static_cast<uint32_t>(t);
    carry = t >> 32;
  }
  if (carry != 0) a.push_back(static_cast<uint32_t>(carry));
  Trim(a);
}

// a = a / d; returns a % d. REQUIRES: d != 0.
uint32_t DivSmall(Limbs& a, uint32_t d) {
  uint64_t rem = 0;
  for (size_t i = a.size(); i-- > 0;) {
    const uint64_t cur = (rem << 32) | a[i];
    a[i] = static_cast<uint32_t>(cur / d);
    rem = cur % d;
  }
  Trim(a);
  return static_cast<uint32_t>(rem);
}

Limbs ShiftLeft(const Limbs& a, size_t n) {
  if (a.empty()) return {};
  const size_t limbs = n / 32;
  const unsigned bits = static_cast<unsigned>(n % 32);
  Limbs r(a.size() + limbs + 1, 0);
  for (size_t i = 0; i < a.size(); ++i) {
    const uint64_t v = uint64_t{a[i]} << bits;
    r[i + limbs] |= static_cast<uint32_t>(v);
    r[i + limbs + 1] = static_cast<uint32_t>(v >> 32);
  }
  Trim(r);
  return r;
}

Limbs ShiftRight(const Limbs& a, size_t n) {
  const size_t limbs = n / 32;
  if (limbs >= a.size()) return {};
  const unsigned bits = static_cast<unsigned>(n % 32);
  Limbs r(a.size() - limbs);
  for (size_t i = 0; i < r.size(); ++i) {
    uint64_t v = a[i + limbs];
    if (i + limbs + 1 < a.size()) v |= uint64_t{a[i + limbs + 1]} << 32;
    r[i] = static_cast<uint32_t>(v >> bits);
  }
  Trim(r);
  return r;
}

// The limb operations a division of an `la`-limb by an `lb`-limb magnitude costs.
uint64_t DivCost(size_t la, size_t lb) {
  if (la < lb || lb == 0) return 1;
  return uint64_t{la - lb + 1} * lb;
}

// q = u / v, r = u % v (magnitudes). REQUIRES: v non-empty.
void DivModMag(const Limbs& u, const Limbs& v, Limbs& q, Limbs& r) {
  if (CompareMag(u, v) < 0) {
    q.clear();
    r = u;
    return;
  }
  if (v.size() == 1) {
    q = u;
    const uint32_t rem = DivSmall(q, v[0]);
    r.clear();
    if (rem != 0) r.push_back(rem);
    return;
  }
  // Knuth D: normalise so the divisor's top limb has its high bit set; then each quotient limb
  // estimate from the top two limbs is at most 2 too large, and one add-back fixes the rest.
  const size_t n = v.size();
  const size_t m = u.size();
  const auto s = static_cast<size_t>(std::countl_zero(v.back()));
  Limbs vn = ShiftLeft(v, s);
  Limbs un = ShiftLeft(u, s);
  un.resize(m + 1, 0);
  q.assign(m - n + 1, 0);
  for (size_t j = m - n + 1; j-- > 0;) {
    const uint64_t num = (uint64_t{un[j + n]} << 32) | un[j + n - 1];
    uint64_t qhat = num / vn[n - 1];
    uint64_t rhat = num % vn[n - 1];
    while (qhat >= kBase || qhat * vn[n - 2] > ((rhat << 32) | un[j + n - 2])) {
      --qhat;
      rhat += vn[n - 1];
      if (rhat >= kBase) break;
    }
    // un[j..j+n] -= qhat * vn.
    int64_t borrow = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t p = qhat * vn[i];
      const int64_t t = int64_t{un[i + j]} - borrow - static_cast<int64_t>(p & 0xFFFF'FFFFu);
      un[i + j] = static_cast<uint32_t>(t);
      borrow = static_cast<int64_t>(p >> 32) - (t >> 32);
    }
    const int64_t t = int64_t{un[j + n]} - borrow;
    un[j + n] = static_cast<uint32_t>(t);
    if (t < 0) {  // qhat was one too large: add the divisor back
      --qhat;
      uint64_t carry = 0;
      for (size_t i = 0; i < n; ++i) {
        const uint64_t sum = uint64_t{un[i + j]} + vn[i] + carry;
        un[i + j] = static_cast<uint32_t>(sum);
        carry = sum >> 32;
      }
      un[j + n] = static_cast<uint32_t>(un[j + n] + carry);
    }
    q[j] = static_cast<uint32_t>(qhat);
  }
  Trim(q);
  un.resize(n);
  r = ShiftRight(un, s);
}

// Decimal digits (all '0'..'9', validated by the caller) to a magnitude, nine at a time.
Limbs ParseDigits(std::string_view digits) {
  Limbs mag;
  size_t pos = 0;
  size_t len = digits.size() % 9;
  if (len == 0) len = 9;
  while (pos < digits.size()) {
    uint32_t chunk = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      chunk = chunk * 10 + static_cast<uint32_t>(digits[i] - '0');
    }
    MulSmallAdd(mag, kPow10[len], chunk);
    pos += len;
    len = 9;
  }
  return mag;
}

bool AllDigits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Correctly rounded to within an ulp: the top 64 bits, with a sticky bit for everything below
// so that the conversion to double rounds the right way, then scaled by ldexp.
double MagToDouble(const Limbs& a) {
  const size_t bits = BitLength(a);
  if (bits == 0) return 0.0;
  if (bits <= 64) {
    uint64_t v = a[0];
    if (a.size() > 1) v |= uint64_t{a[1]} << 32;
    return static_cast<double>(v);
  }
  const size_t drop = bits - 64;
  const Limbs top = ShiftRight(a, drop);
  uint64_t v = top[0] | (uint64_t{top[1]} << 32);
  bool sticky = false;
  for (size_t i = 0; i < drop / 32 && !sticky; ++i) sticky = a[i] != 0;
  if (!sticky && drop % 32 != 0) {
    sticky = (a[drop / 32] & ((uint32_t{1} << (drop % 32)) - 1)) != 0;
  }
  if (sticky) v |= 1;
  // Anything past 2^20 binary digits is inf for a double anyway; clamp to keep the int cast safe.
  const int exp = static_cast<int>(std::min<size_t>(drop, size_t{1} << 20));
  return std::ldexp(static_cast<double>(v), exp);
}

bool Refuse(Budget& budget) {
  budget.exceeded = true;
  return false;
}

uint64_t Magnitude(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

}  // namespace

// The limb-level view of BigInt that the helpers above need (a friend of BigInt).
struct BigIntAccess {
  static const Limbs& Mag(const BigInt& x) { return x.limbs_; }

  static BigInt Make(Limbs mag, bool negative) {
    Trim(mag);
    BigInt r;
    r.negative_ = negative && !mag.empty();
    r.limbs_ = std::move(mag);
    return r;
  }

  static BigInt FromU64(uint64_t v, bool negative) {
    return Make(Limbs{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}, negative);
  }

  static BigInt AddSigned(const BigInt& a, const BigInt& b, bool b_negative) {
    if (a.negative_ == b_negative) return Make(AddMag(a.limbs_, b.limbs_), a.negative_);
    const int c = CompareMag(a.limbs_, b.limbs_);
    if (c == 0) return BigInt();
    if (c > 0) return Make(SubMag(a.limbs_, b.limbs_), a.negative_);
    return Make(SubMag(b.limbs_, a.limbs_), b_negative);
  }

  // Unbudgeted; only for operands already bounded by max_integer_bits (comparisons).
  static BigInt MulUnbudgeted(const BigInt& a, const BigInt& b) {
    return Make(MulMag(a.limbs_, b.limbs_), a.negative_ != b.negative_);
  }

  // Truncated division, priced at DivCost. False when b == 0 or the budget ran out.
  static bool DivMod(const BigInt& a, const BigInt& b, Budget& budget, BigInt* q, BigInt* r) {
    if (b.is_zero()) return false;
    if (!budget.Spend(DivCost(a.limbs_.size(), b.limbs_.size()))) return false;
    Limbs qm;
    Limbs rm;
    DivModMag(a.limbs_, b.limbs_, qm, rm);
    if (q != nullptr) *q = Make(std::move(qm), a.negative_ != b.negative_);
    if (r != nullptr) *r = Make(std::move(rm), a.negative_);
    return true;
  }
};

// ---------------------------------------------------------------------------------------------
// BigInt

BigInt::BigInt(int64_t v) : BigInt(BigIntAccess::FromU64(Magnitude(v), v < 0)) {}

std::optional<BigInt> BigInt::FromString(std::string_view decimal) {
  bool negative = false;
  if (!decimal.empty() && (decimal.front() == '-' || decimal.front() == '+')) {
    negative = decimal.front() == '-';
    decimal.remove_prefix(1);
  }
  if (decimal.empty() || !AllDigits(decimal)) return std::nullopt;
  return BigIntAccess::Make(ParseDigits(decimal), negative);
}

size_t BigInt::bits() const { return BitLength(limbs_); }

std::string BigInt::ToString() const {
  if (is_zero()) return "0";
  Limbs mag = limbs_;
  std::vector<uint32_t> chunks;  // base 10^9, least significant first
  while (!mag.empty()) chunks.push_back(DivSmall(mag, kChunk));
  std::string out = negative_ ? "-" : "";
  out += std::to_string(chunks.back());
  for (size_t i = chunks.size() - 1; i-- > 0;) {
    const std::string part = std::to_string(chunks[i]);
    out.append(9 - part.size(), '0');
    out += part;
  }
  return out;
}

double BigInt::ToDouble() const {
  const double v = MagToDouble(limbs_);
  return negative_ ? -v : v;
}

std::optional<int64_t> BigInt::ToInt64() const {
  if (limbs_.size() > 2) return std::nullopt;
  uint64_t mag = 0;
  if (!limbs_.empty()) mag = limbs_[0];
  if (limbs_.size() == 2) mag |= uint64_t{limbs_[1]} << 32;
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!negative_) {
    if (mag > kMax) return std::nullopt;
    return static_cast<int64_t>(mag);
  }
  if (mag > kMax + 1) return std::nullopt;
  if (mag == kMax + 1) return std::numeric_limits<int64_t>::min();
  return -static_cast<int64_t>(mag);
}

bool operator==(const BigInt& a, const BigInt& b) {
  return a.negative_ == b.negative_ && a.limbs_ == b.limbs_;
}

bool operator<(const BigInt& a, const BigInt& b) {
  if (a.sign() != b.sign()) return a.sign() < b.sign();
  const int c = CompareMag(a.limbs_, b.limbs_);
  return a.negative_ ? c > 0 : c < 0;
}

BigInt BigInt::operator-() const { return BigIntAccess::Make(limbs_, !negative_); }

BigInt operator+(const BigInt& a, const BigInt& b) {
  return BigIntAccess::AddSigned(a, b, b.negative_);
}

BigInt operator-(const BigInt& a, const BigInt& b) {
  return BigIntAccess::AddSigned(a, b, !b.negative_);
}

std::optional<BigInt> BigInt::Mul(const BigInt& a, const BigInt& b, Budget& budget) {
  if (a.is_zero() || b.is_zero()) {
    if (!budget.Spend(1)) return std::nullopt;
    return BigInt();
  }
  // The product has bits(a) + bits(b) - 1 or bits(a) + bits(b) bits: refuse the certain
  // overflow before multiplying, and the borderline one after.
  if (a.bits() + b.bits() - 1 > budget.max_integer_bits) {
    Refuse(budget);
    return std::nullopt;
  }
  if (!budget.Spend(uint64_t{a.limbs_.size()} * b.limbs_.size())) return std::nullopt;
  Limbs product = MulMag(a.limbs_, b.limbs_);
  if (BitLength(product) > budget.max_integer_bits) {
    Refuse(budget);
    return std::nullopt;
  }
  return BigIntAccess::Make(std::move(product), a.negative_ != b.negative_);
}

std::optional<BigInt> BigInt::Div(const BigInt& a, const BigInt& b, Budget& budget) {
  BigInt q;
  if (!BigIntAccess::DivMod(a, b, budget, &q, nullptr)) return std::nullopt;
  return q;
}

std::optional<BigInt> BigInt::Mod(const BigInt& a, const BigInt& b, Budget& budget) {
  BigInt r;
  if (!BigIntAccess::DivMod(a, b, budget, nullptr, &r)) return std::nullopt;
  return r;
}

std::optional<BigInt> BigInt::Gcd(BigInt a, BigInt b, Budget& budget) {
  // Euclid; every Mod charges at least one step, so the loop is bounded by the budget too.
  a.negative_ = false;
  b.negative_ = false;
  while (!b.is_zero()) {
    std::optional<BigInt> r = Mod(a, b, budget);
    if (!r) return std::nullopt;
    a = std::move(b);
    b = std::move(*r);
  }
  return a;
}

std::optional<BigInt> BigInt::Pow(const BigInt& base, uint64_t exponent, Budget& budget) {
  if (!budget.Spend(1)) return std::nullopt;
  const bool negative = base.negative_ && (exponent & 1) != 0;
  if (exponent == 0) return BigInt(1);  // 0^0 = 1 by convention
  if (base.is_zero()) return BigInt();
  if (base.limbs_.size() == 1 && base.limbs_[0] == 1) return BigInt(negative ? -1 : 1);
  // |base| >= 2, so base^e has at least (bits - 1) * e + 1 bits: refuse before any work when
  // that alone is too many. 5^(5^27) stops here, without a single multiplication.
  __extension__ using Uint128 = unsigned __int128;
  const Uint128 min_bits = Uint128{base.bits() - 1} * exponent + 1;
  if (min_bits > budget.max_integer_bits) {
    Refuse(budget);
    return std::nullopt;
  }
  // Square-and-multiply; every square is base^(2^k) with 2^k <= exponent, so no intermediate
  // is larger than the result, and Mul prices each step.
  BigInt result(1);
  BigInt square = base;
  square.negative_ = false;
  for (uint64_t e = exponent;;) {
    if ((e & 1) != 0) {
      std::optional<BigInt> next = Mul(result, square, budget);
      if (!next) return std::nullopt;
      result = std::move(*next);
    }
    e >>= 1;
    if (e == 0) break;
    std::optional<BigInt> next = Mul(square, square, budget);
    if (!next) return std::nullopt;
    square = std::move(*next);
  }
  result.negative_ = negative;
  return result;
}

std::optional<BigInt> BigInt::Factorial(uint64_t n, Budget& budget) {
  if (!budget.Spend(1)) return std::nullopt;
  if (n <= 1) return BigInt(1);
  // Stirling's lower bound n! > sqrt(2 pi n) (n/e)^n, in bits, less a margin for rounding:
  // refuse before any work when even that is too large (Factorial(10^9) stops here).
  const auto x = static_cast<double>(n);
  const double ln_lower = x * std::log(x) - x + 0.5 * std::log(2.0 * 3.141592653589793 * x);
  const double lower_bits = ln_lower / std::log(2.0);
  const double max_bits = static_cast<double>(budget.max_integer_bits);
  if (lower_bits - 1.0 - lower_bits * 1e-9 > max_bits || n > std::numeric_limits<uint32_t>::max()) {
    Refuse(budget);
    return std::nullopt;
  }
  // Multiplying by i costs the current limb count, which grows to ~lower_bits / 32: charge
  // n * final_limbs / 2 up front, so a factorial that will not finish does not start.
  const auto final_limbs = static_cast<uint64_t>(std::min(lower_bits, max_bits) / 32.0) + 2;
  if (!budget.Spend(n * final_limbs / 2 + n)) return std::nullopt;
  Limbs mag{1};
  for (uint64_t i = 2; i <= n; ++i) {
    MulSmallAdd(mag, static_cast<uint32_t>(i), 0);
    if (BitLength(mag) > budget.max_integer_bits) {
      Refuse(budget);
      return std::nullopt;
    }
  }
  return BigIntAccess::Make(std::move(mag), false);
}

// ---------------------------------------------------------------------------------------------
// BigRational

BigRational::BigRational(int64_t num, int64_t den) {
  if (den == 0) return;  // REQUIRES violated: stay 0 rather than divide by zero
  uint64_t n = Magnitude(num);
  uint64_t d = Magnitude(den);
  const uint64_t g = std::gcd(n, d);  // n == 0 gives g == d, hence 0/1
  n /= g;
  d /= g;
  num_ = BigIntAccess::FromU64(n, (num < 0) != (den < 0));
  den_ = BigIntAccess::FromU64(d, false);
}

BigRational::BigRational(BigInt integer) : num_(std::move(integer)) {}

std::optional<BigRational> BigRational::Make(BigInt num, BigInt den, Budget& budget) {
  if (den.is_zero()) return std::nullopt;
  if (num.bits() > budget.max_integer_bits || den.bits() > budget.max_integer_bits) {
    Refuse(budget);
    return std::nullopt;
  }
  std::optional<BigInt> g = BigInt::Gcd(num, den, budget);
  if (!g) return std::nullopt;
  if (!(*g == BigInt(1))) {
    std::optional<BigInt> n = BigInt::Div(num, *g, budget);
    if (!n) return std::nullopt;
    std::optional<BigInt> d = BigInt::Div(den, *g, budget);
    if (!d) return std::nullopt;
    num = std::move(*n);
    den = std::move(*d);
  }
  if (den.negative()) {
    num = -num;
    den = -den;
  }
  BigRational r;
  r.num_ = std::move(num);
  r.den_ = std::move(den);
  return r;
}

std::optional<BigRational> BigRational::FromDecimal(std::string_view text, Budget& budget) {
  // [sign] digits [. digits] [e|E [sign] digits], with at least one mantissa digit.
  size_t i = 0;
  const auto digits_from = [&text](size_t& pos) {
    const size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    return text.substr(start, pos - start);
  };
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  const std::string_view int_part = digits_from(i);
  std::string_view frac_part;
  if (i < text.size() && text[i] == '.') frac_part = digits_from(++i);
  if (int_part.empty() && frac_part.empty()) return std::nullopt;
  int64_t exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    const std::string_view exp_digits = digits_from(i);
    if (exp_digits.empty()) return std::nullopt;
    for (char c : exp_digits) exponent = std::min<int64_t>(exponent * 10 + (c - '0'), 1'000'000);
    if (exp_negative) exponent = -exponent;
  }
  if (i != text.size()) return std::nullopt;
  if (exponent > 1000 || exponent < -1000) {
    Refuse(budget);
    return std::nullopt;
  }

  std::string mantissa(int_part);
  mantissa.append(frac_part);
  const size_t first = mantissa.find_first_not_of('0');
  if (first == std::string::npos) {  // all zeros: "0.000", "0e5"
    if (!budget.Spend(1)) return std::nullopt;
    return BigRational();
  }
  const std::string_view digits = std::string_view(mantissa).substr(first);
  // d digits are at least (d - 1) * log2(10) bits; the conversion is ~chunks * limbs work.
  const uint64_t d = digits.size();
  if ((d - 1) * 3321928 / 1000000 + 1 > budget.max_integer_bits) {
    Refuse(budget);
    return std::nullopt;
  }
  if (!budget.Spend((d / 9 + 1) * (d / 9 + 1))) return std::nullopt;
  BigInt m = BigIntAccess::Make(ParseDigits(digits), negative);

  const int64_t scale = exponent - static_cast<int64_t>(frac_part.size());
  std::optional<BigInt> power = BigInt::Pow(BigInt(10), Magnitude(scale), budget);
  if (!power) return std::nullopt;
  if (scale >= 0) {
    std::optional<BigInt> value = BigInt::Mul(m, *power, budget);
    if (!value) return std::nullopt;
    return BigRational(std::move(*value));
  }
  return Make(std::move(m), std::move(*power), budget);
}

double BigRational::ToDouble() const {
  if (num_.is_zero()) return 0.0;
  if (is_integer()) return num_.ToDouble();
  // Scale so the integer quotient has 64-66 bits, fold the remainder into a sticky bit, and
  // let MagToDouble round; ldexp undoes the scaling (and underflows or overflows properly).
  const int64_t shift = static_cast<int64_t>(den_.bits()) - static_cast<int64_t>(num_.bits()) + 65;
  Limbs n = BigIntAccess::Mag(num_);
  Limbs d = BigIntAccess::Mag(den_);
  if (shift > 0) {
    n = ShiftLeft(n, static_cast<size_t>(shift));
  } else {
    d = ShiftLeft(d, static_cast<size_t>(-shift));
  }
  Limbs q;
  Limbs r;
  DivModMag(n, d, q, r);
  if (!r.empty()) q[0] |= 1;
  const int exp =
      static_cast<int>(std::clamp<int64_t>(-shift, -(int64_t{1} << 20), int64_t{1} << 20));
  const double v = std::ldexp(MagToDouble(q), exp);
  return num_.negative() ? -v : v;
}

std::string BigRational::ToString() const {
  if (is_integer()) return num_.ToString();
  return num_.ToString() + "/" + den_.ToString();
}

// Both sides are in lowest terms with a positive denominator, so equality is component-wise.
bool operator==(const BigRational& a, const BigRational& b) {
  return a.num_ == b.num_ && a.den_ == b.den_;
}

// Cross-multiplication, unbudgeted: the operands were produced under a budget, so each side is
// at most 2 * max_integer_bits and one schoolbook product of that size.
bool operator<(const BigRational& a, const BigRational& b) {
  if (a.sign() != b.sign()) return a.sign() < b.sign();
  return BigIntAccess::MulUnbudgeted(a.num_, b.den_) < BigIntAccess::MulUnbudgeted(b.num_, a.den_);
}

std::optional<BigRational> BigRational::Add(const BigRational& a, const BigRational& b,
                                            Budget& budget) {
  if (a.den_ == b.den_) return Make(a.num_ + b.num_, a.den_, budget);
  std::optional<BigInt> left = BigInt::Mul(a.num_, b.den_, budget);
  if (!left) return std::nullopt;
  std::optional<BigInt> right = BigInt::Mul(b.num_, a.den_, budget);
  if (!right) return std::nullopt;
  std::optional<BigInt> den = BigInt::Mul(a.den_, b.den_, budget);
  if (!den) return std::nullopt;
  return Make(*left + *right, std::move(*den), budget);
}

std::optional<BigRational> BigRational::Sub(const BigRational& a, const BigRational& b,
                                            Budget& budget) {
  BigRational negated = b;
  negated.num_ = -negated.num_;
  return Add(a, negated, budget);
}

std::optional<BigRational> BigRational::Mul(const BigRational& a, const BigRational& b,
                                            Budget& budget) {
  std::optional<BigInt> num = BigInt::Mul(a.num_, b.num_, budget);
  if (!num) return std::nullopt;
  std::optional<BigInt> den = BigInt::Mul(a.den_, b.den_, budget);
  if (!den) return std::nullopt;
  return Make(std::move(*num), std::move(*den), budget);
}

std::optional<BigRational> BigRational::Div(const BigRational& a, const BigRational& b,
                                            Budget& budget) {
  if (b.num_.is_zero()) return std::nullopt;
  std::optional<BigInt> num = BigInt::Mul(a.num_, b.den_, budget);
  if (!num) return std::nullopt;
  std::optional<BigInt> den = BigInt::Mul(a.den_, b.num_, budget);
  if (!den) return std::nullopt;
  return Make(std::move(*num), std::move(*den), budget);
}

std::optional<BigRational> BigRational::Pow(const BigRational& base, int64_t exponent,
                                            Budget& budget) {
  BigInt num = base.num_;
  BigInt den = base.den_;
  if (exponent < 0) {
    if (num.is_zero()) return std::nullopt;
    std::swap(num, den);
    if (den.negative()) {
      num = -num;
      den = -den;
    }
  }
  // Powers of coprime integers stay coprime: no gcd needed.
  std::optional<BigInt> n = BigInt::Pow(num, Magnitude(exponent), budget);
  if (!n) return std::nullopt;
  std::optional<BigInt> d = BigInt::Pow(den, Magnitude(exponent), budget);
  if (!d) return std::nullopt;
  BigRational r;
  r.num_ = std::move(*n);
  r.den_ = std::move(*d);
  return r;
}

}  // namespace rlscore::scorers::math
