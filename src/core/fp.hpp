#pragma once
// Floating-point operations whose every bit is specified: each one rounded
// to nearest-even on its own, never fused with another. The perturbation z
// (recipe v2) and the update of θ are written with these, so a CPU build and
// a CUDA build produce the same bits.
//
// The choice is "no fused multiply-add anywhere": fma is exactly rounded on
// every backend too, but on x86 it is fast only where the build enables FMA
// instructions and is otherwise a library call; separate multiplies and
// additions are fast everywhere and vectorise on any SIMD width. What keeps
// them separate:
//   - CUDA device code: the __f*_rn intrinsics, which nvcc never contracts
//     (its default --fmad=true would turn a*b + c into an fma);
//   - host code: CMake compiles every distzo target with -ffp-contract=off
//     (cmake/DistzoFlags.cmake), so the compiler never contracts either;
//     sqrt is IEEE's correctly rounded square root (-fno-math-errno only lets
//     it vectorise).

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace distzo::fp {

KOKKOS_FORCEINLINE_FUNCTION float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

KOKKOS_FORCEINLINE_FUNCTION float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

KOKKOS_FORCEINLINE_FUNCTION float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

KOKKOS_FORCEINLINE_FUNCTION float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

KOKKOS_FORCEINLINE_FUNCTION float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

/// a·x + b as two roundings (the Horner step of every polynomial here).
KOKKOS_FORCEINLINE_FUNCTION float mul_add(float a, float x, float b) { return add(mul(a, x), b); }

/// The 32 bits of a float as stored (no NaN canonicalisation: -0 and +0
/// differ), and back: bit operations on floats, the same on every backend.
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t to_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

KOKKOS_FORCEINLINE_FUNCTION float from_bits(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

namespace detail {
/// 2^n for n in [-126, 127], exactly.
KOKKOS_FORCEINLINE_FUNCTION float pow2(int n) {
  return from_bits(static_cast<std::uint32_t>(n + 127) << 23);
}
}  // namespace detail

/// e^x from the operations above, so every backend gives the same bits and
/// host loops over it vectorise (libm's expf is a call per element).
/// x = n ln2 + r with |r| <= ln2/2 (Cody–Waite: n·LN2_HI is exact), e^r =
/// 1 + r + r² p(r) with p a degree-5 least-squares fit on Chebyshev points
/// (error 7e-10 in exact arithmetic), then scaled by 2^n in two exact steps.
/// Within 2 ulp of e^x for results above FLT_MIN (tests/test_fp.cpp measures
/// 0.92 ulp at most on 3.3 million arguments); 0 for
/// x < -87.3365 (no subnormal results), +inf above 88.7228, NaN stays NaN.
KOKKOS_FORCEINLINE_FUNCTION float exp(float x) {
  constexpr float kLog2e = 0x1.715476p+0f, kRound = 0x1.8p+23f;  // 1.5·2^23: round to nearest
  constexpr float kLn2Hi = 0x1.62e400p-1f, kLn2Lo = 0x1.7f7d1cp-20f;
  constexpr float kP0 = 0x1p-1f, kP1 = 0x1.555556p-3f, kP2 = 0x1.5554eap-5f, kP3 = 0x1.1110c6p-7f,
                  kP4 = 0x1.6d431ap-10f, kP5 = 0x1.a1516cp-13f;
  constexpr float kLowest = -0x1.5d589ep+6f;  // ln(FLT_MIN) = -87.3365
  constexpr float kHighest = 0x1.62e42ep+6f;  // ln(FLT_MAX) = 88.7228
  // Clamped so that n stays in [-126, 128] and NaN becomes a number here;
  // the special cases are selected at the end.
  float c = x >= kLowest ? x : kLowest;
  c = c <= kHighest ? c : kHighest;
  const float nf = sub(add(mul(c, kLog2e), kRound), kRound);
  const int n = static_cast<int>(nf);
  const float r = sub(sub(c, mul(nf, kLn2Hi)), mul(nf, kLn2Lo));
  const float p =
      mul_add(mul_add(mul_add(mul_add(mul_add(kP5, r, kP4), r, kP3), r, kP2), r, kP1), r, kP0);
  const float er = add(add(mul(mul(r, r), p), r), 1.0f);
  const int half = n >> 1;  // 2^n = 2^half · 2^(n - half), each factor normal
  const float y = mul(mul(er, detail::pow2(half)), detail::pow2(n - half));
  const float inf = from_bits(0x7F800000u);
  return x != x ? x : x < kLowest ? 0.0f : x > kHighest ? inf : y;
}

}  // namespace distzo::fp
