#include "kernels/linear.hpp"

#include <KokkosKernels_config.h>

#include <KokkosBlas3_gemm.hpp>
#include <cstdint>

#include "core/error.hpp"
#include "core/fp.hpp"
#include "kernels/common.hpp"
#include "kernels/host_gemm.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <cublas_v2.h>
#endif

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

namespace {

/// linear's shape checks: x (rows, in), w (out, in), y (rows, out), b (out) or empty.
void check_linear(const Mat& y, const ConstMat& x, std::size_t out, std::size_t w_in,
                  const ConstVec& b) {
  const std::size_t rows = x.extent(0);
  const std::size_t in = x.extent(1);
  DISTZO_REQUIRE(w_in == in, "distzo::kernels::linear: x is ("
                                 << rows << ", " << in << ") but w is (" << out << ", " << w_in
                                 << "); w must be (out, in)");
  DISTZO_REQUIRE(y.extent(0) == rows && y.extent(1) == out, "distzo::kernels::linear: y is ("
                                                                << y.extent(0) << ", "
                                                                << y.extent(1) << "), expected ("
                                                                << rows << ", " << out << ")");
  DISTZO_REQUIRE(b.extent(0) == 0 || b.extent(0) == out, "distzo::kernels::linear: bias has "
                                                             << b.extent(0) << " entries, expected "
                                                             << out << " (or 0 for no bias)");
}

/// y += b broadcast over rows (nothing for an empty b).
void add_bias(const ExecSpace& space, const Mat& y, const ConstVec& b) {
  const std::size_t rows = y.extent(0), out = y.extent(1);
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

#ifdef KOKKOS_ENABLE_CUDA
/// The process's cuBLAS handle for the 2-byte GEMMs, created on first use.
cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    const cublasStatus_t status = cublasCreate(&h);
    DISTZO_REQUIRE(status == CUBLAS_STATUS_SUCCESS,
                   "cublasCreate failed (status " << static_cast<int>(status) << ")");
    return h;
  }();
  return handle;
}

/// y (N, out) = x16 (N, in) · w16 (out, in)ᵀ by cublasGemmEx, float32
/// accumulation, queued on `space`'s stream. cuBLAS is column-major: the
/// row-major y is the column-major C (out, N) = W · Xᵀ, where w16's memory
/// read column-major is Wᵀ (in, out), hence op(A) = T, and x16's is Xᵀ
/// (in, N), op(B) = N.
void cublas_gemm_words(const ExecSpace& space, const Mat& y, const ConstHalfMat& x16,
                       const ConstHalfMat& w16, StorageDtype dtype) {
  const int n_rows = static_cast<int>(x16.extent(0)), in = static_cast<int>(x16.extent(1)),
            out = static_cast<int>(w16.extent(0));
  const cudaDataType_t type = dtype == StorageDtype::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  cublasHandle_t h = cublas_handle();
  cublasStatus_t status = cublasSetStream(h, space.cuda_stream());
  const float one = 1.0f, zero = 0.0f;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, out, n_rows, in, &one, w16.data(), type,
                          static_cast<int>(w16.stride(0)), x16.data(), type,
                          static_cast<int>(x16.stride(0)), &zero, y.data(), CUDA_R_32F,
                          static_cast<int>(y.stride(0)), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  DISTZO_REQUIRE(status == CUBLAS_STATUS_SUCCESS,
                 "cublasGemmEx of a (" << n_rows << ", " << in << ") x (" << out << ", " << in
                                       << ")^T " << to_string(dtype) << " product failed (status "
                                       << static_cast<int>(status) << ")");
}
#endif

}  // namespace

void linear(const ExecSpace& space, const Mat& y, const ConstMat& x, const ConstMat& w,
            const ConstVec& b) {
  check_linear(y, x, w.extent(0), w.extent(1), b);
  // y = x * w^T: w is (out, in) row-major, so the "T" on B gives (in, out).
  gemm(space, "N", "T", real(1), x, w, real(0), y);
  add_bias(space, y, b);
}

void linear(const ExecSpace& space, const Mat& y, const ConstMat& x, const WeightMatrix& w,
            const ConstVec& b, const HalfVec& x_words) {
  if (!w.is_words()) return linear(space, y, x, w.values, b);
  check_linear(y, x, w.rows(), w.cols(), b);
  const std::size_t rows = x.extent(0), in = x.extent(1);
  DISTZO_REQUIRE(x_words.extent(0) >= rows * in,
                 "distzo::kernels::linear: " << x_words.extent(0) << " words of scratch for a ("
                                             << rows << ", " << in << ") 2-byte GEMM input");
  if (rows == 0 || w.rows() == 0) return;
  round_to_words(space, x, w.dtype, x_words);
  const ConstHalfMat x16(x_words.data(), rows, in);
#ifdef KOKKOS_ENABLE_CUDA
  cublas_gemm_words(space, y, x16, w.words, w.dtype);
#else
  gemm_words(space, y, x16, w.words, w.dtype);
#endif
  add_bias(space, y, b);
}

void round_to_words(const ExecSpace& space, const ConstMat& x, StorageDtype dtype,
                    const HalfVec& words) {
  DISTZO_REQUIRE(dtype != StorageDtype::fp32,
                 "round_to_words: a 16-bit format (bf16 or fp16) is needed, not fp32");
  const std::size_t rows = x.extent(0), cols = x.extent(1);
  DISTZO_REQUIRE(words.extent(0) >= rows * cols, "round_to_words: " << words.extent(0)
                                                                    << " words for a (" << rows
                                                                    << ", " << cols << ") matrix");
  const ConstMat xx = x;
  const HalfVec ww = words;
  const std::int64_t c = static_cast<std::int64_t>(cols);
  Kokkos::parallel_for(
      "distzo::linear::round_to_words",
      MDRangePolicy2(space, {0, 0}, {static_cast<std::int64_t>(rows), c}),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t i) {
        ww(r * c + i) =
            static_cast<std::uint16_t>(storage::store(xx(r, i), dtype, Rounding::nearest, 0u));
      });
}

void gemm_words(const ExecSpace& space, const Mat& y, const ConstHalfMat& x16,
                const ConstHalfMat& w16, StorageDtype dtype) {
  DISTZO_REQUIRE(dtype != StorageDtype::fp32,
                 "gemm_words: a 16-bit format (bf16 or fp16) is needed, not fp32");
  const std::size_t rows = x16.extent(0), in = x16.extent(1), out = w16.extent(0);
  DISTZO_REQUIRE(w16.extent(1) == in && y.extent(0) == rows && y.extent(1) == out,
                 "gemm_words: x is (" << rows << ", " << in << "), w is (" << out << ", "
                                      << w16.extent(1) << "), y is (" << y.extent(0) << ", "
                                      << y.extent(1) << ")");
  const Mat yy = y;
  const ConstHalfMat xx = x16, ww = w16;
  const std::int64_t n_in = static_cast<std::int64_t>(in), n_out = static_cast<std::int64_t>(out);
  // A work item is one row of y and kTile consecutive outputs: kTile
  // independent sums hide the add latency, x(r, i) is decoded once for all
  // of them, and each sum is still over i in increasing order.
  constexpr std::int64_t kTile = 8;
  const std::int64_t tiles = (n_out + kTile - 1) / kTile;
  Kokkos::parallel_for(
      "distzo::linear::gemm_words",
      MDRangePolicy2(space, {0, 0}, {static_cast<std::int64_t>(rows), tiles}),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t tile) {
        const std::int64_t o0 = tile * kTile;
        const std::int64_t n = n_out - o0 < kTile ? n_out - o0 : kTile;
        float sum[kTile] = {};
        for (std::int64_t i = 0; i < n_in; ++i) {
          const float xv = storage::load(xx(r, i), dtype);
          for (std::int64_t j = 0; j < n; ++j)
            sum[j] = fp::add(sum[j], fp::mul(xv, storage::load(ww(o0 + j, i), dtype)));
        }
        for (std::int64_t j = 0; j < n; ++j) yy(r, o0 + j) = sum[j];
      });
}

}  // namespace distzo::kernels
