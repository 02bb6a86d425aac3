#pragma once
// The one block executor (DESIGN.md invariant 5). It walks the model group by
// group — embeddings, blocks 0..L-1, head — and for each group:
//   1. applies the pending update of the previous step to θ, fused with
//   2. materialising θ ± εz of this step into scratch (never into θ), then
//   3. runs this rank's evaluations of the group on their own hidden states,
//      so the +ε and −ε passes of a query share one pass over the weights.
// Placement (resident today; offloaded and sliced next) changes where θ and
// the scratch live, not this walk.

#include "core/perturbation.hpp"
#include "kernels/losses.hpp"
#include "kernels/perturb_update.hpp"
#include "model/batch.hpp"
#include "model/loss_head.hpp"
#include "model/opt_forward.hpp"
#include "model/parameter_registry.hpp"
#include "zo/evaluation_plan.hpp"
#include "zo/pending_update.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace distzo::zo {

/// The perturbation of one step: z_q = Z(seed, step, q, id, element), scaled by eps.
struct StepPerturbation {
  std::uint64_t seed = 0;
  std::int64_t step = 0;
  double eps = 1e-3;
  Distribution distribution = Distribution::gaussian;

  PerturbationStream stream(int query) const {
    return PerturbationStream::make(seed, static_cast<std::uint64_t>(step),
                                    static_cast<std::uint32_t>(query), distribution);
  }
};

/// Loss of an unperturbed forward pass on one batch.
struct EvalOutcome {
  double loss_sum = 0;
  double count = 0;
  std::vector<int> predictions;  // classification: predicted candidate per row
};

class BlockExecutor {
 public:
  BlockExecutor(const model::OptConfig& config, const model::ParameterRegistry& registry,
                model::TensorTable& theta, const EvaluationPlan& plan, model::Task task,
                int micro_batch, int seq_len, int candidates);

  /// Runs this rank's evaluations of one step on `batch`. `pending` (if
  /// active) is applied to θ on the way and then marked inactive. Returns 2
  /// doubles per evaluation of the step, (loss sum, count), zero for the
  /// evaluations other ranks own: the input of combine_losses. Fences once.
  std::vector<double> run_step(const ExecSpace& space, const model::Batch& batch,
                               const StepPerturbation& perturbation, PendingUpdate& pending);

  /// Applies `pending` to every tensor of θ (before eval and checkpoints).
  void flush(const ExecSpace& space, PendingUpdate& pending);

  /// Forward pass at θ (which must be flushed) and its loss. Fences.
  EvalOutcome evaluate(const ExecSpace& space, const model::Batch& batch);

  /// The digest of θ as it stands (model/parameter_digest.hpp).
  std::string parameter_digest() const;

  /// Test switch of the divergence guard: overwrites one element of θ.
  void debug_corrupt_parameter();

 private:
  /// update_and_perturb over `ids`, for query `query`, into the scratch
  /// tables of the owned signs; applies `pending` only if `with_update`.
  /// embed_tokens gets w± only in the rows embed_rows_ selects.
  void materialise(const ExecSpace& space, const std::vector<std::uint32_t>& ids,
                   const PendingUpdate& pending, bool with_update,
                   const StepPerturbation& perturbation, int query,
                   model::TensorTable* plus, model::TensorTable* minus);

  const model::ParameterRegistry& registry_;
  model::TensorTable& theta_;
  EvaluationPlan plan_;
  std::vector<int> queries_;           // owned queries, increasing
  std::vector<std::uint32_t> edge_ids_;  // embeddings + head: live for the whole step
  // With a classification head the forward reads only the embed_tokens rows
  // of the batch's tokens and of the candidate words (the tied head), so only
  // those rows get w±: a large saving when V*E dominates the parameters, as
  // in small models. A causal-LM head reads every row: no selection.
  std::uint32_t embed_id_ = 0;
  IntVec embed_rows_used_;             // (V), classification only
  kernels::RowSelection embed_rows_;   // views embed_rows_used_; empty = all rows
  model::OptForward forward_;
  model::LossHead head_;
  std::vector<Mat> hidden_;                      // per owned evaluation: (B*T, C)
  std::vector<model::TensorTable> edge_scratch_;  // per owned evaluation: edge tensors
  model::TensorTable block_plus_, block_minus_;   // the current block's w±, indexed by id
  std::vector<kernels::LossSums> sums_;           // per owned evaluation
};

}  // namespace distzo::zo
