#include "kernels/linear.hpp"

#include <KokkosKernels_config.h>

#include <KokkosBlas3_gemm.hpp>
#include <cstdint>

#include "core/error.hpp"
#include "kernels/common.hpp"
#include "kernels/host_gemm.hpp"

// Kokkos Kernels defines its version in KokkosKernels_config.h from 4.0 on
// (3.7 defines KOKKOSKERNELS_VERSION only; 3.4 defines nothing). 3.7 also has
// the execution-space gemm, but taking the fenced path there is merely slower.
#if defined(KOKKOSKERNELS_VERSION_MAJOR) && (KOKKOSKERNELS_VERSION_MAJOR >= 4)
#define DISTZO_KK_GEMM_HAS_SPACE 1
#else
#define DISTZO_KK_GEMM_HAS_SPACE 0
#endif

// The tiled host GEMM (kernels/host_gemm.hpp) needs a host BLAS; without the
// BLAS TPL every backend takes KokkosBlas::gemm.
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#define DISTZO_TILED_HOST_GEMM 1
#else
#define DISTZO_TILED_HOST_GEMM 0
#endif

namespace distzo::kernels {

namespace {

bool is_transposed(const char* trans) { return trans[0] == 'T' || trans[0] == 't'; }

bool is_valid_trans(const char* trans) {
  return trans != nullptr && (trans[0] == 'N' || trans[0] == 'n' || is_transposed(trans));
}

}  // namespace

void gemm(const ExecSpace& space, const char* trans_a, const char* trans_b, real alpha,
          const ConstMat& a, const ConstMat& b, real beta, const Mat& c) {
  DISTZO_REQUIRE(is_valid_trans(trans_a) && is_valid_trans(trans_b),
                 "distzo::kernels::gemm: transposes must be \"N\" or \"T\"");
  const bool ta = is_transposed(trans_a);
  const bool tb = is_transposed(trans_b);
  const std::size_t m = ta ? a.extent(1) : a.extent(0);
  const std::size_t k = ta ? a.extent(0) : a.extent(1);
  const std::size_t kb = tb ? b.extent(1) : b.extent(0);
  const std::size_t n = tb ? b.extent(0) : b.extent(1);
  DISTZO_REQUIRE(k == kb && c.extent(0) == m && c.extent(1) == n,
                 "distzo::kernels::gemm: op(A) is (" << m << ", " << k << "), op(B) is (" << kb
                                                     << ", " << n << "), C is (" << c.extent(0)
                                                     << ", " << c.extent(1) << ")");
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // Kokkos Kernels 3.4 returns without touching C when the inner dimension
    // is 0 (4.x scales C on the default instance); do it here, on `space`.
    if (beta == real(0)) {
      Kokkos::deep_copy(space, c, real(0));
    } else if (beta != real(1)) {
      const Mat cc = c;
      const std::int64_t cols = static_cast<std::int64_t>(n);
      Kokkos::parallel_for(
          "distzo::gemm::scale_c", RangePolicy64(space, 0, static_cast<std::int64_t>(m) * cols),
          KOKKOS_LAMBDA(const std::int64_t i) { cc(i / cols, i % cols) *= beta; });
    }
    return;
  }
#if DISTZO_TILED_HOST_GEMM
  // Host execution spaces (Serial, OpenMP, Threads) read host memory; device
  // backends keep cuBLAS & co. through KokkosBlas::gemm below.
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    if (gemm_path() == GemmPath::tiled) {
      // The tiles are computed outside Kokkos, on the host: work queued on
      // `space` before must be done (on the synchronous host backends this
      // costs nothing).
      fence(space, "distzo::kernels::gemm: inputs ready for the host tiles");
      Kokkos::Profiling::pushRegion("distzo::gemm[host tiles]");
      host_tiled_gemm(ta, tb, m, n, k, alpha, a.data(), a.stride(0), b.data(), b.stride(0), beta,
                      c.data(), c.stride(0));
      Kokkos::Profiling::popRegion();
      return;
    }
  }
#endif
#if DISTZO_KK_GEMM_HAS_SPACE
  KokkosBlas::gemm(space, trans_a, trans_b, alpha, a, b, beta, c);
#else
  fence(space,
        "distzo::kernels::gemm: inputs ready for the default-instance gemm (Kokkos Kernels < 4)");
  KokkosBlas::gemm(trans_a, trans_b, alpha, a, b, beta, c);
  fence(ExecSpace(), "distzo::kernels::gemm: result ready for later work on the caller's instance");
#endif
}

void linear(const ExecSpace& space, const Mat& y, const ConstMat& x, const ConstMat& w,
            const ConstVec& b) {
  const std::size_t rows = x.extent(0);
  const std::size_t in = x.extent(1);
  const std::size_t out = w.extent(0);
  DISTZO_REQUIRE(w.extent(1) == in, "distzo::kernels::linear: x is ("
                                        << rows << ", " << in << ") but w is (" << out << ", "
                                        << w.extent(1) << "); w must be (out, in)");
  DISTZO_REQUIRE(y.extent(0) == rows && y.extent(1) == out, "distzo::kernels::linear: y is ("
                                                                << y.extent(0) << ", "
                                                                << y.extent(1) << "), expected ("
                                                                << rows << ", " << out << ")");
  DISTZO_REQUIRE(b.extent(0) == 0 || b.extent(0) == out, "distzo::kernels::linear: bias has "
                                                             << b.extent(0) << " entries, expected "
                                                             << out << " (or 0 for no bias)");

  // y = x * w^T: w is (out, in) row-major, so the "T" on B gives (in, out).
  gemm(space, "N", "T", real(1), x, w, real(0), y);

  if (b.extent(0) == 0 || rows == 0 || out == 0) return;
  // Separate pass rather than beta = 1 on a bias-filled y: gemm with beta = 0
  // never reads y, so y may start out uninitialised.
  const Mat yy = y;
  const ConstVec bb = b;
  // A 2-D range gives (row, column) without a division per element.
  Kokkos::parallel_for(
      "distzo::linear::bias",
      MDRangePolicy2(space, {0, 0},
                     {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(out)}),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t c) { yy(r, c) += bb(c); });
}

}  // namespace distzo::kernels
