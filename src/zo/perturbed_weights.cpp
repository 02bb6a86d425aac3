#include "zo/perturbed_weights.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "kernels/embedding.hpp"
#include "zo/perturbed_weights_kinds.hpp"
#include "zo/update_terms.hpp"

namespace distzo::zo {

PerturbedWeights::PerturbedWeights(runtime::ParameterStore& store, const EvaluationPlan& plan,
                                   const model::ModelConfig& config, model::Task task,
                                   MaterialisationObserver observer)
    : registry_(store.registry()),
      store_(store),
      plan_(plan),
      queries_(queries_of(plan.owned)),
      embed_id_(store.registry().id_of(model::ParameterRole::embed_tokens)),
      observer_(std::move(observer)) {
  if (task == model::Task::classification) {
    embed_rows_used_ = IntVec(memory_label(MemoryRole::scratch, "embed_rows_used"),
                              static_cast<std::size_t>(config.vocab_size));
    embed_rows_.used = embed_rows_used_;
    embed_rows_.row_elements = static_cast<std::uint64_t>(config.embedding_dim());
  }
}

void PerturbedWeights::mark_rows(const ExecSpace& space, const model::Batch& batch) {
  if (embed_rows_used_.extent(0) != 0)
    kernels::mark_rows(space, embed_rows_used_, batch.tokens, batch.candidates);
}

void PerturbedWeights::materialise(const ExecSpace& space, const StoredVec& theta, std::uint32_t id,
                                   std::uint64_t first, const PendingUpdate& pending,
                                   bool with_update, const StepPerturbation& perturbation,
                                   int query, const kernels::PerturbedOutputs& out) {
  const kernels::UpdateTerms terms =
      with_update
          ? update_terms(perturbation.z, pending, registry_[id], store_.placement().rounding)
          : kernels::UpdateTerms();
  kernels::PerturbedOutputs outputs = out;
  outputs.perturbed = perturbation.z.perturbs(perturbation.step, registry_[id].block);
  const bool draws_z = outputs.perturbed && (!out.plus.empty() || !out.minus.empty());
  if (observer_) observer_({id, first, theta.extent(), terms.count + (draws_z ? 1 : 0)});
  const kernels::RowSelection rows = id == embed_id_ ? embed_rows_ : kernels::RowSelection();
  kernels::update_and_perturb(space, theta, id, first, terms, perturbation.stream(query),
                              static_cast<real>(perturbation.eps), outputs, rows);
}

std::unique_ptr<PerturbedWeights> make_perturbed_weights(
    runtime::ParameterStore& store, const EvaluationPlan& plan, const model::ModelConfig& config,
    model::Task task, const NodeExchange& exchange, MaterialisationObserver observer) {
  if (!store.sliced()) return make_local_weights(store, plan, config, task, std::move(observer));
  const runtime::PlacementProblem shared = store.placement().shared_master_problem();
  DISTZO_INPUT_REQUIRE(shared.key.empty(), shared.key << ": " << shared.why);
  DISTZO_REQUIRE(
      exchange.node != nullptr,
      "perturbed weights: a sliced store needs the node's ranks to exchange slices with");
  return make_node_sliced_weights(store, plan, config, task,
                                  runtime::make_slice_exchange(exchange.kind, *exchange.node),
                                  std::move(observer));
}

}  // namespace distzo::zo
