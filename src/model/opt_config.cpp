#include "model/opt_config.hpp"

#include "core/error.hpp"

namespace distzo::model {

void OptConfig::validate() const {
  auto positive = [](const char* key, std::int64_t value) {
    DISTZO_REQUIRE(value > 0, "OPT config: " << key << " must be positive, got " << value);
  };
  positive("hidden_size", hidden_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("ffn_dim", ffn_dim);
  positive("vocab_size", vocab_size);
  positive("max_position_embeddings", max_position_embeddings);
  positive("word_embed_proj_dim", word_embed_proj_dim);
  DISTZO_REQUIRE(hidden_size % num_attention_heads == 0,
                 "OPT config: hidden_size (" << hidden_size
                     << ") must be divisible by num_attention_heads (" << num_attention_heads << ")");
  DISTZO_REQUIRE(activation_function == "relu",
                 "OPT config: activation_function '" << activation_function
                     << "' is not supported; distzo implements 'relu' (all released OPT models)");
  DISTZO_REQUIRE(tie_word_embeddings,
                 "OPT config: tie_word_embeddings=false is not supported; OPT ties lm_head to "
                 "embed_tokens");
}

}  // namespace distzo::model
