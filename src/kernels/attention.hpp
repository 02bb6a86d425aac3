#pragma once
// Causal multi-head self-attention with key padding: the reference kernel
// (the oracle a faster batched-GEMM / cuBLAS path is tested against).

#include "core/types.hpp"

namespace distzo::kernels {

/// out = softmax(scale * q k^T + causal and padding mask) v, per batch row b
/// and head h, for every query position i:
///   out[b*T + i, h*hd + d] = sum_j p_ij v[b*T + j, h*hd + d],
///   p_ij = softmax over the visible keys j of scale * <q_i, k_j> (head h),
/// where key j is visible to query i iff j <= i (causal) and mask[b, j] != 0.
///
///   out, q, k, v: (B*T, C), heads interleaved as in Hugging Face: head h
///                 uses columns [h*hd, (h+1)*hd), hd = C / heads
///   mask: (B, T), 1 = real token, 0 = padding (left or right)
///   scale: usually 1/sqrt(hd) (OPT multiplies q by it before the product;
///          here it multiplies the dot product, which differs by rounding)
///
/// A query with no visible key (a left-padding position: all keys up to it
/// are padding) gets an output row of zeros. Hugging Face produces a different,
/// meaningless value there (it adds the dtype minimum instead of masking), and
/// those positions never reach a loss, so only real-token positions are
/// comparable with it. Queries at padding positions that do see real keys are
/// computed normally.
/// out must not alias q, k or v. Softmax is max-subtracted (stable); scores
/// and sums are float, as in torch's fp32 eager attention.
void attention(const ExecSpace& space, const Mat& out, const ConstMat& q, const ConstMat& k,
               const ConstMat& v, const ConstIntMat& mask, int heads, real scale);

}  // namespace distzo::kernels
