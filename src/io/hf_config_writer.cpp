// The way back to Hugging Face: the config keys distzo keeps per
// architecture (the model file's attributes and config.json alike), the
// config.json of a ModelConfig and a rope_parameters entry as JSON. Reading
// them is io/hf_config.cpp's.
#include <sstream>
#include <string>
#include <vector>

#include "io/hf_config.hpp"
#include "model/architecture.hpp"

namespace distzo::io {

const ConfigFields& config_fields(model::Architecture a) {
  using model::ModelConfig;
  static const ConfigFields opt{{{"hidden_size", &ModelConfig::hidden_size},
                                 {"num_hidden_layers", &ModelConfig::num_hidden_layers},
                                 {"num_attention_heads", &ModelConfig::num_attention_heads},
                                 {"ffn_dim", &ModelConfig::ffn_dim},
                                 {"vocab_size", &ModelConfig::vocab_size},
                                 {"max_position_embeddings", &ModelConfig::max_position_embeddings},
                                 {"word_embed_proj_dim", &ModelConfig::word_embed_proj_dim}},
                                {{"do_layer_norm_before", &ModelConfig::do_layer_norm_before},
                                 {"tie_word_embeddings", &ModelConfig::tie_word_embeddings}},
                                {},
                                "activation_function"};
  static const ConfigFields llama{
      {{"hidden_size", &ModelConfig::hidden_size},
       {"num_hidden_layers", &ModelConfig::num_hidden_layers},
       {"num_attention_heads", &ModelConfig::num_attention_heads},
       {"num_key_value_heads", &ModelConfig::num_key_value_heads},
       {"head_dim", &ModelConfig::head_dim},
       {"intermediate_size", &ModelConfig::ffn_dim},
       {"vocab_size", &ModelConfig::vocab_size},
       {"max_position_embeddings", &ModelConfig::max_position_embeddings}},
      {{"tie_word_embeddings", &ModelConfig::tie_word_embeddings},
       {"attention_bias", &ModelConfig::attention_bias},
       {"mlp_bias", &ModelConfig::mlp_bias}},
      {{"rms_norm_eps", &ModelConfig::rms_norm_eps}, {"rope_theta", &ModelConfig::rope_theta}},
      "hidden_act"};
  static const ConfigFields mistral = [] {
    ConfigFields f = llama;
    f.ints.emplace_back("sliding_window", &ModelConfig::sliding_window);
    return f;
  }();
  static const ConfigFields gemma3 = [] {  // Llama's shape keys; no mlp_bias
    ConfigFields f = llama;
    f.ints.emplace_back("sliding_window", &ModelConfig::sliding_window);
    f.ints.emplace_back("sliding_window_pattern", &ModelConfig::sliding_window_pattern);
    f.bools.pop_back();  // mlp_bias
    f.reals.emplace_back("rope_local_base_freq", &ModelConfig::rope_local_base_freq);
    f.reals.emplace_back("query_pre_attn_scalar", &ModelConfig::query_pre_attn_scalar);
    f.activation_key = "hidden_activation";
    return f;
  }();
  switch (a) {
    case model::Architecture::opt:
      return opt;
    case model::Architecture::mistral:
    case model::Architecture::phi3:  // Mistral's keys: sliding_window
      return mistral;
    case model::Architecture::gemma3:
      return gemma3;
    default:
      return llama;  // Qwen2 and Qwen3: Llama's fields, the variant from the architecture
  }
}

std::string rope_scaling_json(const model::RopeScaling& r) {
  using T = model::RopeType;
  std::ostringstream os;
  os.precision(17);  // doubles parse back to the same value
  os << "{\"rope_type\": \"" << model::rope_type_name(r.type) << "\"";
  const auto number = [&](const char* key, double value) {
    if (value != 0) os << ", \"" << key << "\": " << value;
  };
  const auto list = [&](const char* key, const std::vector<double>& values) {
    os << ", \"" << key << "\": [";
    for (std::size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
    os << "]";
  };
  number("factor", r.factor);
  if (r.type == T::llama3) {
    number("low_freq_factor", r.low_freq_factor);
    number("high_freq_factor", r.high_freq_factor);
  }
  if (r.type == T::yarn || r.type == T::longrope) number("attention_factor", r.attention_factor);
  if (r.type == T::yarn) {
    number("beta_fast", r.beta_fast);
    number("beta_slow", r.beta_slow);
    number("mscale", r.mscale);
    number("mscale_all_dim", r.mscale_all_dim);
    if (!r.truncate) os << ", \"truncate\": false";
  }
  if (r.type == T::longrope) {
    list("short_factor", r.short_factor);
    list("long_factor", r.long_factor);
  }
  if (r.original_max_position_embeddings != 0)
    os << ", \"original_max_position_embeddings\": " << r.original_max_position_embeddings;
  os << "}";
  return os.str();
}

std::string hf_config_json(const model::ModelConfig& c) {
  const bool opt = c.architecture == model::Architecture::opt;
  const ConfigFields& fields = config_fields(c.architecture);
  std::ostringstream os;
  os.precision(17);  // doubles parse back to the same value
  os << "{\n  \"model_type\": \"" << model::architecture_name(c.architecture) << "\",\n"
     << "  \"architectures\": [\"" << model::architecture_spec(c.architecture).hf_class << "\"],\n";
  for (const auto& [key, member] : fields.ints) {
    os << "  \"" << key << "\": ";
    if (member == &model::ModelConfig::sliding_window && c.*member == 0)
      os << "null";  // HF's "no window"
    else
      os << c.*member;
    os << ",\n";
  }
  for (const auto& [key, member] : fields.bools)
    os << "  \"" << key << "\": " << (c.*member ? "true" : "false") << ",\n";
  for (const auto& [key, member] : fields.reals)
    os << "  \"" << key << "\": " << c.*member << ",\n";
  os << "  \"" << fields.activation_key << "\": \"" << c.activation_function << "\",\n";
  if (c.rope_scaling.scaled())
    os << "  \"rope_scaling\": " << rope_scaling_json(c.rope_scaling) << ",\n";
  if (c.architecture == model::Architecture::phi3 &&
      c.rope_scaling.original_max_position_embeddings != 0)  // Phi3Config's own key wins
    os << "  \"original_max_position_embeddings\": "
       << c.rope_scaling.original_max_position_embeddings << ",\n";
  if (c.architecture == model::Architecture::qwen2 || c.architecture == model::Architecture::qwen3)
    os << "  \"use_sliding_window\": " << (c.sliding_window > 0 ? "true" : "false") << ",\n"
       << "  \"sliding_window\": " << (c.sliding_window > 0 ? c.sliding_window : 4096) << ",\n"
       << "  \"max_window_layers\": " << c.max_window_layers << ",\n";
  if (opt) os << "  \"enable_bias\": true,\n";
  if (c.architecture == model::Architecture::gemma3) {
    // transformers 5 takes the flat rope keys and the pattern as
    // transformers 4 wrote them; layer_types spells the pattern out.
    os << "  \"layer_types\": [";
    for (std::int64_t k = 0; k < c.num_hidden_layers; ++k)
      os << (k ? ", " : "")
         << (c.sliding_layer(k) ? "\"sliding_attention\"" : "\"full_attention\"");
    os << "],\n";
  }
  os << "  \"torch_dtype\": \"float32\"\n}\n";
  return os.str();
}

}  // namespace distzo::io
