#include "zo/perturbed_weights.hpp"

#include "core/error.hpp"
#include "core/memory.hpp"
#include "kernels/embedding.hpp"
#include "zo/perturbed_weights_kinds.hpp"
#include "zo/update_terms.hpp"

#include <type_traits>

namespace distzo::zo {

PerturbedWeights::PerturbedWeights(runtime::ParameterStore& store, const EvaluationPlan& plan,
                                   const model::ModelConfig& config, model::Task task)
    : registry_(store.registry()),
      store_(store),
      plan_(plan),
      queries_(queries_of(plan.owned)),
      embed_id_(store.registry().id_of(model::ParameterRole::embed_tokens)) {
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

template <class Outputs>
void PerturbedWeights::materialise(const ExecSpace& space, const runtime::ThetaTensor& theta,
                                        std::uint32_t id, std::uint64_t first,
                                        const PendingUpdate& pending, bool with_update,
                                        const StepPerturbation& perturbation, int query,
                                        const Outputs& plus, const Outputs& minus) {
  const kernels::UpdateTerms terms =
      with_update
          ? update_terms(perturbation.z, pending, registry_[id], store_.placement().rounding)
          : kernels::UpdateTerms();
  z_evaluations_ += static_cast<std::uint64_t>(theta.extent()) *
                    static_cast<std::uint64_t>(terms.count + 1);
  const PerturbationStream stream = perturbation.stream(query);
  const real eps = static_cast<real>(perturbation.eps);
  const kernels::RowSelection rows = id == embed_id_ ? embed_rows_ : kernels::RowSelection();
  if constexpr (std::is_same<Outputs, HalfVec>::value) {
    DISTZO_REQUIRE(theta.dtype != StorageDtype::fp32,
                   "perturbed weights: 2-byte w± of " << registry_[id].name
                                                      << " asked of a float32 θ");
    kernels::update_and_perturb(space, theta.words, theta.dtype, id, first, terms, stream, eps, plus,
                                minus, rows);
  } else if (theta.dtype == StorageDtype::fp32) {
    kernels::update_and_perturb(space, theta.f32, id, first, terms, stream, eps, plus, minus, rows);
  } else {
    kernels::update_and_perturb(space, theta.words, theta.dtype, id, first, terms, stream, eps, plus,
                                minus, rows);
  }
}

template void PerturbedWeights::materialise<Vec>(const ExecSpace&, const runtime::ThetaTensor&,
                                                std::uint32_t, std::uint64_t, const PendingUpdate&,
                                                bool, const StepPerturbation&, int, const Vec&,
                                                const Vec&);
template void PerturbedWeights::materialise<HalfVec>(const ExecSpace&, const runtime::ThetaTensor&,
                                                    std::uint32_t, std::uint64_t,
                                                    const PendingUpdate&, bool,
                                                    const StepPerturbation&, int, const HalfVec&,
                                                    const HalfVec&);

std::unique_ptr<PerturbedWeights> make_perturbed_weights(runtime::ParameterStore& store,
                                                         const EvaluationPlan& plan,
                                                         const model::ModelConfig& config,
                                                         model::Task task,
                                                         const NodeExchange& exchange) {
  if (!store.sliced()) return make_local_weights(store, plan, config, task);
  const runtime::PlacementProblem shared = store.placement().shared_master_problem();
  DISTZO_INPUT_REQUIRE(shared.key.empty(), shared.key << ": " << shared.why);
  DISTZO_REQUIRE(exchange.node != nullptr,
                 "perturbed weights: a sliced store needs the node's ranks to exchange slices with");
  return make_node_sliced_weights(store, plan, config, task,
                                  runtime::make_slice_exchange(exchange.kind, *exchange.node));
}

}  // namespace distzo::zo
