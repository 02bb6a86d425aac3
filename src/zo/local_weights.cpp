// Local perturbed weights (zo/perturbed_weights.hpp): this rank alone
// materialises w± of its evaluations, tensor by tensor over the whole of θ.

#include "core/error.hpp"
#include "core/memory.hpp"
#include "zo/perturbed_weights_kinds.hpp"

#include <string>

namespace distzo::zo {

namespace {

class LocalWeights final : public PerturbedWeights {
 public:
  LocalWeights(runtime::ParameterStore& store, const EvaluationPlan& plan,
               const model::ModelConfig& config, model::Task task)
      : PerturbedWeights(store, plan, config, task),
        one_at_a_time_(store.placement().perturb_one_at_a_time) {
    edge_ids_ = registry_.embedding_ids();
    edge_ids_.insert(edge_ids_.end(), registry_.head_ids().begin(), registry_.head_ids().end());
    edge_w_.resize(one_at_a_time_ ? 1 : plan_.owned.size());
    for (std::size_t i = 0; i < edge_w_.size(); ++i) {
      edge_w_[i].resize(registry_.size());
      for (std::uint32_t id : edge_ids_)
        edge_w_[i][id] = Vec(memory_label(MemoryRole::scratch,
                                          "edge_w." + std::to_string(i) + "." + registry_[id].name),
                             static_cast<std::size_t>(registry_[id].numel()));
    }
    // Block scratch is one block arena per sign (or one for both), re-pointed
    // at block k's ids.
    if (registry_.num_blocks() > 0) {
      block_plus_ = Vec(memory_label(MemoryRole::scratch, "block_w+"), store.max_block_elements());
      if (!one_at_a_time_)
        block_minus_ = Vec(memory_label(MemoryRole::scratch, "block_w-"), store.max_block_elements());
    }
    plus_.resize(registry_.size());
    minus_.resize(registry_.size());
  }

  void perturb_edges(const ExecSpace& space, const runtime::ThetaTable& theta,
                     const model::Batch& batch, const PendingUpdate& pending,
                     const StepPerturbation& perturbation, const Use& use) override {
    mark_rows(space, batch);
    if (one_at_a_time_) {
      // Evaluation after evaluation into the one copy; the last stays there
      // for the head (head_edges walks them back).
      bool with_update = pending.active;
      for (std::size_t i = 0; i < plan_.owned.size(); ++i) {
        materialise_one(space, theta, edge_ids_, plan_.owned[i], pending, with_update, perturbation,
                        edge_w_[0]);
        with_update = false;
        use(i, edge_w_[0]);
      }
      return;
    }
    each_query(queries_, pending, [&](int q, bool with_update) {
      const int ip = find_evaluation(plan_.owned, q, +1), im = find_evaluation(plan_.owned, q, -1);
      for (std::uint32_t id : edge_ids_)
        materialise(space, theta[id], id, 0, pending, with_update, perturbation, q,
                    ip >= 0 ? edge_w_[static_cast<std::size_t>(ip)][id] : Vec(),
                    im >= 0 ? edge_w_[static_cast<std::size_t>(im)][id] : Vec());
    });
    for (std::size_t i = 0; i < edge_w_.size(); ++i) use(i, edge_w_[i]);
  }

  void head_edges(const ExecSpace& space, const runtime::ThetaTable& theta,
                  const StepPerturbation& perturbation, const Use& use) override {
    if (!one_at_a_time_) {
      for (std::size_t i = 0; i < edge_w_.size(); ++i) use(i, edge_w_[i]);
      return;
    }
    // Backwards: the last evaluation's w is still in the copy; the others
    // are materialised again from θ', which perturb_edges updated.
    const PendingUpdate none;
    for (std::size_t i = plan_.owned.size(); i-- > 0;) {
      if (i + 1 != plan_.owned.size())
        materialise_one(space, theta, edge_ids_, plan_.owned[i], none, false, perturbation,
                        edge_w_[0]);
      use(i, edge_w_[0]);
    }
  }

  void perturb_block(const ExecSpace& space, int k, const runtime::ThetaTable& theta,
                     const PendingUpdate& pending, const StepPerturbation& perturbation,
                     const Use& use) override {
    const runtime::ArenaLayout& layout = store_.layout(model::GroupRef::of_block(k));
    runtime::bind_tensors(plus_, layout, block_plus_);
    if (one_at_a_time_) {
      // One arena: each evaluation's w in turn, the update with the first.
      bool with_update = pending.active;
      for (std::size_t i = 0; i < plan_.owned.size(); ++i) {
        materialise_one(space, theta, registry_.block_ids(k), plan_.owned[i], pending, with_update,
                        perturbation, plus_);
        with_update = false;
        use(i, plus_);
      }
      runtime::unbind_tensors(plus_, layout);
      return;
    }
    // Its w+ and w- serve both signs of a query.
    runtime::bind_tensors(minus_, layout, block_minus_);
    each_query(queries_, pending, [&](int q, bool with_update) {
      const int ip = find_evaluation(plan_.owned, q, +1), im = find_evaluation(plan_.owned, q, -1);
      for (std::uint32_t id : registry_.block_ids(k))
        materialise(space, theta[id], id, 0, pending, with_update, perturbation, q,
                    ip >= 0 ? plus_[id] : Vec(), im >= 0 ? minus_[id] : Vec());
      if (ip >= 0) use(static_cast<std::size_t>(ip), plus_);
      if (im >= 0) use(static_cast<std::size_t>(im), minus_);
    });
    runtime::unbind_tensors(plus_, layout);
    runtime::unbind_tensors(minus_, layout);
  }

  LentScratch idle_scratch() const override {
    return {edge_w_.empty() ? nullptr : &edge_w_[0], block_plus_};
  }

  void node_barrier(const ExecSpace&) override {}
  void record_own_slices(const ExecSpace&) override {}
  bool own_slices_intact(const ExecSpace&) override { return true; }
  void corrupt_parameter() override { store_.corrupt_element(0); }
  const runtime::SliceExchange* exchange() const override { return nullptr; }
  std::size_t shared_exchange_bytes() const override { return 0; }

 private:
  /// w of evaluation `e` alone over tensors `ids`, into `w` (by id).
  void materialise_one(const ExecSpace& space, const runtime::ThetaTable& theta,
                       const std::vector<std::uint32_t>& ids, const Evaluation& e,
                       const PendingUpdate& pending, bool with_update,
                       const StepPerturbation& perturbation, const model::TensorTable& w) {
    for (std::uint32_t id : ids)
      materialise(space, theta[id], id, 0, pending, with_update, perturbation, e.query,
                  e.sign > 0 ? w[id] : Vec(), e.sign < 0 ? w[id] : Vec());
  }

  bool one_at_a_time_;                      // placement.perturbed_weights: one_at_a_time
  std::vector<std::uint32_t> edge_ids_;     // embeddings + head: live for the whole step
  std::vector<model::TensorTable> edge_w_;  // per owned evaluation (or one): the edge tensors' w
  Vec block_plus_, block_minus_;            // one block's w± (block arena layout); w- not
                                            // allocated one at a time
  model::TensorTable plus_, minus_;         // by id, into block_plus_ / block_minus_
};

}  // namespace

std::unique_ptr<PerturbedWeights> make_local_weights(runtime::ParameterStore& store,
                                                     const EvaluationPlan& plan,
                                                     const model::ModelConfig& config,
                                                     model::Task task) {
  return std::make_unique<LocalWeights>(store, plan, config, task);
}

}  // namespace distzo::zo
