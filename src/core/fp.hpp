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

}  // namespace distzo::fp
