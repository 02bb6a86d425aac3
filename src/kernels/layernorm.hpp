#pragma once
// Normalisation over the last dimension: LayerNorm (OPT), RMSNorm (Llama, Gemma 3).

#include "core/types.hpp"

namespace distzo::kernels {

/// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma + beta for every row r,
/// with the mean and the biased variance (divide by C) of that row, exactly
/// torch.nn.LayerNorm(C, eps) in training and eval mode alike.
///   y, x: (N, C)   gamma, beta: (C)
/// In place is allowed: y and x may be the same View (pass ConstMat(y) as x);
/// each element is read, and the row statistics are complete, before it is
/// written. Partial overlap is not allowed.
/// Row statistics accumulate in double, so the result matches a double
/// reference to float rounding of the output.
void layernorm(const ExecSpace& space, const Mat& y, const ConstMat& x, const ConstVec& gamma,
               const ConstVec& beta, real eps = real(1e-5));

/// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * (offset + gamma), exactly
/// transformers' LlamaRMSNorm in float32 (offset 0: no mean subtraction, no
/// bias) and Gemma3RMSNorm (offset 1: its weights scale by 1 + w).
///   y, x: (N, C)   gamma: (C)
/// In place is allowed as for layernorm. The mean square accumulates in
/// double; the normalised value is rounded to float before the product with
/// offset + gamma (itself a float sum), as Hugging Face rounds them; offset 0
/// multiplies by gamma itself.
void rmsnorm(const ExecSpace& space, const Mat& y, const ConstMat& x, const ConstVec& gamma,
             real eps, real offset = real(0));

}  // namespace distzo::kernels
