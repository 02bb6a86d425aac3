#pragma once
// The two kinds of perturbed weights (zo/perturbed_weights.hpp), for the
// factory. Internal to zo.

#include "zo/perturbed_weights.hpp"

namespace distzo::zo {

/// Each rank materialises w± of its own evaluations over the whole of θ
/// (local_weights.cpp).
std::unique_ptr<PerturbedWeights> make_local_weights(runtime::ParameterStore& store,
                                                     const EvaluationPlan& plan,
                                                     const model::ModelConfig& config,
                                                     model::Task task,
                                                     MaterialisationObserver observer);

/// The node's ranks split the materialisation of every evaluation the node
/// runs by slices of a shared θ and exchange the slices through `exchange`
/// (node_sliced_weights.cpp). Collective over the node.
std::unique_ptr<PerturbedWeights> make_node_sliced_weights(
    runtime::ParameterStore& store, const EvaluationPlan& plan, const model::ModelConfig& config,
    model::Task task, std::unique_ptr<runtime::SliceExchange> exchange,
    MaterialisationObserver observer);

}  // namespace distzo::zo
