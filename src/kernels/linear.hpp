#pragma once
// Dense layers through one gemm: on host backends fixed tiles, each a
// single-threaded BLAS call, spread over distzo's threads (kernels/host_gemm.hpp:
// the bits do not depend on the thread count); on CUDA cuBLAS through
// KokkosBlas::gemm; the native Kokkos Kernels gemm where there is no BLAS.

#include "core/types.hpp"

namespace distzo::kernels {

/// C = alpha * op(A) * op(B) + beta * C on `space`, op = "N" or "T".
///
/// Every dense product of the model goes through here. On a host execution
/// space with a host BLAS (and GemmPath::tiled, the default) `space` is fenced
/// and C is computed tile by tile by host_tiled_gemm on gemm_threads()
/// threads: the same bits at any thread count. Otherwise KokkosBlas::gemm.
///
/// The one place that hides the Kokkos Kernels version difference:
/// Kokkos Kernels >= 4 has the overload with an execution-space instance and
/// the gemm is queued on `space`. Older versions (Debian's Trilinos 13.2 ships
/// 3.4) only have the overload that runs on the default instance; then `space`
/// is fenced before the call (inputs written on `space` are ready) and the
/// default instance after it (later work on `space` sees C).
///
/// C must not alias A or B. With beta == 0, C is overwritten (its old contents,
/// even NaN, are ignored) whatever the inner dimension, including 0.
void gemm(const ExecSpace& space, const char* trans_a, const char* trans_b, real alpha,
          const ConstMat& a, const ConstMat& b, real beta, const Mat& c);

/// y = x * w^T + b, the torch.nn.Linear convention.
///   y: (N, out)  x: (N, in)  w: (out, in) as stored by Hugging Face
///   b: (out), or an empty View (extent 0) for no bias.
/// y must not alias x or w. Throws distzo::Error on mismatched shapes.
void linear(const ExecSpace& space, const Mat& y, const ConstMat& x, const ConstMat& w,
            const ConstVec& b);

}  // namespace distzo::kernels
