#pragma once
// Turns the final hidden state into the batch's loss: the tied LM head plus
// the task's loss. Owns the head's scratch (logits or candidate logits).

#include "core/types.hpp"
#include "kernels/losses.hpp"
#include "model/batch.hpp"
#include "model/model_config.hpp"
#include "model/weights.hpp"

namespace distzo::model {

class LossHead {
 public:
  /// Scratch for batches of `shape`, or narrower (classification needs K > 0
  /// candidates).
  LossHead(const ModelConfig& config, const BatchShape& shape);

  /// sums = (loss sum, count) of `batch` given hidden (B*T, E); for
  /// classification also the predicted candidate per row. Enqueued, no fence.
  /// `x_words`: the rounded-input scratch (at least B*T*E words) for a head
  /// held in 2-byte words (DecoderForward::gemm_input), else unused.
  void loss(const ExecSpace& space, const WeightView& edge, ConstMat hidden, const Batch& batch,
            const kernels::LossSums& sums, const HalfVec& x_words = HalfVec());

  /// Predictions of the last classification loss() call, (B).
  IntVec predictions() const { return predictions_; }

 private:
  Task task_;
  Mat logits_;       // causal_lm: (B*T, V); a batch of width T' uses its first B*T' rows
  Mat selected_;     // classification: (B, E)
  Mat cand_logits_;  // classification: (B, K)
  IntVec predictions_;
};

}  // namespace distzo::model
