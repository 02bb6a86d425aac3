#pragma once
// The SGD update of a finished step, waiting to be applied lazily: to each
// tensor right before it is next perturbed (fused), or to all by flush().
// Plain data, stored in checkpoints.

#include "core/perturbation.hpp"
#include "kernels/perturb_update.hpp"
#include "model/parameter_registry.hpp"

#include <cstdint>
#include <vector>

namespace distzo::zo {

struct PendingUpdate {
  bool active = false;
  std::uint64_t seed = 0;        // run seed: z_q = Z(seed, step, q, ...)
  std::int64_t step = 0;         // the step whose z the update uses
  Distribution distribution = Distribution::gaussian;
  ZRecipe recipe = kDefaultZRecipe;  // how that step's Gaussian z was made
  double lr = 0;                 // learning rate of that step
  double weight_decay = 0;
  std::vector<double> g;         // projected gradient per query

  /// θ ← θ − lr·(Σ_q g_q z_q / q + wd·θ), as the kernel's terms for one tensor
  /// (no decay on biases and LayerNorm weights, MeZO's rule).
  kernels::UpdateTerms terms_for(const model::ParameterInfo& parameter) const;
};

}  // namespace distzo::zo
