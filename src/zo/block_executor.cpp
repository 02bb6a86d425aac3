#include "zo/block_executor.hpp"

#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/memory.hpp"
#include "kernels/embedding.hpp"
#include "zo/model_walk.hpp"
#include "zo/step_pass_base.hpp"

namespace distzo::zo {

namespace {

/// Allocates scratch for the given parameters in a table indexed by id.
void allocate(const model::ParameterRegistry& registry, const std::vector<std::uint32_t>& ids,
              model::TensorTable& table, const std::string& name) {
  table.resize(registry.size());
  for (std::uint32_t id : ids)
    table[id] = Vec(memory_label(MemoryRole::scratch, name + "." + registry[id].name),
                    static_cast<std::size_t>(registry[id].numel()));
}

}  // namespace

// ---------------------------------------------------------------------------
// The passes.

/// One ZO step: every owned (query, sign) evaluation of the batch, the
/// pending update fused into the first materialisation of each group.
class BlockExecutor::StepPass final : public StepPassBase {
 public:
  using StepPassBase::StepPassBase;

  void embeddings(const ExecSpace& space, const model::TensorTable& edges) override {
    // Embeddings and head: materialised once per evaluation for the whole
    // step (the tied embed_tokens is used at both ends).
    if (ex_.embed_rows_used_.extent(0) != 0)
      kernels::mark_rows(space, ex_.embed_rows_used_, batch_.tokens, batch_.candidates);
    bool with_update = pending_.active;
    for (int q : ex_.queries_) {
      const int ip = ex_.owned_index(q, +1), im = ex_.owned_index(q, -1);
      ex_.materialise(space, edges, ex_.edge_ids_, pending_, with_update, perturbation_, q,
                      ip >= 0 ? &ex_.edge_scratch_[ip] : nullptr,
                      im >= 0 ? &ex_.edge_scratch_[im] : nullptr);
      with_update = false;
    }
    for (std::size_t i = 0; i < ex_.hidden_.size(); ++i)
      ex_.forward_.embed(space, model::make_edge_view(ex_.registry_, ex_.edge_scratch_[i]),
                         batch_.tokens, batch_.mask, ex_.hidden_[i]);
  }

  bool block(const ExecSpace& space, int k, const model::TensorTable& theta) override {
    // One block at a time; its w+ and w- serve both signs of a query.
    const auto& layout = ex_.store_.layout(model::GroupRef::of_block(k));
    runtime::bind_tensors(ex_.plus_tensors_, layout, ex_.block_plus_);
    runtime::bind_tensors(ex_.minus_tensors_, layout, ex_.block_minus_);
    const auto& ids = ex_.registry_.block_ids(k);
    bool with_update = pending_.active;
    for (int q : ex_.queries_) {
      const int ip = ex_.owned_index(q, +1), im = ex_.owned_index(q, -1);
      ex_.materialise(space, theta, ids, pending_, with_update, perturbation_, q,
                      ip >= 0 ? &ex_.plus_tensors_ : nullptr,
                      im >= 0 ? &ex_.minus_tensors_ : nullptr);
      with_update = false;
      if (ip >= 0)
        ex_.forward_.block(space, model::make_block_view(ex_.registry_, ex_.plus_tensors_, k),
                           batch_.mask, ex_.hidden_[ip]);
      if (im >= 0)
        ex_.forward_.block(space, model::make_block_view(ex_.registry_, ex_.minus_tensors_, k),
                           batch_.mask, ex_.hidden_[im]);
    }
    runtime::unbind_tensors(ex_.plus_tensors_, layout);
    runtime::unbind_tensors(ex_.minus_tensors_, layout);
    return pending_.active;
  }

};

/// The pending update alone, applied by the fused kernel with no outputs.
class BlockExecutor::FlushPass final : public WalkPass {
 public:
  FlushPass(const model::ParameterRegistry& registry, const PendingUpdate& pending)
      : registry_(registry), pending_(pending) {}

  void embeddings(const ExecSpace& space, const model::TensorTable& edges) override {
    for (const auto& group : {registry_.embedding_ids(), registry_.head_ids()})
      for (std::uint32_t id : group)
        kernels::apply_update(space, edges[id], id, 0, pending_.terms_for(registry_[id]));
  }

  bool block(const ExecSpace& space, int k, const model::TensorTable& theta) override {
    for (std::uint32_t id : registry_.block_ids(k))
      kernels::apply_update(space, theta[id], id, 0, pending_.terms_for(registry_[id]));
    return true;
  }

  void head(const ExecSpace&, const model::TensorTable&) override {}

 private:
  const model::ParameterRegistry& registry_;
  const PendingUpdate& pending_;
};

// ---------------------------------------------------------------------------

BlockExecutor::BlockExecutor(const model::ModelConfig& config, runtime::ParameterStore& store,
                             const EvaluationPlan& plan, model::Task task, int micro_batch,
                             int seq_len, int candidates, NodeSlicing slicing,
                             const ExecSpace& space)
    : registry_(store.registry()),
      store_(store),
      streamer_(store, space),
      plan_(plan),
      forward_(config, micro_batch, seq_len),
      head_(config, task, micro_batch, seq_len, candidates),
      slicing_(std::move(slicing)) {
  for (const Evaluation& e : plan_.owned)
    if (queries_.empty() || queries_.back() != e.query) queries_.push_back(e.query);
  edge_ids_ = registry_.embedding_ids();
  edge_ids_.insert(edge_ids_.end(), registry_.head_ids().begin(), registry_.head_ids().end());
  embed_id_ = registry_.id_of(model::ParameterRole::embed_tokens);
  if (task == model::Task::classification) {
    embed_rows_used_ = IntVec(memory_label(MemoryRole::scratch, "embed_rows_used"),
                              static_cast<std::size_t>(config.vocab_size));
    embed_rows_.used = embed_rows_used_;
    embed_rows_.row_elements = static_cast<std::uint64_t>(config.embedding_dim());
  }

  // Every rank owns at least one evaluation (P divides 2q); the first
  // hidden state and loss slot also serve evaluation.
  const std::size_t evals = plan_.owned.size();
  DISTZO_REQUIRE(evals > 0, "executor: this rank owns no evaluation of the step");
  // The node-shared buffers first: their allocation is collective, so every
  // rank must reach it before anything that can fail on one rank alone.
  edge_scratch_.resize(evals);
  if (store.sliced()) allocate_slicing();
  hidden_.resize(evals);
  for (std::size_t i = 0; i < evals; ++i) {
    hidden_[i] = Mat(memory_label(MemoryRole::activations, "hidden." + std::to_string(i)),
                     static_cast<std::size_t>(forward_.rows()), config.hidden_size);
    if (!store.sliced())
      allocate(registry_, edge_ids_, edge_scratch_[i], "edge_w." + std::to_string(i));
  }
  sums_ = decltype(sums_)(memory_label(MemoryRole::activations, "loss_sums"), evals, 2);
  sums_host_ = decltype(sums_host_)(memory_label(MemoryRole::host_master, "loss_sums"), evals, 2);
  if (store.sliced()) return;  // w± live in the exchange buffers
  // Block scratch is one block arena per sign, re-pointed at block k's ids.
  if (registry_.num_blocks() > 0) {
    block_plus_ = Vec(memory_label(MemoryRole::scratch, "block_w+"), store.max_block_elements());
    block_minus_ = Vec(memory_label(MemoryRole::scratch, "block_w-"), store.max_block_elements());
  }
  plus_tensors_.resize(registry_.size());
  minus_tensors_.resize(registry_.size());
}

void BlockExecutor::run_pass(WalkPass& pass, bool writes_theta) {
  const bool fenced = writes_theta && slicing_.exchange != nullptr;
  if (fenced) slicing_.exchange->barrier(streamer_.instances().compute);
  walk(streamer_, pass);
  if (fenced) slicing_.exchange->barrier(streamer_.instances().compute);
}

int BlockExecutor::owned_index(int query, int sign) const {
  for (std::size_t i = 0; i < plan_.owned.size(); ++i)
    if (plan_.owned[i].query == query && plan_.owned[i].sign == sign) return static_cast<int>(i);
  return -1;
}

void BlockExecutor::materialise(const ExecSpace& space, const model::TensorTable& theta,
                                const std::vector<std::uint32_t>& ids,
                                const PendingUpdate& pending, bool with_update,
                                const StepPerturbation& perturbation, int query,
                                model::TensorTable* plus, model::TensorTable* minus) {
  const PerturbationStream stream = perturbation.stream(query);
  const real eps = static_cast<real>(perturbation.eps);
  const kernels::UpdateTerms none;
  for (std::uint32_t id : ids) {
    const kernels::UpdateTerms terms = with_update ? pending.terms_for(registry_[id]) : none;
    z_evaluations_ += static_cast<std::uint64_t>(theta[id].extent(0)) *
                      static_cast<std::uint64_t>(terms.count + 1);
    kernels::update_and_perturb(space, theta[id], id, 0, terms, stream, eps,
                                plus ? (*plus)[id] : Vec(), minus ? (*minus)[id] : Vec(),
                                id == embed_id_ ? embed_rows_ : kernels::RowSelection());
  }
}

std::vector<double> BlockExecutor::run_step(const model::Batch& batch,
                                            const StepPerturbation& perturbation,
                                            PendingUpdate& pending) {
  DISTZO_REQUIRE(batch.micro_batch == forward_.batch() && batch.seq_len == forward_.seq_len(),
                 "executor built for batches of " << forward_.batch() << " x " << forward_.seq_len()
                                                  << ", got " << batch.micro_batch << " x "
                                                  << batch.seq_len);
  if (store_.sliced()) {
    run_sliced_step(batch, perturbation, pending);
  } else {
    StepPass pass(*this, batch, perturbation, pending);
    run_pass(pass, true);
  }
  pending.active = false;

  // One copy of every owned evaluation's (loss sum, count) into the pinned mirror.
  const ExecSpace& space = streamer_.instances().compute;
  Kokkos::deep_copy(space, sums_host_, sums_);
  fence(space, "distzo: loss sums of the step ready for the host");
  std::vector<double> local(static_cast<std::size_t>(4 * plan_.queries), 0.0);
  for (std::size_t i = 0; i < plan_.owned.size(); ++i) {
    local[2 * plan_.owned[i].index] = sums_host_(i, 0);
    local[2 * plan_.owned[i].index + 1] = sums_host_(i, 1);
  }
  return local;
}

void BlockExecutor::flush(PendingUpdate& pending) {
  if (!pending.active) return;
  if (store_.sliced()) {
    run_sliced_flush(pending);
  } else {
    FlushPass pass(registry_, pending);
    run_pass(pass, true);
  }
  pending.active = false;
}

EvalOutcome BlockExecutor::evaluate(const model::Batch& batch) {
  const ExecSpace& space = streamer_.instances().compute;
  ForwardPass pass(forward_, registry_, hidden_.at(0), batch.tokens, batch.mask);
  run_pass(pass, false);
  const model::WeightView edge = model::make_edge_view(registry_, store_.device_tensors());
  head_.loss(space, edge, pass.final_hidden(), batch, Kokkos::subview(sums_, 0, Kokkos::ALL()));
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
