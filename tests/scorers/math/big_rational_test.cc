#include "scorers/math/big_rational.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace rlscore::scorers::math {

// Readable failure messages (found by ADL, so outside the anonymous namespace).
void PrintTo(const BigInt& v, std::ostream* os) { *os << v.ToString(); }
void PrintTo(const BigRational& v, std::ostream* os) { *os << v.ToString(); }

namespace {

__extension__ using Int128 = __int128;
__extension__ using Uint128 = unsigned __int128;

std::string Int128ToString(Int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  Uint128 mag = negative ? Uint128{0} - static_cast<Uint128>(v) : static_cast<Uint128>(v);
  std::string digits;
  while (mag != 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(mag % 10)));
    mag /= 10;
  }
  return negative ? "-" + digits : digits;
}

BigInt Big(std::string_view decimal) {
  std::optional<BigInt> v = BigInt::FromString(decimal);
  EXPECT_TRUE(v.has_value()) << decimal;
  return v.value_or(BigInt());
}

BigInt Big(Int128 v) { return Big(Int128ToString(v)); }

// A signed value of up to `bits` bits (bits <= 126), uniformly random in magnitude width too so
// that small operands (one limb, zero) come up as well as full-width ones.
Int128 RandomInt128(std::mt19937_64& rng, int bits) {
  const int width = std::uniform_int_distribution<int>(0, bits)(rng);
  Uint128 v = (static_cast<Uint128>(rng()) << 64) | rng();
  v = width == 0 ? 0 : v >> (128 - width);
  const auto s = static_cast<Int128>(v);
  return (rng() & 1) != 0 ? -s : s;
}

// Random digits (no leading zero), optionally negative.
std::string RandomDecimal(std::mt19937_64& rng, size_t max_digits) {
  const size_t n = std::uniform_int_distribution<size_t>(1, max_digits)(rng);
  std::string s;
  s += static_cast<char>('1' + rng() % 9);
  for (size_t i = 1; i < n; ++i) s += static_cast<char>('0' + rng() % 10);
  return (rng() & 1) != 0 ? "-" + s : s;
}

// A random multi-limb value whose limbs favour the edge cases of long division (0, 1, 2^31,
// 2^32-1) so that Knuth D's correction and add-back paths are exercised.
BigInt RandomBig(std::mt19937_64& rng, int max_limbs) {
  const int limbs = std::uniform_int_distribution<int>(1, max_limbs)(rng);
  BigInt v = 0;
  Budget budget;
  budget.steps = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < limbs; ++i) {
    uint32_t limb = 0;
    switch (rng() % 6) {
      case 0:
        limb = 0;
        break;
      case 1:
        limb = 0xFFFF'FFFFu;
        break;
      case 2:
        limb = 0x8000'0000u;
        break;
      case 3:
        limb = 1;
        break;
      default:
        limb = static_cast<uint32_t>(rng());
        break;
    }
    v = BigInt::Mul(v, BigInt(int64_t{1} << 32), budget).value() + BigInt(int64_t{limb});
  }
  return (rng() & 1) != 0 ? -v : v;
}

BigInt Abs(const BigInt& v) { return v.negative() ? -v : v; }

TEST(BigInt, DecimalRoundTrip) {
  std::mt19937_64 rng(20240601);
  for (int i = 0; i < 2000; ++i) {
    const std::string s = RandomDecimal(rng, 200);
    SCOPED_TRACE(s);
    std::optional<BigInt> v = BigInt::FromString(s);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->ToString(), s);
    EXPECT_EQ(v->sign(), s[0] == '-' ? -1 : 1);
  }
}

TEST(BigInt, FromStringCanonicalises) {
  struct Case {
    std::string_view in;
    std::string_view out;
  };
  const Case cases[] = {
      {"0", "0"},
      {"-0", "0"},
      {"+0", "0"},
      {"000", "0"},
      {"+42", "42"},
      {"-0042", "-42"},
      {"999999999", "999999999"},
      {"1000000000", "1000000000"},
      {"4294967295", "4294967295"},
      {"4294967296", "4294967296"},
      {"18446744073709551616", "18446744073709551616"},
      {"-100000000000000000000000000000", "-100000000000000000000000000000"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    std::optional<BigInt> v = BigInt::FromString(c.in);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->ToString(), c.out);
  }
  EXPECT_FALSE(Big("-0").negative());
}

TEST(BigInt, FromStringRejectsMalformed) {
  for (std::string_view s :
       {"", "-", "+", " 1", "1 ", "1a", "--1", "+-1", "1.0", "0x10", "1e3", "1,000",
        "\xe2\x88\x92"
        "1"}) {
    SCOPED_TRACE(s);
    EXPECT_FALSE(BigInt::FromString(s).has_value());
  }
}

TEST(BigInt, Int64Boundaries) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (int64_t v :
       {kMin, kMin + 1, int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{4294967296}, kMax - 1, kMax}) {
    SCOPED_TRACE(v);
    const BigInt b(v);
    EXPECT_EQ(b.ToString(), std::to_string(v));
    EXPECT_EQ(b.ToInt64(), v);
    EXPECT_EQ(Big(std::to_string(v)), b);
  }
  EXPECT_FALSE(Big("9223372036854775808").ToInt64().has_value());
  EXPECT_FALSE(Big("-9223372036854775809").ToInt64().has_value());
  EXPECT_FALSE(Big("100000000000000000000000").ToInt64().has_value());
  EXPECT_EQ(BigInt(0).bits(), 0u);
  EXPECT_EQ(BigInt(1).bits(), 1u);
  EXPECT_EQ(BigInt(-255).bits(), 8u);
  EXPECT_EQ(Big("4294967296").bits(), 33u);
}

// Every operation against __int128 on random values of up to 100 bits (products on 62 bits so
// that they fit); quotient and remainder are truncated on both sides.
TEST(BigInt, ArithmeticMatchesInt128) {
  std::mt19937_64 rng(7);
  Budget budget;
  budget.steps = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < 5000; ++i) {
    const Int128 a = RandomInt128(rng, 100);
    const Int128 b = RandomInt128(rng, 100);
    SCOPED_TRACE(Int128ToString(a) + " op " + Int128ToString(b));
    const BigInt ba = Big(a);
    const BigInt bb = Big(b);
    EXPECT_EQ((ba + bb).ToString(), Int128ToString(a + b));
    EXPECT_EQ((ba - bb).ToString(), Int128ToString(a - b));
    EXPECT_EQ(ba + bb - bb, ba);
    EXPECT_EQ(-(-ba), ba);
    EXPECT_EQ(ba < bb, a < b);
    EXPECT_EQ(ba == bb, a == b);
    EXPECT_EQ(ba.ToDouble(), static_cast<double>(a));  // correctly rounded, like the compiler's

    const Int128 sa = a >> 38;  // 62 bits
    const Int128 sb = b >> 38;
    EXPECT_EQ(BigInt::Mul(Big(sa), Big(sb), budget).value().ToString(), Int128ToString(sa * sb));

    const BigInt product = BigInt::Mul(ba, bb, budget).value();
    if (b == 0) continue;
    EXPECT_EQ(BigInt::Div(product, bb, budget).value(), ba);
    EXPECT_TRUE(BigInt::Mod(product, bb, budget).value().is_zero());
    const BigInt q = BigInt::Div(ba, bb, budget).value();
    const BigInt r = BigInt::Mod(ba, bb, budget).value();
    EXPECT_EQ(q.ToString(), Int128ToString(a / b));
    EXPECT_EQ(r.ToString(), Int128ToString(a % b));
    EXPECT_EQ(BigInt::Mul(q, bb, budget).value() + r, ba);

    const BigInt g = BigInt::Gcd(ba, bb, budget).value();
    EXPECT_FALSE(g.negative());
    ASSERT_FALSE(g.is_zero());
    EXPECT_TRUE(BigInt::Mod(ba, g, budget).value().is_zero());
    EXPECT_TRUE(BigInt::Mod(bb, g, budget).value().is_zero());
    // ... and it is the greatest: the cofactors are coprime.
    const BigInt ca = BigInt::Div(ba, g, budget).value();
    const BigInt cb = BigInt::Div(bb, g, budget).value();
    EXPECT_EQ(BigInt::Gcd(ca, cb, budget).value(), BigInt(1));
  }
}

// Long division on multi-limb operands: q * b + r == a with |r| < |b| and r taking a's sign is
// the whole specification of truncated division.
TEST(BigInt, LongDivisionIdentity) {
  std::mt19937_64 rng(99);
  Budget budget;
  budget.steps = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < 3000; ++i) {
    const BigInt a = RandomBig(rng, 40);
    const BigInt b = RandomBig(rng, 20);
    if (b.is_zero()) continue;
    SCOPED_TRACE(a.ToString() + " / " + b.ToString());
    const BigInt q = BigInt::Div(a, b, budget).value();
    const BigInt r = BigInt::Mod(a, b, budget).value();
    EXPECT_EQ(BigInt::Mul(q, b, budget).value() + r, a);
    EXPECT_TRUE(Abs(r) < Abs(b));
    EXPECT_TRUE(r.is_zero() || r.negative() == a.negative());
    // Multiplication distributes and divides back exactly.
    const BigInt c = RandomBig(rng, 10);
    const BigInt ab = BigInt::Mul(a, b, budget).value();
    EXPECT_EQ(BigInt::Div(ab, b, budget).value(), a);
    EXPECT_EQ(BigInt::Mul(a, b + c, budget).value(), ab + BigInt::Mul(a, c, budget).value());
  }
}

TEST(BigInt, DivisionByZeroIsRefusedNotCrashed) {
  Budget budget;
  EXPECT_FALSE(BigInt::Div(BigInt(5), BigInt(0), budget).has_value());
  EXPECT_FALSE(BigInt::Mod(BigInt(5), BigInt(0), budget).has_value());
  EXPECT_FALSE(budget.exceeded);
}

TEST(BigInt, Gcd) {
  Budget budget;
  EXPECT_EQ(BigInt::Gcd(0, 0, budget).value(), BigInt(0));
  EXPECT_EQ(BigInt::Gcd(0, -7, budget).value(), BigInt(7));
  EXPECT_EQ(BigInt::Gcd(-12, 18, budget).value(), BigInt(6));
  EXPECT_EQ(BigInt::Gcd(17, 5, budget).value(), BigInt(1));
}

TEST(BigInt, Factorials) {
  Budget budget;
  EXPECT_EQ(BigInt::Factorial(0, budget).value(), BigInt(1));
  EXPECT_EQ(BigInt::Factorial(1, budget).value(), BigInt(1));
  EXPECT_EQ(BigInt::Factorial(20, budget).value(), BigInt(2432902008176640000));
  EXPECT_EQ(BigInt::Factorial(30, budget).value().ToString(), "265252859812191058636308480000000");
  const std::string f100 = BigInt::Factorial(100, budget).value().ToString();
  EXPECT_EQ(f100.size(), 158u);
  EXPECT_EQ(f100,
            "9332621544394415268169923885626670049071596826438162146859296389521759999322991560894"
            "1463976156518286253697920827223758251185210916864000000000000000000000000");
  EXPECT_FALSE(budget.exceeded);
}

TEST(BigInt, Powers) {
  Budget budget;
  EXPECT_EQ(BigInt::Pow(2, 1000, budget).value().ToString(),
            "1071508607186267320948425049060001810561404811705533607443750388370351051124936122493"
            "1983788156958581275946729175531468251871452856923140435984577574698574803934567774824"
            "2309854210746050623711418779541821530464749835819412673987675591655439460770629145711"
            "96477686542167660429831652624386837205668069376");
  EXPECT_EQ(BigInt::Pow(0, 0, budget).value(), BigInt(1));
  EXPECT_EQ(BigInt::Pow(0, 7, budget).value(), BigInt(0));
  EXPECT_EQ(BigInt::Pow(-2, 63, budget).value(), BigInt(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(BigInt::Pow(-3, 4, budget).value(), BigInt(81));
  EXPECT_EQ(BigInt::Pow(7, 1, budget).value(), BigInt(7));
  // |base| == 1 never grows, whatever the exponent.
  EXPECT_EQ(BigInt::Pow(1, std::numeric_limits<uint64_t>::max(), budget).value(), BigInt(1));
  EXPECT_EQ(BigInt::Pow(-1, std::numeric_limits<uint64_t>::max(), budget).value(), BigInt(-1));
  EXPECT_EQ(BigInt::Pow(-1, 1ull << 62, budget).value(), BigInt(1));
  const std::string p3 = BigInt::Pow(3, 2000, budget).value().ToString();
  EXPECT_EQ(p3.size(), 955u);
  EXPECT_EQ(p3.substr(0, 30), "174787125172265160965997461916");
  EXPECT_FALSE(budget.exceeded);
}

// 5^(5^(5^5)): the inner 5^3125 is fine, the next exponent (far beyond 64 bits, so here its
// largest stand-ins) must be refused up front: exceeded, nullopt, and (no work done) almost no
// steps spent.
TEST(BigIntBudget, TowerOfPowersIsRefusedBeforeWork) {
  Budget budget;
  const std::optional<BigInt> inner = BigInt::Pow(5, 3125, budget);
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(inner->ToString().size(), 2185u);
  for (uint64_t exponent :
       {uint64_t{7450580596923828125u} /* 5^27 */, std::numeric_limits<uint64_t>::max(),
        uint64_t{1} << 40, uint64_t{65536}}) {
    SCOPED_TRACE(exponent);
    Budget b;
    const uint64_t before = b.steps;
    EXPECT_FALSE(BigInt::Pow(5, exponent, b).has_value());
    EXPECT_TRUE(b.exceeded);
    EXPECT_LE(before - b.steps, 1u);
  }
  Budget b;
  EXPECT_FALSE(BigInt::Pow(*inner, 3125, b).has_value());
  EXPECT_TRUE(b.exceeded);
}

TEST(BigIntBudget, HugeFactorialIsRefusedBeforeWork) {
  for (uint64_t n :
       {uint64_t{1'000'000'000}, uint64_t{100'000}, std::numeric_limits<uint64_t>::max()}) {
    SCOPED_TRACE(n);
    Budget budget;
    const uint64_t before = budget.steps;
    EXPECT_FALSE(BigInt::Factorial(n, budget).has_value());
    EXPECT_TRUE(budget.exceeded);
    EXPECT_LE(before - budget.steps, 1u);
    // Refused for its size, not merely for the steps it would take.
    Budget unlimited_steps;
    unlimited_steps.steps = std::numeric_limits<uint64_t>::max();
    EXPECT_FALSE(BigInt::Factorial(n, unlimited_steps).has_value());
    EXPECT_TRUE(unlimited_steps.exceeded);
    EXPECT_LE(std::numeric_limits<uint64_t>::max() - unlimited_steps.steps, 1u);
  }
}

TEST(BigIntBudget, MaxIntegerBitsIsTheBoundary) {
  Budget budget;
  budget.steps = std::numeric_limits<uint64_t>::max();
  const std::optional<BigInt> edge = BigInt::Pow(2, budget.max_integer_bits - 1, budget);
  ASSERT_TRUE(edge.has_value());
  EXPECT_EQ(edge->bits(), budget.max_integer_bits);
  EXPECT_FALSE(budget.exceeded);
  EXPECT_FALSE(BigInt::Pow(2, budget.max_integer_bits, budget).has_value());
  EXPECT_TRUE(budget.exceeded);

  Budget mul;
  mul.steps = std::numeric_limits<uint64_t>::max();
  const BigInt a = BigInt::Pow(2, 40000, mul).value();
  const BigInt b = BigInt::Pow(2, 30000, mul).value();
  const uint64_t before = mul.steps;
  EXPECT_FALSE(BigInt::Mul(a, b, mul).has_value());
  EXPECT_TRUE(mul.exceeded);
  EXPECT_EQ(mul.steps, before);  // refused before multiplying, not after

  // The borderline product (bits(a) + bits(b) = max + 1, result max bits or max + 1).
  Budget border;
  border.max_integer_bits = 64;
  EXPECT_TRUE(BigInt::Mul(Big("4294967295"), Big("4294967297"), border).has_value());  // 2^64-1
  EXPECT_FALSE(border.exceeded);
  EXPECT_FALSE(BigInt::Mul(Big("4294967296"), Big("4294967296"), border).has_value());  // 2^64
  EXPECT_TRUE(border.exceeded);
}

// 5910! has 65528 bits, 5911! has 65540: the Stirling estimate must not refuse the former.
TEST(BigIntBudget, FactorialAtTheBitLimit) {
  Budget budget;
  budget.steps = std::numeric_limits<uint64_t>::max();
  const std::optional<BigInt> fits = BigInt::Factorial(5910, budget);
  ASSERT_TRUE(fits.has_value());
  EXPECT_EQ(fits->bits(), 65528u);
  EXPECT_FALSE(budget.exceeded);
  EXPECT_FALSE(BigInt::Factorial(5911, budget).has_value());
  EXPECT_TRUE(budget.exceeded);
}

TEST(BigIntBudget, StepsRunOutAndStaySpent) {
  Budget budget;
  budget.steps = 10;
  const BigInt big = Big("1" + std::string(100, '0'));  // 11 limbs
  EXPECT_FALSE(BigInt::Mul(big, big, budget).has_value());
  EXPECT_TRUE(budget.exceeded);
  // Sticky: even a trivial operation now fails.
  EXPECT_FALSE(BigInt::Mul(2, 3, budget).has_value());
  EXPECT_FALSE(BigInt::Div(6, 3, budget).has_value());

  Budget factorial;
  factorial.steps = 1000;
  EXPECT_FALSE(BigInt::Factorial(2000, factorial).has_value());
  EXPECT_TRUE(factorial.exceeded);
}

TEST(BigRational, FromDecimal) {
  struct Case {
    std::string_view text;
    BigRational want;
  };
  const Case cases[] = {
      {"0.125", BigRational(1, 8)},
      {"1e-3", BigRational(1, 1000)},
      {"3.1E8", BigRational(310000000)},
      {"-.5", BigRational(-1, 2)},
      {".5", BigRational(1, 2)},
      {"5.", BigRational(5)},
      {"+3", BigRational(3)},
      {"1e+3", BigRational(1000)},
      {"12", BigRational(12)},
      {"-3.25", BigRational(-13, 4)},
      {"1.500", BigRational(3, 2)},
      {"0.000", BigRational(0)},
      {"-0", BigRational(0)},
      {"0e5", BigRational(0)},
      {"007", BigRational(7)},
      {"2.5e-1", BigRational(1, 4)},
      {"0.1", BigRational(1, 10)},
      {"1.25E2", BigRational(125)},
      {"-1.0e0", BigRational(-1)},
      {"123456789.987654321", BigRational(123456789987654321, 1000000000)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Budget budget;
    std::optional<BigRational> got = BigRational::FromDecimal(c.text, budget);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->ToString(), c.want.ToString());
    EXPECT_TRUE(*got == c.want);
    EXPECT_FALSE(budget.exceeded);
  }
}

TEST(BigRational, FromDecimalLargeExponents) {
  Budget budget;
  const std::optional<BigRational> big = BigRational::FromDecimal("1e1000", budget);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->ToString(), "1" + std::string(1000, '0'));
  const std::optional<BigRational> small = BigRational::FromDecimal("-2.5e-1000", budget);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->ToString(), "-1/4" + std::string(999, '0'));
  EXPECT_FALSE(budget.exceeded);
  for (std::string_view s : {"1e1001", "1e-1001", "1e99999999999999999999", "0.5e-5000"}) {
    SCOPED_TRACE(s);
    Budget b;
    EXPECT_FALSE(BigRational::FromDecimal(s, b).has_value());
    EXPECT_TRUE(b.exceeded);  // a limit, not a malformed number
  }
}

TEST(BigRational, FromDecimalRejectsMalformed) {
  for (std::string_view s : {"1.2.3",
                             "e5",
                             "",
                             ".",
                             "-",
                             "+",
                             "-.",
                             ".e1",
                             "1e",
                             "1e+",
                             "1e-",
                             " 1",
                             "1 ",
                             "1,000",
                             "0x1",
                             "1e5.5",
                             "--1",
                             "+-1",
                             "1/2",
                             "1e1e1",
                             "inf",
                             "nan",
                             "1.5f",
                             "\xe2\x88\x92"
                             "1"}) {
    SCOPED_TRACE(s);
    Budget budget;
    EXPECT_FALSE(BigRational::FromDecimal(s, budget).has_value());
    EXPECT_FALSE(budget.exceeded);
  }
}

TEST(BigRational, FromDecimalRoundTripsIntegers) {
  std::mt19937_64 rng(31337);
  for (int i = 0; i < 500; ++i) {
    const std::string s = RandomDecimal(rng, 200);
    SCOPED_TRACE(s);
    Budget budget;
    std::optional<BigRational> r = BigRational::FromDecimal(s, budget);
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->is_integer());
    EXPECT_EQ(r->ToString(), s);
    EXPECT_EQ(r->num(), Big(s));
  }
}

TEST(BigRational, Normalisation) {
  Budget budget;
  const std::optional<BigRational> r = BigRational::Make(6, -4, budget);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->ToString(), "-3/2");
  EXPECT_EQ(r->num(), BigInt(-3));
  EXPECT_EQ(r->den(), BigInt(2));
  EXPECT_EQ(BigRational(6, -4).ToString(), "-3/2");
  EXPECT_EQ(BigRational(-6, -4).ToString(), "3/2");
  EXPECT_EQ(BigRational(0, -5).ToString(), "0");
  EXPECT_EQ(BigRational(0, -5).den(), BigInt(1));
  EXPECT_EQ(BigRational::Make(0, -5, budget).value().den(), BigInt(1));
  EXPECT_FALSE(BigRational::Make(0, -5, budget).value().num().negative());
  EXPECT_FALSE(BigRational::Make(1, 0, budget).has_value());
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(BigRational(kMin, kMin).ToString(), "1");
  EXPECT_EQ(BigRational(kMin, -1).ToString(), "9223372036854775808");
  EXPECT_EQ(BigRational(2, kMin).ToString(), "-1/4611686018427387904");
  EXPECT_TRUE(BigRational(10, 5).is_integer());
  EXPECT_EQ(BigRational(BigInt(-7)).ToString(), "-7");
}

// Random small fractions against int64 arithmetic, normalised by the (int64, int64) constructor.
TEST(BigRational, ArithmeticMatchesInt64) {
  std::mt19937_64 rng(4242);
  std::uniform_int_distribution<int64_t> val(-1000, 1000);
  Budget budget;
  budget.steps = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < 3000; ++i) {
    const int64_t an = val(rng), bn = val(rng);
    int64_t ad = val(rng), bd = val(rng);
    if (ad == 0) ad = 1;
    if (bd == 0) bd = -1;
    const BigRational a(an, ad), b(bn, bd);
    SCOPED_TRACE(a.ToString() + " op " + b.ToString());
    EXPECT_TRUE(BigRational::Add(a, b, budget).value() == BigRational(an * bd + bn * ad, ad * bd));
    EXPECT_TRUE(BigRational::Sub(a, b, budget).value() == BigRational(an * bd - bn * ad, ad * bd));
    EXPECT_TRUE(BigRational::Mul(a, b, budget).value() == BigRational(an * bn, ad * bd));
    if (bn == 0) {
      EXPECT_FALSE(BigRational::Div(a, b, budget).has_value());
    } else {
      EXPECT_TRUE(BigRational::Div(a, b, budget).value() == BigRational(an * bd, ad * bn));
    }
    EXPECT_EQ(a < b, an * bd * (ad * bd > 0 ? 1 : -1) < bn * ad * (ad * bd > 0 ? 1 : -1));
    EXPECT_EQ(a == b, an * bd == bn * ad);
    EXPECT_DOUBLE_EQ(a.ToDouble(), static_cast<double>(an) / static_cast<double>(ad));
  }
  EXPECT_FALSE(budget.exceeded);
}

TEST(BigRational, Ordering) {
  const std::vector<BigRational> ascending = {
      BigRational(-1000000), BigRational(-3, 2), BigRational(-1),         BigRational(-1, 2),
      BigRational(-1, 3),    BigRational(0),     BigRational(1, 1000000), BigRational(1, 3),
      BigRational(1, 2),     BigRational(2, 3),  BigRational(1),          BigRational(3, 2),
      BigRational(1000000)};
  for (size_t i = 0; i < ascending.size(); ++i) {
    SCOPED_TRACE(ascending[i].ToString());
    EXPECT_FALSE(ascending[i] < ascending[i]);
    EXPECT_TRUE(ascending[i] == ascending[i]);
    for (size_t j = i + 1; j < ascending.size(); ++j) {
      SCOPED_TRACE(ascending[j].ToString());
      EXPECT_TRUE(ascending[i] < ascending[j]);
      EXPECT_FALSE(ascending[j] < ascending[i]);
      EXPECT_FALSE(ascending[i] == ascending[j]);
    }
  }
}

TEST(BigRational, ToDouble) {
  EXPECT_DOUBLE_EQ(BigRational(1, 3).ToDouble(), 1.0 / 3.0);
  EXPECT_NEAR(BigRational(1, 3).ToDouble(), 0.3333333333333333, 1e-16);
  EXPECT_DOUBLE_EQ(BigRational(-2, 3).ToDouble(), -2.0 / 3.0);
  EXPECT_DOUBLE_EQ(BigRational(1, 7).ToDouble(), 1.0 / 7.0);
  EXPECT_EQ(BigRational(0).ToDouble(), 0.0);
  EXPECT_EQ(BigRational(-5).ToDouble(), -5.0);
  Budget budget;
  // Numerator and denominator each beyond double range: the quotient is still right.
  const BigInt big = BigInt::Pow(10, 400, budget).value();
  EXPECT_DOUBLE_EQ(BigRational::Make(big + BigInt(1), big, budget).value().ToDouble(), 1.0);
  EXPECT_DOUBLE_EQ(
      BigRational::Make(BigInt::Mul(big, 3, budget).value(), big + big, budget).value().ToDouble(),
      1.5);
  EXPECT_EQ(BigRational(big).ToDouble(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(BigInt::Pow(2, 1000, budget).value().ToDouble(), std::ldexp(1.0, 1000));
  EXPECT_EQ(BigInt::Pow(-2, 1023, budget).value().ToDouble(), -std::ldexp(1.0, 1023));
  EXPECT_EQ(BigInt::Pow(2, 1024, budget).value().ToDouble(),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(BigRational::FromDecimal("1e-400", budget).value().ToDouble(), 0.0);
  EXPECT_DOUBLE_EQ(BigRational::FromDecimal("1.5e-300", budget).value().ToDouble(), 1.5e-300);
  EXPECT_DOUBLE_EQ(BigRational::FromDecimal("6.02214076e23", budget).value().ToDouble(),
                   6.02214076e23);
}

TEST(BigRational, ToDoubleOfRandomFractions) {
  std::mt19937_64 rng(555);
  for (int i = 0; i < 2000; ++i) {
    const Int128 n = RandomInt128(rng, 100);
    Int128 d = RandomInt128(rng, 100);
    if (d == 0) d = 3;
    Budget budget;
    const BigRational r = BigRational::Make(Big(n), Big(d), budget).value();
    SCOPED_TRACE(r.ToString());
    const double want =
        static_cast<double>(static_cast<long double>(n) / static_cast<long double>(d));
    EXPECT_NEAR(r.ToDouble(), want, std::abs(want) * 4e-16);
  }
}

TEST(BigRational, Pow) {
  Budget budget;
  EXPECT_EQ(BigRational::Pow(BigRational(2, 3), -3, budget).value().ToString(), "27/8");
  EXPECT_EQ(BigRational::Pow(BigRational(-2, 3), 3, budget).value().ToString(), "-8/27");
  EXPECT_EQ(BigRational::Pow(BigRational(-2, 3), -3, budget).value().ToString(), "-27/8");
  EXPECT_EQ(BigRational::Pow(BigRational(-2, 3), -2, budget).value().ToString(), "9/4");
  EXPECT_EQ(BigRational::Pow(BigRational(0), 0, budget).value().ToString(), "1");
  EXPECT_EQ(BigRational::Pow(BigRational(0), 5, budget).value().ToString(), "0");
  EXPECT_EQ(BigRational::Pow(BigRational(7, 5), 0, budget).value().ToString(), "1");
  EXPECT_EQ(BigRational::Pow(BigRational(1, 2), -1000, budget).value(),
            BigRational(BigInt::Pow(2, 1000, budget).value()));
  EXPECT_FALSE(budget.exceeded);
  EXPECT_FALSE(BigRational::Pow(BigRational(0), -1, budget).has_value());
  EXPECT_FALSE(budget.exceeded);  // undefined, not over budget
  EXPECT_FALSE(
      BigRational::Pow(BigRational(5), std::numeric_limits<int64_t>::min(), budget).has_value());
  EXPECT_TRUE(budget.exceeded);
}

// The classic trap (docs/DESIGN.md §2): 1/2004! and 1/2006! are both ~0 as doubles but differ
// exactly, by a factor of 2005 * 2006. 2006! has 19119 bits: inside the default budget.
TEST(BigRational, ReciprocalsOfNeighbouringFactorialsDiffer) {
  Budget budget;
  const std::optional<BigInt> f2004 = BigInt::Factorial(2004, budget);
  const std::optional<BigInt> f2006 = BigInt::Factorial(2006, budget);
  ASSERT_TRUE(f2004.has_value());
  ASSERT_TRUE(f2006.has_value());
  EXPECT_EQ(f2006->bits(), 19119u);
  const std::optional<BigRational> a = BigRational::Make(1, *f2004, budget);
  const std::optional<BigRational> b = BigRational::Make(1, *f2006, budget);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->ToDouble(), b->ToDouble());  // both underflow to 0: doubles cannot tell them apart
  EXPECT_FALSE(*a == *b);
  EXPECT_TRUE(*b < *a);
  EXPECT_FALSE(*a < *b);
  const std::optional<BigRational> ratio = BigRational::Div(*a, *b, budget);
  ASSERT_TRUE(ratio.has_value());
  EXPECT_TRUE(*ratio == BigRational(2005 * 2006));
  EXPECT_FALSE(budget.exceeded);
}

}  // namespace
}  // namespace rlscore::scorers::math
