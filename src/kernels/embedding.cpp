#include "kernels/embedding.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "core/fp.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

void embedding_gather(const ExecSpace& space, const Mat& out, const ConstIntMat& tokens,
                      const WeightMatrix& table, real scale) {
  const std::int64_t batch = static_cast<std::int64_t>(tokens.extent(0));
  const std::int64_t seq = static_cast<std::int64_t>(tokens.extent(1));
  const std::int64_t dim = static_cast<std::int64_t>(table.cols());
  DISTZO_REQUIRE(static_cast<std::int64_t>(out.extent(0)) == batch * seq &&
                     static_cast<std::int64_t>(out.extent(1)) == dim,
                 "distzo::kernels::embedding_gather: out is ("
                     << out.extent(0) << ", " << out.extent(1) << "), expected (" << batch * seq
                     << ", " << dim << ")");
  const Mat o = out;
  const ConstIntMat tok = tokens;
  const MatrixReader tab = table.reader();
  const std::int64_t n = batch * seq * dim;
  if (n == 0) return;
  // One thread per output element, consecutive threads on consecutive columns
  // of the same table row (coalesced on GPUs).
  Kokkos::parallel_for(
      "distzo::embedding_gather", RangePolicy64(space, 0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        const std::int64_t row = i / dim;
        const std::int64_t d = i % dim;
        o(row, d) = fp::mul(tab(tok(row / seq, row % seq), d), scale);
      });
}

void positions_from_mask(const ExecSpace& space, const IntMat& pos, const ConstIntMat& mask) {
  DISTZO_REQUIRE(pos.extent(0) == mask.extent(0) && pos.extent(1) == mask.extent(1),
                 "distzo::kernels::positions_from_mask: pos is ("
                     << pos.extent(0) << ", " << pos.extent(1) << "), mask is (" << mask.extent(0)
                     << ", " << mask.extent(1) << ")");
  const IntMat p = pos;
  const ConstIntMat m = mask;
  const int batch = static_cast<int>(mask.extent(0));
  const int seq = static_cast<int>(mask.extent(1));
  if (batch == 0 || seq == 0) return;
  // One thread per sequence with a sequential prefix sum: this runs once per
  // batch on B x T integers, far too little work to justify a parallel scan.
  Kokkos::parallel_for(
      "distzo::positions_from_mask", RangePolicy(space, 0, batch), KOKKOS_LAMBDA(const int b) {
        int cumsum = 0;
        for (int t = 0; t < seq; ++t) {
          const int real_token = m(b, t) != 0 ? 1 : 0;
          cumsum += real_token;
          p(b, t) = cumsum * real_token - 1;
        }
      });
}

void add_positional(const ExecSpace& space, const Mat& x, const ConstIntMat& pos,
                    const WeightMatrix& table, int offset) {
  const std::int64_t batch = static_cast<std::int64_t>(pos.extent(0));
  const std::int64_t seq = static_cast<std::int64_t>(pos.extent(1));
  const std::int64_t dim = static_cast<std::int64_t>(x.extent(1));
  DISTZO_REQUIRE(static_cast<std::int64_t>(x.extent(0)) == batch * seq,
                 "distzo::kernels::add_positional: x has " << x.extent(0) << " rows, pos is ("
                                                           << batch << ", " << seq << ")");
  DISTZO_REQUIRE(static_cast<std::int64_t>(table.cols()) == dim,
                 "distzo::kernels::add_positional: x has " << dim << " columns, table is ("
                                                           << table.rows() << ", " << table.cols()
                                                           << ")");
  const Mat xx = x;
  const ConstIntMat p = pos;
  const MatrixReader tab = table.reader();
  const std::int64_t n = batch * seq * dim;
  if (n == 0) return;
  Kokkos::parallel_for(
      "distzo::add_positional", RangePolicy64(space, 0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        const std::int64_t row = i / dim;
        const std::int64_t d = i % dim;
        xx(row, d) += tab(p(row / seq, row % seq) + offset, d);
      });
}

void gather_rows(const ExecSpace& space, const Mat& out, const ConstMat& x,
                 const ConstIntVec& rows) {
  const std::int64_t count = static_cast<std::int64_t>(rows.extent(0));
  const std::int64_t dim = static_cast<std::int64_t>(x.extent(1));
  DISTZO_REQUIRE(static_cast<std::int64_t>(out.extent(0)) == count &&
                     static_cast<std::int64_t>(out.extent(1)) == dim,
                 "distzo::kernels::gather_rows: out is (" << out.extent(0) << ", " << out.extent(1)
                                                          << "), expected (" << count << ", " << dim
                                                          << ")");
  const Mat o = out;
  const ConstMat xx = x;
  const ConstIntVec idx = rows;
  const std::int64_t n = count * dim;
  if (n == 0) return;
  Kokkos::parallel_for(
      "distzo::gather_rows", RangePolicy64(space, 0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        const std::int64_t r = i / dim;
        const std::int64_t d = i % dim;
        o(r, d) = xx(idx(r), d);
      });
}

void mark_rows(const ExecSpace& space, const IntVec& used, const ConstIntMat& tokens,
               const ConstIntVec& extra) {
  Kokkos::deep_copy(space, used, 0);
  const IntVec u = used;
  const ConstIntMat tok = tokens;
  const ConstIntVec ext = extra;
  const std::int64_t seq = static_cast<std::int64_t>(tokens.extent(1));
  const std::int64_t n_tokens = static_cast<std::int64_t>(tokens.extent(0)) * seq;
  const std::int64_t n = n_tokens + static_cast<std::int64_t>(extra.extent(0));
  if (n == 0) return;
  // Several threads may mark the same row; all store 1, atomically.
  Kokkos::parallel_for(
      "distzo::mark_rows", RangePolicy64(space, 0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        const int row = i < n_tokens ? tok(i / seq, i % seq) : ext(i - n_tokens);
        Kokkos::atomic_exchange(&u(row), 1);
      });
}

void publish_rows(const ExecSpace& space, const Vec& slice, const ConstIntVec& used) {
  DISTZO_REQUIRE(slice.extent(0) >= used.extent(0), "publish_rows: a slice of "
                                                        << slice.extent(0) << " for "
                                                        << used.extent(0) << " rows");
  const Vec out = slice;
  const ConstIntVec u = used;
  Kokkos::parallel_for(
      "distzo::publish_rows", RangePolicy64(space, 0, static_cast<std::int64_t>(used.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t r) { out(r) = u(r) != 0 ? real(1) : real(0); });
}

void union_rows(const ExecSpace& space, const IntVec& used, const ConstVec& buffer, int slices) {
  const std::int64_t per = static_cast<std::int64_t>(buffer.extent(0)) / slices;
  DISTZO_REQUIRE(
      slices >= 1 && per >= static_cast<std::int64_t>(used.extent(0)),
      "union_rows: " << slices << " slices of " << per << " for " << used.extent(0) << " rows");
  const IntVec u = used;
  const ConstVec in = buffer;
  Kokkos::parallel_for(
      "distzo::union_rows", RangePolicy64(space, 0, static_cast<std::int64_t>(used.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t r) {
        int any = 0;
        for (int s = 0; s < slices; ++s) any |= in(s * per + r) != real(0) ? 1 : 0;
        u(r) = any;
      });
}

}  // namespace distzo::kernels
