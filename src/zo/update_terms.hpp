#pragma once
// A pending update (core/step_state.hpp) as the terms the fused kernel
// (kernels/perturb_update.hpp) takes for one tensor.

#include "core/step_state.hpp"
#include "kernels/perturb_update.hpp"
#include "model/parameter_registry.hpp"

namespace distzo::zo {

/// θ ← θ − lr·(Σ_k w_k z_k / q + wd·θ), as the kernel's terms for one tensor
/// (no decay on biases and LayerNorm weights, MeZO's rule): one per pending
/// term k, z_k the run's `z` at the term's (step, query), a_k = float(lr ·
/// w_k / q) (plain SGD: w = g, the historical a_q = float(lr·g_q/q)); no
/// terms when the update is not active. A term whose step did not perturb
/// the parameter's block (z.perturbs) has z = 0 there and is left out; with
/// none left the parameter is not updated (no decay either).
/// `rounding`: how θ' is stored when θ is stored in 2 bytes (the store's
/// placement().rounding; float32 ignores it).
/// Whether `pending` changes any parameter of `block` (-1: the edges): it
/// is active and one of its terms' steps perturbed the block. A block it
/// does not reach keeps θ bit for bit: an offloaded one is not written back.
bool updates_block(const ZSpec& z, const PendingUpdate& pending, int block);

kernels::UpdateTerms update_terms(const ZSpec& z, const PendingUpdate& pending,
                                  const model::ParameterInfo& parameter, Rounding rounding);

}  // namespace distzo::zo
