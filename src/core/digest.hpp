#pragma once
// Parameter digest, version 3 (docs/formats.md, "Parameter digest"): one
// 64-bit value over the names, shapes and exact stored bits of every
// parameter, in canonical parameter order, printed as 16 lowercase hex
// digits: a float32 element's 32 bits, a bf16 or fp16 element's 16-bit word
// tagged with its format. It depends only on the tensors as stored, not on
// where they live, so the digest `distzo inspect --digest` prints for a
// checkpoint equals the one the run computed in memory. Version 3 digests a
// float32 tensor exactly as version 2 did.
//
// Two stages:
//   1. per tensor, the element sum  S = Σ_i element_term(i, word(x_i)) mod 2^64
//      over the row-major element index i. Integer addition is associative
//      and commutative, so a parallel reduction in any order, with any
//      number of threads or slices, on any backend gives the same S; the
//      kernels that compute it where θ lives are in kernels/digest.hpp;
//   2. a short sequential fold of (name, shape, element count, S) per tensor
//      in canonical order (ParameterDigest, on the host).
//
// Not cryptographic: it catches accidental change (a diverged replica, a
// corrupted or mixed-up file), not an adversary.

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/storage_dtype.hpp"

namespace distzo {

/// Version of the definition below, recorded as `digest_version` in every
/// model and checkpoint file distzo writes. Version 1 (FNV-1a over every
/// element in sequence) is no longer computed; version 2 is version 3
/// restricted to float32 tensors (it digested a 2-byte θ over its decoded
/// float32 values).
constexpr std::int64_t kDigestVersion = 3;
/// The first word folded into every digest: 2, version 2's number, which
/// version 3 keeps so that a float32 θ has the same digest under both.
constexpr std::uint64_t kDigestFirstWord = 2;

/// The `digest_version` a file of tensors in `dtype` records: the oldest
/// definition that gives its digest — 2 for float32 tensors (on which
/// versions 2 and 3 agree, so float32 files stay as they were), 3 for bf16
/// and fp16 ones.
constexpr std::int64_t digest_version_of(StorageDtype dtype) {
  return dtype == StorageDtype::fp32 ? 2 : kDigestVersion;
}

namespace digest {

/// splitmix64's output function (Stafford's "Mix13"): a bijection of the
/// 64-bit words in which every input bit flips each output bit with
/// probability close to 1/2. Two multiplies, three xor-shifts.
KOKKOS_INLINE_FUNCTION constexpr std::uint64_t mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// splitmix64's increment, 2^64 / golden ratio (odd).
constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

/// One element's term of the element sum: mix(key(i) XOR word), with key(i)
/// = mix((i + 1) · γ), the i-th output of splitmix64 seeded with 0. For each
/// fixed index the term is a bijection of the word, so a change of one
/// element always changes S; distinct indices get unrelated keys, so moved
/// or swapped elements change S too (with probability 1 - 2^-64).
KOKKOS_INLINE_FUNCTION constexpr std::uint64_t element_term(std::uint64_t index,
                                                            std::uint64_t word) {
  return mix(mix((index + 1) * kGamma) ^ word);
}

/// The format tag of a 2-byte element's word (bits 32 and up): bf16 1,
/// fp16 2; float32 words have none (0), as in version 2.
KOKKOS_INLINE_FUNCTION constexpr std::uint64_t format_tag(StorageDtype dtype) {
  return dtype == StorageDtype::bf16   ? std::uint64_t{1} << 32
         : dtype == StorageDtype::fp16 ? std::uint64_t{2} << 32
                                       : 0;
}

/// The word an element enters element_term with: a float32's 32 bits, or a
/// bf16 / fp16 element's 16-bit word with its format's tag, so no 2-byte
/// word equals a float32's or the other format's (a bf16 0 is not a float 0).
KOKKOS_INLINE_FUNCTION constexpr std::uint64_t stored_word(StorageDtype dtype, std::uint32_t bits) {
  return format_tag(dtype) | bits;
}

}  // namespace digest

/// A 64-bit value as 16 lowercase hex digits: how digests, checksums and
/// run ids are written.
std::string hex16(std::uint64_t value);

/// Stage 2: folds one record per tensor, in canonical parameter order, into
/// a 64-bit state. Each word w enters as state ← mix(state XOR w), a
/// bijection of w for a given state and of the state for a given w, so a
/// change in any one word always changes the digest.
class ParameterDigest {
 public:
  ParameterDigest();

  /// Adds one tensor: its name, its shape and its element sum S.
  void add_tensor(const std::string& name, const std::vector<std::int64_t>& shape,
                  std::uint64_t element_sum);

  /// The digest: the state after a last word, the number of tensors added.
  std::uint64_t value() const;
  /// value() as 16 lowercase hex digits.
  std::string hex() const;

 private:
  void absorb(std::uint64_t word) { state_ = digest::mix(state_ ^ word); }

  std::uint64_t state_ = 0;
  std::uint64_t tensors_ = 0;
};

}  // namespace distzo
