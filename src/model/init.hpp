#pragma once
// Random initialisation of an OPT model, for tests and benchmarks that need
// weights without a checkpoint: N(0, std²) for matrices and embeddings (as
// Hugging Face's OPT init, std = 0.02), LayerNorm weight 1, biases 0. The
// Gaussians come from the counter-based generator with step = 2^64 − 1, a
// step no training run reaches, so they never coincide with a perturbation.
// A parameter's values depend on (seed, its id) only, so a model can be
// generated one tensor at a time, wherever θ is going to live.

#include <cstdint>

#include "model/parameter_registry.hpp"
#include "model/weights.hpp"

namespace distzo::model {

/// Parameter `p`'s initial values into the device tensor `t` (p.numel() elements).
void init_random_tensor(const ExecSpace& space, const ParameterInfo& p, const Vec& t,
                        std::uint64_t seed, double std = 0.02);

/// Parameter `p`'s initial values in host memory (through a temporary device
/// tensor of its size): the source for ParameterStore::fill.
void random_parameter(const ParameterInfo& p, std::uint64_t seed, double std, real* host_dst);

}  // namespace distzo::model
