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
// 3a. Gaussian: Box–Muller on the word pairs (w0, w1) -> lanes 0, 1 and
//     (w2, w3) -> lanes 2, 3, evaluated in IEEE double:
//      u1    = ((double)a + 1.0) * 2^-32       // in (0, 1], exact; log(u1) finite
//      u2    =  (double)b        * 2^-32       // in [0, 1),  exact
//      r     = sqrt(-2.0 * log(u1))
//      theta = 6.283185307179586 * u2          // the double nearest 2*pi
//      z_even = (float)(r * cos(theta)),  z_odd = (float)(r * sin(theta))
//     (a, b) = (w0, w1) for lanes 0/1 and (w2, w3) for lanes 2/3; each product
//     is rounded to double, the final conversion to float rounds to nearest.
//     |z| <= sqrt(64 ln 2) = 6.66 since u1 >= 2^-32. For a = 0xFFFFFFFF,
//     u1 = 1 and r = sqrt(-0.0) = -0.0, so z is a signed zero.
// 3b. Rademacher: z = +1 if the top bit of w_l is 0, -1 if it is 1.
//
// Why double. The Gaussian is the one place where transcendental functions
// enter, and libraries differ: glibc and CUDA's libdevice may return different
// last bits for the same log/sin/cos argument. Evaluated in double and then
// rounded to float, such a difference (a few double ulps) changes the float
// only when the exact result lies within those ulps of a float rounding
// boundary: of order one element in 10^8 (an estimate from the libraries'
// error bounds, not yet measured on a GPU), and then by one float ulp.
// Evaluated in float, a noticeable fraction of elements would differ between
// CPU and GPU. The recipe contains no multiply followed by an add, so FMA
// contraction (nvcc's default) cannot change it either. The cost is one
// double-precision log, sqrt, sin and cos per two elements. H100/H200 run FP64
// at half the FP32 rate, which puts this in the same range as the memory
// traffic of materialising perturbed weights (perf/ should measure it); on
// consumer GPUs with 1/64-rate FP64 it is the bottleneck.
//
// Guarantees. On one backend (same compiler, same math library) z is
// bit-identical for every rank, slice, chunking and evaluation order, because
// every element is computed from its five coordinates alone. Across backends
// (host vs CUDA) Gaussian z may differ by one float ulp in rare elements, as
// said above; Rademacher z and every integer step are identical everywhere.
// Distinct (seed, step, query) give distinct 64-bit stream keys except with
// probability about n^2 / 2^65 for n keys (the 128-bit output is truncated);
// within one stream, distinct (param_id, block) are distinct Philox counters,
// hence independent draws.

#include "core/error.hpp"
#include "core/math.hpp"
#include "core/philox.hpp"
#include "core/types.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace distzo {

/// Distribution of the entries of z. Both have zero mean and unit variance.
enum class Distribution { gaussian, rademacher };

/// "gaussian" | "rademacher" (the spelling used in decks and checkpoints).
inline const char* to_string(Distribution d) {
  switch (d) {
    case Distribution::gaussian: return "gaussian";
    case Distribution::rademacher: return "rademacher";
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

/// Domain-separation tags (ASCII "ZKEY", "ZVAL") in the last counter word. Any
/// other use of Philox in distzo must pick a different tag.
constexpr std::uint32_t kPerturbationKeyTag = 0x5A4B4559u;
constexpr std::uint32_t kPerturbationBlockTag = 0x5A56414Cu;

namespace perturbation_detail {

constexpr double kTwoPowMinus32 = 1.0 / 4294967296.0;
constexpr double kTwoPi = 6.283185307179586;  // 0x1.921fb54442d18p+2

/// Box–Muller radius from the first word of a pair.
KOKKOS_INLINE_FUNCTION double radius(std::uint32_t a) {
  const double u1 = (static_cast<double>(a) + 1.0) * kTwoPowMinus32;
  return math::sqrt(-2.0 * math::log(u1));
}

/// Box–Muller angle from the second word of a pair.
KOKKOS_INLINE_FUNCTION double angle(std::uint32_t b) {
  const double u2 = static_cast<double>(b) * kTwoPowMinus32;
  return kTwoPi * u2;
}

/// Both Box–Muller outputs of the pair (a, b): r*cos(theta), r*sin(theta).
KOKKOS_INLINE_FUNCTION void box_muller(std::uint32_t a, std::uint32_t b, real& even, real& odd) {
  const double r = radius(a);
  const double theta = angle(b);
  even = static_cast<real>(r * math::cos(theta));
  odd = static_cast<real>(r * math::sin(theta));
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

  /// Step 1 of the recipe: derives the stream key.
  KOKKOS_INLINE_FUNCTION static PerturbationStream make(std::uint64_t seed, std::uint64_t step,
                                                        std::uint32_t query,
                                                        Distribution dist) {
    const PhiloxKey seed_key{{static_cast<std::uint32_t>(seed),
                              static_cast<std::uint32_t>(seed >> 32)}};
    const PhiloxBlock ctr{{static_cast<std::uint32_t>(step),
                           static_cast<std::uint32_t>(step >> 32), query,
                           kPerturbationKeyTag}};
    const PhiloxBlock d = philox4x32_10(ctr, seed_key);
    PerturbationStream s{};
    s.key.k[0] = d.v[0];
    s.key.k[1] = d.v[1];
    s.dist = dist;
    return s;
  }

  /// Step 2: the four raw Philox words of block `block` of parameter `param_id`.
  KOKKOS_INLINE_FUNCTION PhiloxBlock bits(std::uint32_t param_id, std::uint64_t block) const {
    const PhiloxBlock ctr{{static_cast<std::uint32_t>(block),
                           static_cast<std::uint32_t>(block >> 32), param_id,
                           kPerturbationBlockTag}};
    return philox4x32_10(ctr, key);
  }

  /// Elements 4*block .. 4*block+3 of parameter `param_id`. The cheapest way
  /// to get z in bulk: one Philox call and two Box–Muller pairs per four values.
  KOKKOS_INLINE_FUNCTION void z4(std::uint32_t param_id, std::uint64_t block,
                                 real out[4]) const {
    const PhiloxBlock w = bits(param_id, block);
    if (dist == Distribution::rademacher) {
      for (int l = 0; l < 4; ++l) out[l] = perturbation_detail::rademacher(w.v[l]);
      return;
    }
    perturbation_detail::box_muller(w.v[0], w.v[1], out[0], out[1]);
    perturbation_detail::box_muller(w.v[2], w.v[3], out[2], out[3]);
  }

  /// One element. Bit-identical to the matching lane of z4 (same operations);
  /// costs a full Philox call, so prefer z4 when a kernel needs neighbours.
  KOKKOS_INLINE_FUNCTION real z(std::uint32_t param_id, std::uint64_t element) const {
    const PhiloxBlock w = bits(param_id, element >> 2);
    const unsigned lane = static_cast<unsigned>(element & 3u);
    if (dist == Distribution::rademacher) return perturbation_detail::rademacher(w.v[lane]);
    const unsigned first = lane & 2u;  // first word of this lane's pair
    const double r = perturbation_detail::radius(w.v[first]);
    const double theta = perturbation_detail::angle(w.v[first + 1]);
    return (lane & 1u) == 0u ? static_cast<real>(r * math::cos(theta))
                             : static_cast<real>(r * math::sin(theta));
  }
};

/// Z(seed, step, query, param_id, element) in one call, as DESIGN.md writes it.
/// Derives the stream key each time (one extra Philox call): for tests and
/// one-off values; kernels should make the stream once and call z4/z.
KOKKOS_INLINE_FUNCTION real perturbation_z(std::uint64_t seed, std::uint64_t step,
                                           std::uint32_t query, std::uint32_t param_id,
                                           std::uint64_t element, Distribution dist) {
  return PerturbationStream::make(seed, step, query, dist).z(param_id, element);
}

/// out(i) = s.z(param_id, first_element + i) for every i, enqueued on `space`
/// (no fence). Works for any first_element, aligned to a block of 4 or not:
/// each Philox block is evaluated once and writes the lanes inside the range.
inline void fill_perturbation(const ExecSpace& space, const Vec& out,
                              const PerturbationStream& s, std::uint32_t param_id,
                              std::uint64_t first_element) {
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
