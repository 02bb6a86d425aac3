#include "kernels/perturb_update.hpp"

#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "core/fp.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

namespace {

/// Philox blocks (of 4 elements) per work item: on host backends a chunk the
/// compiler vectorises (the z of 32 blocks in SIMD loops, then contiguous
/// loads and stores of 128 elements); on a device one block per thread.
constexpr int kBlocksPerItem = std::is_same<MemSpace, Kokkos::HostSpace>::value ? 32 : 1;
constexpr int kElementsPerItem = 4 * kBlocksPerItem;

template <class Out>
void check(std::size_t theta_elements, const Out& out, const char* which) {
  DISTZO_REQUIRE(out.extent(0) == 0 || out.extent(0) == theta_elements,
                 "update_and_perturb: " << which << " holds " << out.extent(0)
                                        << " elements, θ holds " << theta_elements);
}

void check_rows(const RowSelection& rows, std::uint64_t first_element, std::size_t elements) {
  DISTZO_REQUIRE(rows.used.extent(0) == 0 ||
                     (rows.row_elements > 0 &&
                      (first_element + elements + rows.row_elements - 1) / rows.row_elements <=
                          rows.used.extent(0)),
                 "update_and_perturb: a row selection of "
                     << rows.used.extent(0) << " rows of " << rows.row_elements
                     << " elements does not cover elements [" << first_element << ", "
                     << first_element + elements << ")");
}

void check_terms(const UpdateTerms& update) {
  DISTZO_REQUIRE(update.count >= 0 && update.count <= kMaxQueries,
                 "update: " << update.count << " z terms, at most " << kMaxQueries);
}

}  // namespace

/// θ as the kernel sees it: load(i) gives element i as float32, and
/// store_item stores an item's θ' (float32 as computed; 2 bytes rounded,
/// with store(i, v, r) storing v with the random word r and returning the
/// value θ now holds).
struct Fp32Theta {
  Vec words;
  std::size_t extent() const { return words.extent(0); }
  KOKKOS_FORCEINLINE_FUNCTION real load(std::uint64_t i) const { return words(i); }
  /// Stores θ' of an item's lanes [base, base + N) that lie in [first,
  /// last] as computed (plain stores the compiler vectorises).
  template <int N>
  KOKKOS_FORCEINLINE_FUNCTION void store_item(std::uint64_t base, std::uint64_t first,
                                              std::uint64_t last, bool whole, real (&value)[N],
                                              const UpdateTerms&, std::uint32_t,
                                              std::uint64_t) const {
    if (whole) {
      for (int i = 0; i < N; ++i) words(base + i - first) = value[i];
      return;
    }
    for (int i = 0; i < N; ++i) {
      const std::uint64_t e = base + i;
      if (e >= first && e <= last) words(e - first) = value[i];
    }
  }
};

template <StorageDtype kDtype, Rounding kRounding>
struct HalfTheta {
  HalfVec words;
  std::size_t extent() const { return words.extent(0); }
  KOKKOS_FORCEINLINE_FUNCTION real load(std::uint64_t i) const {
    return storage::load(words(i), kDtype);
  }
  KOKKOS_FORCEINLINE_FUNCTION real store(std::uint64_t i, real v, std::uint32_t r) const {
    const std::uint32_t word = storage::store(v, kDtype, kRounding, r);
    words(i) = static_cast<std::uint16_t>(word);
    return storage::load(word, kDtype);
  }
  /// Stores θ' of an item's lanes in [first, last] rounded (stochastic
  /// rounding: with the words of the pending step, Philox blocks block0 ..),
  /// and leaves in `value` what θ now holds, so w± come from the value stored.
  template <int N>
  KOKKOS_FORCEINLINE_FUNCTION void store_item(std::uint64_t base, std::uint64_t first,
                                              std::uint64_t last, bool whole, real (&value)[N],
                                              const UpdateTerms& u, std::uint32_t param_id,
                                              std::uint64_t block0) const {
    std::uint32_t r[N] = {};
    if constexpr (kRounding == Rounding::stochastic)
      u.rounding_stream.words_n<N / 4>(param_id, block0, r);
    if (whole) {
      for (int i = 0; i < N; ++i) value[i] = store(base + i - first, value[i], r[i]);
      return;
    }
    for (int i = 0; i < N; ++i) {
      const std::uint64_t e = base + i;
      if (e >= first && e <= last) value[i] = store(e - first, value[i], r[i]);
    }
  }
};

/// Where w± go: float32 values as computed, or 2-byte words of θ's format
/// rounded to nearest (precision.gemm_inputs: storage).
struct FloatOut {
  Vec values;
  std::size_t extent(int) const { return values.extent(0); }
  KOKKOS_FORCEINLINE_FUNCTION void set(std::uint64_t i, real v) const { values(i) = v; }
};

template <StorageDtype kDtype>
struct WordsOut {
  HalfVec words;
  std::size_t extent(int) const { return words.extent(0); }
  KOKKOS_FORCEINLINE_FUNCTION void set(std::uint64_t i, real v) const {
    words(i) = static_cast<std::uint16_t>(storage::store(v, kDtype, Rounding::nearest, 0u));
  }
};

template <class Theta, class Out>
void fused_kernel(const ExecSpace& space, const Theta& theta, std::uint32_t param_id,
                  std::uint64_t first_element, const UpdateTerms& update,
                  const PerturbationStream& stream, real eps, const Out& plus, const Out& minus,
                  const Out& unperturbed, const RowSelection& rows) {
  check_terms(update);
  check(theta.extent(), plus, "w+");
  check(theta.extent(), minus, "w-");
  check(theta.extent(), unperturbed, "w");
  check_rows(rows, first_element, theta.extent());
  const bool all_rows = rows.used.extent(0) == 0;
  if (theta.extent() == 0) return;
  const Theta t = theta;
  const Out p = plus, m = minus, w = unperturbed;
  const bool write_plus = plus.extent(0) != 0, write_minus = minus.extent(0) != 0;
  const bool write_base = unperturbed.extent(0) != 0;
  const bool perturb = write_plus || write_minus;  // this step's z is needed
  const bool writes = perturb || write_base;
  const UpdateTerms u = update;
  const PerturbationStream s = stream;
  const ConstIntVec used = rows.used;
  const std::uint64_t row_elements = all_rows ? 1 : rows.row_elements;
  // Elements [first, last] of the parameter; items cover whole chunks of
  // kBlocksPerItem Philox blocks starting at the block holding `first`.
  const std::uint64_t first = first_element, last = first_element + theta.extent() - 1;
  const std::uint64_t first_block = first >> 2;
  const std::int64_t items =
      static_cast<std::int64_t>(((last >> 2) - first_block) / kBlocksPerItem + 1);
  // Each item: load θ, apply the pending update (its z regenerated from its
  // coordinates), then this step's z and w± = θ' ± εz, and w = θ'. Arithmetic through
  // core/fp.hpp: the same bits on every backend. Lanes outside [first, last]
  // are neither read nor written; lanes of unselected rows get no w±.
  for_each_index(
      "distzo::update_and_perturb", space, items, static_cast<std::int64_t>(theta.extent()),
      KOKKOS_LAMBDA(const std::int64_t item) {
        const std::uint64_t block0 =
            first_block + static_cast<std::uint64_t>(item) * kBlocksPerItem;
        const std::uint64_t base = 4 * block0;  // element of lane 0
        const bool whole = base >= first && base + kElementsPerItem - 1 <= last;
        // Rows: the first and last row the item touches decide whether this
        // item writes any output at all and whether every lane gets one.
        bool any = writes && all_rows, every = all_rows;
        if (writes && !all_rows) {
          const std::uint64_t lo = base > first ? base : first;
          const std::uint64_t hi =
              base + kElementsPerItem - 1 < last ? base + kElementsPerItem - 1 : last;
          every = true;
          for (std::uint64_t row = lo / row_elements; row <= hi / row_elements; ++row) {
            const bool on = used(row) != 0;
            any = any || on;
            every = every && on;
          }
        }
        real value[kElementsPerItem];
        if (whole) {
          for (int i = 0; i < kElementsPerItem; ++i) value[i] = t.load(base + i - first);
        } else {
          for (int i = 0; i < kElementsPerItem; ++i) {
            const std::uint64_t e = base + i;
            value[i] = (e >= first && e <= last) ? t.load(e - first) : real(0);
          }
        }
        // z of this step, and of the pending update's queries. One query
        // (the common case) and this step's z come from one interleaved pass.
        real ez[kElementsPerItem];
        bool have_ez = false;
        if (u.count > 0) {
          real step[kElementsPerItem];
          for (int i = 0; i < kElementsPerItem; ++i) step[i] = fp::mul(u.decay, value[i]);
          for (int q = 0; q < u.count; ++q) {
            real z[kElementsPerItem];
            if (q == 0 && u.count == 1 && any && perturb && u.stream[0].same_kind(s)) {
              const PerturbationStream both[2] = {u.stream[0], s};
              real* const outs[2] = {z, ez};
              PerturbationStream::zn_streams<kBlocksPerItem, 2>(both, param_id, block0, outs);
              have_ez = true;
            } else {
              u.stream[q].zn<kBlocksPerItem>(param_id, block0, z);
            }
            const real a = u.coefficient[q];
            for (int i = 0; i < kElementsPerItem; ++i) step[i] = fp::add(step[i], fp::mul(a, z[i]));
          }
          for (int i = 0; i < kElementsPerItem; ++i) value[i] = fp::sub(value[i], step[i]);
          t.store_item(base, first, last, whole, value, u, param_id, block0);
        }
        if (!any) return;
        if (perturb && !have_ez) s.zn<kBlocksPerItem>(param_id, block0, ez);
        if (perturb)
          for (int i = 0; i < kElementsPerItem; ++i) ez[i] = fp::mul(eps, ez[i]);
        if (whole && every) {
          if (write_base)
            for (int i = 0; i < kElementsPerItem; ++i) w.set(base + i - first, value[i]);
          if (write_plus)
            for (int i = 0; i < kElementsPerItem; ++i)
              p.set(base + i - first, fp::add(value[i], ez[i]));
          if (write_minus)
            for (int i = 0; i < kElementsPerItem; ++i)
              m.set(base + i - first, fp::sub(value[i], ez[i]));
        } else {
          for (int i = 0; i < kElementsPerItem; ++i) {
            const std::uint64_t e = base + i;
            if (e < first || e > last || (!all_rows && used(e / row_elements) == 0)) continue;
            if (write_base) w.set(e - first, value[i]);
            if (write_plus) p.set(e - first, fp::add(value[i], ez[i]));
            if (write_minus) m.set(e - first, fp::sub(value[i], ez[i]));
          }
        }
      });
}

namespace {

/// w± of one sign as the word type W, or an empty View when not requested.
template <class W>
Kokkos::View<W*, Kokkos::LayoutRight, MemSpace> output_words(const StoredVec& out) {
  return out.empty() ? Kokkos::View<W*, Kokkos::LayoutRight, MemSpace>() : out.as<W>();
}

/// The fused kernel over θ (`theta`, of format kThetaDtype) with w± as they
/// were asked for: float32 values, or words of θ's own format.
template <StorageDtype kThetaDtype, class Theta>
void fused_with_outputs(const ExecSpace& space, const Theta& theta, std::uint32_t param_id,
                        std::uint64_t first_element, const UpdateTerms& update,
                        const PerturbationStream& stream, real eps, const PerturbedOutputs& outs,
                        const RowSelection& rows) {
  const StoredVec& given =
      !outs.plus.empty() ? outs.plus : (!outs.minus.empty() ? outs.minus : outs.base);
  const StorageDtype out = given.dtype();
  for (const StoredVec* o : {&outs.plus, &outs.minus, &outs.base})
    DISTZO_REQUIRE(o->empty() || o->dtype() == out, "update_and_perturb: outputs in two formats, "
                                                        << to_string(o->dtype()) << " and "
                                                        << to_string(out));
  if (out == StorageDtype::fp32)
    return fused_kernel(space, theta, param_id, first_element, update, stream, eps,
                        FloatOut{output_words<real>(outs.plus)},
                        FloatOut{output_words<real>(outs.minus)},
                        FloatOut{output_words<real>(outs.base)}, rows);
  if constexpr (kThetaDtype != StorageDtype::fp32) {
    if (out == kThetaDtype)
      return fused_kernel(space, theta, param_id, first_element, update, stream, eps,
                          WordsOut<kThetaDtype>{output_words<std::uint16_t>(outs.plus)},
                          WordsOut<kThetaDtype>{output_words<std::uint16_t>(outs.minus)},
                          WordsOut<kThetaDtype>{output_words<std::uint16_t>(outs.base)}, rows);
  }
  DISTZO_REQUIRE(false, "update_and_perturb: w± as " << to_string(out) << " words of a "
                                                     << to_string(kThetaDtype)
                                                     << " θ (float32 or θ's own format expected)");
}

/// A 2-byte θ of format kDtype, instantiated per rounding: neither the
/// format nor the rounding is decided per element.
template <StorageDtype kDtype>
void fused_half(const ExecSpace& space, const StoredVec& theta, std::uint32_t param_id,
                std::uint64_t first_element, const UpdateTerms& update,
                const PerturbationStream& stream, real eps, const PerturbedOutputs& outs,
                const RowSelection& rows) {
  const HalfVec words = theta.as<std::uint16_t>();
  if (update.rounding == Rounding::stochastic)
    fused_with_outputs<kDtype>(space, HalfTheta<kDtype, Rounding::stochastic>{words}, param_id,
                               first_element, update, stream, eps, outs, rows);
  else
    fused_with_outputs<kDtype>(space, HalfTheta<kDtype, Rounding::nearest>{words}, param_id,
                               first_element, update, stream, eps, outs, rows);
}

}  // namespace

void update_and_perturb(const ExecSpace& space, const StoredVec& theta, std::uint32_t param_id,
                        std::uint64_t first_element, const UpdateTerms& update,
                        const PerturbationStream& stream, real eps, const PerturbedOutputs& outs,
                        const RowSelection& rows) {
  if (!outs.perturbed) {
    // z = 0 on this tensor: the first output requested gets θ' as the
    // update writes it, the others θ' read back (the same bits), and no z
    // is evaluated.
    UpdateTerms pending = update;
    for (const StoredVec* out : {&outs.plus, &outs.minus, &outs.base}) {
      if (out->empty()) continue;
      update_and_perturb(space, theta, param_id, first_element, pending, stream, eps,
                         PerturbedOutputs{StoredVec(), StoredVec(), *out}, rows);
      pending.count = 0;
    }
    return apply_update(space, theta, param_id, first_element, pending);
  }
  switch (theta.dtype()) {
    case StorageDtype::fp32:
      return fused_with_outputs<StorageDtype::fp32>(space, Fp32Theta{theta.as<real>()}, param_id,
                                                    first_element, update, stream, eps, outs, rows);
    case StorageDtype::bf16:
      return fused_half<StorageDtype::bf16>(space, theta, param_id, first_element, update, stream,
                                            eps, outs, rows);
    case StorageDtype::fp16:
      return fused_half<StorageDtype::fp16>(space, theta, param_id, first_element, update, stream,
                                            eps, outs, rows);
  }
}

void apply_update(const ExecSpace& space, const StoredVec& theta, std::uint32_t param_id,
                  std::uint64_t first_element, const UpdateTerms& update) {
  if (update.count == 0) return;
  // The fused kernel with no outputs requested: the same update arithmetic,
  // and this step's z is never evaluated.
  update_and_perturb(space, theta, param_id, first_element, update, PerturbationStream{}, real(0),
                     PerturbedOutputs());
}

}  // namespace distzo::kernels
