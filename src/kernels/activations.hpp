#pragma once
// Element-wise activations and residual connections.

#include "core/types.hpp"

namespace distzo::kernels {

/// x = max(x, 0) in place (OPT's activation_function "relu"). NaN stays NaN,
/// as in torch.relu.
///   x: (N, C)
void relu(const ExecSpace& space, const Mat& x);

/// x += y (residual connection).
///   x, y: (N, C)
/// y may be the same View as x (then x doubles).
void add_inplace(const ExecSpace& space, const Mat& x, const ConstMat& y);

}  // namespace distzo::kernels
