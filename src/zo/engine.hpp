#pragma once
// The engine: the ZO step, the evaluation forward and the flush of a pending
// update, each as one pass of the walk (zo/model_walk.hpp) over the whole
// model. For each group the step pass
//   1. applies the pending update of the previous step to θ, fused with
//   2. materialising θ ± εz of this step out of place (never into θ), then
//   3. runs this rank's evaluations of the group on their own hidden states,
//      so the +ε and −ε passes of a query share one residency of the block.
// Steps 1–2 are the perturbed weights' business (zo/perturbed_weights.hpp:
// local, or split over the node's ranks of a shared θ); placement (resident
// or offloaded, runtime/) changes where θ and the slots live. Neither
// changes these passes.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/step_state.hpp"
#include "model/batch.hpp"
#include "model/forward.hpp"
#include "model/loss_head.hpp"
#include "model/model_config.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/parameter_store.hpp"
#include "zo/estimator.hpp"
#include "zo/evaluation_plan.hpp"
#include "zo/float_theta.hpp"
#include "zo/perturbed_weights.hpp"

namespace distzo::zo {

class WalkPass;

/// Loss of an unperturbed forward pass on one batch.
struct EvalOutcome {
  double loss_sum = 0;
  double count = 0;
  std::vector<int> predictions;  // classification: predicted candidate per row
};

class Engine {
 public:
  /// Runs `plan`'s evaluations of batches of `shape` (or narrower: each
  /// batch runs at its own width, model/forward.hpp) on the store's θ
  /// through a block streamer of its own, whose compute instance is
  /// `space`. A sliced store needs `node` (collective over its ranks).
  /// `observer` sees every materialisation of the perturbed weights.
  Engine(const model::ModelConfig& config, runtime::ParameterStore& store,
         const EvaluationPlan& plan, const model::BatchShape& shape,
         const NodeExchange& node = NodeExchange(), const ExecSpace& space = ExecSpace(),
         MaterialisationObserver observer = MaterialisationObserver());

  /// Runs this rank's evaluations of one step on `batch`. `pending` (if
  /// active) is applied to θ on the way and then marked inactive. Returns
  /// the (loss sum, count) of every evaluation of the step, zero for those
  /// other ranks own: the input of combine_losses. Fences once.
  LossTable run_step(const model::Batch& batch, const StepPerturbation& perturbation,
                     PendingUpdate& pending);

  /// Applies `pending`, an update of the run whose z is `z`, to every
  /// tensor of θ (before eval and checkpoints), streaming offloaded blocks
  /// through the same kernel.
  void flush(const ZSpec& z, PendingUpdate& pending);

  /// Forward pass at θ (which must be flushed) and its loss. Fences.
  EvalOutcome evaluate(const model::Batch& batch);

  /// The digest of θ as it stands (runtime::ParameterStore::digest), reduced
  /// on the compute instance, after the work queued there.
  std::string parameter_digest() const { return store_.digest(streamer_.instances().compute); }

  /// The guard of a shared master (PerturbedWeights::record_own_slices):
  /// collective over the node; nothing to record (intact) unless θ is sliced.
  void record_own_slices() { weights_->record_own_slices(streamer_.instances().compute); }
  bool own_slices_intact() { return weights_->own_slices_intact(streamer_.instances().compute); }

  runtime::BlockStreamer& streamer() { return streamer_; }
  PerturbedWeights& weights() { return *weights_; }
  const PerturbedWeights& weights() const { return *weights_; }
  const runtime::ParameterStore& store() const { return store_; }
  runtime::ParameterStore& store() { return store_; }

 private:
  class StepPass;
  class FlushPass;

  /// Runs `pass` over the model; a pass that writes θ is fenced by node
  /// barriers (PerturbedWeights::node_barrier).
  void run_pass(WalkPass& pass, bool writes_theta);
  /// Sizes the forward and the hidden states for `batch`'s width (at most
  /// the shape's T), after checking it fits.
  void fit_to(const model::Batch& batch);

  const model::ParameterRegistry& registry_;
  runtime::ParameterStore& store_;
  EvaluationPlan plan_;
  model::BatchShape shape_;
  // The first allocation: with a shared θ its buffers are allocated
  // collectively, so every rank reaches that before anything that can fail
  // on one rank alone.
  std::unique_ptr<PerturbedWeights> weights_;
  runtime::BlockStreamer streamer_;
  FloatTheta float_theta_;  // θ as floats for the evaluation's forward
  model::DecoderForward forward_;
  model::LossHead head_;
  std::vector<Mat> hidden_buffers_;  // per owned evaluation: (B*T, C)
  std::vector<Mat> hidden_;          // their (B*T', C) prefixes for the batch in hand
  Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> sums_;          // (owned evaluations, 2)
  Kokkos::View<double**, Kokkos::LayoutRight, PinnedSpace> sums_host_;  // its host mirror
};

}  // namespace distzo::zo
