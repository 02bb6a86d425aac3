#pragma once
// The block executor: the ZO step, the evaluation forward and the flush of a
// pending update, each as one pass of the walk (zo/model_walk.hpp). For each
// group the step pass
//   1. applies the pending update of the previous step to θ, fused with
//   2. materialising θ ± εz of this step into scratch (never into θ), then
//   3. runs this rank's evaluations of the group on their own hidden states,
//      so the +ε and −ε passes of a query share one residency of the block.
// Placement (resident or offloaded, runtime/) changes where θ and the slots
// live, not these passes.
//
// With a sliced store (Placement II) the node's S ranks share θ and split
// steps 1–2: for each group, each rank updates its slice of θ and writes its
// slice of w± of every evaluation the node runs into exchange buffers; the
// exchange makes the buffers whole on every rank; then step 3 as above. A
// rank evaluates z for about 2q/S of the parameters per step instead of 2q.

#include "core/perturbation.hpp"
#include "kernels/losses.hpp"
#include "kernels/perturb_update.hpp"
#include "model/batch.hpp"
#include "model/loss_head.hpp"
#include "model/forward.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/parameter_store.hpp"
#include "runtime/slice_exchange.hpp"
#include "zo/evaluation_plan.hpp"
#include "zo/pending_update.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace distzo::zo {

class WalkPass;

/// The perturbation of one step: z_q = Z(seed, step, q, id, element), scaled by eps.
struct StepPerturbation {
  std::uint64_t seed = 0;
  std::int64_t step = 0;
  double eps = 1e-3;
  Distribution distribution = Distribution::gaussian;
  ZRecipe recipe = kDefaultZRecipe;

  PerturbationStream stream(int query) const {
    return PerturbationStream::make(seed, static_cast<std::uint64_t>(step),
                                    static_cast<std::uint32_t>(query), distribution, recipe);
  }
};

/// Loss of an unperturbed forward pass on one batch.
struct EvalOutcome {
  double loss_sum = 0;
  double count = 0;
  std::vector<int> predictions;  // classification: predicted candidate per row
};

/// This rank's part in its node's sliced step (Placement II).
struct NodeSlicing {
  runtime::SliceExchange* exchange = nullptr;  // over the node's ranks; needs a sliced store
  std::vector<Evaluation> evaluations;         // every evaluation the node's ranks run
};

class BlockExecutor {
 public:
  /// Runs on the store's θ through a block streamer of its own, whose
  /// compute instance is `space`. A sliced store needs `slicing`.
  BlockExecutor(const model::ModelConfig& config, runtime::ParameterStore& store,
                const EvaluationPlan& plan, model::Task task, int micro_batch, int seq_len,
                int candidates, NodeSlicing slicing = NodeSlicing(),
                const ExecSpace& space = ExecSpace());

  /// Runs this rank's evaluations of one step on `batch`. `pending` (if
  /// active) is applied to θ on the way and then marked inactive. Returns 2
  /// doubles per evaluation of the step, (loss sum, count), zero for the
  /// evaluations other ranks own: the input of combine_losses. Fences once.
  std::vector<double> run_step(const model::Batch& batch, const StepPerturbation& perturbation,
                               PendingUpdate& pending);

  /// Applies `pending` to every tensor of θ (before eval and checkpoints),
  /// streaming offloaded blocks through the same kernel.
  void flush(PendingUpdate& pending);

  /// Forward pass at θ (which must be flushed) and its loss. Fences.
  EvalOutcome evaluate(const model::Batch& batch);

  /// The digest of θ as it stands (runtime::ParameterStore::digest), reduced
  /// on the compute instance, after the work queued there.
  std::string parameter_digest() const { return store_.digest(streamer_.instances().compute); }

  /// The guard of a shared master (Placement II): records the element sums
  /// of this rank's slices of θ as it wrote them; own_slices_intact() later
  /// recomputes them after a node barrier. A difference means another rank
  /// of the node wrote into this rank's slice. Both are collective over the
  /// node and do nothing (intact) unless the store is sliced.
  void record_own_slices();
  bool own_slices_intact();

  /// Test switch of the divergence guard: overwrites one element of θ; with
  /// a shared master, one in the next rank's slice of the node.
  void debug_corrupt_parameter();

  runtime::BlockStreamer& streamer() { return streamer_; }
  /// Elements of z this rank has evaluated, each Gaussian or sign counted
  /// once per stream (the pending update's q and this step's), since
  /// construction: the instrumentation behind Placement II's 2q/S claim.
  std::uint64_t z_evaluations() const { return z_evaluations_; }
  /// Bytes of the exchange buffers in node-shared memory (a shared-memory
  /// slice exchange; Kokkos does not see them allocated), else 0.
  std::size_t shared_exchange_bytes() const;
  const runtime::ParameterStore& store() const { return store_; }

 private:
  class StepPassBase;
  class StepPass;
  class FlushPass;
  class SlicedStepPass;
  class SlicedFlushPass;

  /// The sliced step and flush (sliced_step.cpp).
  void run_sliced_step(const model::Batch& batch, const StepPerturbation& perturbation,
                       const PendingUpdate& pending);
  void run_sliced_flush(const PendingUpdate& pending);
  /// Allocates the exchange buffers of a sliced store.
  void allocate_slicing();
  /// update_and_perturb over this rank's slice of a group: θ pieces of
  /// `theta`, w± of every node evaluation of `query` into `buffers` (arena
  /// offsets; index as node_evaluations_).
  void materialise_slice(const ExecSpace& space, const model::TensorTable& theta,
                         const runtime::GroupSlices& slice, const PendingUpdate& pending,
                         bool with_update, const StepPerturbation& perturbation, int query,
                         const std::vector<Vec>& buffers);
  /// Runs `pass` over the model; a pass that writes θ under a sliced store
  /// is fenced by node barriers: no rank writes a slice while another still
  /// reads θ, and every slice is written (back) before anyone reads it.
  void run_pass(WalkPass& pass, bool writes_theta);

  /// update_and_perturb over `ids` of `theta`, for query `query`, into the
  /// scratch tables of the owned signs; applies `pending` only if
  /// `with_update`. embed_tokens gets w± only in the rows embed_rows_ selects.
  void materialise(const ExecSpace& space, const model::TensorTable& theta,
                   const std::vector<std::uint32_t>& ids, const PendingUpdate& pending,
                   bool with_update, const StepPerturbation& perturbation, int query,
                   model::TensorTable* plus, model::TensorTable* minus);
  /// The owned evaluation of (query, sign), or -1.
  int owned_index(int query, int sign) const;
  /// The node evaluation of (query, sign), or -1 (sliced store).
  int node_index(int query, int sign) const;

  const model::ParameterRegistry& registry_;
  runtime::ParameterStore& store_;
  runtime::BlockStreamer streamer_;
  EvaluationPlan plan_;
  std::vector<int> queries_;             // owned queries, increasing
  std::vector<std::uint32_t> edge_ids_;  // embeddings + head: live for the whole step
  // With a classification head the forward reads only the embed_tokens rows
  // of the batch's tokens and of the candidate words (the tied head), so only
  // those rows get w±: a large saving when V*E dominates the parameters, as
  // in small models. A causal-LM head reads every row: no selection.
  std::uint32_t embed_id_ = 0;
  IntVec embed_rows_used_;            // (V), classification only
  kernels::RowSelection embed_rows_;  // views embed_rows_used_; empty = all rows
  model::DecoderForward forward_;
  model::LossHead head_;
  std::vector<Mat> hidden_;                       // per owned evaluation: (B*T, C)
  std::vector<model::TensorTable> edge_scratch_;  // per owned evaluation: edge tensors
  Vec block_plus_, block_minus_;                  // one block's w± (block arena layout)
  model::TensorTable plus_tensors_, minus_tensors_;  // by id, into block_plus_/minus_
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> sums_;  // (owned evaluations, 2)
  Kokkos::View<double**, Kokkos::LayoutRight, PinnedSpace> sums_host_;  // its host mirror
  std::uint64_t z_evaluations_ = 0;

  // Sliced store only. Buffers are indexed like node_evaluations_; a block
  // buffer is reused two blocks later (the exchange of the block between is
  // the barrier that frees it).
  NodeSlicing slicing_;
  std::vector<int> node_queries_;                 // queries of node_evaluations, increasing
  std::vector<Vec> embed_buffers_, head_buffers_;  // per node evaluation: the edge arenas
  std::vector<Vec> block_buffers_[2];              // per node evaluation, for even / odd blocks
  Vec row_buffer_;                                 // S slices of row marks (classification)
  std::vector<model::TensorTable> block_tables_;   // per owned evaluation, into the block buffers
  std::vector<std::uint64_t> own_slice_record_;   // record_own_slices()
};

}  // namespace distzo::zo
