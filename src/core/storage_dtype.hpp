#pragma once
// 2-byte storage of θ (a half-precision master copy) as pure,
// bit-specified functions: the formats, round to nearest and stochastic
// rounding (SR) driven by a counter-based random word. Every function here is
// integer arithmetic on the float's bits (plus one exact multiply), so a host
// build and a CUDA build store the same bits. docs/perturbation.md ("Stochastic
// rounding of θ, bit for bit") carries the same specification, and
// tools/z_reference.py a reference in exact rational arithmetic that writes
// tests/data/storage_rounding.kat.
//
// Formats. fp32: IEEE binary32, stored as is (rounding does nothing). bf16:
// the high 16 bits of a binary32 (1 sign, 8 exponent, 7 mantissa bits: the
// float's range, 8 significant bits). fp16: IEEE binary16 (1 sign, 5 exponent
// bits with bias 15, 10 mantissa bits; largest finite 65504, smallest normal
// 2^-14, smallest subnormal 2^-24).
//
// Decoding a 16-bit word to float is exact for every word: subnormals, ±0,
// ±inf, and NaN keeping its sign and payload (fp16: payload << 13; no quiet
// bit is set, as fp::to_bits does not canonicalise either).
//
// Bracketing. A finite float x lies between two neighbouring values of the
// 16-bit format with the sign of x: lo, x rounded toward zero, and hi, the
// next one away from zero (hi's word is lo's word + 1; the carry walks into
// the exponent, and from the largest finite it reaches inf). Define the
// fraction
//      F = floor(2^32 * (|x| - |lo|) / (|hi| - |lo|))     in [0, 2^32)
// F is exact (no floor needed) except for fp16 results below 2^-33, where the
// dropped part has more than 32 bits; it is computed from the bits:
//   bf16:            lo = bits >> 16,   F = (bits & 0xFFFF) << 16
//                    (float subnormals alike: same bit arithmetic)
//   fp16, |x| >= 2^-14 (normal result):
//                    lo = (|bits| - (112 << 23)) >> 13,  F = (bits & 0x1FFF) << 19
//   fp16, |x| < 2^-14 (subnormal result or zero): |x| = M * 2^(E - 150) with
//                    M the 24-bit significand (implicit bit included; float
//                    subnormals: E = 1, no implicit bit), s = 126 - E >= 14;
//                    lo = M >> s, D = M mod 2^s (the dropped bits),
//                    F = D << (32 - s) for s <= 32, D >> (s - 32) otherwise
//                    (s is capped at 56, where F = lo = 0 already).
//
// Round to nearest, ties to even (IEEE 754 roundTiesToEven): hi if F > 2^31,
// or F = 2^31 and lo's word is odd; else lo. Overflow as IEEE: finite x at or
// beyond the midpoint between the largest finite and 2^(emax+1) becomes ±inf
// (fp16: |x| >= 65520; bf16: |x| >= 0x1.ffp127).
//
// Stochastic rounding with a random word r (uint32): hi if r < F, else lo.
// So P(hi) = F / 2^32 = (|x| - |lo|) / (|hi| - |lo|) exactly whenever F is
// exact (always for bf16 and for fp16 results >= 2^-33), the rounding is
// unbiased, and exact values (F = 0) never change. Only the top w bits of r
// matter when the dropped part has w <= 32 bits (bf16: 16, fp16 normal: 13,
// fp16 subnormal: s): r < D << (32 - w) iff (r >> (32 - w)) < D.
// Below 2^-33 (fp16), F truncates the dropped bits to 32, so P(hi) is low by
// less than 2^-32: a bias below 2^-56 in absolute value.
//
// Edges of stochastic rounding, decided so:
//   - a finite x never becomes ±inf: where hi would be inf (x beyond the
//     largest finite value: fp16's |x| > 65504 and bf16's |x| > 0x1.fep127),
//     the result is ±largest finite (fp16 also for |x| >= 2^16, where RN gives
//     ±inf). Above the largest finite there is no upper
//     neighbour, so SR cannot be unbiased there whatever it does; RN's inf is
//     the right single rounding, but SR would turn a finite θ into inf with
//     probability up to 1 on one update, and inf is absorbing (the next update
//     makes inf - inf = NaN and the run is lost). Saturating errs by less than
//     one ulp of the largest finite, and the next update can move θ back.
//   - fp16 underflow: results below the smallest subnormal round to ±0 (sign
//     kept) or ±2^-24 with the probabilities above, as anywhere else.
//   - ±inf stays ±inf, NaN becomes a quiet NaN with the sign and the top
//     payload bits of x (bf16: (bits >> 16) | 0x0040; fp16: sign | 0x7E00 |
//     ((bits >> 13) & 0x3FF)), under both roundings.
//
// The random word, a pure function like z (core/perturbation.hpp), with tags of
// its own ("RKEY", "RVAL"):
//   key = philox(ctr = (lo(step), hi(step), 0, 0x524B4559), key = (lo(seed), hi(seed)))
//         truncated to (d0, d1), once per (seed, step);
//   r   = word e % 4 of philox(ctr = (lo(b), hi(b), param_id, 0x5256414C), key),
//         b = e / 4, for element e of parameter param_id.
// `step` is the step whose update is being stored (the pending update's step),
// so replaying a step stores the same bits, on every rank and slice.

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/fp.hpp"
#include "core/perturbation.hpp"
#include "core/philox.hpp"

namespace distzo {

/// How θ is stored: IEEE binary32, bfloat16, or IEEE binary16.
enum class StorageDtype : std::uint8_t { fp32, bf16, fp16 };

/// "fp32" | "bf16" | "fp16" (the spelling used in decks and checkpoints).
inline const char* to_string(StorageDtype d) {
  switch (d) {
    case StorageDtype::fp32:
      return "fp32";
    case StorageDtype::bf16:
      return "bf16";
    case StorageDtype::fp16:
      return "fp16";
  }
  return "unknown";
}

/// Elements of a tensor (or of a piece of one) in host memory as θ stores
/// them: float32 values (fp32), or the 16-bit words of a bf16 / fp16 θ.
/// Float32 values convert implicitly: a sink of stored elements can be
/// handed a `const float*`.
struct StoredElements {
  StorageDtype dtype = StorageDtype::fp32;
  const void* data = nullptr;

  StoredElements(const float* values) : data(values) {}  // NOLINT(google-explicit-constructor)
  StoredElements(StorageDtype stored_dtype, const void* elements)
      : dtype(stored_dtype), data(elements) {}
  const float* values() const {
    DISTZO_REQUIRE(dtype == StorageDtype::fp32,
                   "stored elements: float32 values asked of " << to_string(dtype) << " words");
    return static_cast<const float*>(data);
  }
  const std::uint16_t* words() const {
    DISTZO_REQUIRE(dtype != StorageDtype::fp32,
                   "stored elements: 2-byte words asked of float32 values");
    return static_cast<const std::uint16_t*>(data);
  }
  /// The float32 values of the first n elements into out (exact).
  inline void decode_into(std::size_t n, float* out) const;
};

/// Inverse of to_string. Throws distzo::Error naming the allowed values.
inline StorageDtype parse_storage_dtype(const std::string& name) {
  if (name == "fp32") return StorageDtype::fp32;
  if (name == "bf16") return StorageDtype::bf16;
  DISTZO_INPUT_REQUIRE(name == "fp16",
                       "unknown storage dtype '" << name << "'; allowed: fp32, bf16, fp16");
  return StorageDtype::fp16;
}

/// Bytes one element of θ takes in memory and in transfers.
KOKKOS_INLINE_FUNCTION constexpr std::size_t bytes_per_element(StorageDtype d) {
  return d == StorageDtype::fp32 ? 4 : 2;
}

/// How a float is brought to a 16-bit format: to nearest (ties to even), or
/// stochastically (unbiased; needs a random word per element).
enum class Rounding : std::uint8_t { nearest, stochastic };

/// "nearest" | "stochastic".
inline const char* to_string(Rounding r) {
  switch (r) {
    case Rounding::nearest:
      return "nearest";
    case Rounding::stochastic:
      return "stochastic";
  }
  return "unknown";
}

/// Inverse of to_string. Throws distzo::Error naming the allowed values.
inline Rounding parse_rounding(const std::string& name) {
  if (name == "nearest") return Rounding::nearest;
  DISTZO_REQUIRE(name == "stochastic",
                 "unknown rounding '" << name << "'; allowed: nearest, stochastic");
  return Rounding::stochastic;
}

namespace storage {

// Magnitude words (sign bit clear) of the 16-bit formats.
constexpr std::uint16_t kBf16Inf = 0x7F80u, kBf16MaxFinite = 0x7F7Fu;
constexpr std::uint16_t kFp16Inf = 0x7C00u, kFp16MaxFinite = 0x7BFFu;  // 65504
// |bits| of floats, for fp16's ranges.
constexpr std::uint32_t kFloatInf = 0x7F800000u;
constexpr std::uint32_t kFp16MinNormalAsFloat = 0x38800000u;  // 2^-14
constexpr std::uint32_t kFp16BeyondAsFloat = 0x47800000u;     // 2^16: no fp16 neighbour above
constexpr std::uint32_t kHalfWay = 0x80000000u;               // F = 2^31: x halfway

/// x rounded toward zero (the word lo, sign included) and the fraction F of
/// the way from |lo| to |hi| in units of 2^-32 (see the top of the file).
struct Bracket {
  std::uint16_t lo;
  std::uint32_t fraction;
};

/// The bf16 bracket of any finite float's bits.
KOKKOS_FORCEINLINE_FUNCTION Bracket bracket_bf16(std::uint32_t bits) {
  return Bracket{static_cast<std::uint16_t>(bits >> 16), (bits & 0xFFFFu) << 16};
}

/// The fp16 bracket of a finite float with |x| < 2^16 (bits with the sign).
KOKKOS_FORCEINLINE_FUNCTION Bracket bracket_fp16(std::uint32_t bits) {
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t a = bits & 0x7FFFFFFFu;
  if (a >= kFp16MinNormalAsFloat) {
    // Rebias the exponent (127 - 15 = 112) and drop 23 - 10 = 13 mantissa bits.
    const std::uint32_t lo = (a - (112u << 23)) >> 13;
    return Bracket{static_cast<std::uint16_t>(sign | lo), (a & 0x1FFFu) << 19};
  }
  // In units of the smallest subnormal 2^-24, |x| = M * 2^(E - 126) = M / 2^s.
  const std::uint32_t e = a >> 23;
  const std::uint64_t m = (a & 0x7FFFFFu) | (e != 0 ? 0x800000u : 0u);
  std::uint32_t s = 126u - (e != 0 ? e : 1u);  // >= 14 here
  if (s > 56) s = 56;                          // M < 2^24: lo and F are 0 from s = 56 on
  const std::uint64_t dropped = m & ((std::uint64_t{1} << s) - 1);
  const std::uint64_t fraction = s <= 32 ? dropped << (32 - s) : dropped >> (s - 32);
  return Bracket{static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(m >> s)),
                 static_cast<std::uint32_t>(fraction)};
}

/// lo or hi by round to nearest, ties to even; hi of the largest finite is inf.
KOKKOS_FORCEINLINE_FUNCTION std::uint16_t round_nearest(Bracket b) {
  const bool up = b.fraction > kHalfWay || (b.fraction == kHalfWay && (b.lo & 1u) != 0u);
  return static_cast<std::uint16_t>(b.lo + (up ? 1u : 0u));
}

/// hi if r < F, else lo; never hi = inf (`inf` is the format's magnitude word
/// of infinity): the largest finite stays.
KOKKOS_FORCEINLINE_FUNCTION std::uint16_t round_stochastic(Bracket b, std::uint32_t r,
                                                           std::uint16_t inf) {
  const bool up = r < b.fraction && ((b.lo & 0x7FFFu) + 1u) != inf;
  return static_cast<std::uint16_t>(b.lo + (up ? 1u : 0u));
}

// ---- decoding: exact for every word -----------------------------------------

KOKKOS_INLINE_FUNCTION float decode_bf16(std::uint16_t w) {
  return fp::from_bits(static_cast<std::uint32_t>(w) << 16);
}

KOKKOS_INLINE_FUNCTION float decode_fp16(std::uint16_t w) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(w) & 0x8000u) << 16;
  const std::uint32_t e = (static_cast<std::uint32_t>(w) >> 10) & 0x1Fu;
  const std::uint32_t m = static_cast<std::uint32_t>(w) & 0x3FFu;
  if (e == 0) {
    // m * 2^-24: m converts exactly (< 2^10) and the product is a normal
    // float or 0, so the multiply is exact on every backend.
    const float magnitude = fp::mul(static_cast<float>(static_cast<std::int32_t>(m)), 0x1p-24f);
    return fp::from_bits(sign | fp::to_bits(magnitude));
  }
  if (e == 31) return fp::from_bits(sign | kFloatInf | (m << 13));  // inf, or NaN with its payload
  return fp::from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

// ---- encoding ----------------------------------------------------------------

/// The quiet NaN that a NaN float becomes: sign and top payload bits kept.
KOKKOS_FORCEINLINE_FUNCTION std::uint16_t bf16_nan(std::uint32_t bits) {
  return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
}
KOKKOS_FORCEINLINE_FUNCTION std::uint16_t fp16_nan(std::uint32_t bits) {
  return static_cast<std::uint16_t>(((bits >> 16) & 0x8000u) | 0x7E00u | ((bits >> 13) & 0x3FFu));
}

/// float -> bf16, round to nearest even (IEEE overflow to ±inf).
KOKKOS_INLINE_FUNCTION std::uint16_t bf16_nearest(float x) {
  const std::uint32_t bits = fp::to_bits(x);
  if ((bits & 0x7FFFFFFFu) > kFloatInf) return bf16_nan(bits);
  return round_nearest(bracket_bf16(bits));  // inf: F = 0, stays inf
}

/// float -> fp16, round to nearest even (IEEE overflow to ±inf from 65520 on).
KOKKOS_INLINE_FUNCTION std::uint16_t fp16_nearest(float x) {
  const std::uint32_t bits = fp::to_bits(x);
  const std::uint32_t a = bits & 0x7FFFFFFFu;
  if (a > kFloatInf) return fp16_nan(bits);
  if (a >= kFp16BeyondAsFloat)
    return static_cast<std::uint16_t>(((bits >> 16) & 0x8000u) | kFp16Inf);
  return round_nearest(bracket_fp16(bits));
}

/// float -> bf16, stochastic rounding with the random word r.
KOKKOS_INLINE_FUNCTION std::uint16_t bf16_stochastic(float x, std::uint32_t r) {
  const std::uint32_t bits = fp::to_bits(x);
  if ((bits & 0x7FFFFFFFu) > kFloatInf) return bf16_nan(bits);
  return round_stochastic(bracket_bf16(bits), r, kBf16Inf);  // inf: F = 0, stays inf
}

/// float -> fp16, stochastic rounding with the random word r; a finite x
/// beyond 65504 saturates to ±65504.
KOKKOS_INLINE_FUNCTION std::uint16_t fp16_stochastic(float x, std::uint32_t r) {
  const std::uint32_t bits = fp::to_bits(x);
  const std::uint32_t a = bits & 0x7FFFFFFFu;
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  if (a > kFloatInf) return fp16_nan(bits);
  if (a == kFloatInf) return static_cast<std::uint16_t>(sign | kFp16Inf);
  if (a >= kFp16BeyondAsFloat) return static_cast<std::uint16_t>(sign | kFp16MaxFinite);
  return round_stochastic(bracket_fp16(bits), r, kFp16Inf);
}

// ---- one entry point ----------------------------------------------------------

/// The stored word of x: for fp32 its 32 bits (rounding and r unused: nothing
/// is dropped), for bf16 and fp16 the 16-bit word in the low half. r is the
/// element's rounding_bits; nearest ignores it.
KOKKOS_INLINE_FUNCTION std::uint32_t store(float x, StorageDtype dtype, Rounding rounding,
                                           std::uint32_t r) {
  const bool sr = rounding == Rounding::stochastic;
  switch (dtype) {
    case StorageDtype::bf16:
      return sr ? bf16_stochastic(x, r) : bf16_nearest(x);
    case StorageDtype::fp16:
      return sr ? fp16_stochastic(x, r) : fp16_nearest(x);
    case StorageDtype::fp32:
      break;
  }
  return fp::to_bits(x);
}

/// The float a stored word means (exact).
KOKKOS_INLINE_FUNCTION float load(std::uint32_t word, StorageDtype dtype) {
  switch (dtype) {
    case StorageDtype::bf16:
      return decode_bf16(static_cast<std::uint16_t>(word));
    case StorageDtype::fp16:
      return decode_fp16(static_cast<std::uint16_t>(word));
    case StorageDtype::fp32:
      break;
  }
  return fp::from_bits(word);
}

/// The value θ takes when x is stored: load(store(x, ...)).
KOKKOS_INLINE_FUNCTION float round_to_storage(float x, StorageDtype dtype, Rounding rounding,
                                              std::uint32_t r) {
  return load(store(x, dtype, rounding, r), dtype);
}

/// n float32 values rounded to nearest into `dtype`'s elements at `out`
/// (bytes_per_element(dtype) each): how a float32 file or buffer enters θ,
/// once, the same way on every rank, with no random words to key.
inline void encode_nearest(const float* in, std::size_t n, StorageDtype dtype, void* out) {
  if (dtype == StorageDtype::fp32) {
    std::copy(in, in + n, static_cast<float*>(out));
    return;
  }
  auto* words = static_cast<std::uint16_t*>(out);
  for (std::size_t i = 0; i < n; ++i)
    words[i] = static_cast<std::uint16_t>(store(in[i], dtype, Rounding::nearest, 0));
}

}  // namespace storage

inline void StoredElements::decode_into(std::size_t n, float* out) const {
  if (dtype == StorageDtype::fp32) {
    std::copy(values(), values() + n, out);
    return;
  }
  const std::uint16_t* w = words();
  for (std::size_t i = 0; i < n; ++i) out[i] = storage::load(w[i], dtype);
}

static_assert(kRoundingKeyTag != kPerturbationKeyTag && kRoundingKeyTag != kPerturbationBlockTag &&
                  kRoundingBlockTag != kPerturbationKeyTag &&
                  kRoundingBlockTag != kPerturbationBlockTag &&
                  kRoundingKeyTag != kRoundingBlockTag,
              "every use of Philox needs its own domain-separation tags");

/// The key of the rounding words of one (seed, step): a plain 8-byte struct,
/// made once and copied into kernels, like PerturbationStream.
struct RoundingStream {
  PhiloxKey key;

  /// The stream key: philox((lo(step), hi(step), 0, "RKEY"), (lo(seed), hi(seed))), d0 and d1.
  KOKKOS_INLINE_FUNCTION static RoundingStream make(std::uint64_t seed, std::uint64_t step) {
    const PhiloxKey seed_key{
        {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    const PhiloxBlock ctr{{static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(step >> 32),
                           0u, kRoundingKeyTag}};
    const PhiloxBlock d = philox4x32_10(ctr, seed_key);
    RoundingStream s{};
    s.key.k[0] = d.v[0];
    s.key.k[1] = d.v[1];
    return s;
  }

  /// The four words of block `block` (elements 4*block .. 4*block+3) of `param_id`.
  KOKKOS_INLINE_FUNCTION PhiloxBlock bits(std::uint32_t param_id, std::uint64_t block) const {
    const PhiloxBlock ctr{{static_cast<std::uint32_t>(block),
                           static_cast<std::uint32_t>(block >> 32), param_id, kRoundingBlockTag}};
    return philox4x32_10(ctr, key);
  }

  /// The random word of one element (a whole Philox call; kernels use words_n).
  KOKKOS_INLINE_FUNCTION std::uint32_t word(std::uint32_t param_id, std::uint64_t element) const {
    return bits(param_id, element >> 2).v[element & 3u];
  }

  /// Words of elements 4*first_block .. 4*(first_block + N) - 1, in order, laid
  /// out as PerturbationStream::zn lays out z (out[4*i + lane] for block
  /// first_block + i), so one loop can pair z and r; the Philox calls run
  /// over N independent blocks, which host compilers vectorise.
  template <int N>
  KOKKOS_INLINE_FUNCTION void words_n(std::uint32_t param_id, std::uint64_t first_block,
                                      std::uint32_t out[4 * N]) const {
    const PhiloxKey keys[1] = {key};
    std::uint32_t w[1][4][N];
    philox4x32_10_n<N, 1>(first_block, param_id, kRoundingBlockTag, keys, w);
    for (int i = 0; i < N; ++i)
      for (int l = 0; l < 4; ++l) out[4 * i + l] = w[0][l][i];
  }
};

/// The rounding word of element `element` of parameter `param_id` when the
/// update of step `step` is stored, in one call (derives the key each time:
/// for tests and one-off values).
KOKKOS_INLINE_FUNCTION std::uint32_t rounding_bits(std::uint64_t seed, std::uint64_t step,
                                                   std::uint32_t param_id, std::uint64_t element) {
  return RoundingStream::make(seed, step).word(param_id, element);
}

}  // namespace distzo
