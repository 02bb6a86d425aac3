#include "model/opt_config.hpp"

#include "core/error.hpp"

#include <limits>

namespace distzo::model {

void OptConfig::validate() const {
  // Kernels index rows and columns with int: every size fits one.
  auto positive = [](const char* key, std::int64_t value) {
    DISTZO_INPUT_REQUIRE(value > 0 && value <= std::numeric_limits<int>::max(),
                         "OPT config: " << key << " must be in [1, 2147483647], got " << value);
  };
  positive("hidden_size", hidden_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("ffn_dim", ffn_dim);
  positive("vocab_size", vocab_size);
  positive("max_position_embeddings", max_position_embeddings);
  positive("word_embed_proj_dim", word_embed_proj_dim);
  DISTZO_INPUT_REQUIRE(hidden_size % num_attention_heads == 0,
                 "OPT config: hidden_size (" << hidden_size
                     << ") must be divisible by num_attention_heads (" << num_attention_heads << ")");
  DISTZO_INPUT_REQUIRE(activation_function == "relu",
                 "OPT config: activation_function '" << activation_function
                     << "' is not supported; distzo implements 'relu' (all released OPT models)");
  // Parameter counts are summed in int64; no real model comes near 10^15.
  const double C = static_cast<double>(hidden_size), F = static_cast<double>(ffn_dim);
  const double parameters =
      static_cast<double>(num_hidden_layers) * (4 * C * C + 2 * C * F + 9 * C + F) +
      static_cast<double>(vocab_size) * static_cast<double>(word_embed_proj_dim) +
      static_cast<double>(max_position_embeddings + kPositionOffset) * C;
  DISTZO_INPUT_REQUIRE(parameters <= 1e15, "OPT config: " << parameters
                                                           << " parameters; distzo takes at most "
                                                              "10^15");
  DISTZO_INPUT_REQUIRE(tie_word_embeddings,
                 "OPT config: tie_word_embeddings=false is not supported; OPT ties lm_head to "
                 "embed_tokens");
}

}  // namespace distzo::model
