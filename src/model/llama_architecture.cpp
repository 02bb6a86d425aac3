// Llama (Touvron et al., 2023) as Hugging Face's LlamaForCausalLM: no
// position table (rotary embeddings on q and k), pre-norm blocks with
// RMSNorm, grouped-query attention, a SwiGLU MLP, biases only when the
// config asks (attention_bias, mlp_bias), lm_head tied or its own. SmolLM2,
// TinyLlama and the Llama 2/3 family have this block.
//
// Five more entries share its tensor list and block, their differences
// being config fields the list and the block read: Qwen2ForCausalLM (biases
// on q, k and v, none on o: ModelConfig::qkv_bias), Qwen3ForCausalLM (an
// RMSNorm over each head of q and k before the rotation: qk_norm, tensors
// self_attn.q_norm / k_norm), MistralForCausalLM (sliding_window: every
// layer attends within it, ModelConfig::attention_window) and
// Olmo2ForCausalLM (norms after the sub-layers, not before:
// norms_after_sublayers; q/k norms over the whole projection:
// qk_norm_full_width) and Phi3ForCausalLM (Llama's block; its fused tensors
// are split at import; a sliding window in every layer).
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

void llama_embed(const ModelConfig& /*config*/, ForwardScratch& s, const ExecSpace& space,
                 const WeightView& edge, ConstIntMat tokens, ConstIntMat mask, const Mat& h) {
  kernels::embedding_gather(space, h, tokens, edge.matrix(R::embed_tokens));
  // Every block rotates q and k by the angles of these positions: the
  // sines and cosines are computed once per batch.
  kernels::positions_from_mask(space, s.positions, mask);
  rotary_tables(space, s.rope_cos, s.rope_sin, s.positions, s.rope_inverse);
}

void llama_block(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                 const WeightView& w, int layer, ConstIntMat mask, const Mat& h) {
  const auto N = static_cast<std::size_t>(s.rows());
  const real eps = static_cast<real>(config.rms_norm_eps);
  const Rotation rotation{s.rope_cos, s.rope_sin};
  const bool after = config.norms_after_sublayers();

  // Self-attention: h += o_proj(attention(rope(q), rope(k), v)) on rmsnorm(h);
  // OLMo 2: h += rmsnorm(o_proj(attention(...)) on h).
  if (after) {
    const Mat out = attention_output(config, s, space, w, layer, h, mask, rotation);
    kernels::rmsnorm(space, out, out, w.vec(R::attn_post_norm_weight), eps);
    kernels::add_bias_residual(space, h, out, ConstVec());
  } else {
    kernels::rmsnorm(space, s.normed, h, w.vec(R::attn_norm_weight), eps);
    self_attention(config, s, space, w, layer, s.normed, mask, h, rotation);
  }

  // MLP: h += down_proj(silu(gate_proj(x)) * up_proj(x)), x = rmsnorm(h);
  // OLMo 2: h += rmsnorm(down_proj(...)), x = h.
  if (!after) kernels::rmsnorm(space, s.normed, h, w.vec(R::ffn_norm_weight), eps);
  const ConstMat x = after ? ConstMat(h) : ConstMat(s.normed);
  kernels::linear(space, s.ffn_gate, x, w.matrix(R::gate_weight), ConstVec(), s.gemm_input);
  kernels::linear(space, s.ffn, x, w.matrix(R::up_weight), ConstVec(), s.gemm_input);
  kernels::silu_mul(space, s.ffn_gate, s.ffn, w.vec(R::gate_bias), w.vec(R::up_bias));
  const Mat out = s.projected_as(N, static_cast<std::size_t>(config.hidden_size));
  kernels::linear(space, out, s.ffn_gate, w.matrix(R::down_weight), ConstVec(), s.gemm_input);
  if (after) kernels::rmsnorm(space, out, out, w.vec(R::ffn_post_norm_weight), eps);
  kernels::add_bias_residual(space, h, out, w.vec(R::down_bias));
}

Mat llama_final_hidden(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                       const WeightView& edge, const Mat& h) {
  kernels::rmsnorm(space, s.normed, h, edge.vec(R::final_norm_weight),
                   static_cast<real>(config.rms_norm_eps));
  return s.normed;
}

Shape kv_by_hidden(const ModelConfig& c) { return {c.kv_width(), c.hidden_size}; }
Shape kv(const ModelConfig& c) { return {c.kv_width()}; }
/// q_norm's and k_norm's: a head's channels, or OLMo 2's whole projection.
Shape q_norm(const ModelConfig& c) { return {c.qk_norm_full_width() ? c.q_width() : c.head_dim}; }
Shape k_norm(const ModelConfig& c) { return {c.qk_norm_full_width() ? c.kv_width() : c.head_dim}; }
bool attention_bias(const ModelConfig& c) { return c.attention_bias; }
bool qkv_bias(const ModelConfig& c) { return c.qkv_bias(); }
bool qk_norm(const ModelConfig& c) { return c.qk_norm(); }
bool mlp_bias(const ModelConfig& c) { return c.mlp_bias; }
bool untied(const ModelConfig& c) { return !c.tie_word_embeddings; }
bool norms_before(const ModelConfig& c) { return !c.norms_after_sublayers(); }
bool norms_after(const ModelConfig& c) { return c.norms_after_sublayers(); }

ArchitectureSpec llama_family(Architecture id, const char* display_name, const char* hf_class) {
  constexpr bool decay = true, no_decay = false;
  // As for OPT, MeZO's rule: every weight matrix decays (embed_tokens
  // included), biases and RMSNorm weights do not.
  return ArchitectureSpec{
      id,
      display_name,
      hf_class,
      {
          {R::embed_tokens, G::embeddings, "model.embed_tokens.weight",
           [](const ModelConfig& c) {
             return Shape{c.vocab_size, c.hidden_size};
           },
           decay, nullptr},
#define DISTZO_LLAMA_LAYER "model.layers.{k}."
          {R::q_weight, G::block, DISTZO_LLAMA_LAYER "self_attn.q_proj.weight",
           [](const ModelConfig& c) {
             return Shape{c.q_width(), c.hidden_size};
           },
           decay, nullptr},
          {R::q_bias, G::block, DISTZO_LLAMA_LAYER "self_attn.q_proj.bias",
           [](const ModelConfig& c) { return Shape{c.q_width()}; }, no_decay, qkv_bias},
          {R::k_weight, G::block, DISTZO_LLAMA_LAYER "self_attn.k_proj.weight", kv_by_hidden, decay,
           nullptr},
          {R::k_bias, G::block, DISTZO_LLAMA_LAYER "self_attn.k_proj.bias", kv, no_decay, qkv_bias},
          {R::v_weight, G::block, DISTZO_LLAMA_LAYER "self_attn.v_proj.weight", kv_by_hidden, decay,
           nullptr},
          {R::v_bias, G::block, DISTZO_LLAMA_LAYER "self_attn.v_proj.bias", kv, no_decay, qkv_bias},
          {R::out_weight, G::block, DISTZO_LLAMA_LAYER "self_attn.o_proj.weight",
           [](const ModelConfig& c) {
             return Shape{c.hidden_size, c.q_width()};
           },
           decay, nullptr},
          {R::out_bias, G::block, DISTZO_LLAMA_LAYER "self_attn.o_proj.bias", shapes::hidden,
           no_decay, attention_bias},
          {R::q_norm_weight, G::block, DISTZO_LLAMA_LAYER "self_attn.q_norm.weight", q_norm,
           no_decay, qk_norm},
          {R::k_norm_weight, G::block, DISTZO_LLAMA_LAYER "self_attn.k_norm.weight", k_norm,
           no_decay, qk_norm},
          {R::gate_weight, G::block, DISTZO_LLAMA_LAYER "mlp.gate_proj.weight",
           shapes::ffn_by_hidden, decay, nullptr},
          {R::gate_bias, G::block, DISTZO_LLAMA_LAYER "mlp.gate_proj.bias", shapes::ffn, no_decay,
           mlp_bias},
          {R::up_weight, G::block, DISTZO_LLAMA_LAYER "mlp.up_proj.weight", shapes::ffn_by_hidden,
           decay, nullptr},
          {R::up_bias, G::block, DISTZO_LLAMA_LAYER "mlp.up_proj.bias", shapes::ffn, no_decay,
           mlp_bias},
          {R::down_weight, G::block, DISTZO_LLAMA_LAYER "mlp.down_proj.weight",
           shapes::hidden_by_ffn, decay, nullptr},
          {R::down_bias, G::block, DISTZO_LLAMA_LAYER "mlp.down_proj.bias", shapes::hidden,
           no_decay, mlp_bias},
          {R::attn_norm_weight, G::block, DISTZO_LLAMA_LAYER "input_layernorm.weight",
           shapes::hidden, no_decay, norms_before},
          // Llama's norm before the MLP; OLMo 2's after attention (same name).
          {id == Architecture::olmo2 ? R::attn_post_norm_weight : R::ffn_norm_weight, G::block,
           DISTZO_LLAMA_LAYER "post_attention_layernorm.weight", shapes::hidden, no_decay, nullptr},
          {R::ffn_post_norm_weight, G::block,
           DISTZO_LLAMA_LAYER "post_feedforward_layernorm.weight", shapes::hidden, no_decay,
           norms_after},
#undef DISTZO_LLAMA_LAYER
          {R::final_norm_weight, G::head, "model.norm.weight", shapes::hidden, no_decay, nullptr},
          {R::lm_head, G::head, "lm_head.weight",
           [](const ModelConfig& c) {
             return Shape{c.vocab_size, c.hidden_size};
           },
           decay, untied},
      },
      /*gated_mlp=*/true,
      /*rotary_bases=*/1,
      llama_embed,
      llama_block,
      llama_final_hidden,
  };
}

}  // namespace

const ArchitectureSpec& llama_family_architecture(Architecture a) {
  static const ArchitectureSpec llama =
      llama_family(Architecture::llama, "Llama", "LlamaForCausalLM");
  static const ArchitectureSpec qwen2 =
      llama_family(Architecture::qwen2, "Qwen2", "Qwen2ForCausalLM");
  static const ArchitectureSpec qwen3 =
      llama_family(Architecture::qwen3, "Qwen3", "Qwen3ForCausalLM");
  static const ArchitectureSpec mistral =
      llama_family(Architecture::mistral, "Mistral", "MistralForCausalLM");
  static const ArchitectureSpec olmo2 =
      llama_family(Architecture::olmo2, "OLMo 2", "Olmo2ForCausalLM");
  // Phi-3's fused qkv_proj and gate_up_proj are split into Llama's tensors at
  // import (tools/hf_to_h5.py) and fused again on the way back.
  static const ArchitectureSpec phi3 = llama_family(Architecture::phi3, "Phi-3", "Phi3ForCausalLM");
  switch (a) {
    case Architecture::qwen2:
      return qwen2;
    case Architecture::qwen3:
      return qwen3;
    case Architecture::mistral:
      return mistral;
    case Architecture::olmo2:
      return olmo2;
    case Architecture::phi3:
      return phi3;
    default:
      return llama;
  }
}

}  // namespace distzo::model
