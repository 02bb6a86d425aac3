// OPT (Zhang et al., 2022) as Hugging Face's OPTForCausalLM: learned
// positions offset by 2, pre-LN or post-LN (opt-350m) blocks with biases
// everywhere, a ReLU MLP, optional project_in/project_out, lm_head tied to
// embed_tokens.
#include "core/error.hpp"
#include "kernels/activations.hpp"
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

// Hugging Face OPT uses nn.LayerNorm's default epsilon.
constexpr real kLayerNormEps = 1e-5f;

void opt_embed(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
               const WeightView& edge, ConstIntMat tokens, ConstIntMat mask, const Mat& h) {
  if (config.has_projection()) {
    kernels::embedding_gather(space, s.embedded, tokens, edge.matrix(R::embed_tokens));
    kernels::linear(space, h, s.embedded, edge.matrix(R::project_in), ConstVec(), s.gemm_input);
  } else {
    kernels::embedding_gather(space, h, tokens, edge.matrix(R::embed_tokens));
  }
  kernels::positions_from_mask(space, s.positions, mask);
  kernels::add_positional(space, h, s.positions, edge.matrix(R::embed_positions),
                          ModelConfig::kPositionOffset);
}

void opt_block(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
               const WeightView& w, int layer, ConstIntMat mask, const Mat& h) {
  const bool pre_ln = config.do_layer_norm_before;
  const Mat projected = s.projected;  // (N, C): OPT has H*hd = C

  // Self-attention sub-layer: h += out_proj(attention(q, k, v)).
  ConstMat attn_in = h;
  if (pre_ln) {
    kernels::layernorm(space, s.normed, h, w.vec(R::attn_norm_weight), w.vec(R::attn_norm_bias),
                       kLayerNormEps);
    attn_in = s.normed;
  }
  self_attention(config, s, space, w, layer, attn_in, mask, h, Rotation{});  // learned positions
  if (!pre_ln) {
    kernels::layernorm(space, s.normed, h, w.vec(R::attn_norm_weight), w.vec(R::attn_norm_bias),
                       kLayerNormEps);
    Kokkos::deep_copy(space, h, s.normed);
  }

  // Feed-forward sub-layer: h += fc2(relu(fc1(h))).
  ConstMat ffn_in = h;
  if (pre_ln) {
    kernels::layernorm(space, s.normed, h, w.vec(R::ffn_norm_weight), w.vec(R::ffn_norm_bias),
                       kLayerNormEps);
    ffn_in = s.normed;
  }
  kernels::linear(space, s.ffn, ffn_in, w.matrix(R::fc1_weight), ConstVec(), s.gemm_input);
  kernels::bias_relu(space, s.ffn, w.vec(R::fc1_bias));
  kernels::linear(space, projected, s.ffn, w.matrix(R::fc2_weight), ConstVec(), s.gemm_input);
  kernels::add_bias_residual(space, h, projected, w.vec(R::fc2_bias));
  if (!pre_ln) {
    kernels::layernorm(space, s.normed, h, w.vec(R::ffn_norm_weight), w.vec(R::ffn_norm_bias),
                       kLayerNormEps);
    Kokkos::deep_copy(space, h, s.normed);
  }
}

Mat opt_final_hidden(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                     const WeightView& edge, const Mat& h) {
  Mat x = h;
  if (config.has_final_norm()) {
    kernels::layernorm(space, s.normed, h, edge.vec(R::final_norm_weight),
                       edge.vec(R::final_norm_bias), kLayerNormEps);
    x = s.normed;
  }
  if (config.has_projection()) {
    kernels::linear(space, s.hidden_out, x, edge.matrix(R::project_out), ConstVec(), s.gemm_input);
    return s.hidden_out;
  }
  return x;
}

Shape square(const ModelConfig& c) { return {c.hidden_size, c.hidden_size}; }
bool has_projection(const ModelConfig& c) { return c.has_projection(); }
bool has_final_norm(const ModelConfig& c) { return c.has_final_norm(); }

}  // namespace

const ArchitectureSpec& opt_architecture() {
  constexpr bool decay = true, no_decay = false;
  // Token embeddings are decayed as in MeZO (only biases and norms are
  // exempt); the tied LM head is this same tensor and is not listed again.
  static const ArchitectureSpec spec{
      Architecture::opt,
      "OPT",
      "OPTForCausalLM",
      {
          {R::embed_tokens, G::embeddings, "model.decoder.embed_tokens.weight",
           [](const ModelConfig& c) {
             return Shape{c.vocab_size, c.word_embed_proj_dim};
           },
           decay, nullptr},
          {R::embed_positions, G::embeddings, "model.decoder.embed_positions.weight",
           [](const ModelConfig& c) {
             return Shape{c.max_position_embeddings + ModelConfig::kPositionOffset, c.hidden_size};
           },
           decay, nullptr},
          {R::project_in, G::embeddings, "model.decoder.project_in.weight",
           [](const ModelConfig& c) {
             return Shape{c.hidden_size, c.word_embed_proj_dim};
           },
           decay, has_projection},
#define DISTZO_OPT_LAYER "model.decoder.layers.{k}."
          {R::q_weight, G::block, DISTZO_OPT_LAYER "self_attn.q_proj.weight", square, decay,
           nullptr},
          {R::q_bias, G::block, DISTZO_OPT_LAYER "self_attn.q_proj.bias", shapes::hidden, no_decay,
           nullptr},
          {R::k_weight, G::block, DISTZO_OPT_LAYER "self_attn.k_proj.weight", square, decay,
           nullptr},
          {R::k_bias, G::block, DISTZO_OPT_LAYER "self_attn.k_proj.bias", shapes::hidden, no_decay,
           nullptr},
          {R::v_weight, G::block, DISTZO_OPT_LAYER "self_attn.v_proj.weight", square, decay,
           nullptr},
          {R::v_bias, G::block, DISTZO_OPT_LAYER "self_attn.v_proj.bias", shapes::hidden, no_decay,
           nullptr},
          {R::out_weight, G::block, DISTZO_OPT_LAYER "self_attn.out_proj.weight", square, decay,
           nullptr},
          {R::out_bias, G::block, DISTZO_OPT_LAYER "self_attn.out_proj.bias", shapes::hidden,
           no_decay, nullptr},
          {R::attn_norm_weight, G::block, DISTZO_OPT_LAYER "self_attn_layer_norm.weight",
           shapes::hidden, no_decay, nullptr},
          {R::attn_norm_bias, G::block, DISTZO_OPT_LAYER "self_attn_layer_norm.bias",
           shapes::hidden, no_decay, nullptr},
          {R::fc1_weight, G::block, DISTZO_OPT_LAYER "fc1.weight", shapes::ffn_by_hidden, decay,
           nullptr},
          {R::fc1_bias, G::block, DISTZO_OPT_LAYER "fc1.bias", shapes::ffn, no_decay, nullptr},
          {R::fc2_weight, G::block, DISTZO_OPT_LAYER "fc2.weight", shapes::hidden_by_ffn, decay,
           nullptr},
          {R::fc2_bias, G::block, DISTZO_OPT_LAYER "fc2.bias", shapes::hidden, no_decay, nullptr},
          {R::ffn_norm_weight, G::block, DISTZO_OPT_LAYER "final_layer_norm.weight", shapes::hidden,
           no_decay, nullptr},
          {R::ffn_norm_bias, G::block, DISTZO_OPT_LAYER "final_layer_norm.bias", shapes::hidden,
           no_decay, nullptr},
#undef DISTZO_OPT_LAYER
          {R::final_norm_weight, G::head, "model.decoder.final_layer_norm.weight", shapes::hidden,
           no_decay, has_final_norm},
          {R::final_norm_bias, G::head, "model.decoder.final_layer_norm.bias", shapes::hidden,
           no_decay, has_final_norm},
          {R::project_out, G::head, "model.decoder.project_out.weight",
           [](const ModelConfig& c) {
             return Shape{c.word_embed_proj_dim, c.hidden_size};
           },
           decay, has_projection},
      },
      /*gated_mlp=*/false,
      /*rotary_bases=*/0,
      opt_embed,
      opt_block,
      opt_final_hidden,
  };
  return spec;
}

}  // namespace distzo::model
