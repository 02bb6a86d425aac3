#pragma once
// What the plain and the sliced step pass share (block_executor.cpp,
// sliced_step.cpp): the step's inputs, and the head, where the loss of every
// owned evaluation is taken from its hidden state and its edges' w±.
// Internal to zo.

#include "zo/block_executor.hpp"
#include "zo/model_walk.hpp"

namespace distzo::zo {

class BlockExecutor::StepPassBase : public WalkPass {
 public:
  StepPassBase(BlockExecutor& ex, const model::Batch& batch, const StepPerturbation& perturbation,
               const PendingUpdate& pending)
      : ex_(ex), batch_(batch), perturbation_(perturbation), pending_(pending) {}

  void head(const ExecSpace& space, const model::TensorTable&) override {
    for (std::size_t i = 0; i < ex_.hidden_.size(); ++i) {
      const model::WeightView edge = model::make_edge_view(ex_.registry_, ex_.edge_scratch_[i]);
      const Mat hidden = ex_.forward_.final_hidden(space, edge, ex_.hidden_[i]);
      ex_.head_.loss(space, edge, hidden, batch_, Kokkos::subview(ex_.sums_, i, Kokkos::ALL()));
    }
  }

 protected:
  BlockExecutor& ex_;
  const model::Batch& batch_;
  const StepPerturbation& perturbation_;
  const PendingUpdate& pending_;
};

}  // namespace distzo::zo
