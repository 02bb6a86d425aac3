#pragma once
// The digest of all parameters in canonical order (see core/digest.hpp). Used
// by `distzo inspect --digest`, the reproducibility tests and the replica
// divergence guard, so all three agree by construction.

#include "model/opt_weights.hpp"
#include "model/parameter_registry.hpp"

#include <string>

namespace distzo::model {

/// 16 hex digits over every parameter's name, shape and element bits.
std::string parameter_digest(const ParameterRegistry& registry, const TensorTable& tensors);

}  // namespace distzo::model
