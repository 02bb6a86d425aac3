// Local perturbed weights (zo/perturbed_weights.hpp): this rank alone
// materialises w± of its evaluations, tensor by tensor over the whole of θ.
// With precision.gemm_inputs: storage every matrix gets its w± as 2-byte
// words (a block's: one word arena per sign, in the block's arena layout),
// the vectors as float32 (a block's: a small packed arena per sign). With
// one_at_a_time as well, a block's matrices are materialised a tensor at a
// time, each right before its GEMM reads it (model::MatrixSource), into one
// arena the size of the largest.

#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "zo/perturbed_weights_kinds.hpp"

namespace distzo::zo {

namespace {

class LocalWeights final : public PerturbedWeights {
 public:
  LocalWeights(runtime::ParameterStore& store, const EvaluationPlan& plan,
               const model::ModelConfig& config, model::Task task, MaterialisationObserver observer)
      : PerturbedWeights(store, plan, config, task, std::move(observer)),
        one_at_a_time_(store.placement().perturb_one_at_a_time),
        two_byte_(store.placement().two_byte_gemm_inputs) {
    edge_ids_ = registry_.embedding_ids();
    edge_ids_.insert(edge_ids_.end(), registry_.head_ids().begin(), registry_.head_ids().end());
    // The edges' w: a tensor each, per owned evaluation (or one copy); with
    // 2-byte GEMM inputs the matrices as words.
    edge_w_.resize(one_at_a_time_ ? 1 : plan_.owned.size());
    for (std::size_t i = 0; i < edge_w_.size(); ++i) {
      GroupW& w = edge_w_[i];
      size_tables(w);
      for (std::uint32_t id : edge_ids_) {
        const std::string label = memory_label(
            MemoryRole::scratch, "edge_w." + std::to_string(i) + "." + registry_[id].name);
        const auto n = static_cast<std::size_t>(registry_[id].numel());
        if (two_byte_ && registry_[id].shape.size() == 2)
          w.words.words[id] = HalfVec(label, n);
        else
          w.values[id] = Vec(label, n);
      }
    }
    // Block scratch: together, one block arena per sign re-pointed at block
    // k's ids (with 2-byte GEMM inputs the matrices' words in the block's
    // layout and the vectors packed apart); one at a time, the largest matrix
    // in w's format and the vectors packed.
    if (registry_.num_blocks() > 0) {
      const StorageDtype w_dtype = store.placement().gemm_inputs();
      const std::size_t vectors = runtime::max_block_vector_elements(registry_);
      if (one_at_a_time_) {
        plus_.matrices = StoredVec(memory_label(MemoryRole::scratch, "block_w"), w_dtype,
                                   runtime::max_block_matrix_elements(registry_));
        plus_.values_arena = Vec(memory_label(MemoryRole::scratch, "block_w.vectors"), vectors);
      }
      for (int sign = 0; sign < (one_at_a_time_ ? 0 : 2); ++sign) {
        const std::string name = sign == 0 ? "block_w+" : "block_w-";
        GroupW& w = sign == 0 ? plus_ : minus_;
        if (two_byte_) {
          w.matrices = StoredVec(memory_label(MemoryRole::scratch, name), w_dtype,
                                 store.max_block_elements());
          w.values_arena = Vec(memory_label(MemoryRole::scratch, name + ".vectors"), vectors);
        } else {
          w.values_arena = Vec(memory_label(MemoryRole::scratch, name), store.max_block_elements());
        }
      }
    }
    size_tables(plus_);
    size_tables(minus_);
    updated_.assign(registry_.size(), 0);
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
        use(i, edge_w_[0].tensors());
      }
      return;
    }
    each_query(queries_, pending, [&](int q, bool with_update) {
      const auto w_of = [&](int sign) {
        const int i = find_evaluation(plan_.owned, q, sign);
        return i >= 0 ? &edge_w_[static_cast<std::size_t>(i)] : nullptr;
      };
      for (std::uint32_t id : edge_ids_)
        materialise_tensor(space, theta, id, pending, with_update, perturbation, q, w_of(+1),
                           w_of(-1), w_of(0));
    });
    for (std::size_t i = 0; i < edge_w_.size(); ++i) use(i, edge_w_[i].tensors());
  }

  void head_edges(const ExecSpace& space, const runtime::ThetaTable& theta,
                  const StepPerturbation& perturbation, const Use& use) override {
    if (!one_at_a_time_) {
      for (std::size_t i = 0; i < edge_w_.size(); ++i) use(i, edge_w_[i].tensors());
      return;
    }
    // Backwards: the last evaluation's w is still in the copy; the others
    // are materialised again from θ', which perturb_edges updated.
    const PendingUpdate none;
    for (std::size_t i = plan_.owned.size(); i-- > 0;) {
      if (i + 1 != plan_.owned.size())
        materialise_one(space, theta, edge_ids_, plan_.owned[i], none, false, perturbation,
                        edge_w_[0]);
      use(i, edge_w_[0].tensors());
    }
  }

  void perturb_block(const ExecSpace& space, int k, const runtime::ThetaTable& theta,
                     const PendingUpdate& pending, const StepPerturbation& perturbation,
                     const Use& use) override {
    const std::vector<std::uint32_t>& ids = registry_.block_ids(k);
    if (one_at_a_time_) return perturb_block_by_tensor(space, k, theta, pending, perturbation, use);
    // Its w+ and w- serve both evaluations of a query: w+ and w−, or (a
    // one-sided step's direction 0) w+ and the unperturbed w in minus_.
    bind(plus_, k);
    bind(minus_, k);
    each_query(queries_, pending, [&](int q, bool with_update) {
      const int ip = find_evaluation(plan_.owned, q, +1), im = find_evaluation(plan_.owned, q, -1);
      const int i0 = find_evaluation(plan_.owned, q, 0);
      for (std::uint32_t id : ids)
        materialise_tensor(space, theta, id, pending, with_update, perturbation, q,
                           ip >= 0 ? &plus_ : nullptr, im >= 0 ? &minus_ : nullptr,
                           i0 >= 0 ? &minus_ : nullptr);
      if (ip >= 0) use(static_cast<std::size_t>(ip), plus_.tensors());
      if (im >= 0) use(static_cast<std::size_t>(im), minus_.tensors());
      if (i0 >= 0) use(static_cast<std::size_t>(i0), minus_.tensors());
    });
    unbind(plus_, k);
    unbind(minus_, k);
  }

  LentScratch idle_scratch() const override {
    // One at a time, the block scratch is one matrix and the vectors: too
    // small for a decoded block unless only the vectors are decoded.
    const bool lend_block = !one_at_a_time_ || two_byte_;
    return {edge_w_.empty() ? nullptr : &edge_w_[0].values,
            lend_block ? plus_.values_arena : Vec()};
  }

  void node_barrier(const ExecSpace&) override {}
  void record_own_slices(const ExecSpace&) override {}
  bool own_slices_intact(const ExecSpace&) override { return true; }
  const runtime::SliceExchange* exchange() const override { return nullptr; }
  std::size_t shared_exchange_bytes() const override { return 0; }

 private:
  /// One at a time: each evaluation's vectors at once, its matrices one by
  /// one as the forward reads them (the pending update with each tensor's
  /// first materialisation), into plus_'s arenas; w's matrices as floats or,
  /// with 2-byte GEMM inputs, words.
  void perturb_block_by_tensor(const ExecSpace& space, int k, const runtime::ThetaTable& theta,
                               const PendingUpdate& pending, const StepPerturbation& perturbation,
                               const Use& use) {
    const std::vector<std::uint32_t>& ids = registry_.block_ids(k);
    runtime::bind_vectors(plus_.values, registry_, ids, plus_.values_arena);
    for (std::uint32_t id : ids) updated_[id] = 0;
    const auto materialise_for = [&](const Evaluation& e, std::uint32_t id, const StoredVec& w) {
      materialise(space, theta[id], id, 0, pending, pending.active && updated_[id] == 0,
                  perturbation, e.query, outputs_of(e.sign, w));
      updated_[id] = 1;
    };
    for (std::size_t i = 0; i < plan_.owned.size(); ++i) {
      const Evaluation& e = plan_.owned[i];
      for (std::uint32_t id : ids)
        if (registry_[id].shape.size() != 2) materialise_for(e, id, plus_.values[id]);
      const model::MatrixSource source = [&](std::uint32_t id) {
        const model::ParameterInfo& p = registry_[id];
        const auto n = static_cast<std::size_t>(p.numel());
        const StoredVec w = plus_.matrices.piece(0, n);
        materialise_for(e, id, w);
        return kernels::weight_matrix(w, static_cast<std::size_t>(p.shape[0]),
                                      static_cast<std::size_t>(p.shape[1]));
      };
      use(i, model::GroupTensors(plus_.values, nullptr, &source));
    }
    // A matrix the forward did not read still takes its update.
    for (std::uint32_t id : ids)
      if (pending.active && updated_[id] == 0)
        materialise(space, theta[id], id, 0, pending, true, perturbation, 0,
                    kernels::PerturbedOutputs());
    runtime::unbind_tensors(plus_.values, store_.layout(model::GroupRef::of_block(k)));
  }

  /// w of a group for one sign or evaluation: by id, as floats (`values`),
  /// or with 2-byte GEMM inputs the matrices as words (`words`). A block's
  /// tensors are bound into the arenas (together: with 2-byte inputs the
  /// matrices' words into `matrices` in the block's layout and the vectors
  /// packed into values_arena, else every tensor into values_arena; one at
  /// a time: the matrix in use at the start of `matrices`, the vectors
  /// packed); the edges' are Views of their own.
  struct GroupW {
    StoredVec matrices;  // in w's format
    Vec values_arena;
    model::TensorTable values;  // by id
    model::WordTable words;     // by id; no entries unless 2-byte

    model::GroupTensors tensors() const {
      return model::GroupTensors(values, words.words.empty() ? nullptr : &words);
    }
    /// Where the kernel writes tensor id's w: its words, or its floats.
    StoredVec output(std::uint32_t id) const {
      if (!words.has(id)) return values[id];
      return StoredVec(words.dtype, words.words[id].data(), words.words[id].extent(0));
    }
  };

  void size_tables(GroupW& w) const {
    w.values.resize(registry_.size());
    w.words.dtype = store_.storage();
    w.words.words.resize(two_byte_ ? registry_.size() : 0);
  }

  void bind(GroupW& w, int k) {
    const runtime::ArenaLayout& layout = store_.layout(model::GroupRef::of_block(k));
    if (!two_byte_) return runtime::bind_tensors(w.values, layout, w.values_arena);
    runtime::bind_words(w.words.words, layout, w.matrices.as<std::uint16_t>());
    for (std::uint32_t id : registry_.block_ids(k))
      if (registry_[id].shape.size() != 2) w.words.words[id] = HalfVec();
    runtime::bind_vectors(w.values, registry_, registry_.block_ids(k), w.values_arena);
  }

  void unbind(GroupW& w, int k) {
    const runtime::ArenaLayout& layout = store_.layout(model::GroupRef::of_block(k));
    runtime::unbind_tensors(w.values, layout);
    if (two_byte_) runtime::unbind_words(w.words.words, layout);
  }

  /// The output of an evaluation of sign `sign` (w+, w− or the unperturbed w) into `w`.
  static kernels::PerturbedOutputs outputs_of(int sign, const StoredVec& w) {
    kernels::PerturbedOutputs out;
    (sign > 0 ? out.plus : sign < 0 ? out.minus : out.base) = w;
    return out;
  }

  /// w± and the unperturbed w of tensor `id` into `plus` / `minus` / `base`
  /// (any may be null): as words where the group holds the tensor as
  /// words, else as floats.
  void materialise_tensor(const ExecSpace& space, const runtime::ThetaTable& theta,
                          std::uint32_t id, const PendingUpdate& pending, bool with_update,
                          const StepPerturbation& perturbation, int query, const GroupW* plus,
                          const GroupW* minus, const GroupW* base) {
    const auto output = [id](const GroupW* w) {
      return w != nullptr ? w->output(id) : StoredVec();
    };
    materialise(space, theta[id], id, 0, pending, with_update, perturbation, query,
                kernels::PerturbedOutputs{output(plus), output(minus), output(base)});
  }

  /// w of evaluation `e` alone over tensors `ids`, into `w`.
  void materialise_one(const ExecSpace& space, const runtime::ThetaTable& theta,
                       const std::vector<std::uint32_t>& ids, const Evaluation& e,
                       const PendingUpdate& pending, bool with_update,
                       const StepPerturbation& perturbation, const GroupW& w) {
    for (std::uint32_t id : ids)
      materialise_tensor(space, theta, id, pending, with_update, perturbation, e.query,
                         e.sign > 0 ? &w : nullptr, e.sign < 0 ? &w : nullptr,
                         e.sign == 0 ? &w : nullptr);
  }

  bool one_at_a_time_;                   // placement.perturbed_weights: one_at_a_time
  bool two_byte_;                        // precision.gemm_inputs: storage
  std::vector<std::uint32_t> edge_ids_;  // embeddings + head: live for the whole step
  std::vector<GroupW> edge_w_;           // per owned evaluation (or one): the edge tensors' w
  GroupW plus_, minus_;                  // one block's w±; w- not allocated one at a time
  std::vector<char> updated_;            // by id: the pending update applied this step
};

}  // namespace

std::unique_ptr<PerturbedWeights> make_local_weights(runtime::ParameterStore& store,
                                                     const EvaluationPlan& plan,
                                                     const model::ModelConfig& config,
                                                     model::Task task,
                                                     MaterialisationObserver observer) {
  return std::make_unique<LocalWeights>(store, plan, config, task, std::move(observer));
}

}  // namespace distzo::zo
