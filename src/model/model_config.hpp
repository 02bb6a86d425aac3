#pragma once
// A decoder-only transformer as a Hugging Face config.json describes it: the
// fields every architecture shares, and those only one of them reads. Which
// tensors exist and which functions run the forward pass come from the
// architecture table (model/architecture.hpp), never from code that tests
// the architecture.

#include <cstdint>
#include <string>

#include "model/rope.hpp"

namespace distzo::model {

/// OPT; the Llama family: Llama's block, and Qwen2 (q, k, v biases), Qwen3
/// (per-head RMSNorm of q and k), Mistral (a sliding window), OLMo 2 (norms
/// after attention and MLP, q/k RMSNorm over the full width) and Phi-3 (its
/// fused qkv_proj and gate_up_proj split at import, a sliding window);
/// Gemma 3's text models (a block of their own). Each is its own Hugging
/// Face model_type.
enum class Architecture { opt, llama, qwen2, qwen3, mistral, gemma3, olmo2, phi3 };

/// "opt", "llama", "qwen2", "qwen3", "mistral", "gemma3_text", "olmo2",
/// "phi3": the model file's `architecture` attribute and HF model_type.
const char* architecture_name(Architecture a);
/// The architecture whose name (HF model_type) is `name`; false if none.
bool architecture_from_name(const std::string& name, Architecture& a);
/// "opt, llama, qwen2, qwen3, mistral, gemma3_text, olmo2, phi3": for messages.
std::string architecture_names();

struct ModelConfig {
  Architecture architecture = Architecture::opt;

  // Shared.
  std::int64_t hidden_size = 0;              // C
  std::int64_t num_hidden_layers = 0;        // L
  std::int64_t num_attention_heads = 0;      // H
  std::int64_t num_key_value_heads = 0;      // KV: H for OPT; fewer is grouped-query attention
  std::int64_t head_dim = 0;                 // hd: C / H for OPT; Llama may set it (H*hd != C)
  std::int64_t ffn_dim = 0;                  // F: OPT ffn_dim, Llama intermediate_size
  std::int64_t vocab_size = 0;               // V (50272 for released OPT; the tokenizer has 50265)
  std::int64_t max_position_embeddings = 0;  // OPT's position table has this + 2 rows
  bool tie_word_embeddings = true;           // lm_head = embed_tokens
  std::string activation_function = "relu";  // OPT "relu"; Llama hidden_act "silu";
                                             // Gemma 3 hidden_activation "gelu_pytorch_tanh"

  // OPT only.
  std::int64_t word_embed_proj_dim = 0;  // E; != C means project_in/project_out (opt-350m)
  bool do_layer_norm_before = true;      // pre-LN; opt-350m is post-LN

  // Llama and Gemma 3.
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;  // the rotary base; Gemma 3: of its full-attention layers
  RopeScaling rope_scaling;     // of the rotary embedding with base rope_theta
  bool attention_bias = false;  // q, k, v and o projections
  bool mlp_bias = false;        // gate, up and down projections
  // Mistral, Gemma 3, Qwen2/Qwen3 with use_sliding_window: a query attends
  // to the keys of the last sliding_window positions (0 = no window) in the
  // layers attention_window names.
  std::int64_t sliding_window = 0;
  // Qwen2/Qwen3: the first layer that attends within the window (HF's
  // max_window_layers; 0 without use_sliding_window).
  std::int64_t max_window_layers = 0;

  // Gemma 3 only.
  // Layer k is a full-attention layer iff (k + 1) % sliding_window_pattern
  // == 0, else a sliding-window one (HF layer_types; released models: 6).
  std::int64_t sliding_window_pattern = 0;
  double rope_local_base_freq = 0;   // the rotary base of the sliding layers
  double query_pre_attn_scalar = 0;  // scores scale by query_pre_attn_scalar^-1/2

  /// OPT offsets learned positions by 2 (a fairseq legacy).
  static constexpr int kPositionOffset = 2;

  /// Width of the token embeddings and of the final hidden state: E (OPT), C (the others).
  std::int64_t embedding_dim() const {
    return architecture == Architecture::opt ? word_embed_proj_dim : hidden_size;
  }
  std::int64_t q_width() const { return num_attention_heads * head_dim; }   // H*hd
  std::int64_t kv_width() const { return num_key_value_heads * head_dim; }  // KV*hd
  /// Biases on q, k and v: with attention_bias (then o_proj's too), and
  /// always in Qwen2 (whose o_proj has none).
  bool qkv_bias() const { return attention_bias || architecture == Architecture::qwen2; }
  /// Qwen3, Gemma 3: RMSNorm over each head's hd channels of q and k,
  /// before the rotary embedding (weights q_norm, k_norm of shape (hd));
  /// OLMo 2: over the whole projection (qk_norm_full_width).
  bool qk_norm() const {
    return architecture == Architecture::qwen3 || architecture == Architecture::gemma3 ||
           architecture == Architecture::olmo2;
  }
  /// OLMo 2: q and k RMS-normed over all H*hd (KV*hd) channels of the
  /// projection, before they are split into heads (weights of that width).
  bool qk_norm_full_width() const { return architecture == Architecture::olmo2; }
  /// OLMo 2: each sub-layer reads h itself and its output is RMS-normed
  /// before the residual add (post_attention_layernorm,
  /// post_feedforward_layernorm); the others normalise the sub-layer's input.
  bool norms_after_sublayers() const { return architecture == Architecture::olmo2; }
  /// What an RMSNorm adds to its weights: Gemma 3 scales by (1 + w), every
  /// other architecture by w.
  float norm_weight_offset() const { return architecture == Architecture::gemma3 ? 1.0f : 0.0f; }
  /// The factor of the attention scores: head_dim^-1/2, Gemma 3's
  /// query_pre_attn_scalar^-1/2 (as transformers computes it, in double).
  double attention_scale() const;
  /// Gemma 3: whether layer k is a sliding layer (it turns q and k with
  /// rope_local_base_freq, and attends within the window) rather than a
  /// global one.
  bool sliding_layer(std::int64_t k) const {
    return architecture == Architecture::gemma3 && (k + 1) % sliding_window_pattern != 0;
  }
  /// The keys a query of layer k sees at most (itself and the window - 1
  /// before it): sliding_window in every Mistral and Phi-3 layer, in Gemma 3's
  /// sliding layers and in Qwen's from max_window_layers on; 0 (every
  /// earlier key) elsewhere.
  std::int64_t attention_window(std::int64_t k) const {
    switch (architecture) {
      case Architecture::mistral:
      case Architecture::phi3:
        return sliding_window;
      case Architecture::qwen2:
      case Architecture::qwen3:
        return k >= max_window_layers ? sliding_window : 0;
      default:
        return sliding_layer(k) ? sliding_window : 0;
    }
  }
  bool has_projection() const {
    return architecture == Architecture::opt && word_embed_proj_dim != hidden_size;
  }
  /// OPT: a final LayerNorm exists only for pre-LN models (as in Hugging
  /// Face); the others always end with RMSNorm.
  bool has_final_norm() const { return architecture != Architecture::opt || do_layer_norm_before; }
  /// The longest sequence distzo runs on the model, in tokens: its positions.
  std::int64_t longest_sequence() const { return max_position_embeddings; }
  /// "" when sequences of `seq_len` tokens fit the model's positions, else
  /// what they exceed. The one statement of the rule; the dataset checks,
  /// `distzo plan` and the forward pass each say where the length came from
  /// and what to change.
  std::string sequence_problem(std::int64_t seq_len) const;

  /// The same architecture: every field equal.
  bool operator==(const ModelConfig& o) const;
  bool operator!=(const ModelConfig& o) const { return !(*this == o); }

  /// Throws distzo::Error naming the first inconsistent field.
  void validate() const;
};

/// "OPT, 12 layers, hidden 768, 12 heads (head_dim 64), ffn 3072, vocab
/// 50272, max positions 2048" and the architecture's variant on a second
/// line (pre-LN, GQA, rope_theta, tied head...), `line_break` between the
/// two ("\n" and an indent, or "; "): for `distzo inspect` and `distzo plan`.
std::string describe(const ModelConfig& config, const std::string& line_break);

/// An OPT config with the fields OPT does not have in their implied values
/// (KV = H, hd = C / H): what every OPT constructor fills in last.
ModelConfig& complete_opt(ModelConfig& c);

}  // namespace distzo::model
