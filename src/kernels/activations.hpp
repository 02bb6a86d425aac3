#pragma once
// The epilogues of the dense layers, each one pass over its output: the bias
// with the activation, and the bias with the residual connection. Each
// computes exactly what the separate passes did (the same roundings in the
// same order), so fusing them changes no bit.

#include "core/types.hpp"

namespace distzo::kernels {

/// y = max(y + b, 0) in place: fc1's bias and OPT's activation_function
/// "relu". NaN stays NaN, as in torch.relu.
///   y: (N, F)  b: (F), or empty (extent 0) for no bias
void bias_relu(const ExecSpace& space, const Mat& y, const ConstVec& b);

/// h += y + b: a projection's bias and the residual connection (y + b is
/// rounded first, then added to h, as the unfused passes did).
///   h, y: (N, C)  b: (C), or empty for no bias
/// y may be the same View as h.
void add_bias_residual(const ExecSpace& space, const Mat& h, const ConstMat& y, const ConstVec& b);

/// gate = silu(gate + bg) * (up + bu) in place: the SwiGLU of Llama's MLP
/// between its gate/up projections and down_proj (biases when mlp_bias),
/// silu(t) = t / (1 + exp(-t)) as torch computes it.
///   gate, up: (N, F)  bg, bu: (F), or empty
void silu_mul(const ExecSpace& space, const Mat& gate, const ConstMat& up, const ConstVec& bg,
              const ConstVec& bu);

/// gate = gelu_tanh(gate) * up in place: the GeGLU of Gemma 3's MLP
/// (hidden_activation "gelu_pytorch_tanh"),
///   gelu_tanh(t) = t/2 (1 + tanh(u)),  u = sqrt(2/pi) (t + 0.044715 t^3),
/// computed as t / (1 + e^(-2u)), the same function (1 + tanh(u) =
/// 2 / (1 + e^(-2u))) from the vectorising fp::exp, within a few float ulp
/// of torch's tanh form. No biases (Gemma has none).
///   gate, up: (N, F)
void gelu_tanh_mul(const ExecSpace& space, const Mat& gate, const ConstMat& up);

}  // namespace distzo::kernels
