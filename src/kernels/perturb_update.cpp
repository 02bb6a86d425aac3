#include "kernels/perturb_update.hpp"

#include "core/error.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

namespace {

/// The elements [first, first + n) of a parameter, walked in Philox blocks of 4
/// (z4 gives all four lanes of a block from one Philox call per stream).
struct BlockRange {
  std::uint64_t first, last;    // element range, inclusive
  std::uint64_t first_block;    // first / 4
  std::int64_t num_blocks;

  BlockRange(std::uint64_t first_element, std::uint64_t n)
      : first(first_element),
        last(first_element + n - 1),
        first_block(first_element >> 2),
        num_blocks(static_cast<std::int64_t>(((first_element + n - 1) >> 2) - (first_element >> 2) + 1)) {}
};

/// θ' for the 4 lanes of one block; shared by both kernels so a fused update
/// and a flushed update round identically.
KOKKOS_INLINE_FUNCTION void updated4(real theta[4], const UpdateTerms& u, std::uint32_t param_id,
                                     std::uint64_t block) {
  real step[4];
  for (int l = 0; l < 4; ++l) step[l] = u.decay * theta[l];
  for (int q = 0; q < u.count; ++q) {
    real z[4];
    u.stream[q].z4(param_id, block, z);
    for (int l = 0; l < 4; ++l) step[l] += u.coefficient[q] * z[l];
  }
  for (int l = 0; l < 4; ++l) theta[l] -= step[l];
}

void check(const Vec& theta, const Vec& out, const char* which) {
  DISTZO_REQUIRE(out.extent(0) == 0 || out.extent(0) == theta.extent(0),
                 "update_and_perturb: " << which << " holds " << out.extent(0)
                                        << " elements, θ holds " << theta.extent(0));
}

void check_terms(const UpdateTerms& update) {
  DISTZO_REQUIRE(update.count >= 0 && update.count <= kMaxQueries,
                 "update: " << update.count << " query terms, at most " << kMaxQueries);
}

}  // namespace

void update_and_perturb(const ExecSpace& space, const Vec& theta, std::uint32_t param_id,
                        std::uint64_t first_element, const UpdateTerms& update,
                        const PerturbationStream& stream, real eps, const Vec& plus,
                        const Vec& minus, const RowSelection& rows) {
  check_terms(update);
  check(theta, plus, "w+");
  check(theta, minus, "w-");
  const bool all_rows = rows.used.extent(0) == 0;
  DISTZO_REQUIRE(all_rows || (rows.row_elements > 0 &&
                              (first_element + theta.extent(0) + rows.row_elements - 1) /
                                      rows.row_elements <=
                                  rows.used.extent(0)),
                 "update_and_perturb: a row selection of " << rows.used.extent(0) << " rows of "
                     << rows.row_elements << " elements does not cover elements [" << first_element
                     << ", " << first_element + theta.extent(0) << ")");
  if (theta.extent(0) == 0) return;
  const Vec t = theta, p = plus, m = minus;
  const bool write_plus = plus.extent(0) != 0, write_minus = minus.extent(0) != 0;
  const UpdateTerms u = update;
  const PerturbationStream s = stream;
  const BlockRange r(first_element, theta.extent(0));
  const ConstIntVec used = rows.used;
  const std::uint64_t row_elements = all_rows ? 1 : rows.row_elements;
  // One thread per Philox block of 4 elements: θ is read once, θ' and w± are
  // written once; the z of the pending update and of this step come from
  // their coordinates (no z is ever stored). Lanes of unselected rows skip
  // this step's z and the w± stores (a block may straddle two rows).
  Kokkos::parallel_for(
      "distzo::update_and_perturb", RangePolicy64(space, 0, r.num_blocks),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const std::uint64_t block = r.first_block + static_cast<std::uint64_t>(i);
        const std::uint64_t base = 4 * block;
        real value[4] = {0, 0, 0, 0};
        for (unsigned l = 0; l < 4; ++l)
          if (base + l >= r.first && base + l <= r.last) value[l] = t(base + l - r.first);
        if (u.count > 0) updated4(value, u, param_id, block);
        bool selected[4] = {true, true, true, true};
        if (!all_rows)
          for (unsigned l = 0; l < 4; ++l)
            selected[l] = base + l >= r.first && base + l <= r.last &&
                          used((base + l) / row_elements) != 0;
        real z[4] = {0, 0, 0, 0};
        if ((write_plus || write_minus) &&
            (selected[0] || selected[1] || selected[2] || selected[3]))
          s.z4(param_id, block, z);
        for (unsigned l = 0; l < 4; ++l) {
          if (base + l < r.first || base + l > r.last) continue;
          const std::uint64_t j = base + l - r.first;
          if (u.count > 0) t(j) = value[l];
          if (!selected[l]) continue;
          const real ez = eps * z[l];
          if (write_plus) p(j) = value[l] + ez;
          if (write_minus) m(j) = value[l] - ez;
        }
      });
}

void apply_update(const ExecSpace& space, const Vec& theta, std::uint32_t param_id,
                  std::uint64_t first_element, const UpdateTerms& update) {
  if (update.count == 0) return;
  // The fused kernel with no outputs requested: the same update arithmetic,
  // and this step's z is never evaluated.
  update_and_perturb(space, theta, param_id, first_element, update, PerturbationStream(), real(0),
                     Vec(), Vec());
}

}  // namespace distzo::kernels
