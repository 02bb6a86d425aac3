// core/fp.hpp: the operations really are separate roundings in this build
// (no contraction into fma), and fp::exp is accurate and exact at its edges.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/fp.hpp"

namespace {

using distzo::fp::exp;
using distzo::fp::mul_add;

TEST(Fp, MulAddIsTwoRoundingsNotAnFma) {
  // a·x = 1 + 2^-11 + 2^-24 needs 25 bits: rounded it is 1 + 2^-11 (ties to
  // even), so a·x + b is 0 with two roundings and 2^-24 with one (an fma).
  // volatile: the compiler must not fold the operands.
  volatile float a = 1.0f + 0x1p-12f, x = 1.0f + 0x1p-12f, b = -(1.0f + 0x1p-11f);
  EXPECT_EQ(mul_add(a, x, b), 0.0f) << "a multiply and an add were fused (-ffp-contract?)";
  EXPECT_EQ(std::fma(static_cast<float>(a), static_cast<float>(x), static_cast<float>(b)),
            0x1p-24f);  // the test can tell the two apart
}

double ulp_error(float got, double exact) {
  const double ulp = std::ldexp(1.0, std::ilogb(exact) - 23);
  return std::fabs(got - exact) / ulp;
}

float from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

TEST(Fp, ExpIsWithinTwoUlpOverItsWholeRange) {
  double worst = 0;
  float worst_x = 0;
  // Every 331st float of each sign, from 0 to ln(FLT_MAX) and to ln(FLT_MIN)
  // (3.3 million points: tiny, mid and largest arguments alike).
  for (const std::uint32_t sign : {0u, 0x80000000u}) {
    const float edge = sign ? -87.3365f : 88.7228f;
    for (std::uint32_t bits = 0;; bits += 331) {
      const float x = from_bits(sign | bits);
      if (std::fabs(x) > std::fabs(edge)) break;
      const double err = ulp_error(exp(x), std::exp(static_cast<double>(x)));
      if (err > worst) {
        worst = err;
        worst_x = x;
      }
    }
  }
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
  EXPECT_GT(worst, 0.0);
  std::printf("fp::exp: largest error %.3f ulp at x = %a\n", worst, static_cast<double>(worst_x));
}

TEST(Fp, ExpEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp(0.0f), 1.0f);
  EXPECT_EQ(exp(-0.0f), 1.0f);
  EXPECT_EQ(exp(-inf), 0.0f);
  EXPECT_EQ(exp(-88.0f), 0.0f);  // below ln(FLT_MIN): flushed, no subnormal
  EXPECT_EQ(exp(-1000.0f), 0.0f);
  EXPECT_EQ(exp(inf), inf);
  EXPECT_EQ(exp(88.73f), inf);
  EXPECT_TRUE(std::isfinite(exp(88.72f)));
  EXPECT_GT(exp(-87.33f), 0.0f);
  EXPECT_TRUE(std::isnan(exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_NEAR(exp(1.0f), 2.718281828f, 3e-7f);
}

}  // namespace
