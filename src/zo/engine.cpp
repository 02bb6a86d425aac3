#include "zo/engine.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/memory.hpp"
#include "zo/model_walk.hpp"
#include "zo/update_terms.hpp"

namespace distzo::zo {

// ---------------------------------------------------------------------------
// The passes.

namespace {

/// The pending update alone, by the fused kernel with no outputs, on this
/// rank's slice of `group` (with one slice: all of it).
void apply_pending(const ExecSpace& space, const runtime::ParameterStore& store, const ZSpec& z,
                   const PendingUpdate& pending, const runtime::ThetaTable& theta,
                   model::GroupRef group) {
  for (const runtime::SlicePiece& p : store.slices(group).pieces) {
    const kernels::UpdateTerms terms =
        update_terms(z, pending, store.registry()[p.id], store.placement().rounding);
    kernels::apply_update(space, theta[p.id].piece(p.first_element, p.count), p.id, p.first_element,
                          terms);
  }
}

}  // namespace

/// One ZO step: every owned (query, sign) evaluation of the batch on its
/// perturbed weights, the pending update fused into their materialisation.
class Engine::StepPass final : public WalkPass {
 public:
  StepPass(Engine& engine, const model::Batch& batch, const StepPerturbation& perturbation,
           const PendingUpdate& pending)
      : e_(engine), batch_(batch), perturbation_(perturbation), pending_(pending) {}

  // A sliced θ is written by its slices' owners only; the streamer then
  // moves only this rank's slice (with one slice: all of θ).
  bool own_slices() const override { return true; }

  void embeddings(const ExecSpace& space, const runtime::ThetaTable& edges) override {
    e_.weights_->perturb_edges(space, edges, batch_, pending_, perturbation_,
                               [&](std::size_t i, const model::GroupTensors& w) {
                                 e_.forward_.embed(space, model::make_edge_view(e_.registry_, w),
                                                   batch_.tokens, batch_.mask, e_.hidden_[i]);
                               });
  }

  bool block(const ExecSpace& space, int k, const runtime::ThetaTable& theta) override {
    const auto forward = [&](std::size_t i, const model::GroupTensors& w) {
      e_.forward_.block(space, model::make_block_view(e_.registry_, w, k), k, batch_.mask,
                        e_.hidden_[i]);
    };
    if (!e_.store_.sliced() && !perturbation_.z.perturbs(perturbation_.step, k)) {
      // A block this step does not perturb (z = 0: w± = θ'): updated in
      // place, and every evaluation reads θ' itself, as an evaluation's
      // forward does — no w± copies. (A sliced θ keeps materialising: the
      // node's ranks read w± of the exchange, not each other's slices.)
      if (pending_.active)
        apply_pending(space, e_.store_, perturbation_.z, pending_, theta,
                      model::GroupRef::of_block(k));
      const model::GroupTensors w = e_.float_theta_.block(space, k, theta);
      for (std::size_t i = 0; i < e_.plan_.owned.size(); ++i) forward(i, w);
    } else {
      e_.weights_->perturb_block(space, k, theta, pending_, perturbation_, forward);
    }
    return updates_block(perturbation_.z, pending_, k);
  }

  void head(const ExecSpace& space, const runtime::ThetaTable& edges) override {
    e_.weights_->head_edges(
        space, edges, perturbation_, [&](std::size_t i, const model::GroupTensors& w) {
          const model::WeightView edge = model::make_edge_view(e_.registry_, w);
          const Mat hidden = e_.forward_.final_hidden(space, edge, e_.hidden_[i]);
          e_.head_.loss(space, edge, hidden, batch_, Kokkos::subview(e_.sums_, i, Kokkos::ALL()),
                        e_.forward_.gemm_input());
        });
  }

 private:
  Engine& e_;
  const model::Batch& batch_;
  const StepPerturbation& perturbation_;
  const PendingUpdate& pending_;
};

/// The pending update alone, applied by the fused kernel with no outputs to
/// this rank's slice of every group (with one slice: all of θ).
class Engine::FlushPass final : public WalkPass {
 public:
  FlushPass(const runtime::ParameterStore& store, const ZSpec& z, const PendingUpdate& pending)
      : store_(store), z_(z), pending_(pending) {}

  bool own_slices() const override { return true; }

  void embeddings(const ExecSpace& space, const runtime::ThetaTable& edges) override {
    update(space, edges, model::GroupRef::embeddings());
    update(space, edges, model::GroupRef::head());
  }

  bool block(const ExecSpace& space, int k, const runtime::ThetaTable& theta) override {
    update(space, theta, model::GroupRef::of_block(k));
    return updates_block(z_, pending_, k);
  }

  void head(const ExecSpace&, const runtime::ThetaTable&) override {}

 private:
  void update(const ExecSpace& space, const runtime::ThetaTable& theta, model::GroupRef group) {
    apply_pending(space, store_, z_, pending_, theta, group);
  }

  const runtime::ParameterStore& store_;
  const ZSpec& z_;
  const PendingUpdate& pending_;
};

// ---------------------------------------------------------------------------

Engine::Engine(const model::ModelConfig& config, runtime::ParameterStore& store,
               const EvaluationPlan& plan, const model::BatchShape& shape, const NodeExchange& node,
               const ExecSpace& space, MaterialisationObserver observer)
    : registry_(store.registry()),
      store_(store),
      plan_(plan),
      shape_(shape),
      weights_(make_perturbed_weights(store, plan, config, shape.task, node, std::move(observer))),
      streamer_(store, space),
      float_theta_(store, weights_->idle_scratch()),
      forward_(config, shape.micro_batch, shape.seq_len, store.placement().gemm_inputs()),
      head_(config, shape) {
  // Every rank owns at least one evaluation (P divides 2q); the first
  // hidden state and loss slot also serve evaluation.
  const std::size_t evals = plan_.owned.size();
  DISTZO_REQUIRE(evals > 0, "engine: this rank owns no evaluation of the step");
  hidden_buffers_.resize(evals);
  for (std::size_t i = 0; i < evals; ++i)
    hidden_buffers_[i] = Mat(memory_label(MemoryRole::activations, "hidden." + std::to_string(i)),
                             static_cast<std::size_t>(forward_.rows()), config.hidden_size);
  hidden_ = hidden_buffers_;
  sums_ = decltype(sums_)(memory_label(MemoryRole::activations, "loss_sums"), evals, 2);
  sums_host_ = decltype(sums_host_)(memory_label(MemoryRole::host_master, "loss_sums"), evals, 2);
}

void Engine::run_pass(WalkPass& pass, bool writes_theta) {
  if (writes_theta) weights_->node_barrier(streamer_.instances().compute);
  walk(streamer_, pass);
  if (writes_theta) weights_->node_barrier(streamer_.instances().compute);
}

void Engine::fit_to(const model::Batch& batch) {
  DISTZO_REQUIRE(batch.micro_batch == shape_.micro_batch && batch.seq_len >= 1 &&
                     batch.seq_len <= shape_.seq_len,
                 "engine built for batches of " << shape_.micro_batch << " x (up to) "
                                                << shape_.seq_len << ", got " << batch.micro_batch
                                                << " x " << batch.seq_len);
  forward_.set_seq_len(batch.seq_len);
  const auto rows = static_cast<std::size_t>(forward_.rows());
  for (std::size_t i = 0; i < hidden_.size(); ++i)
    hidden_[i] = Mat(hidden_buffers_[i].data(), rows, hidden_buffers_[i].extent(1));
}

LossTable Engine::run_step(const model::Batch& batch, const StepPerturbation& perturbation,
                           PendingUpdate& pending) {
  fit_to(batch);
  StepPass pass(*this, batch, perturbation, pending);
  run_pass(pass, true);
  pending.active = false;

  // One copy of every owned evaluation's (loss sum, count) into the pinned mirror.
  const ExecSpace& space = streamer_.instances().compute;
  Kokkos::deep_copy(space, sums_host_, sums_);
  fence(space, "distzo: loss sums of the step ready for the host");
  LossTable losses(plan_.estimator);
  for (std::size_t i = 0; i < plan_.owned.size(); ++i)
    losses.at(plan_.owned[i]) = {sums_host_(i, 0), sums_host_(i, 1)};
  return losses;
}

void Engine::flush(const ZSpec& z, PendingUpdate& pending) {
  if (!pending.active) return;
  FlushPass pass(store_, z, pending);
  run_pass(pass, true);
  pending.active = false;
}

EvalOutcome Engine::evaluate(const model::Batch& batch) {
  fit_to(batch);
  const ExecSpace& space = streamer_.instances().compute;
  ForwardPass pass(forward_, float_theta_, hidden_.at(0), batch.tokens, batch.mask);
  run_pass(pass, false);
  const model::WeightView edge = model::make_edge_view(registry_, pass.edges());
  head_.loss(space, edge, pass.final_hidden(), batch, Kokkos::subview(sums_, 0, Kokkos::ALL()),
             forward_.gemm_input());
  Kokkos::deep_copy(space, sums_host_, sums_);
  fence(space, "distzo: evaluation loss ready for the host");

  EvalOutcome out;
  out.loss_sum = sums_host_(0, 0);
  out.count = sums_host_(0, 1);
  if (batch.task == model::Task::classification) {
    auto pred = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), head_.predictions());
    out.predictions.assign(pred.data(), pred.data() + pred.extent(0));
  }
  return out;
}

}  // namespace distzo::zo
