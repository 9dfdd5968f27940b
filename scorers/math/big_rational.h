// Exact arithmetic for answer verification (docs/DESIGN.md §2: both sides rational means an exact
// comparison): arbitrary-precision integers and normalised rationals.
//
//   BigRational a = BigRational::FromDecimal("0.125").value();  // 1/8
//   BigRational b = BigRational(1, 8);
//   a == b;                                                       // true
//   BigInt big = BigInt::FromString("123456789012345678901234567890").value();
//   BigRational c = a * b + BigRational(big);
//
// Every operation that can grow without bound (multiplication, powers, factorials) takes a
// `Budget` and fails with kBudgetExceeded instead of allocating without limit: a completion that
// says 5^{5^{5^{5^5}}} must cost bounded time on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlscore::scorers::math {

// The work one verification may do. Decremented by every costly operation; an operation that
// would exceed it fails without doing the work. Not thread-safe (one per verification).
struct Budget {
  uint64_t steps = 2'000'000;  // abstract work units (≈ limb operations, tree nodes visited)
  uint32_t max_integer_bits = 1 << 16;  // largest integer any operation may produce
  bool exceeded = false;                // sticky: set by the first operation that ran out

  // Spends `cost` steps; false (and exceeded = true) when not enough are left.
  bool Spend(uint64_t cost) {
    if (exceeded || cost > steps) {
      exceeded = true;
      return false;
    }
    steps -= cost;
    return true;
  }
};

// A signed arbitrary-precision integer (sign and magnitude, base 2^32 limbs).
class BigInt {
 public:
  BigInt() = default;
  BigInt(int64_t v);  // NOLINT: implicit on purpose, integers mix freely

  // Decimal digits with an optional leading '-' or '+'; nothing else. nullopt when malformed.
  static std::optional<BigInt> FromString(std::string_view decimal);

  bool is_zero() const { return limbs_.empty(); }
  bool negative() const { return negative_; }
  int sign() const { return is_zero() ? 0 : (negative_ ? -1 : 1); }
  size_t bits() const;  // of the magnitude; 0 for zero
  std::string ToString() const;
  // Nearest double (±inf when too large).
  double ToDouble() const;
  // The value when it fits in int64.
  std::optional<int64_t> ToInt64() const;

  friend bool operator==(const BigInt& a, const BigInt& b);
  friend bool operator<(const BigInt& a, const BigInt& b);
  BigInt operator-() const;
  friend BigInt operator+(const BigInt& a, const BigInt& b);
  friend BigInt operator-(const BigInt& a, const BigInt& b);

  // Budgeted: nullopt when the budget is exceeded or the result would exceed
  // budget.max_integer_bits.
  static std::optional<BigInt> Mul(const BigInt& a, const BigInt& b, Budget& budget);
  // Truncated division; REQUIRES: b != 0.
  static std::optional<BigInt> Div(const BigInt& a, const BigInt& b, Budget& budget);
  static std::optional<BigInt> Mod(const BigInt& a, const BigInt& b, Budget& budget);
  static std::optional<BigInt> Gcd(BigInt a, BigInt b, Budget& budget);
  static std::optional<BigInt> Pow(const BigInt& base, uint64_t exponent, Budget& budget);
  static std::optional<BigInt> Factorial(uint64_t n, Budget& budget);

 private:
  friend struct BigIntAccess;  // big_rational.cc's limb-level helpers

  bool negative_ = false;
  std::vector<uint32_t> limbs_;  // little-endian; no trailing zero limbs; empty for 0
};

// A rational num/den in lowest terms with den > 0.
class BigRational {
 public:
  BigRational() = default;
  BigRational(int64_t num, int64_t den = 1);  // REQUIRES: den != 0
  explicit BigRational(BigInt integer);
  // REQUIRES: den != 0. Budgeted normalisation; nullopt when over budget.
  static std::optional<BigRational> Make(BigInt num, BigInt den, Budget& budget);

  // "12", "-3.25", "1e-3", "3.1E8", ".5": exact (0.1 is 1/10, not a double). nullopt when
  // malformed or when the exponent's magnitude exceeds 1000. A size limit (exponent beyond 1000,
  // too many bits, steps) also sets budget.exceeded; a malformed text leaves it untouched.
  static std::optional<BigRational> FromDecimal(std::string_view text, Budget& budget);

  const BigInt& num() const { return num_; }
  const BigInt& den() const { return den_; }
  bool is_integer() const { return den_ == BigInt(1); }
  int sign() const { return num_.sign(); }
  double ToDouble() const;
  std::string ToString() const;  // "-3/4", "5"

  friend bool operator==(const BigRational& a, const BigRational& b);
  friend bool operator<(const BigRational& a, const BigRational& b);

  static std::optional<BigRational> Add(const BigRational& a, const BigRational& b, Budget& budget);
  static std::optional<BigRational> Sub(const BigRational& a, const BigRational& b, Budget& budget);
  static std::optional<BigRational> Mul(const BigRational& a, const BigRational& b, Budget& budget);
  // nullopt also when b == 0.
  static std::optional<BigRational> Div(const BigRational& a, const BigRational& b, Budget& budget);
  // Integer exponent, negative allowed (nullopt for 0^negative).
  static std::optional<BigRational> Pow(const BigRational& base, int64_t exponent, Budget& budget);

 private:
  BigInt num_ = 0;
  BigInt den_ = 1;
};

}  // namespace rlscore::scorers::math
