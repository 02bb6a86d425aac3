#pragma once
// The perturbation z as a pure function (DESIGN.md, invariant 1):
//
//   z = Z(seed: u64, step: u64, query: u32, param_id: u32, element: u64)
//
// There is no RNG state anywhere: every rank, slice, block order and kernel that
// asks for the same five numbers gets the same z. docs/perturbation.md carries
// the same specification with a reference implementation in Python.
//
// Bit-exact recipe. philox(ctr, key) is Philox-4x32-10 (core/philox.hpp); words
// are uint32, lo(x)/hi(x) the low/high 32 bits of a uint64.
//
// 1. Stream key, once per (seed, step, query):
//      d   = philox(ctr = (lo(step), hi(step), query, 0x5A4B4559 /* "ZKEY" */),
//                   key = (lo(seed), hi(seed)))
//      key = (d0, d1)                 // d2, d3 are discarded
// 2. Element e of parameter p lives in block b = e / 4, lane l = e % 4:
//      w = philox(ctr = (lo(b), hi(b), p, 0x5A56414C /* "ZVAL" */), key)
// 3. Rademacher: z = +1 if the top bit of w_l is 0, -1 if it is 1.
// 4. Gaussian: Box–Muller on the word pairs (a, b) = (w0, w1) for lanes 0 (cos)
//    and 1 (sin), (w2, w3) for lanes 2 and 3. Two recipes, recorded in every
//    checkpoint:
//
//    v2 (the default). Every operation in IEEE binary32, each rounded to
//    nearest on its own (core/fp.hpp: no fused multiply-add, no library
//    function), so z is the same bits on every backend, compiler and flag set.
//      radius, from a:
//        c    = (a >> 2) + 1                   // integer in [1, 2^30]
//        x    = float(c)                       // round to nearest even
//        e    = exponent(x), m = mantissa(x) in [1, 2); if m > 0x1.6a09e6p0
//               (sqrt 2 in float) then m = m/2, e = e + 1   // m in [0.7071, 1.4142]
//        f    = (m - 1) / (m + 1);  s = f*f
//        ln_m = (2f) * (((L7 s + L5) s + L3) s + 1)               // log m = 2 atanh f
//        k    = float(30 - e)
//        L    = k*LN2_HI + (k*LN2_LO - ln_m)   // -log(u1), u1 = x * 2^-30 in (0, 1]
//        r    = sqrt(2L)
//      angle, from b (2^32 = one turn):
//        v    = b + 2^29 (mod 2^32);  q = v >> 30          // quadrant
//        t    = int32((v & (2^30 - 1)) - 2^29) >> 6        // in [-2^23, 2^23)
//        y    = float(t) * 2^-23 in [-1, 1);  y2 = y*y      // angle = q*pi/2 + y*pi/4
//        sn   = y * (((S7 y2 + S5) y2 + S3) y2 + S1)           // sin(pi/4 y)
//        cs   = ((((C8 y2 + C6) y2 + C4) y2 + C2) y2) + 1      // cos(pi/4 y)
//        (cos, sin) = (cs, sn), (-sn, cs), (-cs, -sn), (sn, -cs) for q = 0, 1, 2, 3
//      z_even = r * cos, z_odd = r * sin.
//    The constants are the binary32 values listed in perturbation_detail
//    (polynomial fits of sin, cos and atanh; ln 2 split so k*LN2_HI is exact). The
//    uniforms are quantised: u1 has 24 significant bits and the largest |z| is
//    r(c = 1) = sqrt(60 ln 2) = 6.449 (a = 0..3, b = 0); the angle has 2^26
//    steps per turn. Against the exact Box–Muller of these uniforms the error
//    is at most 1e-6 (tests/test_perturbation.cpp measures it).
//
//    v1 (checkpoints written before v2). IEEE double with libm:
//      u1 = (double(a) + 1) * 2^-32, u2 = double(b) * 2^-32,
//      r = sqrt(-2 log u1), theta = 6.283185307179586 * u2,
//      z_even = float(r cos theta), z_odd = float(r sin theta).
//    Bit-identical on one backend; log/sin/cos may differ in the last double
//    bit between libm and CUDA's libdevice, so rare elements may differ by a
//    float ulp across backends.
//
// Guarantees. z is bit-identical for every rank, slice, chunking and
// evaluation order, because every element is computed from its five
// coordinates alone; with recipe v2 also across backends. Distinct (seed,
// step, query) give distinct 64-bit stream keys except with probability about
// n^2 / 2^65 for n keys (the 128-bit output is truncated); within one stream,
// distinct (param_id, block) are distinct Philox counters, hence independent
// draws.

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/fp.hpp"
#include "core/math.hpp"
#include "core/philox.hpp"
#include "core/types.hpp"

namespace distzo {

/// Distribution of the entries of z. Both have zero mean and unit variance.
enum class Distribution { gaussian, rademacher };

/// "gaussian" | "rademacher" (the spelling used in decks and checkpoints).
inline const char* to_string(Distribution d) {
  switch (d) {
    case Distribution::gaussian:
      return "gaussian";
    case Distribution::rademacher:
      return "rademacher";
  }
  return "unknown";
}

/// Inverse of to_string. Throws distzo::Error naming the allowed values.
inline Distribution parse_distribution(const std::string& name) {
  if (name == "rademacher") return Distribution::rademacher;
  DISTZO_REQUIRE(name == "gaussian", "unknown perturbation distribution '"
                                         << name << "'; allowed: gaussian, rademacher");
  return Distribution::gaussian;
}

/// The Gaussian's recipe (step 4 above). Checkpoints record it, so a run
/// resumes with the recipe it started with.
enum class ZRecipe : std::uint8_t { v1 = 1, v2 = 2 };
constexpr ZRecipe kDefaultZRecipe = ZRecipe::v2;

inline int to_int(ZRecipe r) { return static_cast<int>(r); }
/// Throws distzo::Error unless `version` is 1 or 2.
inline ZRecipe z_recipe_from_int(std::int64_t version) {
  DISTZO_REQUIRE(version == 1 || version == 2,
                 "unknown perturbation recipe " << version << "; known: 1, 2");
  return static_cast<ZRecipe>(version);
}

/// Domain-separation tags (ASCII "ZKEY", "ZVAL") in the last counter word. Any
/// other use of Philox in distzo must pick a different tag.
constexpr std::uint32_t kPerturbationKeyTag = 0x5A4B4559u;
constexpr std::uint32_t kPerturbationBlockTag = 0x5A56414Cu;
/// The random words of stochastic rounding (core/storage_dtype.hpp), ASCII
/// "RKEY" and "RVAL": their own streams, so rounding θ never reuses a word
/// that made z.
constexpr std::uint32_t kRoundingKeyTag = 0x524B4559u;
constexpr std::uint32_t kRoundingBlockTag = 0x5256414Cu;

namespace perturbation_detail {

// ---- recipe v1: double precision with libm --------------------------------

constexpr double kTwoPowMinus32 = 1.0 / 4294967296.0;
constexpr double kTwoPi = 6.283185307179586;  // 0x1.921fb54442d18p+2

KOKKOS_INLINE_FUNCTION void box_muller_v1(std::uint32_t a, std::uint32_t b, real& even, real& odd) {
  const double u1 = (static_cast<double>(a) + 1.0) * kTwoPowMinus32;
  const double u2 = static_cast<double>(b) * kTwoPowMinus32;
  const double r = math::sqrt(-2.0 * math::log(u1));
  const double theta = kTwoPi * u2;
  even = static_cast<real>(r * math::cos(theta));
  odd = static_cast<real>(r * math::sin(theta));
}

// ---- recipe v2: binary32, every operation specified ------------------------

// Polynomials on the reduced ranges, |y| <= 1, t = y^2, s = f^2 <= 0.0295:
//   sin(pi/4 y)      = y (S1 + S3 t + S5 t^2 + S7 t^3)        error <= 2.4e-9
//   cos(pi/4 y)      = 1 + t (C2 + C4 t + C6 t^2 + C8 t^3)    error <= 1.9e-10
//   log((1+f)/(1-f)) = 2f (1 + L3 s + L5 s^2 + L7 s^3)        error <= 2.4e-10
// near-minimax fits (least squares on Chebyshev points) rounded to binary32;
// tools/z_reference.py --check-constants rederives them.
constexpr float kS1 = 0x1.921fb6p-1f, kS3 = -0x1.4abbbap-4f, kS5 = 0x1.465ec4p-9f,
                kS7 = -0x1.2d9b7cp-15f;
constexpr float kC2 = -0x1.3bd3ccp-2f, kC4 = 0x1.03c1eap-6f, kC6 = -0x1.55cb98p-12f,
                kC8 = 0x1.db64d6p-19f;
constexpr float kL3 = 0x1.555588p-2f, kL5 = 0x1.99578cp-3f, kL7 = 0x1.326fc8p-3f;
// ln 2 = LN2_HI + LN2_LO with LN2_HI of 16 significant bits: k * LN2_HI is exact.
constexpr float kLn2Hi = 0x1.62e400p-1f, kLn2Lo = 0x1.7f7d1cp-20f;
constexpr std::uint32_t kSqrt2Mantissa = 0x3504F3u;  // float(sqrt 2) = 0x3FB504F3

/// sqrt(-2 log u1) for u1 = float((a >> 2) + 1) * 2^-30.
KOKKOS_FORCEINLINE_FUNCTION float radius_v2(std::uint32_t a) {
  using namespace fp;
  const float x = static_cast<float>(static_cast<std::int32_t>(a >> 2) + 1);
  const std::uint32_t bits = fp::to_bits(x);
  const std::uint32_t mantissa = bits & 0x7FFFFFu;
  const std::uint32_t big = mantissa > kSqrt2Mantissa ? 1u : 0u;  // m > sqrt 2: halve it
  const std::int32_t e =
      static_cast<std::int32_t>(bits >> 23) - 127 + static_cast<std::int32_t>(big);
  const float m = fp::from_bits(mantissa | (0x3F800000u - (big << 23)));
  const float f = div(sub(m, 1.0f), add(m, 1.0f));
  const float s = mul(f, f);
  const float p = mul_add(mul_add(mul_add(kL7, s, kL5), s, kL3), s, 1.0f);
  const float ln_m = mul(add(f, f), p);
  const float k = static_cast<float>(30 - e);
  const float neg_log_u1 = add(mul(k, kLn2Hi), sub(mul(k, kLn2Lo), ln_m));
  return fp::sqrt(add(neg_log_u1, neg_log_u1));
}

/// cos and sin of the angle b * 2pi / 2^32 (quantised to 2^26 steps).
KOKKOS_FORCEINLINE_FUNCTION void cos_sin_v2(std::uint32_t b, float& cos_out, float& sin_out) {
  using namespace fp;
  const std::uint32_t v = b + 0x20000000u;
  const std::uint32_t q = v >> 30;
  const std::int32_t t = static_cast<std::int32_t>((v & 0x3FFFFFFFu) - 0x20000000u) >> 6;
  const float y = mul(static_cast<float>(t), 0x1p-23f);
  const float y2 = mul(y, y);
  const float sn = mul(y, mul_add(mul_add(mul_add(kS7, y2, kS5), y2, kS3), y2, kS1));
  const float cs = add(mul(mul_add(mul_add(mul_add(kC8, y2, kC6), y2, kC4), y2, kC2), y2), 1.0f);
  // Quadrant q: swap on odd q, then flip signs (bit operations: no branches).
  const std::uint32_t swap = 0u - (q & 1u);
  const std::uint32_t c_bits = fp::to_bits(cs), s_bits = fp::to_bits(sn);
  const std::uint32_t first = (s_bits & swap) | (c_bits & ~swap);
  const std::uint32_t second = (c_bits & swap) | (s_bits & ~swap);
  cos_out = fp::from_bits(first ^ (((q + 1u) & 2u) << 30));
  sin_out = fp::from_bits(second ^ ((q & 2u) << 30));
}

KOKKOS_FORCEINLINE_FUNCTION void box_muller_v2(std::uint32_t a, std::uint32_t b, real& even,
                                               real& odd) {
  const float r = radius_v2(a);
  float c, s;
  cos_sin_v2(b, c, s);
  even = fp::mul(r, c);
  odd = fp::mul(r, s);
}

KOKKOS_INLINE_FUNCTION real rademacher(std::uint32_t w) {
  return (w >> 31) != 0u ? real(-1) : real(1);
}

}  // namespace perturbation_detail

/// The key of one (seed, step, query) stream and the distribution; the whole
/// state needed to evaluate z. A plain 12-byte struct: copy it into kernels.
struct PerturbationStream {
  PhiloxKey key;
  Distribution dist;
  ZRecipe recipe;

  /// Step 1 of the recipe: derives the stream key.
  KOKKOS_INLINE_FUNCTION static PerturbationStream make(std::uint64_t seed, std::uint64_t step,
                                                        std::uint32_t query, Distribution dist,
                                                        ZRecipe recipe) {
    const PhiloxKey seed_key{
        {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    const PhiloxBlock ctr{{static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(step >> 32),
                           query, kPerturbationKeyTag}};
    const PhiloxBlock d = philox4x32_10(ctr, seed_key);
    PerturbationStream s{};
    s.key.k[0] = d.v[0];
    s.key.k[1] = d.v[1];
    s.dist = dist;
    s.recipe = recipe;
    return s;
  }

  /// Step 2: the four raw Philox words of block `block` of parameter `param_id`.
  KOKKOS_INLINE_FUNCTION PhiloxBlock bits(std::uint32_t param_id, std::uint64_t block) const {
    const PhiloxBlock ctr{{static_cast<std::uint32_t>(block),
                           static_cast<std::uint32_t>(block >> 32), param_id,
                           kPerturbationBlockTag}};
    return philox4x32_10(ctr, key);
  }

  /// Elements 4*first_block .. 4*(first_block + N) - 1 of parameter
  /// `param_id`, in order. The bulk form: its loops run over N independent
  /// blocks, which the host compiler vectorises (recipe v2 and Rademacher);
  /// N = 1 is one block per device thread.
  template <int N>
  KOKKOS_INLINE_FUNCTION void zn(std::uint32_t param_id, std::uint64_t first_block,
                                 real out[4 * N]) const {
    const PerturbationStream streams[1] = {*this};
    real* outs[1] = {out};
    zn_streams<N, 1>(streams, param_id, first_block, outs);
  }

  /// zn of K streams of one distribution and recipe at once: their Philox
  /// calls interleave, so more independent work is in flight (a step
  /// regenerates the pending update's z and makes this step's in one pass).
  template <int N, int K>
  KOKKOS_INLINE_FUNCTION static void zn_streams(const PerturbationStream (&streams)[K],
                                                std::uint32_t param_id, std::uint64_t first_block,
                                                real* const (&outs)[K]) {
    PhiloxKey keys[K];
    for (int k = 0; k < K; ++k) keys[k] = streams[k].key;
    std::uint32_t w[K][4][N];
    philox4x32_10_n<N, K>(first_block, param_id, kPerturbationBlockTag, keys, w);
    const Distribution dist = streams[0].dist;
    const ZRecipe recipe = streams[0].recipe;
    for (int k = 0; k < K; ++k) {
      real lane[4][N];
      if (dist == Distribution::rademacher) {
        for (int l = 0; l < 4; ++l)
          for (int i = 0; i < N; ++i) lane[l][i] = perturbation_detail::rademacher(w[k][l][i]);
      } else if (recipe == ZRecipe::v2) {
        for (int i = 0; i < N; ++i)
          perturbation_detail::box_muller_v2(w[k][0][i], w[k][1][i], lane[0][i], lane[1][i]);
        for (int i = 0; i < N; ++i)
          perturbation_detail::box_muller_v2(w[k][2][i], w[k][3][i], lane[2][i], lane[3][i]);
      } else {
        for (int i = 0; i < N; ++i) {
          perturbation_detail::box_muller_v1(w[k][0][i], w[k][1][i], lane[0][i], lane[1][i]);
          perturbation_detail::box_muller_v1(w[k][2][i], w[k][3][i], lane[2][i], lane[3][i]);
        }
      }
      real* out = outs[k];
      for (int i = 0; i < N; ++i)
        for (int l = 0; l < 4; ++l) out[4 * i + l] = lane[l][i];
    }
  }

  /// Whether two streams make z the same way (zn_streams takes such streams).
  KOKKOS_INLINE_FUNCTION bool same_kind(const PerturbationStream& other) const {
    return dist == other.dist && recipe == other.recipe;
  }

  /// Elements 4*block .. 4*block+3 of parameter `param_id`.
  KOKKOS_INLINE_FUNCTION void z4(std::uint32_t param_id, std::uint64_t block, real out[4]) const {
    zn<1>(param_id, block, out);
  }

  /// One element: the matching lane of z4 (a whole Philox call; kernels that
  /// need many elements use zn).
  KOKKOS_INLINE_FUNCTION real z(std::uint32_t param_id, std::uint64_t element) const {
    real block[4];
    z4(param_id, element >> 2, block);
    return block[element & 3u];
  }
};

/// Z(seed, step, query, param_id, element) in one call, as DESIGN.md writes it.
/// Derives the stream key each time (one extra Philox call): for tests and
/// one-off values; kernels should make the stream once and call z4/z.
KOKKOS_INLINE_FUNCTION real perturbation_z(std::uint64_t seed, std::uint64_t step,
                                           std::uint32_t query, std::uint32_t param_id,
                                           std::uint64_t element, Distribution dist,
                                           ZRecipe recipe) {
  return PerturbationStream::make(seed, step, query, dist, recipe).z(param_id, element);
}

/// out(i) = s.z(param_id, first_element + i) for every i, enqueued on `space`
/// (no fence). Works for any first_element, aligned to a block of 4 or not:
/// each Philox block is evaluated once and writes the lanes inside the range.
inline void fill_perturbation(const ExecSpace& space, const Vec& out, const PerturbationStream& s,
                              std::uint32_t param_id, std::uint64_t first_element) {
  const std::uint64_t n = out.extent(0);
  if (n == 0) return;
  DISTZO_REQUIRE(first_element <= std::numeric_limits<std::uint64_t>::max() - (n - 1),
                 "fill_perturbation: element range [" << first_element << ", +" << n
                                                      << ") overflows a 64-bit index");
  const std::uint64_t last_element = first_element + (n - 1);
  const std::uint64_t first_block = first_element >> 2;
  const std::uint64_t num_blocks = (last_element >> 2) - first_block + 1;  // <= 2^62
  Kokkos::parallel_for(
      "distzo::fill_perturbation",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
          space, 0, static_cast<std::int64_t>(num_blocks)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const std::uint64_t block = first_block + static_cast<std::uint64_t>(i);
        real z[4];
        s.z4(param_id, block, z);
        for (unsigned l = 0; l < 4; ++l) {
          const std::uint64_t e = 4 * block + l;
          if (e >= first_element && e <= last_element) out(e - first_element) = z[l];
        }
      });
}

}  // namespace distzo
