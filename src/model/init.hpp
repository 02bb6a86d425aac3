#pragma once
// Random initialisation of an OPT model, for tests and benchmarks that need
// weights without a checkpoint: N(0, std²) for matrices and embeddings (as
// Hugging Face's OPT init, std = 0.02), LayerNorm weight 1, biases 0. The
// Gaussians come from the counter-based generator with step = 2^64 − 1, a
// step no training run reaches, so they never coincide with a perturbation.

#include "model/opt_weights.hpp"
#include "model/parameter_registry.hpp"

#include <cstdint>

namespace distzo::model {

void init_random(const ExecSpace& space, const ParameterRegistry& registry, TensorTable& tensors,
                 std::uint64_t seed, double std = 0.02);

}  // namespace distzo::model
