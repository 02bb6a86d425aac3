#pragma once
// Philox-4x32 counter-based random number generator (Salmon, Moraes, Dror and
// Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11; the Random123
// library). A pure function of a 128-bit counter and a 64-bit key: no state, so
// any element of any stream can be generated on any rank, in any order, on the
// host or in a device kernel, and comes out the same.
//
// One round maps counter (c0, c1, c2, c3) and key (k0, k1) to
//   (hi(M1*c2) ^ c1 ^ k0,  lo(M1*c2),  hi(M0*c0) ^ c3 ^ k1,  lo(M0*c0))
// where hi/lo are the upper/lower 32 bits of the 64-bit product,
// M0 = 0xD2511F53 and M1 = 0xCD9E8D57. Between rounds the key is bumped by the
// Weyl constants: k0 += 0x9E3779B9, k1 += 0xBB67AE85 (mod 2^32). The first
// round uses the key as given. Philox-4x32-10 is ten rounds; it matches the
// Random123 known-answer vectors (tests/test_philox.cpp).

#include <Kokkos_Core.hpp>
#include <cstdint>

// Host builds with AVX-512 or AVX2 (-march=native on a recent x86,
// x86-64-v3) get an intrinsics form of the bulk generator, the widest the
// build allows; CUDA translation units never do. An AVX-512 build compiles
// the AVX2 form too, so that its tests run on every AVX2 machine.
#if defined(__AVX2__) && !defined(__CUDACC__)
#include <immintrin.h>
#define DISTZO_PHILOX_AVX2 1
#if defined(__AVX512F__)
#define DISTZO_PHILOX_AVX512 1
#endif
#endif

namespace distzo {

/// 64-bit Philox key as two 32-bit words.
struct PhiloxKey {
  std::uint32_t k[2];
};

/// 128-bit Philox counter or output block as four 32-bit words.
struct PhiloxBlock {
  std::uint32_t v[4];
};

namespace philox_detail {

constexpr std::uint32_t kM0 = 0xD2511F53u;
constexpr std::uint32_t kM1 = 0xCD9E8D57u;
constexpr std::uint32_t kW0 = 0x9E3779B9u;
constexpr std::uint32_t kW1 = 0xBB67AE85u;

/// Upper and lower 32 bits of a*b. A 64-bit product of 32-bit operands is
/// exact on every backend (nvcc turns it into mul.lo/mul.hi), so no intrinsics.
KOKKOS_FORCEINLINE_FUNCTION void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi,
                                         std::uint32_t& lo) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b);
  hi = static_cast<std::uint32_t>(product >> 32);
  lo = static_cast<std::uint32_t>(product);
}

KOKKOS_FORCEINLINE_FUNCTION PhiloxBlock philox_round(PhiloxBlock c, PhiloxKey key) {
  std::uint32_t hi0, lo0, hi1, lo1;
  mulhilo(kM0, c.v[0], hi0, lo0);
  mulhilo(kM1, c.v[2], hi1, lo1);
  PhiloxBlock out;
  out.v[0] = hi1 ^ c.v[1] ^ key.k[0];
  out.v[1] = lo1;
  out.v[2] = hi0 ^ c.v[3] ^ key.k[1];
  out.v[3] = lo0;
  return out;
}

}  // namespace philox_detail

/// Philox-4x32 with `Rounds` rounds. Only 10 is used by distzo; other round
/// counts exist so the tests can check the key schedule against Random123's
/// 7-round vectors as well.
template <int Rounds>
KOKKOS_INLINE_FUNCTION PhiloxBlock philox4x32(PhiloxBlock ctr, PhiloxKey key) {
  static_assert(Rounds >= 1, "Philox needs at least one round");
  ctr = philox_detail::philox_round(ctr, key);
  for (int r = 1; r < Rounds; ++r) {
    key.k[0] += philox_detail::kW0;
    key.k[1] += philox_detail::kW1;
    ctr = philox_detail::philox_round(ctr, key);
  }
  return ctr;
}

/// Philox-4x32-10: the generator behind every perturbation z.
KOKKOS_INLINE_FUNCTION PhiloxBlock philox4x32_10(PhiloxBlock ctr, PhiloxKey key) {
  return philox4x32<10>(ctr, key);
}

namespace philox_detail {

/// philox4x32_10_n in plain C++, written for any compiler to vectorise: the
/// loops run over independent counters, with every key and two interleaved
/// halves of the counters in one iteration, so that 2K dependency chains of
/// multiplies are in flight at once. (GCC 12 widens each 32-bit lane to 64
/// bits for the products; the AVX-512 form below multiplies in place.)
template <int N, int K>
KOKKOS_INLINE_FUNCTION void philox4x32_10_n_portable(std::uint64_t first, std::uint32_t c2,
                                                     std::uint32_t c3, const PhiloxKey (&keys)[K],
                                                     std::uint32_t (&out)[K][4][N]) {
  constexpr int kWays = N % 2 == 0 ? 2 : 1;
  constexpr int kStride = N / kWays;
  constexpr int kChains = kWays * K;
  for (int j = 0; j < kStride; ++j) {
    std::uint32_t x0[kChains], x1[kChains], x2[kChains], x3[kChains];
    std::uint32_t k0[kChains], k1[kChains];
    for (int c = 0; c < kChains; ++c) {
      const int way = c % kWays, key = c / kWays;
      const std::uint64_t b = first + static_cast<std::uint64_t>(j + way * kStride);
      x0[c] = static_cast<std::uint32_t>(b);
      x1[c] = static_cast<std::uint32_t>(b >> 32);
      x2[c] = c2;
      x3[c] = c3;
      k0[c] = keys[key].k[0];
      k1[c] = keys[key].k[1];
    }
    for (int r = 0; r < 10; ++r) {
      for (int c = 0; c < kChains; ++c) {
        std::uint32_t hi0, lo0, hi1, lo1;
        mulhilo(kM0, x0[c], hi0, lo0);
        mulhilo(kM1, x2[c], hi1, lo1);
        x0[c] = hi1 ^ x1[c] ^ k0[c];
        x1[c] = lo1;
        x2[c] = hi0 ^ x3[c] ^ k1[c];
        x3[c] = lo0;
        k0[c] += kW0;
        k1[c] += kW1;
      }
    }
    for (int c = 0; c < kChains; ++c) {
      const int way = c % kWays, key = c / kWays;
      out[key][0][j + way * kStride] = x0[c];
      out[key][1][j + way * kStride] = x1[c];
      out[key][2][j + way * kStride] = x2[c];
      out[key][3][j + way * kStride] = x3[c];
    }
  }
}

#if defined(DISTZO_PHILOX_AVX512)
/// hi and lo words of m * x in each of 16 lanes: even and odd lanes through
/// two 32x32->64 multiplies, then blended back.
inline void mulhilo16(__m512i m, __m512i x, __m512i& hi, __m512i& lo) {
  const __mmask8 all = 0xFF;  // maskz forms: the unmasked ones trip GCC 12's -Wuninitialized
  const __m512i pe = _mm512_maskz_mul_epu32(all, x, m);
  const __m512i po = _mm512_maskz_mul_epu32(all, _mm512_maskz_srli_epi64(all, x, 32), m);
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_maskz_srli_epi64(all, pe, 32), po);
  lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_maskz_slli_epi64(all, po, 32));
}
/// philox4x32_10_n_portable with AVX-512 integer instructions, N % 16 == 0:
/// the same words (tests/test_philox.cpp compares them), about 10 % faster
/// in the fused update kernel on the EPYC of perf/RESULTS.md.
template <int N, int K>
inline void philox4x32_10_n_avx512(std::uint64_t first, std::uint32_t c2, std::uint32_t c3,
                                   const PhiloxKey (&keys)[K], std::uint32_t (&out)[K][4][N]) {
  const __m512i m0 = _mm512_set1_epi64(kM0), m1 = _mm512_set1_epi64(kM1);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  constexpr int V = N / 16, C = V * K;
  __m512i x0[C], x1[C], x2[C], x3[C], k0[C], k1[C];
  for (int c = 0; c < C; ++c) {
    const int v = c % V, key = c / V;
    const std::uint64_t b = first + 16 * static_cast<std::uint64_t>(v);
    const __m512i base = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(b)));
    const __m512i lo = _mm512_add_epi32(base, iota);
    const __mmask16 carry = _mm512_cmplt_epu32_mask(lo, base);
    const __m512i hi = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(b >> 32)));
    x0[c] = lo;
    x1[c] = _mm512_mask_add_epi32(hi, carry, hi, _mm512_set1_epi32(1));
    x2[c] = _mm512_set1_epi32(static_cast<int>(c2));
    x3[c] = _mm512_set1_epi32(static_cast<int>(c3));
    k0[c] = _mm512_set1_epi32(static_cast<int>(keys[key].k[0]));
    k1[c] = _mm512_set1_epi32(static_cast<int>(keys[key].k[1]));
  }
  const __m512i w0 = _mm512_set1_epi32(static_cast<int>(kW0));
  const __m512i w1 = _mm512_set1_epi32(static_cast<int>(kW1));
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < C; ++c) {
      __m512i hi0, lo0, hi1, lo1;
      mulhilo16(m0, x0[c], hi0, lo0);
      mulhilo16(m1, x2[c], hi1, lo1);
      x0[c] = _mm512_ternarylogic_epi32(hi1, x1[c], k0[c], 0x96);
      x1[c] = lo1;
      x2[c] = _mm512_ternarylogic_epi32(hi0, x3[c], k1[c], 0x96);
      x3[c] = lo0;
      k0[c] = _mm512_add_epi32(k0[c], w0);
      k1[c] = _mm512_add_epi32(k1[c], w1);
    }
  }
  for (int c = 0; c < C; ++c) {
    const int v = c % V, key = c / V;
    _mm512_storeu_si512(&out[key][0][16 * v], x0[c]);
    _mm512_storeu_si512(&out[key][1][16 * v], x1[c]);
    _mm512_storeu_si512(&out[key][2][16 * v], x2[c]);
    _mm512_storeu_si512(&out[key][3][16 * v], x3[c]);
  }
}
#endif

#if defined(DISTZO_PHILOX_AVX2)
/// hi and lo words of m * x in each of 8 lanes: even and odd lanes through
/// two 32x32->64 multiplies (vpmuludq, four products each), then blended.
inline void mulhilo8(__m256i m, __m256i x, __m256i& hi, __m256i& lo) {
  const __m256i pe = _mm256_mul_epu32(x, m);
  const __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
  lo = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
}
/// philox4x32_10_n_portable with AVX2 integer instructions, N % 8 == 0: the
/// same words (tests/test_philox.cpp compares them). GCC 12 vectorises the
/// portable form by widening every lane to 64 bits; this multiplies four
/// lanes at a time in place, like the AVX-512 form at half its width.
template <int N, int K>
inline void philox4x32_10_n_avx2(std::uint64_t first, std::uint32_t c2, std::uint32_t c3,
                                 const PhiloxKey (&keys)[K], std::uint32_t (&out)[K][4][N]) {
  const __m256i m0 = _mm256_set1_epi64x(kM0), m1 = _mm256_set1_epi64x(kM1);
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // Unsigned a < b as signed compares of the words with their top bit flipped.
  const __m256i top = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  constexpr int V = N / 8, C = V * K;
  __m256i x0[C], x1[C], x2[C], x3[C], k0[C], k1[C];
  for (int c = 0; c < C; ++c) {
    const int v = c % V, key = c / V;
    const std::uint64_t b = first + 8 * static_cast<std::uint64_t>(v);
    const __m256i base = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(b)));
    const __m256i lo = _mm256_add_epi32(base, iota);
    // -1 in the lanes whose low word wrapped past 2^32: the high word gains 1.
    const __m256i carry =
        _mm256_cmpgt_epi32(_mm256_xor_si256(base, top), _mm256_xor_si256(lo, top));
    const __m256i hi = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(b >> 32)));
    x0[c] = lo;
    x1[c] = _mm256_sub_epi32(hi, carry);
    x2[c] = _mm256_set1_epi32(static_cast<int>(c2));
    x3[c] = _mm256_set1_epi32(static_cast<int>(c3));
    k0[c] = _mm256_set1_epi32(static_cast<int>(keys[key].k[0]));
    k1[c] = _mm256_set1_epi32(static_cast<int>(keys[key].k[1]));
  }
  const __m256i w0 = _mm256_set1_epi32(static_cast<int>(kW0));
  const __m256i w1 = _mm256_set1_epi32(static_cast<int>(kW1));
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < C; ++c) {
      __m256i hi0, lo0, hi1, lo1;
      mulhilo8(m0, x0[c], hi0, lo0);
      mulhilo8(m1, x2[c], hi1, lo1);
      x0[c] = _mm256_xor_si256(_mm256_xor_si256(hi1, x1[c]), k0[c]);
      x1[c] = lo1;
      x2[c] = _mm256_xor_si256(_mm256_xor_si256(hi0, x3[c]), k1[c]);
      x3[c] = lo0;
      k0[c] = _mm256_add_epi32(k0[c], w0);
      k1[c] = _mm256_add_epi32(k1[c], w1);
    }
  }
  for (int c = 0; c < C; ++c) {
    const int v = c % V, key = c / V;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[key][0][8 * v]), x0[c]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[key][1][8 * v]), x1[c]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[key][2][8 * v]), x2[c]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[key][3][8 * v]), x3[c]);
  }
}
#endif

}  // namespace philox_detail

/// Philox-4x32-10 of the N counters (lo(b), hi(b), c2, c3) for b = first ..
/// first + N - 1, under each of K keys: out[k][word][i] is word `word` of
/// block first + i under key k. The same values as N*K calls of
/// philox4x32_10; the bulk form for host kernels, which vectorise it.
template <int N, int K>
KOKKOS_INLINE_FUNCTION void philox4x32_10_n(std::uint64_t first, std::uint32_t c2, std::uint32_t c3,
                                            const PhiloxKey (&keys)[K],
                                            std::uint32_t (&out)[K][4][N]) {
#if defined(DISTZO_PHILOX_AVX512)
  if constexpr (N % 16 == 0) {
    philox_detail::philox4x32_10_n_avx512<N, K>(first, c2, c3, keys, out);
    return;
  }
#endif
#if defined(DISTZO_PHILOX_AVX2)
  if constexpr (N % 8 == 0) {
    philox_detail::philox4x32_10_n_avx2<N, K>(first, c2, c3, keys, out);
    return;
  }
#endif
  philox_detail::philox4x32_10_n_portable<N, K>(first, c2, c3, keys, out);
}

}  // namespace distzo
