#pragma once
// The fused perturb/update kernel: the only code that writes θ or the
// perturbed copies of θ (DESIGN.md invariants 2 and 5).
//
// For every element e of one parameter tensor (in one pass over memory):
//
//   θ_e ← θ_e − Σ_k a_k · z_k(e) − decay · θ_e      if an update is pending
//   w⁺_e = θ_e + ε·z(e),   w⁻_e = θ_e − ε·z(e),   w_e = θ_e    each only if requested
//
// where z_k are the pending update's terms — the previous step's q
// perturbations (a_k = lr · g_k / q), or with momentum those of its last h
// steps (zo/momentum.hpp), each regenerated from its own stream — decay =
// lr · weight_decay or 0 for biases/norms, and z is this step's. θ itself is
// never perturbed: w± go to scratch buffers and θ changes only by the update,
// so "was θ restored before the update?" cannot arise. The same function runs
// when an update is fused with the next perturbation and when `flush` applies
// it alone, so both give bit-identical θ.
//
// θ stored in 2 bytes (bf16 or fp16, core/storage_dtype.hpp): the element is
// decoded to float32, updated with the same arithmetic, and stored with the
// update's rounding (nearest, or stochastic with the rounding word of
// (seed, pending step, parameter id, element)); w± are computed from the value
// θ now holds, so the next step and a flush see the same θ. One read and one
// write of the 2-byte word per element; w± are float32, or 2-byte words of
// the same format.

#include <cstdint>

#include "core/perturbation.hpp"
#include "core/storage_dtype.hpp"
#include "core/stored_view.hpp"
#include "core/types.hpp"

namespace distzo::kernels {

/// At most this many z streams in a pending update (its terms are passed by
/// value): q queries per step, and h × q with momentum over h steps.
constexpr int kMaxQueries = 32;

/// A pending SGD update as plain data that kernels take by value.
struct UpdateTerms {
  int count = 0;                                // number of terms; 0 = no update
  real decay = 0;                               // lr · weight_decay for this tensor
  PerturbationStream stream[kMaxQueries] = {};  // z_k: a (step, query) of the update
  real coefficient[kMaxQueries] = {};           // a_k, added in order k = 0, 1, ...
  // How the updated θ is stored when it is stored in 2 bytes (fp32: exact).
  Rounding rounding = Rounding::nearest;
  RoundingStream rounding_stream = {};  // (seed, pending step): stochastic only
};

/// Which rows of a row-major (rows, row_elements) parameter need w±: used(r)
/// != 0. A forward pass that reads only some rows of a tensor — the embedding
/// rows of the batch's tokens and, with a classification head, the candidate
/// rows of the tied head — needs w± of those rows only. An empty `used` means
/// every row. The update is never restricted: it always covers all of θ.
struct RowSelection {
  ConstIntVec used;
  std::uint64_t row_elements = 0;
};

/// Where the fused kernel writes one tensor's perturbed weights. Any may be
/// empty (not written); those given hold θ.extent() elements, all in one
/// format: float32, or words of θ's own format.
struct PerturbedOutputs {
  StoredVec plus;   // w+ = θ' + ε·z
  StoredVec minus;  // w− = θ' − ε·z
  StoredVec base;   // w = θ' itself: a one-sided step's unperturbed evaluation (no z drawn)
  // false: this step's z is 0 on the tensor (a block the step does not
  // perturb, core/block_choice.hpp): every output is θ', no z is drawn.
  bool perturbed = true;
};

/// Applies `update` (if count > 0) to θ and writes the requested outputs
/// (θ' ± ε·z, θ') for the rows that `rows` selects (all by default; the
/// other rows of the outputs are left as they were). θ holds elements
/// [first_element, first_element + θ.extent()) of parameter `param_id`, so
/// a slice of a tensor is perturbed exactly like the whole. θ is stored as
/// any StorageDtype; the outputs are float32, or words of θ's own format
/// (precision.gemm_inputs: storage): each w computed in float32, then
/// rounded to nearest (ties to even) — half the bytes written and no random
/// word (w is thrown away after the step). This step's z is drawn only if
/// w+ or w− is requested and `out.perturbed`. Enqueued on `space`.
void update_and_perturb(const ExecSpace& space, const StoredVec& theta, std::uint32_t param_id,
                        std::uint64_t first_element, const UpdateTerms& update,
                        const PerturbationStream& stream, real eps, const PerturbedOutputs& out,
                        const RowSelection& rows = RowSelection());

/// The two-sided case: w+ and w− (either may be empty).
inline void update_and_perturb(const ExecSpace& space, const StoredVec& theta,
                               std::uint32_t param_id, std::uint64_t first_element,
                               const UpdateTerms& update, const PerturbationStream& stream,
                               real eps, const StoredVec& plus, const StoredVec& minus,
                               const RowSelection& rows = RowSelection()) {
  update_and_perturb(space, theta, param_id, first_element, update, stream, eps,
                     PerturbedOutputs{plus, minus, StoredVec()}, rows);
}

/// Only the update (flush before eval or checkpoint): the same arithmetic.
void apply_update(const ExecSpace& space, const StoredVec& theta, std::uint32_t param_id,
                  std::uint64_t first_element, const UpdateTerms& update);

}  // namespace distzo::kernels
