#pragma once
// The OPT forward pass, stage by stage, as the block executor drives it:
//
//   embed  : tokens, mask             -> h (B*T, C)
//   block k: h                        -> h (in place), weights from OptBlockView
//   head   : h                        -> final hidden (B*T, E) -> logits / losses
//
// Stages are separate so that an executor can stream blocks, swap in perturbed
// weights, and run the +eps and -eps evaluations while one block is resident.
// This class owns only activation scratch sized for one (batch, seq_len).

#include "core/types.hpp"
#include "model/opt_config.hpp"
#include "model/opt_weights.hpp"

namespace distzo::model {

class OptForward {
 public:
  OptForward(const OptConfig& config, int batch, int seq_len);

  int batch() const { return batch_; }
  int seq_len() const { return seq_len_; }
  int rows() const { return batch_ * seq_len_; }  // N = B*T
  const OptConfig& config() const { return config_; }

  /// h (N, C) = embed_tokens[tokens] (projected in if E != C) + positions(mask).
  void embed(const ExecSpace& space, const OptEdgeView& edge, ConstIntMat tokens,
             ConstIntMat mask, const Mat& h);

  /// One decoder layer applied to h (N, C) in place.
  void block(const ExecSpace& space, const OptBlockView& w, ConstIntMat mask, const Mat& h);

  /// Final LayerNorm (pre-LN models) and project_out: returns (N, E), which
  /// aliases scratch owned by this object (valid until the next call).
  Mat final_hidden(const ExecSpace& space, const OptEdgeView& edge, const Mat& h);

  /// logits (N, V) = final_hidden · embed_tokensᵀ (the tied LM head).
  void logits(const ExecSpace& space, const OptEdgeView& edge, ConstMat hidden,
              const Mat& logits);

 private:
  OptConfig config_;
  int batch_;
  int seq_len_;
  IntMat positions_;  // (B, T)
  Mat embedded_;      // (N, E), used when E != C
  Mat normed_;        // (N, C)
  Mat q_, k_, v_;     // (B*H*T, hd): head-major (kernels/attention.hpp)
  Mat scores_;        // (T, T): one head's attention scores
  Mat attended_;      // (N, C)
  Mat projected_;     // (N, C)
  Mat ffn_;           // (N, F)
  Mat hidden_out_;    // (N, E)
};

}  // namespace distzo::model
