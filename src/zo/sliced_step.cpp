// The sliced step and flush of Placement II (block_executor.hpp): each rank
// of a node updates and perturbs its slice of every group, the slice
// exchange makes the perturbed groups whole, then each rank runs its own
// evaluations. The arithmetic per element is the unsliced kernel's, on the
// same z (slices start on Philox blocks), so every result is bit-identical.

#include "core/error.hpp"
#include "core/memory.hpp"
#include "kernels/embedding.hpp"
#include "zo/block_executor.hpp"
#include "zo/model_walk.hpp"
#include "zo/step_pass_base.hpp"

#include <utility>

namespace distzo::zo {

namespace {

/// The part of a tensor (or of an arena) that a slice piece covers.
Vec piece_of(const Vec& v, std::size_t offset, std::size_t count) {
  return Kokkos::subview(v, std::make_pair(offset, offset + count));
}

}  // namespace

class BlockExecutor::SlicedStepPass final : public StepPassBase {
 public:
  using StepPassBase::StepPassBase;

  bool own_slices() const override { return true; }

  void embeddings(const ExecSpace& space, const model::TensorTable& edges) override {
    runtime::SliceExchange& exchange = *ex_.slicing_.exchange;
    const runtime::ParameterStore& store = ex_.store_;
    const runtime::GroupSlices& embed = store.slices(model::GroupRef::embeddings());
    const runtime::GroupSlices& head = store.slices(model::GroupRef::head());
    const bool sliced = embed.slices > 1;  // else each rank holds whole edges (GPU builds)
    if (ex_.embed_rows_used_.extent(0) != 0) {
      kernels::mark_rows(space, ex_.embed_rows_used_, batch_.tokens, batch_.candidates);
      if (sliced) {  // the rows any rank of the node reads: the union of the marks
        const std::size_t per = ex_.row_buffer_.extent(0) / static_cast<std::size_t>(embed.slices);
        kernels::publish_rows(
            space, piece_of(ex_.row_buffer_, per * static_cast<std::size_t>(embed.slice), per),
            ex_.embed_rows_used_);
        exchange.all_gather(space, {ex_.row_buffer_});
        kernels::union_rows(space, ex_.embed_rows_used_, ex_.row_buffer_, embed.slices);
      }
    }
    bool with_update = pending_.active;
    for (int q : ex_.node_queries_) {
      ex_.materialise_slice(space, edges, embed, pending_, with_update, perturbation_, q,
                            ex_.embed_buffers_);
      ex_.materialise_slice(space, edges, head, pending_, with_update, perturbation_, q,
                            ex_.head_buffers_);
      with_update = false;
    }
    if (sliced) {
      std::vector<Vec> buffers = ex_.embed_buffers_;
      buffers.insert(buffers.end(), ex_.head_buffers_.begin(), ex_.head_buffers_.end());
      exchange.all_gather(space, buffers);
    }
    for (std::size_t i = 0; i < ex_.hidden_.size(); ++i)
      ex_.forward_.embed(space, model::make_edge_view(ex_.registry_, ex_.edge_scratch_[i]),
                         batch_.tokens, batch_.mask, ex_.hidden_[i]);
  }

  bool block(const ExecSpace& space, int k, const model::TensorTable& theta) override {
    const model::GroupRef group = model::GroupRef::of_block(k);
    const std::vector<Vec>& buffers = ex_.block_buffers_[k % 2];
    bool with_update = pending_.active;
    for (int q : ex_.node_queries_) {
      ex_.materialise_slice(space, theta, ex_.store_.slices(group), pending_, with_update,
                            perturbation_, q, buffers);
      with_update = false;
    }
    ex_.slicing_.exchange->all_gather(space, buffers);
    const runtime::ArenaLayout& layout = ex_.store_.layout(group);
    for (std::size_t i = 0; i < ex_.hidden_.size(); ++i) {
      const Evaluation& e = ex_.plan_.owned[i];
      model::TensorTable& table = ex_.block_tables_[i];
      runtime::bind_tensors(table, layout,
                            buffers[static_cast<std::size_t>(ex_.node_index(e.query, e.sign))]);
      ex_.forward_.block(space, model::make_block_view(ex_.registry_, table, k), batch_.mask,
                         ex_.hidden_[i]);
      runtime::unbind_tensors(table, layout);
    }
    return pending_.active;
  }

};

/// The pending update alone, each rank on its own slices.
class BlockExecutor::SlicedFlushPass final : public WalkPass {
 public:
  SlicedFlushPass(const runtime::ParameterStore& store, const PendingUpdate& pending)
      : store_(store), pending_(pending) {}

  bool own_slices() const override { return true; }

  void embeddings(const ExecSpace& space, const model::TensorTable& edges) override {
    update(space, edges, model::GroupRef::embeddings());
    update(space, edges, model::GroupRef::head());
  }

  bool block(const ExecSpace& space, int k, const model::TensorTable& theta) override {
    update(space, theta, model::GroupRef::of_block(k));
    return true;
  }

  void head(const ExecSpace&, const model::TensorTable&) override {}

 private:
  void update(const ExecSpace& space, const model::TensorTable& theta, model::GroupRef group) {
    for (const runtime::SlicePiece& p : store_.slices(group).pieces)
      kernels::apply_update(space, piece_of(theta[p.id], p.first_element, p.count), p.id,
                            p.first_element, pending_.terms_for(store_.registry()[p.id]));
  }

  const runtime::ParameterStore& store_;
  const PendingUpdate& pending_;
};

void BlockExecutor::run_sliced_step(const model::Batch& batch,
                                    const StepPerturbation& perturbation,
                                    const PendingUpdate& pending) {
  SlicedStepPass pass(*this, batch, perturbation, pending);
  run_pass(pass, true);
}

void BlockExecutor::run_sliced_flush(const PendingUpdate& pending) {
  SlicedFlushPass pass(store_, pending);
  run_pass(pass, true);
}

void BlockExecutor::allocate_slicing() {
  runtime::SliceExchange* exchange = slicing_.exchange;
  DISTZO_REQUIRE(exchange != nullptr, "executor: a sliced store needs a slice exchange");
  const runtime::GroupSlices& embed = store_.slices(model::GroupRef::embeddings());
  DISTZO_REQUIRE(exchange->slices() == embed.slices && exchange->slice() == embed.slice,
                 "executor: the exchange's slice " << exchange->slice() << " of "
                     << exchange->slices() << " is not the store's " << embed.slice << " of "
                     << embed.slices);
  for (const Evaluation& e : slicing_.evaluations)
    if (node_queries_.empty() || node_queries_.back() != e.query) node_queries_.push_back(e.query);
  for (const Evaluation& e : plan_.owned)
    DISTZO_REQUIRE(node_index(e.query, e.sign) >= 0,
                   "executor: evaluation " << e.index << " is owned here but not run on the node");

  // Buffers are allocated collectively, in the same order on every rank.
  const std::size_t block_elements =
      registry_.num_blocks() > 0 ? store_.slices(model::GroupRef::of_block(0)).buffer_elements : 0;
  for (const Evaluation& e : slicing_.evaluations) {
    const std::string name = "w." + std::to_string(e.index);
    embed_buffers_.push_back(exchange->allocate(name + ".embeddings", embed.buffer_elements));
    head_buffers_.push_back(exchange->allocate(
        name + ".head", store_.slices(model::GroupRef::head()).buffer_elements));
    for (int parity = 0; parity < 2; ++parity)
      if (block_elements > 0)
        block_buffers_[parity].push_back(
            exchange->allocate(name + ".block" + std::to_string(parity), block_elements));
  }
  if (embed_rows_used_.extent(0) != 0 && embed.slices > 1) {
    const std::size_t rows = embed_rows_used_.extent(0);
    const std::size_t per = runtime::aligned_to_arena(rows);
    row_buffer_ = exchange->allocate("row_marks", per * static_cast<std::size_t>(exchange->slices()));
  }
  // Each owned evaluation reads the edges of its node evaluation's buffers.
  block_tables_.resize(plan_.owned.size());
  for (std::size_t i = 0; i < plan_.owned.size(); ++i) {
    const std::size_t n = static_cast<std::size_t>(node_index(plan_.owned[i].query, plan_.owned[i].sign));
    edge_scratch_[i].resize(registry_.size());
    runtime::bind_tensors(edge_scratch_[i], store_.layout(model::GroupRef::embeddings()),
                          embed_buffers_[n]);
    runtime::bind_tensors(edge_scratch_[i], store_.layout(model::GroupRef::head()), head_buffers_[n]);
    block_tables_[i].resize(registry_.size());
  }
}

std::size_t BlockExecutor::shared_exchange_bytes() const {
  if (slicing_.exchange == nullptr || slicing_.exchange->kind() != runtime::ExchangeKind::shared_memory)
    return 0;
  std::size_t elements = row_buffer_.extent(0);
  for (const std::vector<Vec>* group : {&embed_buffers_, &head_buffers_, &block_buffers_[0], &block_buffers_[1]})
    for (const Vec& b : *group) elements += b.extent(0);
  return elements * sizeof(real);
}

void BlockExecutor::record_own_slices() {
  if (!store_.sliced()) return;
  own_slice_record_ = store_.own_slice_sums(streamer_.instances().compute);
  // Every rank has recorded before any rank goes on to write θ again.
  slicing_.exchange->barrier(streamer_.instances().compute);
}

bool BlockExecutor::own_slices_intact() {
  if (!store_.sliced()) return true;
  slicing_.exchange->barrier(streamer_.instances().compute);  // every rank's writes are done
  return store_.own_slice_sums(streamer_.instances().compute) == own_slice_record_;
}

void BlockExecutor::debug_corrupt_parameter() {
  if (!store_.sliced()) return store_.debug_corrupt();
  store_.debug_corrupt_slice((slicing_.exchange->slice() + 1) % slicing_.exchange->slices());
}

int BlockExecutor::node_index(int query, int sign) const {
  for (std::size_t i = 0; i < slicing_.evaluations.size(); ++i)
    if (slicing_.evaluations[i].query == query && slicing_.evaluations[i].sign == sign)
      return static_cast<int>(i);
  return -1;
}

void BlockExecutor::materialise_slice(const ExecSpace& space, const model::TensorTable& theta,
                                      const runtime::GroupSlices& slice,
                                      const PendingUpdate& pending, bool with_update,
                                      const StepPerturbation& perturbation, int query,
                                      const std::vector<Vec>& buffers) {
  const PerturbationStream stream = perturbation.stream(query);
  const real eps = static_cast<real>(perturbation.eps);
  const int ip = node_index(query, +1), im = node_index(query, -1);
  const kernels::UpdateTerms none;
  for (const runtime::SlicePiece& p : slice.pieces) {
    const kernels::UpdateTerms terms = with_update ? pending.terms_for(registry_[p.id]) : none;
    z_evaluations_ += static_cast<std::uint64_t>(p.count) * static_cast<std::uint64_t>(terms.count + 1);
    const Vec plus = ip >= 0 ? piece_of(buffers[static_cast<std::size_t>(ip)], p.arena_offset, p.count) : Vec();
    const Vec minus = im >= 0 ? piece_of(buffers[static_cast<std::size_t>(im)], p.arena_offset, p.count) : Vec();
    kernels::update_and_perturb(space, piece_of(theta[p.id], p.first_element, p.count), p.id,
                                p.first_element, terms, stream, eps, plus, minus,
                                p.id == embed_id_ ? embed_rows_ : kernels::RowSelection());
  }
}

}  // namespace distzo::zo
