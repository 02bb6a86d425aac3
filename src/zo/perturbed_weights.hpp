#pragma once
// The perturbed weights of a step (DESIGN.md invariant 2): w = θ ± εz of
// every evaluation this rank runs, materialised out of place right before a
// group is used, with the previous step's pending update applied to θ on the
// way (kernels::update_and_perturb, fused). The step pass (zo/engine.cpp)
// asks for them group by group and never asks how they are made:
//
//   local        each rank materialises w± of its own evaluations over the
//                whole of θ; a block's w+ and w− are one pair of block
//                arenas, reused query after query (scratch independent of q),
//                or with placement.perturbed_weights: one_at_a_time a single
//                block arena and a single copy of the edges, the evaluations
//                materialised one after the other (less device memory, z
//                evaluated again for every sign and for the head);
//   node-sliced  a sliced store (Placement II): the S ranks of a node share
//                θ; each updates its slice of a group and writes its slice of
//                w± of every evaluation the node runs into exchange buffers,
//                which the exchange makes whole on every rank. A rank
//                evaluates z for about 2q/S of the parameters instead of 2q.
//
// make_perturbed_weights picks one from the store; nothing above this seam
// asks whether θ is sliced.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/step_state.hpp"
#include "core/types.hpp"
#include "kernels/perturb_update.hpp"
#include "model/batch.hpp"
#include "model/model_config.hpp"
#include "model/parameter_registry.hpp"
#include "model/weights.hpp"
#include "runtime/communicator.hpp"
#include "runtime/parameter_store.hpp"
#include "runtime/slice_exchange.hpp"
#include "zo/evaluation_plan.hpp"
#include "zo/float_theta.hpp"

namespace distzo::zo {

/// One call of the fused kernel as the perturbed weights enqueue it:
/// elements [first, first + elements) of parameter `id`, each with z of
/// `z_streams` streams (the pending update's terms when the update rides
/// along, and this evaluation's query).
struct Materialisation {
  std::uint32_t id = 0;
  std::uint64_t first = 0;
  std::uint64_t elements = 0;
  int z_streams = 1;
};
/// Sees every materialisation as it is enqueued: instrumentation from
/// outside (mpi_test_slices measures Placement II's 2q/S claim with it).
/// Empty: none.
using MaterialisationObserver = std::function<void(const Materialisation&)>;

class PerturbedWeights {
 public:
  /// Called once w of an owned evaluation of a group is ready: `owned`
  /// indexes EvaluationPlan::owned, `w` holds the group's tensors by id
  /// (valid during the call only).
  using Use = std::function<void(std::size_t owned, const model::GroupTensors& w)>;

  virtual ~PerturbedWeights() = default;
  PerturbedWeights(const PerturbedWeights&) = delete;
  PerturbedWeights& operator=(const PerturbedWeights&) = delete;

  /// Embeddings and head (`theta`: θ's edge tensors): applies `pending` to
  /// them, materialises w± of every owned evaluation and hands each to `use`
  /// (the embedding). With a classification head only the embed_tokens rows
  /// of the batch's tokens and candidates get w± (the forward reads no other).
  virtual void perturb_edges(const ExecSpace& space, const runtime::ThetaTable& theta,
                             const model::Batch& batch, const PendingUpdate& pending,
                             const StepPerturbation& perturbation, const Use& use) = 0;
  /// The edges' w of every owned evaluation again, for the head (the tied
  /// embed_tokens is used at both ends): kept since perturb_edges, or
  /// materialised again from the updated θ when one copy serves every
  /// evaluation — the same bits either way (w = θ' ± εz of the stored θ').
  virtual void head_edges(const ExecSpace& space, const runtime::ThetaTable& theta,
                          const StepPerturbation& perturbation, const Use& use) = 0;
  /// Block k at θ_k: applies `pending` to it, materialises w± of every owned
  /// evaluation and hands each to `use` once it is ready.
  virtual void perturb_block(const ExecSpace& space, int k, const runtime::ThetaTable& theta,
                             const PendingUpdate& pending, const StepPerturbation& perturbation,
                             const Use& use) = 0;

  /// The float scratch these weights hold but do not use between steps,
  /// lent to FloatTheta to decode a 2-byte θ into for an evaluation, so that
  /// a run holds one set of float copies, not two. Nothing to lend when
  /// node-sliced: the buffers are the node's, and other ranks read them.
  virtual LentScratch idle_scratch() const = 0;

  /// Collective over the ranks that share θ (nothing for local weights):
  /// every rank's work enqueued on `space` so far is done. A pass that
  /// writes θ is fenced by it on both sides, so no rank writes a slice that
  /// another still reads, and every slice is written before anyone reads it.
  virtual void node_barrier(const ExecSpace& space) = 0;

  /// The guard of a shared master: records the element sums of this rank's
  /// slices of θ as it wrote them; own_slices_intact() recomputes them after
  /// a node barrier. A difference means another rank of the node wrote into
  /// this rank's slice. Both are collective over the node; local weights
  /// record nothing and are always intact.
  virtual void record_own_slices(const ExecSpace& space) = 0;
  virtual bool own_slices_intact(const ExecSpace& space) = 0;

  /// The exchange between the node's ranks (node-sliced), else nullptr.
  virtual const runtime::SliceExchange* exchange() const = 0;
  /// Bytes of the exchange buffers in node-shared memory (Kokkos does not
  /// see them allocated), else 0.
  virtual std::size_t shared_exchange_bytes() const = 0;

 protected:
  PerturbedWeights(runtime::ParameterStore& store, const EvaluationPlan& plan,
                   const model::ModelConfig& config, model::Task task,
                   MaterialisationObserver observer);

  /// Marks the embed_tokens rows the batch reads (classification), so that
  /// only they get w±.
  void mark_rows(const ExecSpace& space, const model::Batch& batch);
  /// update_and_perturb over elements [first, first + theta.extent()) of
  /// parameter `id`; the update only if `with_update`, rounded into a 2-byte
  /// θ as the store's placement says. `out`: w± of `query` and the
  /// unperturbed w, as float32 or as words of θ's format
  /// (precision.gemm_inputs: storage). The one call of the kernel for every
  /// storage of θ; the observer sees each.
  void materialise(const ExecSpace& space, const StoredVec& theta, std::uint32_t id,
                   std::uint64_t first, const PendingUpdate& pending, bool with_update,
                   const StepPerturbation& perturbation, int query,
                   const kernels::PerturbedOutputs& out);
  /// `materialise_query(query, with_update)` for each of `queries` in
  /// order: the pending update rides with the first only, so θ changes once.
  template <class MaterialiseQuery>
  static void each_query(const std::vector<int>& queries, const PendingUpdate& pending,
                         MaterialiseQuery&& materialise_query) {
    bool with_update = pending.active;
    for (int q : queries) {
      materialise_query(q, with_update);
      with_update = false;
    }
  }

  const model::ParameterRegistry& registry_;
  runtime::ParameterStore& store_;
  EvaluationPlan plan_;
  std::vector<int> queries_;  // the owned evaluations' queries, increasing
  // With a classification head the forward reads only the embed_tokens rows
  // of the batch's tokens and of the candidate words (the tied head), so only
  // those rows get w±: a large saving when V*E dominates the parameters, as
  // in small models. A causal-LM head reads every row: no selection.
  std::uint32_t embed_id_ = 0;
  IntVec embed_rows_used_;            // (V), classification only
  kernels::RowSelection embed_rows_;  // views embed_rows_used_; empty = all rows

 private:
  MaterialisationObserver observer_;
};

/// Where the perturbed weights of a sliced store come from: the node's ranks
/// that share θ, and the kind of exchange between them. Unused when θ is not
/// sliced (one rank, or every rank its own θ).
struct NodeExchange {
  const runtime::Communicator* node = nullptr;
  runtime::ExchangeKind kind = runtime::ExchangeKind::automatic;
};

/// The perturbed weights of `plan`'s evaluations over `store`: node-sliced
/// when the store is sliced (collective over `exchange.node`: every rank of
/// the node allocates the exchange buffers in the same order), else local.
/// `observer` sees every materialisation they enqueue.
std::unique_ptr<PerturbedWeights> make_perturbed_weights(
    runtime::ParameterStore& store, const EvaluationPlan& plan, const model::ModelConfig& config,
    model::Task task, const NodeExchange& exchange,
    MaterialisationObserver observer = MaterialisationObserver());

}  // namespace distzo::zo
