#include "kernels/activations.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "core/fp.hpp"
#include "core/math.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

namespace {

void check_bias(const char* kernel, const ConstVec& b, std::size_t cols) {
  DISTZO_REQUIRE(b.extent(0) == 0 || b.extent(0) == cols,
                 "distzo::kernels::" << kernel << ": bias has " << b.extent(0)
                                     << " entries, expected " << cols << " (or 0 for no bias)");
}

MDRangePolicy2 rows_by_cols(const ExecSpace& space, std::size_t rows, std::size_t cols) {
  return MDRangePolicy2(space, {0, 0},
                        {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)});
}

}  // namespace

void bias_relu(const ExecSpace& space, const Mat& y, const ConstVec& b) {
  check_bias("bias_relu", b, y.extent(1));
  if (y.size() == 0) return;
  const Mat yy = y;
  const ConstVec bb = b;
  const bool has_bias = b.extent(0) != 0;
  // "t < 0 ? 0 : t" selects without a branch (a data-dependent branch on the
  // sign costs a misprediction per element on a CPU) and lets NaN through.
  Kokkos::parallel_for(
      "distzo::bias_relu", rows_by_cols(space, y.extent(0), y.extent(1)),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t c) {
        const real t = has_bias ? yy(r, c) + bb(c) : yy(r, c);
        yy(r, c) = t < real(0) ? real(0) : t;
      });
}

void add_bias_residual(const ExecSpace& space, const Mat& h, const ConstMat& y, const ConstVec& b) {
  DISTZO_REQUIRE(h.extent(0) == y.extent(0) && h.extent(1) == y.extent(1),
                 "distzo::kernels::add_bias_residual: h is (" << h.extent(0) << ", " << h.extent(1)
                                                              << "), y is (" << y.extent(0) << ", "
                                                              << y.extent(1) << ")");
  check_bias("add_bias_residual", b, h.extent(1));
  if (h.size() == 0) return;
  const Mat hh = h;
  const ConstMat yy = y;
  const ConstVec bb = b;
  const bool has_bias = b.extent(0) != 0;
  Kokkos::parallel_for(
      "distzo::add_bias_residual", rows_by_cols(space, h.extent(0), h.extent(1)),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t c) {
        const real t = has_bias ? yy(r, c) + bb(c) : yy(r, c);
        hh(r, c) += t;
      });
}

namespace {

/// silu(g) * u. fp::exp: a polynomial the host loop vectorises (libm's expf
/// is a call per element), the same bits on every backend.
KOKKOS_INLINE_FUNCTION real silu_times(real g, real u) { return g / (real(1) + fp::exp(-g)) * u; }

/// gelu_tanh(g) * u, every operation rounded on its own (fp::), so every
/// backend gives the same bits. 2 sqrt(2/pi) = 1.5957691216057308.
KOKKOS_INLINE_FUNCTION real gelu_tanh_times(real g, real u) {
  const real cube = fp::mul(fp::mul(g, g), g);
  const real inner = fp::mul(real(1.5957691216057308), fp::mul_add(real(0.044715), cube, g));
  return fp::mul(fp::div(g, fp::add(real(1), fp::exp(-inner))), u);
}

}  // namespace

void silu_mul(const ExecSpace& space, const Mat& gate, const ConstMat& up, const ConstVec& bg,
              const ConstVec& bu) {
  DISTZO_REQUIRE(gate.extent(0) == up.extent(0) && gate.extent(1) == up.extent(1),
                 "distzo::kernels::silu_mul: gate is (" << gate.extent(0) << ", " << gate.extent(1)
                                                        << "), up is (" << up.extent(0) << ", "
                                                        << up.extent(1) << ")");
  check_bias("silu_mul", bg, gate.extent(1));
  check_bias("silu_mul", bu, gate.extent(1));
  if (gate.size() == 0) return;
  const Mat gg = gate;
  const ConstMat uu = up;
  const ConstVec bgg = bg, buu = bu;
  const auto rows = gate.extent(0);
  const auto cols = static_cast<std::int64_t>(gate.extent(1));
  if (bg.extent(0) == 0 && bu.extent(0) == 0) {
    // No biases (Llama's default), no branch inside: the loop vectorises.
    for_each_in_rows(
        "distzo::silu_mul", space, rows, cols,
        KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t c) {
          gg(r, c) = silu_times(gg(r, c), uu(r, c));
        });
    return;
  }
  const bool gate_bias = bg.extent(0) != 0, up_bias = bu.extent(0) != 0;
  for_each_in_rows(
      "distzo::silu_mul", space, rows, cols,
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t c) {
        const real g = gate_bias ? gg(r, c) + bgg(c) : gg(r, c);
        const real u = up_bias ? uu(r, c) + buu(c) : uu(r, c);
        gg(r, c) = silu_times(g, u);
      });
}

void gelu_tanh_mul(const ExecSpace& space, const Mat& gate, const ConstMat& up) {
  DISTZO_REQUIRE(gate.extent(0) == up.extent(0) && gate.extent(1) == up.extent(1),
                 "distzo::kernels::gelu_tanh_mul: gate is ("
                     << gate.extent(0) << ", " << gate.extent(1) << "), up is (" << up.extent(0)
                     << ", " << up.extent(1) << ")");
  if (gate.size() == 0) return;
  const Mat gg = gate;
  const ConstMat uu = up;
  for_each_in_rows(
      "distzo::gelu_tanh_mul", space, gate.extent(0), static_cast<std::int64_t>(gate.extent(1)),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t c) {
        gg(r, c) = gelu_tanh_times(gg(r, c), uu(r, c));
      });
}

}  // namespace distzo::kernels
