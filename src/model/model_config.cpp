#include "model/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "model/architecture.hpp"

namespace distzo::model {

namespace {
constexpr Architecture kArchitectures[] = {
    Architecture::opt,     Architecture::llama,  Architecture::qwen2, Architecture::qwen3,
    Architecture::mistral, Architecture::gemma3, Architecture::olmo2, Architecture::phi3};
}  // namespace

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::opt:
      return "opt";
    case Architecture::llama:
      return "llama";
    case Architecture::qwen2:
      return "qwen2";
    case Architecture::qwen3:
      return "qwen3";
    case Architecture::mistral:
      return "mistral";
    case Architecture::gemma3:
      return "gemma3_text";
    case Architecture::olmo2:
      return "olmo2";
    case Architecture::phi3:
      return "phi3";
  }
  return "?";
}

bool architecture_from_name(const std::string& name, Architecture& a) {
  for (const Architecture candidate : kArchitectures)
    if (name == architecture_name(candidate)) {
      a = candidate;
      return true;
    }
  return false;
}

std::string architecture_names() {
  std::string out;
  for (const Architecture a : kArchitectures)
    out += (out.empty() ? "" : ", ") + std::string(architecture_name(a));
  return out;
}

ModelConfig& complete_opt(ModelConfig& c) {
  c.architecture = Architecture::opt;
  c.num_key_value_heads = c.num_attention_heads;
  c.head_dim = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
  return c;
}

std::string describe(const ModelConfig& c, const std::string& line_break) {
  std::ostringstream os;
  const bool opt = c.architecture == Architecture::opt;
  os << architecture_spec(c.architecture).display_name << ", " << c.num_hidden_layers
     << " layers, hidden " << c.hidden_size << ", " << c.num_attention_heads << " heads";
  if (c.num_key_value_heads != c.num_attention_heads)
    os << " / " << c.num_key_value_heads << " key-value heads";
  os << " (head_dim " << c.head_dim << "), " << (opt ? "ffn " : "intermediate ") << c.ffn_dim
     << ", vocab " << c.vocab_size << ", max positions " << c.max_position_embeddings << line_break;
  if (opt) {
    os << (c.do_layer_norm_before ? "pre-LN" : "post-LN") << ", word_embed_proj_dim "
       << c.word_embed_proj_dim << (c.has_projection() ? " (project_in/out)" : "");
  } else if (c.architecture == Architecture::gemma3) {
    const std::int64_t P = c.sliding_window_pattern;
    const std::int64_t full = c.num_hidden_layers / P;  // layers P-1, 2P-1, ...
    os << "RMSNorm (1 + w) (eps " << c.rms_norm_eps << ") around attention and MLP, GeGLU (tanh), "
       << "embeddings x sqrt(hidden), q/k RMSNorm, query scale " << c.query_pre_attn_scalar
       << "^-1/2" << line_break << full << " full-attention layer" << (full == 1 ? "" : "s")
       << " (rotary base " << c.rope_theta
       << (c.rope_scaling.scaled() ? ", " + c.rope_scaling.describe() : std::string()) << "), "
       << c.num_hidden_layers - full << " sliding (rotary base " << c.rope_local_base_freq
       << ", window "
       << (c.sliding_window > 0 ? std::to_string(c.sliding_window) : std::string("none"))
       << "), sliding_window_pattern " << P;
  } else {
    os << "RMSNorm (eps " << c.rms_norm_eps << "), rotary base " << c.rope_theta
       << (c.rope_scaling.scaled() ? " with " + c.rope_scaling.describe() : std::string())
       << ", SwiGLU"
       << (c.attention_bias ? ", attention biases"
           : c.qkv_bias()   ? ", q/k/v biases"
                            : "")
       << (c.mlp_bias ? ", MLP biases" : "")
       << (c.qk_norm_full_width() ? ", q/k RMSNorm over the full width"
           : c.qk_norm()          ? ", q/k RMSNorm"
                                  : "")
       << (c.norms_after_sublayers() ? ", norms after attention and MLP" : "");
    if (c.sliding_window > 0) {
      os << ", sliding window " << c.sliding_window;
      if (c.max_window_layers > 0) os << " from layer " << c.max_window_layers;
    }
  }
  os << ", lm_head " << (c.tie_word_embeddings ? "tied to embed_tokens" : "untied");
  return os.str();
}

bool ModelConfig::operator==(const ModelConfig& o) const {
  return architecture == o.architecture && hidden_size == o.hidden_size &&
         num_hidden_layers == o.num_hidden_layers && num_attention_heads == o.num_attention_heads &&
         num_key_value_heads == o.num_key_value_heads && head_dim == o.head_dim &&
         ffn_dim == o.ffn_dim && vocab_size == o.vocab_size &&
         max_position_embeddings == o.max_position_embeddings &&
         tie_word_embeddings == o.tie_word_embeddings &&
         activation_function == o.activation_function &&
         word_embed_proj_dim == o.word_embed_proj_dim &&
         do_layer_norm_before == o.do_layer_norm_before && rms_norm_eps == o.rms_norm_eps &&
         rope_theta == o.rope_theta && rope_scaling == o.rope_scaling &&
         attention_bias == o.attention_bias && mlp_bias == o.mlp_bias &&
         sliding_window == o.sliding_window && sliding_window_pattern == o.sliding_window_pattern &&
         rope_local_base_freq == o.rope_local_base_freq &&
         query_pre_attn_scalar == o.query_pre_attn_scalar;
}

double ModelConfig::attention_scale() const {
  if (architecture == Architecture::gemma3) return std::pow(query_pre_attn_scalar, -0.5);
  return 1.0 / std::sqrt(static_cast<double>(head_dim));
}

std::string ModelConfig::sequence_problem(std::int64_t seq_len) const {
  if (seq_len <= max_position_embeddings) return "";
  return "sequences of " + std::to_string(seq_len) + " tokens exceed the model's " +
         std::to_string(max_position_embeddings) + " positions";
}

void ModelConfig::validate() const {
  const char* arch = architecture_spec(architecture).display_name;
  // Kernels index rows and columns with int: every size fits one.
  auto positive = [&](const char* key, std::int64_t value) {
    DISTZO_INPUT_REQUIRE(
        value > 0 && value <= std::numeric_limits<int>::max(),
        arch << " config: " << key << " must be in [1, 2147483647], got " << value);
  };
  positive("hidden_size", hidden_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("num_key_value_heads", num_key_value_heads);
  positive("head_dim", head_dim);
  positive(architecture == Architecture::opt ? "ffn_dim" : "intermediate_size", ffn_dim);
  positive("vocab_size", vocab_size);
  positive("max_position_embeddings", max_position_embeddings);
  DISTZO_INPUT_REQUIRE(num_attention_heads % num_key_value_heads == 0,
                       arch << " config: num_attention_heads (" << num_attention_heads
                            << ") must be a multiple of num_key_value_heads ("
                            << num_key_value_heads << ")");
  // Parameter counts are summed in double; no real model comes near 10^15.
  const double C = static_cast<double>(hidden_size), F = static_cast<double>(ffn_dim);
  const double Q = static_cast<double>(q_width()), K = static_cast<double>(kv_width());
  const double per_layer = 2 * C * Q + 2 * C * K + 3 * C * F + 4 * C + 2 * Q + 2 * K + 3 * F;
  const double parameters = static_cast<double>(num_hidden_layers) * per_layer +
                            2 * static_cast<double>(vocab_size) * C +
                            static_cast<double>(max_position_embeddings + kPositionOffset) * C;
  DISTZO_INPUT_REQUIRE(parameters <= 1e15, arch << " config: " << parameters
                                                << " parameters; distzo takes at most 10^15");

  if (architecture == Architecture::opt) {
    positive("word_embed_proj_dim", word_embed_proj_dim);
    DISTZO_INPUT_REQUIRE(hidden_size % num_attention_heads == 0,
                         "OPT config: hidden_size ("
                             << hidden_size << ") must be divisible by num_attention_heads ("
                             << num_attention_heads << ")");
    DISTZO_INPUT_REQUIRE(
        num_key_value_heads == num_attention_heads && head_dim == hidden_size / num_attention_heads,
        "OPT config: OPT has num_key_value_heads = num_attention_heads and "
        "head_dim = hidden_size / num_attention_heads");
    DISTZO_INPUT_REQUIRE(activation_function == "relu",
                         "OPT config: activation_function '"
                             << activation_function
                             << "' is not supported; distzo implements 'relu' (all released OPT "
                                "models)");
    DISTZO_INPUT_REQUIRE(tie_word_embeddings,
                         "OPT config: tie_word_embeddings=false is not supported; OPT ties "
                         "lm_head to embed_tokens");
    return;
  }
  const bool gemma3 = architecture == Architecture::gemma3;
  if (gemma3)
    DISTZO_INPUT_REQUIRE(activation_function == "gelu_pytorch_tanh",
                         arch << " config: hidden_activation '" << activation_function
                              << "' is not supported; distzo implements 'gelu_pytorch_tanh' (the "
                                 "GeGLU MLP of Gemma 3)");
  else
    DISTZO_INPUT_REQUIRE(activation_function == "silu",
                         arch << " config: hidden_act '" << activation_function
                              << "' is not supported; distzo implements 'silu' (the SwiGLU MLP of "
                                 "Llama)");
  DISTZO_INPUT_REQUIRE(head_dim % 2 == 0,
                       arch << " config: head_dim (" << head_dim
                            << ") must be even: rotary embeddings rotate pairs of channels");
  DISTZO_INPUT_REQUIRE(std::isfinite(rms_norm_eps) && rms_norm_eps > 0,
                       arch << " config: rms_norm_eps must be positive, got " << rms_norm_eps);
  DISTZO_INPUT_REQUIRE(std::isfinite(rope_theta) && rope_theta > 1,
                       arch << " config: rope_theta must be greater than 1, got " << rope_theta);
  rope_scaling.validate(head_dim, std::string(arch) + " config: rope_scaling");
  DISTZO_INPUT_REQUIRE(sliding_window >= 0 && sliding_window <= std::numeric_limits<int>::max(),
                       arch << " config: sliding_window must be in [0, 2147483647] (0: none), got "
                            << sliding_window);
  const bool qwen = architecture == Architecture::qwen2 || architecture == Architecture::qwen3;
  DISTZO_INPUT_REQUIRE(
      sliding_window == 0 || architecture == Architecture::mistral ||
          architecture == Architecture::phi3 || gemma3 || qwen,
      arch << " config: sliding_window " << sliding_window
           << ": only Mistral, Phi-3, Gemma 3, Qwen2 and Qwen3 models carry one here");
  DISTZO_INPUT_REQUIRE(
      (qwen && sliding_window > 0) ? max_window_layers >= 0 && max_window_layers < num_hidden_layers
                                   : max_window_layers == 0,
      arch << " config: max_window_layers " << max_window_layers
           << " must name a layer (0 to num_hidden_layers - 1) of a Qwen model with a sliding "
              "window, else be 0");
  if (architecture == Architecture::phi3)
    DISTZO_INPUT_REQUIRE(!attention_bias && !mlp_bias,
                         arch << " config: attention_bias / mlp_bias: Phi-3's projections have "
                                 "no biases");
  if (architecture == Architecture::olmo2)
    DISTZO_INPUT_REQUIRE(!attention_bias && !mlp_bias,
                         arch << " config: attention_bias / mlp_bias: OLMo 2 normalises o_proj's "
                                 "output, so its bias would have to come before the norm; no "
                                 "released OLMo 2 has biases, and distzo implements none");
  if (!gemma3) return;
  DISTZO_INPUT_REQUIRE(
      sliding_window_pattern >= 1 && sliding_window_pattern <= num_hidden_layers + 1,
      arch << " config: sliding_window_pattern must be in [1, num_hidden_layers + 1 = "
           << num_hidden_layers + 1 << "] (every pattern-th layer attends fully), got "
           << sliding_window_pattern);
  DISTZO_INPUT_REQUIRE(
      std::isfinite(rope_local_base_freq) && rope_local_base_freq > 1,
      arch << " config: rope_local_base_freq must be greater than 1, got " << rope_local_base_freq);
  DISTZO_INPUT_REQUIRE(
      std::isfinite(query_pre_attn_scalar) && query_pre_attn_scalar > 0,
      arch << " config: query_pre_attn_scalar must be positive, got " << query_pre_attn_scalar);
  DISTZO_INPUT_REQUIRE(!attention_bias && !mlp_bias,
                       arch << " config: attention_bias is true: no released Gemma 3 model has "
                               "projection biases, and distzo implements none");
}

}  // namespace distzo::model
