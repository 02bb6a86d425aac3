#pragma once
// Dense layers through one gemm: on host backends fixed tiles, each a
// single-threaded BLAS call, spread over distzo's threads (kernels/host_gemm.hpp:
// the bits do not depend on the thread count); on CUDA cuBLAS through
// KokkosBlas::gemm; the native Kokkos Kernels gemm where there is no BLAS.

#include "core/storage_dtype.hpp"
#include "core/types.hpp"
#include "kernels/weight_matrix.hpp"

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

/// The same with w as a WeightMatrix. Float32 values: the linear above.
/// 2-byte words (precision.gemm_inputs: storage, docs/perturbation.md "GEMM
/// inputs in 2 bytes"): x is rounded to nearest into the same 16-bit format
/// (`x_words`, at least N * in words of scratch, is overwritten), then
///   y(r, o) = Σ_i x16(r, i) · w16(o, i)   accumulated in float32,
/// each product exact in float32 (8 + 8 or 11 + 11 significant bits). Under
/// CUDA one cublasGemmEx on the tensor cores (CUBLAS_COMPUTE_32F, its own
/// summation order); on host backends gemm_words, the naive reference.
void linear(const ExecSpace& space, const Mat& y, const ConstMat& x, const WeightMatrix& w,
            const ConstVec& b, const HalfVec& x_words);

/// x rounded to nearest into 16-bit words of `dtype` (bf16 or fp16), row-major
/// (rows, cols) at the start of `words`: the GEMM input of a 2-byte layer.
void round_to_words(const ExecSpace& space, const ConstMat& x, StorageDtype dtype,
                    const HalfVec& words);

/// y = x16 · w16ᵀ, both 16-bit words of `dtype`, summed in float32 over i in
/// increasing order, one thread per element of y: the reference of the
/// 2-byte GEMM, the same bits at any thread count on host backends.
///   y: (N, out)   x16: (N, in)   w16: (out, in)
void gemm_words(const ExecSpace& space, const Mat& y, const ConstHalfMat& x16,
                const ConstHalfMat& w16, StorageDtype dtype);

}  // namespace distzo::kernels
