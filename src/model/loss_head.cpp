#include "model/loss_head.hpp"

#include "core/error.hpp"
#include "core/memory.hpp"
#include "kernels/embedding.hpp"
#include "kernels/linear.hpp"

namespace distzo::model {

LossHead::LossHead(const ModelConfig& config, const BatchShape& shape) : task_(shape.task) {
  const int batch = shape.micro_batch, seq_len = shape.seq_len, candidates = shape.candidates;
  if (task_ == Task::causal_lm) {
    logits_ = Mat(memory_label(MemoryRole::activations, "head.logits"),
                  static_cast<std::size_t>(batch) * seq_len, config.vocab_size);
  } else {
    DISTZO_REQUIRE(candidates > 0, "classification needs at least one candidate label word");
    selected_ =
        Mat(memory_label(MemoryRole::activations, "head.selected"), batch, config.embedding_dim());
    cand_logits_ =
        Mat(memory_label(MemoryRole::activations, "head.candidate_logits"), batch, candidates);
    predictions_ = IntVec(memory_label(MemoryRole::activations, "head.predictions"), batch);
  }
}

void LossHead::loss(const ExecSpace& space, const WeightView& edge, ConstMat hidden,
                    const Batch& batch, const kernels::LossSums& sums, const HalfVec& x_words) {
  DISTZO_REQUIRE(batch.task == task_, "loss head built for another task than the batch's");
  if (task_ == Task::causal_lm) {
    // The (B*T', V) prefix of the logits for a batch of width T'.
    const auto rows = static_cast<std::size_t>(batch.micro_batch) * batch.seq_len;
    DISTZO_REQUIRE(rows <= logits_.extent(0) && hidden.extent(0) == rows,
                   "loss head: a batch of " << rows << " rows (hidden state " << hidden.extent(0)
                                            << ") does not fit logits for " << logits_.extent(0));
    const Mat logits(logits_.data(), rows, logits_.extent(1));
    kernels::linear(space, logits, hidden, edge.lm_head(), ConstVec(), x_words);
    kernels::causal_lm_loss(space, sums, logits, batch.targets);
  } else {
    // Only the K candidate rows of the tied head are needed (MeZO's
    // "train as classification"), not the (B*T, V) logits.
    kernels::gather_rows(space, selected_, hidden, batch.rows);
    kernels::candidate_logits(space, cand_logits_, selected_, edge.lm_head(), batch.candidates);
    kernels::classification_loss(space, sums, predictions_, cand_logits_, batch.gold);
  }
}

}  // namespace distzo::model
