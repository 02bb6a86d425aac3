// Gemma 3's text models (Gemma Team, 2025) as Hugging Face's
// Gemma3ForCausalLM: embeddings scaled by sqrt(C); blocks with an RMSNorm
// before and after both attention and the MLP ("sandwich" norms), every
// RMSNorm scaling by (1 + w); per-head RMSNorm of q and k before the rotary
// embedding; scores scaled by query_pre_attn_scalar^-1/2; a GeGLU MLP with
// tanh-approximated GELU; grouped-query attention; no biases. Layers come in
// two kinds, interleaved by sliding_window_pattern: sliding-window layers
// turn q and k with rope_local_base_freq and attend within the window
// (ModelConfig::attention_window), full-attention layers turn them with
// rope_theta and attend to every earlier key.
#include <cmath>

#include "kernels/activations.hpp"
#include "kernels/attention.hpp"
#include "kernels/embedding.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"
#include "model/architecture.hpp"
#include "model/forward.hpp"

namespace distzo::model {

namespace {

using R = ParameterRole;
using G = ParameterGroup;
using Shape = std::vector<std::int64_t>;

void gemma3_embed(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                  const WeightView& edge, ConstIntMat tokens, ConstIntMat mask, const Mat& h) {
  // transformers: embed_scale = torch.tensor(hidden_size ** 0.5), a float32.
  const real scale = static_cast<real>(std::sqrt(static_cast<double>(config.hidden_size)));
  kernels::embedding_gather(space, h, tokens, edge.matrix(R::embed_tokens), scale);
  kernels::positions_from_mask(space, s.positions, mask);
  rotary_tables(space, s.rope_cos, s.rope_sin, s.positions, s.rope_inverse);
  rotary_tables(space, s.rope_local_cos, s.rope_local_sin, s.positions, s.rope_local_inverse);
}

void gemma3_block(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                  const WeightView& w, int layer, ConstIntMat mask, const Mat& h) {
  const auto N = static_cast<std::size_t>(s.rows());
  const real eps = static_cast<real>(config.rms_norm_eps);
  const real one = config.norm_weight_offset();  // every norm scales by (1 + w)
  const Rotation rotation = config.sliding_layer(layer)
                                ? Rotation{s.rope_local_cos, s.rope_local_sin}
                                : Rotation{s.rope_cos, s.rope_sin};

  // h += post_norm(o_proj(attention(rope(q), rope(k), v))) on input_norm(h).
  kernels::rmsnorm(space, s.normed, h, w.vec(R::attn_norm_weight), eps, one);
  const Mat attended = attention_output(config, s, space, w, layer, s.normed, mask, rotation);
  kernels::rmsnorm(space, attended, attended, w.vec(R::attn_post_norm_weight), eps, one);
  kernels::add_bias_residual(space, h, attended, ConstVec());

  // h += post_norm(down_proj(gelu_tanh(gate_proj(x)) * up_proj(x))), x = pre_norm(h).
  kernels::rmsnorm(space, s.normed, h, w.vec(R::ffn_norm_weight), eps, one);
  kernels::linear(space, s.ffn_gate, s.normed, w.matrix(R::gate_weight), ConstVec(), s.gemm_input);
  kernels::linear(space, s.ffn, s.normed, w.matrix(R::up_weight), ConstVec(), s.gemm_input);
  kernels::gelu_tanh_mul(space, s.ffn_gate, s.ffn);
  const Mat out = s.projected_as(N, static_cast<std::size_t>(config.hidden_size));
  kernels::linear(space, out, s.ffn_gate, w.matrix(R::down_weight), ConstVec(), s.gemm_input);
  kernels::rmsnorm(space, out, out, w.vec(R::ffn_post_norm_weight), eps, one);
  kernels::add_bias_residual(space, h, out, ConstVec());
}

Mat gemma3_final_hidden(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                        const WeightView& edge, const Mat& h) {
  kernels::rmsnorm(space, s.normed, h, edge.vec(R::final_norm_weight),
                   static_cast<real>(config.rms_norm_eps), config.norm_weight_offset());
  return s.normed;
}

Shape kv_by_hidden(const ModelConfig& c) { return {c.kv_width(), c.hidden_size}; }
Shape head(const ModelConfig& c) { return {c.head_dim}; }
bool untied(const ModelConfig& c) { return !c.tie_word_embeddings; }

ArchitectureSpec gemma3() {
  constexpr bool decay = true, no_decay = false;
  // MeZO's rule, as for the others: matrices decay, norm weights do not.
  return ArchitectureSpec{
      Architecture::gemma3,
      "Gemma 3",
      "Gemma3ForCausalLM",
      {
          {R::embed_tokens, G::embeddings, "model.embed_tokens.weight",
           [](const ModelConfig& c) {
             return Shape{c.vocab_size, c.hidden_size};
           },
           decay, nullptr},
#define DISTZO_GEMMA3_LAYER "model.layers.{k}."
          {R::q_weight, G::block, DISTZO_GEMMA3_LAYER "self_attn.q_proj.weight",
           [](const ModelConfig& c) {
             return Shape{c.q_width(), c.hidden_size};
           },
           decay, nullptr},
          {R::k_weight, G::block, DISTZO_GEMMA3_LAYER "self_attn.k_proj.weight", kv_by_hidden,
           decay, nullptr},
          {R::v_weight, G::block, DISTZO_GEMMA3_LAYER "self_attn.v_proj.weight", kv_by_hidden,
           decay, nullptr},
          {R::out_weight, G::block, DISTZO_GEMMA3_LAYER "self_attn.o_proj.weight",
           [](const ModelConfig& c) {
             return Shape{c.hidden_size, c.q_width()};
           },
           decay, nullptr},
          {R::q_norm_weight, G::block, DISTZO_GEMMA3_LAYER "self_attn.q_norm.weight", head,
           no_decay, nullptr},
          {R::k_norm_weight, G::block, DISTZO_GEMMA3_LAYER "self_attn.k_norm.weight", head,
           no_decay, nullptr},
          {R::gate_weight, G::block, DISTZO_GEMMA3_LAYER "mlp.gate_proj.weight",
           shapes::ffn_by_hidden, decay, nullptr},
          {R::up_weight, G::block, DISTZO_GEMMA3_LAYER "mlp.up_proj.weight", shapes::ffn_by_hidden,
           decay, nullptr},
          {R::down_weight, G::block, DISTZO_GEMMA3_LAYER "mlp.down_proj.weight",
           shapes::hidden_by_ffn, decay, nullptr},
          {R::attn_norm_weight, G::block, DISTZO_GEMMA3_LAYER "input_layernorm.weight",
           shapes::hidden, no_decay, nullptr},
          {R::attn_post_norm_weight, G::block,
           DISTZO_GEMMA3_LAYER "post_attention_layernorm.weight", shapes::hidden, no_decay,
           nullptr},
          {R::ffn_norm_weight, G::block, DISTZO_GEMMA3_LAYER "pre_feedforward_layernorm.weight",
           shapes::hidden, no_decay, nullptr},
          {R::ffn_post_norm_weight, G::block,
           DISTZO_GEMMA3_LAYER "post_feedforward_layernorm.weight", shapes::hidden, no_decay,
           nullptr},
#undef DISTZO_GEMMA3_LAYER
          {R::final_norm_weight, G::head, "model.norm.weight", shapes::hidden, no_decay, nullptr},
          {R::lm_head, G::head, "lm_head.weight",
           [](const ModelConfig& c) {
             return Shape{c.vocab_size, c.hidden_size};
           },
           decay, untied},
      },
      /*gated_mlp=*/true,
      /*rotary_bases=*/2,
      gemma3_embed,
      gemma3_block,
      gemma3_final_hidden,
  };
}

}  // namespace

const ArchitectureSpec& gemma3_architecture() {
  static const ArchitectureSpec spec = gemma3();
  return spec;
}

}  // namespace distzo::model
