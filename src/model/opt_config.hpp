#pragma once
// The OPT architecture, as a Hugging Face config.json describes it.

#include <cstdint>
#include <string>

namespace distzo::model {

struct OptConfig {
  std::int64_t hidden_size = 0;              // C
  std::int64_t num_hidden_layers = 0;        // L
  std::int64_t num_attention_heads = 0;      // H, head_dim = C / H
  std::int64_t ffn_dim = 0;                  // F
  std::int64_t vocab_size = 0;               // V (50272 for released OPT; the tokenizer has 50265)
  std::int64_t max_position_embeddings = 0;  // the position table has this + 2 rows
  std::int64_t word_embed_proj_dim = 0;      // E; != C means project_in/project_out (opt-350m)
  bool do_layer_norm_before = true;          // pre-LN; opt-350m is post-LN
  bool tie_word_embeddings = true;           // lm_head = embed_tokens
  std::string activation_function = "relu";

  /// OPT offsets learned positions by 2 (a fairseq legacy).
  static constexpr int kPositionOffset = 2;

  std::int64_t head_dim() const { return hidden_size / num_attention_heads; }
  /// The same architecture: every field equal.
  bool operator==(const OptConfig& o) const {
    return hidden_size == o.hidden_size && num_hidden_layers == o.num_hidden_layers &&
           num_attention_heads == o.num_attention_heads && ffn_dim == o.ffn_dim &&
           vocab_size == o.vocab_size && max_position_embeddings == o.max_position_embeddings &&
           word_embed_proj_dim == o.word_embed_proj_dim &&
           do_layer_norm_before == o.do_layer_norm_before &&
           tie_word_embeddings == o.tie_word_embeddings &&
           activation_function == o.activation_function;
  }
  bool has_projection() const { return word_embed_proj_dim != hidden_size; }
  /// A final LayerNorm exists only for pre-LN models (as in Hugging Face).
  bool has_final_layer_norm() const { return do_layer_norm_before; }

  /// Throws distzo::Error naming the first inconsistent field.
  void validate() const;
};

}  // namespace distzo::model
