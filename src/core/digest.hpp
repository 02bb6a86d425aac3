#pragma once
// Parameter digest, version 2 (docs/formats.md, "Parameter digest"): one
// 64-bit value over the names, shapes and exact bits of every parameter, in
// canonical parameter order, printed as 16 lowercase hex digits. It depends
// only on the logical tensors, not on where they live or how a file stores
// them, so the digest `distzo inspect --digest` prints for a checkpoint equals
// the one the run computed in memory.
//
// Two stages:
//   1. per tensor, the element sum  S = Σ_i element_term(i, bits(x_i)) mod 2^64
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

namespace distzo {

/// Version of the definition below, recorded as `digest_version` in every
/// model and checkpoint file distzo writes. Version 1 (FNV-1a over every
/// element in sequence) is no longer computed.
constexpr std::int64_t kDigestVersion = 2;

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

/// One element's term of the element sum: mix(key(i) XOR bits), with key(i)
/// = mix((i + 1) · γ), the i-th output of splitmix64 seeded with 0. For each
/// fixed index the term is a bijection of the 32 bits, so a change of one
/// element always changes S; distinct indices get unrelated keys, so moved
/// or swapped elements change S too (with probability 1 - 2^-64).
KOKKOS_INLINE_FUNCTION constexpr std::uint64_t element_term(std::uint64_t index,
                                                            std::uint32_t bits) {
  return mix(mix((index + 1) * kGamma) ^ bits);
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
