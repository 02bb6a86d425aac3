#pragma once
// The forward pass of a decoder-only model, stage by stage, as the walk
// drives it:
//
//   embed  : tokens, mask             -> h (B*T, C)
//   block k: h                        -> h (in place), weights from WeightView
//   head   : h                        -> final hidden (B*T, E) -> logits / losses
//
// Stages are separate so that the engine can stream blocks, swap in perturbed
// weights, and run the +eps and -eps evaluations while one block is resident.
// What each stage computes is the architecture's (model/architecture.hpp);
// this class owns the activation scratch for batches of up to (batch,
// seq_len), sized for the config, and calls the architecture's functions on
// it. A narrower batch (set_seq_len) runs in the same buffers, each view a
// contiguous (B*T', ...) prefix of its storage: the kernels see exactly the
// shapes a forward built for T' would, so the bits do not depend on the
// width the buffers were allocated for.

#include "core/storage_dtype.hpp"
#include "core/types.hpp"
#include "model/architecture.hpp"
#include "model/model_config.hpp"
#include "model/weights.hpp"

namespace distzo::model {

/// The inverse frequencies of one rotary base (model::rotary_frequencies),
/// on the device: what kernels::rotary_tables turns into a batch's tables.
struct RotaryInverse {
  Mat inverse;  // (sets, hd/2)
  std::int64_t long_from = 0;
  float attention_factor = 1.0f;
};

/// Activation scratch of one forward pass; N = B*T rows. The architecture
/// functions use what they need.
struct ForwardScratch {
  int batch = 0, seq_len = 0;
  IntMat positions;        // (B, T)
  Mat embedded;            // (N, E), OPT with E != C
  Mat normed;              // (N, C)
  Mat q, k, v;             // (B*H*T, hd), (B*KV*T, hd) x 2: head-major (kernels/attention.hpp)
  Vec scores;              // attention's scores, flat (kernels::attention_scores_floats)
  Mat attended;            // (N, H*hd)
  Mat projected;           // (N, max(C, H*hd)): projection outputs; reshaped per use
  Mat ffn;                 // (N, F)
  Mat ffn_gate;            // (N, F), gated MLPs only
  Mat hidden_out;          // (N, E), OPT with E != C
  Mat rope_cos, rope_sin;  // (N, hd/2), rotary architectures: the angles of each token
  Mat rope_local_cos, rope_local_sin;  // (N, hd/2), Gemma 3's sliding layers (their own base)
  RotaryInverse rope_inverse, rope_local_inverse;  // the config's, set once
  // precision.gemm_inputs: storage: a GEMM's input rounded to 2-byte words,
  // N * max(C, H*hd, F) >= N * E (kernels::linear); else empty.
  HalfVec gemm_input;

  int rows() const { return batch * seq_len; }
  /// `projected`'s storage as a contiguous (rows, cols) matrix, rows * cols
  /// no more than it holds.
  Mat projected_as(std::size_t rows, std::size_t cols) const;
};

/// How q and k turn before attention: the (N, hd/2) cos and sin tables of
/// kernels::rotary_tables, or nothing (OPT: empty tables).
struct Rotation {
  ConstMat cos, sin;
  bool none() const { return cos.size() == 0; }
};

/// kernels::rotary_tables with a base's frequencies: a batch's cos and sin.
void rotary_tables(const ExecSpace& space, const Mat& cos, const Mat& sin,
                   const ConstIntMat& positions, const RotaryInverse& rotary);

/// The attention sub-layer every architecture shares: o_proj(attention(q(x),
/// k(x), v(x))) without o_proj's bias, each of q, k, v's biases added while
/// its output is reordered head-major; with qk_norm, each q and k head
/// RMS-normed; q and k turned by `rotation`; grouped-query heads, causal and
/// key-padding masks, and the sliding window of `layer` if it has one
/// (ModelConfig::attention_window). Returns (N, C) in the scratch's
/// `projected`, valid until the next projection.
///   x: (N, C), the normed (pre-norm) or raw (post-norm) input
Mat attention_output(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                     const WeightView& w, int layer, ConstMat x, ConstIntMat mask,
                     const Rotation& rotation);
/// h += attention_output(...) + o_proj's bias: the residual sub-layer.
///   x, h: (N, C)
void self_attention(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                    const WeightView& w, int layer, ConstMat x, ConstIntMat mask, const Mat& h,
                    const Rotation& rotation);

class DecoderForward {
 public:
  /// `gemm_inputs`: fp32, or the 16-bit format the blocks' GEMMs take their
  /// inputs in when their matrices are bound as 2-byte words
  /// (precision.gemm_inputs: storage); it sizes the rounded-input scratch.
  DecoderForward(const ModelConfig& config, int batch, int seq_len,
                 StorageDtype gemm_inputs = StorageDtype::fp32);

  /// The passes that follow run on batches of `seq_len` positions, in
  /// [1, max_seq_len()]: every scratch view becomes the (B*seq_len, ...)
  /// prefix of its buffer. Cheap (no allocation, no kernel).
  void set_seq_len(int seq_len);
  /// The widest batch the buffers hold (the constructor's seq_len).
  int max_seq_len() const { return capacity_.seq_len; }

  /// The bytes of activation scratch the constructor allocates (for
  /// `distzo plan`).
  static std::uint64_t scratch_bytes(const ModelConfig& config, int batch, int seq_len,
                                     StorageDtype gemm_inputs = StorageDtype::fp32);

  int batch() const { return scratch_.batch; }
  int seq_len() const { return scratch_.seq_len; }
  int rows() const { return scratch_.rows(); }  // N = B*T
  const ModelConfig& config() const { return config_; }
  /// The rounded-input scratch of 2-byte GEMMs (empty with float32 inputs),
  /// lent to the loss head for its GEMM.
  const HalfVec& gemm_input() const { return scratch_.gemm_input; }

  /// h (N, C) from the tokens: the architecture's embedding.
  void embed(const ExecSpace& space, const WeightView& edge, ConstIntMat tokens, ConstIntMat mask,
             const Mat& h);
  /// Decoder layer `layer` (its weights `w`) applied to h (N, C) in place.
  void block(const ExecSpace& space, const WeightView& w, int layer, ConstIntMat mask,
             const Mat& h);
  /// The final norm (and OPT's project_out): returns (N, E), which may alias
  /// h or scratch owned by this object (valid until the next call).
  Mat final_hidden(const ExecSpace& space, const WeightView& edge, const Mat& h);
  /// logits (N, V) = final_hidden · lm_headᵀ.
  void logits(const ExecSpace& space, const WeightView& edge, ConstMat hidden, const Mat& logits);

 private:
  ModelConfig config_;
  const ArchitectureSpec& arch_;
  ForwardScratch capacity_;  // the allocations, for max_seq_len()
  ForwardScratch scratch_;   // views of them at the current seq_len
};

}  // namespace distzo::model
