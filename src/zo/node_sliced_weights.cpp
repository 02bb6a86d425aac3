// Node-sliced perturbed weights (zo/perturbed_weights.hpp, Placement II):
// each rank of a node updates and perturbs its slice of every group, the
// slice exchange makes the perturbed groups whole, then each rank runs its
// own evaluations. The arithmetic per element is the local kernel's, on the
// same z (slices start on Philox blocks), so every result is bit-identical.

#include <string>
#include <utility>

#include "core/error.hpp"
#include "kernels/embedding.hpp"
#include "zo/perturbed_weights_kinds.hpp"

namespace distzo::zo {

namespace {

/// The part of a tensor (or of an arena) that a slice piece covers.
Vec piece_of(const Vec& v, std::size_t offset, std::size_t count) {
  return Kokkos::subview(v, std::make_pair(offset, offset + count));
}

/// The perturbation rank of every rank of the node, in node rank order.
std::vector<int> node_group_ranks(const runtime::Communicator& node, int group_rank) {
  std::vector<int> ranks;
  for (double p : node.allgather(static_cast<double>(group_rank)))
    ranks.push_back(static_cast<int>(p));
  return ranks;
}

class NodeSlicedWeights final : public PerturbedWeights {
 public:
  NodeSlicedWeights(runtime::ParameterStore& store, const EvaluationPlan& plan,
                    const model::ModelConfig& config, model::Task task,
                    std::unique_ptr<runtime::SliceExchange> exchange,
                    MaterialisationObserver observer)
      : PerturbedWeights(store, plan, config, task, std::move(observer)),
        exchange_(std::move(exchange)),
        node_evaluations_(node_evaluations(plan.estimator, plan.group_size,
                                           node_group_ranks(exchange_->node(), plan.group_rank))),
        node_queries_(queries_of(node_evaluations_)) {
    const runtime::GroupSlices& embed = store_.slices(model::GroupRef::embeddings());
    DISTZO_REQUIRE(exchange_->slices() == embed.slices && exchange_->slice() == embed.slice,
                   "perturbed weights: the exchange's slice "
                       << exchange_->slice() << " of " << exchange_->slices()
                       << " is not the store's " << embed.slice << " of " << embed.slices);
    for (const Evaluation& e : plan_.owned)
      DISTZO_REQUIRE(
          find_evaluation(node_evaluations_, e.query, e.sign) >= 0,
          "perturbed weights: evaluation " << e.index << " is owned here but not run on the node");
    allocate_buffers();
  }

  void perturb_edges(const ExecSpace& space, const runtime::ThetaTable& theta,
                     const model::Batch& batch, const PendingUpdate& pending,
                     const StepPerturbation& perturbation, const Use& use) override {
    const runtime::GroupSlices& embed = store_.slices(model::GroupRef::embeddings());
    const runtime::GroupSlices& head = store_.slices(model::GroupRef::head());
    const bool sliced = embed.slices > 1;  // else each rank holds whole edges (GPU builds)
    mark_rows(space, batch);
    if (embed_rows_used_.extent(0) != 0 && sliced) {
      // The rows any rank of the node reads: the union of the marks.
      const std::size_t per = row_buffer_.extent(0) / static_cast<std::size_t>(embed.slices);
      kernels::publish_rows(space,
                            piece_of(row_buffer_, per * static_cast<std::size_t>(embed.slice), per),
                            embed_rows_used_);
      exchange_->all_gather(space, {row_buffer_});
      kernels::union_rows(space, embed_rows_used_, row_buffer_, embed.slices);
    }
    each_query(node_queries_, pending, [&](int q, bool with_update) {
      materialise_slice(space, theta, embed, pending, with_update, perturbation, q, embed_buffers_);
      materialise_slice(space, theta, head, pending, with_update, perturbation, q, head_buffers_);
    });
    if (sliced) {
      std::vector<Vec> buffers = embed_buffers_;
      buffers.insert(buffers.end(), head_buffers_.begin(), head_buffers_.end());
      exchange_->all_gather(space, buffers);
    }
    for (std::size_t i = 0; i < edge_w_.size(); ++i) use(i, edge_w_[i]);
  }

  void head_edges(const ExecSpace&, const runtime::ThetaTable&, const StepPerturbation&,
                  const Use& use) override {
    for (std::size_t i = 0; i < edge_w_.size(); ++i) use(i, edge_w_[i]);
  }

  // The buffers are the node's exchange buffers, which other ranks read.
  LentScratch idle_scratch() const override { return {}; }

  void perturb_block(const ExecSpace& space, int k, const runtime::ThetaTable& theta,
                     const PendingUpdate& pending, const StepPerturbation& perturbation,
                     const Use& use) override {
    const model::GroupRef group = model::GroupRef::of_block(k);
    const std::vector<Vec>& buffers = block_buffers_[k % 2];
    each_query(node_queries_, pending, [&](int q, bool with_update) {
      materialise_slice(space, theta, store_.slices(group), pending, with_update, perturbation, q,
                        buffers);
    });
    exchange_->all_gather(space, buffers);
    const runtime::ArenaLayout& layout = store_.layout(group);
    for (std::size_t i = 0; i < plan_.owned.size(); ++i) {
      const Evaluation& e = plan_.owned[i];
      model::TensorTable& w = block_w_[i];
      runtime::bind_tensors(
          w, layout,
          buffers[static_cast<std::size_t>(find_evaluation(node_evaluations_, e.query, e.sign))]);
      use(i, w);
      runtime::unbind_tensors(w, layout);
    }
  }

  void node_barrier(const ExecSpace& space) override { exchange_->barrier(space); }

  void record_own_slices(const ExecSpace& space) override {
    own_slice_record_ = store_.own_slice_sums(space);
    // Every rank has recorded before any rank goes on to write θ again.
    exchange_->barrier(space);
  }

  bool own_slices_intact(const ExecSpace& space) override {
    exchange_->barrier(space);  // every rank's writes are done
    return store_.own_slice_sums(space) == own_slice_record_;
  }

  const runtime::SliceExchange* exchange() const override { return exchange_.get(); }

  std::size_t shared_exchange_bytes() const override {
    if (exchange_->kind() != runtime::ExchangeKind::shared_memory) return 0;
    std::size_t elements = row_buffer_.extent(0);
    for (const std::vector<Vec>* group :
         {&embed_buffers_, &head_buffers_, &block_buffers_[0], &block_buffers_[1]})
      for (const Vec& b : *group) elements += b.extent(0);
    return elements * sizeof(real);
  }

 private:
  /// The exchange buffers, allocated collectively in the same order on
  /// every rank, and the owned evaluations' edge tables bound into them.
  void allocate_buffers() {
    const runtime::GroupSlices& embed = store_.slices(model::GroupRef::embeddings());
    const std::size_t block_elements =
        registry_.num_blocks() > 0 ? store_.slices(model::GroupRef::of_block(0)).buffer_elements
                                   : 0;
    for (const Evaluation& e : node_evaluations_) {
      const std::string name = "w." + std::to_string(e.index);
      embed_buffers_.push_back(exchange_->allocate(name + ".embeddings", embed.buffer_elements));
      head_buffers_.push_back(exchange_->allocate(
          name + ".head", store_.slices(model::GroupRef::head()).buffer_elements));
      for (int parity = 0; parity < 2; ++parity)
        if (block_elements > 0)
          block_buffers_[parity].push_back(
              exchange_->allocate(name + ".block" + std::to_string(parity), block_elements));
    }
    if (embed_rows_used_.extent(0) != 0 && embed.slices > 1) {
      const std::size_t per = runtime::aligned_to_arena(embed_rows_used_.extent(0));
      row_buffer_ =
          exchange_->allocate("row_marks", per * static_cast<std::size_t>(exchange_->slices()));
    }
    // Each owned evaluation reads the edges of its node evaluation's buffers.
    edge_w_.resize(plan_.owned.size());
    block_w_.resize(plan_.owned.size());
    for (std::size_t i = 0; i < plan_.owned.size(); ++i) {
      const std::size_t n = static_cast<std::size_t>(
          find_evaluation(node_evaluations_, plan_.owned[i].query, plan_.owned[i].sign));
      edge_w_[i].resize(registry_.size());
      runtime::bind_tensors(edge_w_[i], store_.layout(model::GroupRef::embeddings()),
                            embed_buffers_[n]);
      runtime::bind_tensors(edge_w_[i], store_.layout(model::GroupRef::head()), head_buffers_[n]);
      block_w_[i].resize(registry_.size());
    }
  }

  /// update_and_perturb over this rank's slice of a group: θ pieces of
  /// `theta`, w of the node's evaluations of `query` (w±, and a one-sided
  /// step's unperturbed w with direction 0) into `buffers` (arena offsets;
  /// indexed like node_evaluations_).
  void materialise_slice(const ExecSpace& space, const runtime::ThetaTable& theta,
                         const runtime::GroupSlices& slice, const PendingUpdate& pending,
                         bool with_update, const StepPerturbation& perturbation, int query,
                         const std::vector<Vec>& buffers) {
    for (const runtime::SlicePiece& p : slice.pieces) {
      const auto w_of = [&](int sign) {
        const int i = find_evaluation(node_evaluations_, query, sign);
        return i >= 0 ? StoredVec(
                            piece_of(buffers[static_cast<std::size_t>(i)], p.arena_offset, p.count))
                      : StoredVec();
      };
      materialise(space, theta[p.id].piece(p.first_element, p.count), p.id, p.first_element,
                  pending, with_update, perturbation, query,
                  kernels::PerturbedOutputs{w_of(+1), w_of(-1), w_of(0)});
    }
  }

  std::unique_ptr<runtime::SliceExchange> exchange_;  // over the node's ranks
  std::vector<Evaluation> node_evaluations_;          // every evaluation the node's ranks run
  std::vector<int> node_queries_;                     // their queries, increasing
  // Buffers are indexed like node_evaluations_; a block buffer is reused two
  // blocks later (the exchange of the block between is the barrier that
  // frees it).
  std::vector<Vec> embed_buffers_, head_buffers_;  // per node evaluation: the edge arenas
  std::vector<Vec> block_buffers_[2];              // per node evaluation, for even / odd blocks
  Vec row_buffer_;                                 // S slices of row marks (classification)
  std::vector<model::TensorTable> edge_w_;         // per owned evaluation, into the edge buffers
  std::vector<model::TensorTable> block_w_;        // per owned evaluation, into the block buffers
  std::vector<std::uint64_t> own_slice_record_;    // record_own_slices()
};

}  // namespace

std::unique_ptr<PerturbedWeights> make_node_sliced_weights(
    runtime::ParameterStore& store, const EvaluationPlan& plan, const model::ModelConfig& config,
    model::Task task, std::unique_ptr<runtime::SliceExchange> exchange,
    MaterialisationObserver observer) {
  return std::make_unique<NodeSlicedWeights>(store, plan, config, task, std::move(exchange),
                                             std::move(observer));
}

}  // namespace distzo::zo
