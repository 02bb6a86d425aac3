#include "zo/block_executor.hpp"

#include "core/error.hpp"
#include "core/fence.hpp"
#include "kernels/embedding.hpp"
#include "model/parameter_digest.hpp"

namespace distzo::zo {

namespace {

/// Allocates scratch for the given parameters in a table indexed by id.
void allocate(const model::ParameterRegistry& registry, const std::vector<std::uint32_t>& ids,
              model::TensorTable& table, const std::string& label) {
  table.resize(registry.size());
  for (std::uint32_t id : ids)
    table[id] = Vec(label + "::" + registry[id].name, static_cast<std::size_t>(registry[id].numel()));
}

}  // namespace

BlockExecutor::BlockExecutor(const model::OptConfig& config,
                             const model::ParameterRegistry& registry, model::TensorTable& theta,
                             const EvaluationPlan& plan, model::Task task, int micro_batch,
                             int seq_len, int candidates)
    : registry_(registry),
      theta_(theta),
      plan_(plan),
      forward_(config, micro_batch, seq_len),
      head_(config, task, micro_batch, seq_len, candidates) {
  for (const Evaluation& e : plan_.owned)
    if (queries_.empty() || queries_.back() != e.query) queries_.push_back(e.query);
  edge_ids_ = registry.embedding_ids();
  edge_ids_.insert(edge_ids_.end(), registry.head_ids().begin(), registry.head_ids().end());
  embed_id_ = registry.id_of(model::ParameterRole::embed_tokens);
  if (task == model::Task::classification) {
    embed_rows_used_ = IntVec("distzo::executor::embed_rows_used",
                              static_cast<std::size_t>(config.vocab_size));
    embed_rows_.used = embed_rows_used_;
    embed_rows_.row_elements = static_cast<std::uint64_t>(config.word_embed_proj_dim);
  }

  const std::size_t evals = plan_.owned.size();
  hidden_.resize(evals);
  edge_scratch_.resize(evals);
  sums_.resize(evals);
  for (std::size_t i = 0; i < evals; ++i) {
    hidden_[i] = Mat("distzo::executor::hidden", static_cast<std::size_t>(forward_.rows()),
                     config.hidden_size);
    allocate(registry, edge_ids_, edge_scratch_[i], "distzo::executor::edge");
    sums_[i] = kernels::make_loss_sums("distzo::executor::loss");
  }
  // Block scratch is shaped like block 0 and re-pointed at block k's ids.
  if (registry.num_blocks() > 0) {
    allocate(registry, registry.block_ids(0), block_plus_, "distzo::executor::block_plus");
    allocate(registry, registry.block_ids(0), block_minus_, "distzo::executor::block_minus");
  }
}

void BlockExecutor::materialise(const ExecSpace& space, const std::vector<std::uint32_t>& ids,
                                const PendingUpdate& pending, bool with_update,
                                const StepPerturbation& perturbation, int query,
                                model::TensorTable* plus, model::TensorTable* minus) {
  const PerturbationStream stream = perturbation.stream(query);
  const real eps = static_cast<real>(perturbation.eps);
  const kernels::UpdateTerms none;
  for (std::uint32_t id : ids) {
    const kernels::UpdateTerms terms = with_update ? pending.terms_for(registry_[id]) : none;
    kernels::update_and_perturb(space, theta_[id], id, 0, terms, stream, eps,
                                plus ? (*plus)[id] : Vec(), minus ? (*minus)[id] : Vec(),
                                id == embed_id_ ? embed_rows_ : kernels::RowSelection());
  }
}

std::vector<double> BlockExecutor::run_step(const ExecSpace& space, const model::Batch& batch,
                                            const StepPerturbation& perturbation,
                                            PendingUpdate& pending) {
  DISTZO_REQUIRE(batch.micro_batch == forward_.batch() && batch.seq_len == forward_.seq_len(),
                 "executor built for batches of " << forward_.batch() << " x " << forward_.seq_len()
                                                  << ", got " << batch.micro_batch << " x "
                                                  << batch.seq_len);
  const std::size_t evals = plan_.owned.size();
  // Scratch table of owned evaluation i, or null when this rank does not own it.
  auto owned_index = [&](int query, int sign) -> int {
    for (std::size_t i = 0; i < evals; ++i)
      if (plan_.owned[i].query == query && plan_.owned[i].sign == sign) return static_cast<int>(i);
    return -1;
  };

  // Embeddings and head: materialised once per evaluation for the whole step
  // (the tied embed_tokens is used at both ends).
  if (embed_rows_used_.extent(0) != 0)
    kernels::mark_rows(space, embed_rows_used_, batch.tokens, batch.candidates);
  bool with_update = pending.active;
  for (int q : queries_) {
    const int ip = owned_index(q, +1), im = owned_index(q, -1);
    materialise(space, edge_ids_, pending, with_update, perturbation, q,
                ip >= 0 ? &edge_scratch_[ip] : nullptr, im >= 0 ? &edge_scratch_[im] : nullptr);
    with_update = false;
  }
  std::vector<model::OptEdgeView> edges(evals);
  for (std::size_t i = 0; i < evals; ++i) {
    edges[i] = model::make_edge_view(registry_, edge_scratch_[i]);
    forward_.embed(space, edges[i], batch.tokens, batch.mask, hidden_[i]);
  }

  // Blocks: one resident at a time; its w+ and w- serve both signs of a query.
  model::TensorTable plus_view(registry_.size()), minus_view(registry_.size());
  for (int k = 0; k < registry_.num_blocks(); ++k) {
    const auto& ids = registry_.block_ids(k);
    const auto& ids0 = registry_.block_ids(0);
    for (std::size_t j = 0; j < ids.size(); ++j) {
      plus_view[ids[j]] = block_plus_[ids0[j]];
      minus_view[ids[j]] = block_minus_[ids0[j]];
    }
    with_update = pending.active;
    for (int q : queries_) {
      const int ip = owned_index(q, +1), im = owned_index(q, -1);
      materialise(space, ids, pending, with_update, perturbation, q,
                  ip >= 0 ? &plus_view : nullptr, im >= 0 ? &minus_view : nullptr);
      with_update = false;
      if (ip >= 0)
        forward_.block(space, model::make_block_view(registry_, plus_view, k), batch.mask,
                       hidden_[ip]);
      if (im >= 0)
        forward_.block(space, model::make_block_view(registry_, minus_view, k), batch.mask,
                       hidden_[im]);
    }
  }
  pending.active = false;

  for (std::size_t i = 0; i < evals; ++i) {
    Mat hidden = forward_.final_hidden(space, edges[i], hidden_[i]);
    head_.loss(space, edges[i], hidden, batch, sums_[i]);
  }

  fence(space, "distzo: loss sums of the step ready for the host");
  std::vector<double> local(static_cast<std::size_t>(4 * plan_.queries), 0.0);
  for (std::size_t i = 0; i < evals; ++i) {
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sums_[i]);
    local[2 * plan_.owned[i].index] = host(0);
    local[2 * plan_.owned[i].index + 1] = host(1);
  }
  return local;
}

void BlockExecutor::flush(const ExecSpace& space, PendingUpdate& pending) {
  if (!pending.active) return;
  for (const auto& p : registry_.parameters())
    kernels::apply_update(space, theta_[p.id], p.id, 0, pending.terms_for(p));
  pending.active = false;
}

EvalOutcome BlockExecutor::evaluate(const ExecSpace& space, const model::Batch& batch) {
  const model::OptEdgeView edge = model::make_edge_view(registry_, theta_);
  Mat h = hidden_.at(0);
  forward_.embed(space, edge, batch.tokens, batch.mask, h);
  for (int k = 0; k < registry_.num_blocks(); ++k)
    forward_.block(space, model::make_block_view(registry_, theta_, k), batch.mask, h);
  Mat hidden = forward_.final_hidden(space, edge, h);
  head_.loss(space, edge, hidden, batch, sums_.at(0));
  fence(space, "distzo: evaluation loss ready for the host");

  EvalOutcome out;
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sums_[0]);
  out.loss_sum = host(0);
  out.count = host(1);
  if (batch.task == model::Task::classification) {
    auto pred = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), head_.predictions());
    out.predictions.assign(pred.data(), pred.data() + pred.extent(0));
  }
  return out;
}

std::string BlockExecutor::parameter_digest() const {
  return model::parameter_digest(registry_, theta_);
}

void BlockExecutor::debug_corrupt_parameter() {
  Kokkos::deep_copy(Kokkos::subview(theta_.at(0), std::make_pair(0, 1)), real(12345));
}

}  // namespace distzo::zo
