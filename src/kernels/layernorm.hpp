#pragma once
// Layer normalisation over the last dimension, as torch.nn.LayerNorm.

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

}  // namespace distzo::kernels
