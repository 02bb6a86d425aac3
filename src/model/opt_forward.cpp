#include "model/opt_forward.hpp"

#include "core/error.hpp"
#include "core/memory.hpp"
#include "kernels/activations.hpp"
#include "kernels/attention.hpp"
#include "kernels/embedding.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"

#include <cmath>

namespace distzo::model {

namespace {
// Hugging Face OPT uses nn.LayerNorm's default epsilon.
constexpr real kLayerNormEps = 1e-5f;
}  // namespace

OptForward::OptForward(const OptConfig& config, int batch, int seq_len)
    : config_(config), batch_(batch), seq_len_(seq_len) {
  config_.validate();
  DISTZO_REQUIRE(batch > 0 && seq_len > 0,
                 "forward: batch and sequence length must be positive, got " << batch << " x "
                                                                             << seq_len);
  DISTZO_REQUIRE(seq_len <= config.max_position_embeddings,
                 "forward: sequence length " << seq_len << " exceeds max_position_embeddings "
                                             << config.max_position_embeddings);
  const auto N = static_cast<std::size_t>(rows());
  const auto C = static_cast<std::size_t>(config.hidden_size);
  const auto E = static_cast<std::size_t>(config.word_embed_proj_dim);
  const auto F = static_cast<std::size_t>(config.ffn_dim);
  positions_ = IntMat(memory_label(MemoryRole::activations, "forward.positions"), batch, seq_len);
  if (config.has_projection()) {
    embedded_ = Mat(memory_label(MemoryRole::activations, "forward.embedded"), N, E);
    hidden_out_ = Mat(memory_label(MemoryRole::activations, "forward.hidden_out"), N, E);
  }
  normed_ = Mat(memory_label(MemoryRole::activations, "forward.normed"), N, C);
  // q, k and v head-major: (B*H*T, hd), the same N*C floats.
  const auto heads = static_cast<std::size_t>(config.num_attention_heads);
  q_ = Mat(memory_label(MemoryRole::activations, "forward.q"), N * heads, C / heads);
  k_ = Mat(memory_label(MemoryRole::activations, "forward.k"), N * heads, C / heads);
  v_ = Mat(memory_label(MemoryRole::activations, "forward.v"), N * heads, C / heads);
  scores_ = Mat(memory_label(MemoryRole::activations, "forward.scores"), seq_len, seq_len);
  attended_ = Mat(memory_label(MemoryRole::activations, "forward.attended"), N, C);
  projected_ = Mat(memory_label(MemoryRole::activations, "forward.projected"), N, C);
  ffn_ = Mat(memory_label(MemoryRole::activations, "forward.ffn"), N, F);
}

void OptForward::embed(const ExecSpace& space, const OptEdgeView& edge, ConstIntMat tokens,
                       ConstIntMat mask, const Mat& h) {
  if (config_.has_projection()) {
    kernels::embedding_gather(space, embedded_, tokens, edge.embed_tokens);
    kernels::linear(space, h, embedded_, edge.project_in, ConstVec());
  } else {
    kernels::embedding_gather(space, h, tokens, edge.embed_tokens);
  }
  kernels::opt_positions(space, positions_, mask);
  kernels::add_positional(space, h, positions_, edge.embed_positions,
                          OptConfig::kPositionOffset);
}

void OptForward::block(const ExecSpace& space, const OptBlockView& w, ConstIntMat mask,
                       const Mat& h) {
  const bool pre_ln = config_.do_layer_norm_before;
  const int heads = static_cast<int>(config_.num_attention_heads);
  const real scale = static_cast<real>(1.0 / std::sqrt(static_cast<double>(config_.head_dim())));

  // Self-attention sub-layer: h += out_proj(attention(q, k, v)).
  ConstMat attn_in = h;
  if (pre_ln) {
    kernels::layernorm(space, normed_, h, w.attn_norm_w, w.attn_norm_b, kLayerNormEps);
    attn_in = normed_;
  }
  // Each projection's bias is added while its output is reordered head-major
  // (projected_ is free until the output projection); the attention output
  // comes back head-major in projected_ and is reordered into attended_.
  const int T = seq_len_;
  kernels::linear(space, projected_, attn_in, w.q_w, ConstVec());
  kernels::split_heads(space, q_, projected_, w.q_b, heads, T);
  kernels::linear(space, projected_, attn_in, w.k_w, ConstVec());
  kernels::split_heads(space, k_, projected_, w.k_b, heads, T);
  kernels::linear(space, projected_, attn_in, w.v_w, ConstVec());
  kernels::split_heads(space, v_, projected_, w.v_b, heads, T);
  const Mat heads_out(projected_.data(), q_.extent(0), q_.extent(1));  // projected_, head-major
  kernels::attention_heads(space, heads_out, q_, k_, v_, mask, heads, scale, scores_);
  kernels::merge_heads(space, attended_, heads_out, heads, T);
  kernels::linear(space, projected_, attended_, w.out_w, ConstVec());
  kernels::add_bias_residual(space, h, projected_, w.out_b);
  if (!pre_ln) {
    kernels::layernorm(space, normed_, h, w.attn_norm_w, w.attn_norm_b, kLayerNormEps);
    Kokkos::deep_copy(space, h, normed_);
  }

  // Feed-forward sub-layer: h += fc2(relu(fc1(h))).
  ConstMat ffn_in = h;
  if (pre_ln) {
    kernels::layernorm(space, normed_, h, w.ffn_norm_w, w.ffn_norm_b, kLayerNormEps);
    ffn_in = normed_;
  }
  kernels::linear(space, ffn_, ffn_in, w.fc1_w, ConstVec());
  kernels::bias_relu(space, ffn_, w.fc1_b);
  kernels::linear(space, projected_, ffn_, w.fc2_w, ConstVec());
  kernels::add_bias_residual(space, h, projected_, w.fc2_b);
  if (!pre_ln) {
    kernels::layernorm(space, normed_, h, w.ffn_norm_w, w.ffn_norm_b, kLayerNormEps);
    Kokkos::deep_copy(space, h, normed_);
  }
}

Mat OptForward::final_hidden(const ExecSpace& space, const OptEdgeView& edge, const Mat& h) {
  Mat x = h;
  if (config_.has_final_layer_norm()) {
    kernels::layernorm(space, normed_, h, edge.final_norm_w, edge.final_norm_b, kLayerNormEps);
    x = normed_;
  }
  if (config_.has_projection()) {
    kernels::linear(space, hidden_out_, x, edge.project_out, ConstVec());
    return hidden_out_;
  }
  return x;
}

void OptForward::logits(const ExecSpace& space, const OptEdgeView& edge, ConstMat hidden,
                        const Mat& logits) {
  kernels::linear(space, logits, hidden, edge.embed_tokens, ConstVec());
}

}  // namespace distzo::model
