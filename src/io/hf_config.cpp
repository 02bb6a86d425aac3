#include "io/hf_config.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/json.hpp"
#include "model/architecture.hpp"

namespace distzo::io {

namespace {

/// A config.json's root object, read key by key with Hugging Face's defaults.
class JsonConfig {
 public:
  JsonConfig(const std::string& text, std::string source) : source_(std::move(source)) {
    try {
      root_ = parse_json(text);
    } catch (const Error& e) {
      DISTZO_INPUT_FAIL(source_ << ": " << e.what());
    }
    DISTZO_INPUT_REQUIRE(root_.is_object(), source_ << ": expected a JSON object (a config.json)");
  }

  bool present(const char* key) const { return node(key) != nullptr; }
  /// The key is there, null or not.
  bool has(const char* key) const { return root_.find(key) != nullptr; }

  std::int64_t integer(const char* key, std::int64_t fallback) const {
    const JsonValue* value = node(key);
    if (value == nullptr) return fallback;
    const std::optional<std::int64_t> n = value->integer();
    DISTZO_INPUT_REQUIRE(n.has_value(), source_ << ": " << key << " must be an integer, found "
                                                << value->describe());
    return *n;
  }

  bool boolean(const char* key, bool fallback) const {
    const JsonValue* value = node(key);
    if (value == nullptr) return fallback;
    const std::optional<bool> b = value->boolean();
    DISTZO_INPUT_REQUIRE(b.has_value(), source_ << ": " << key << " must be true or false, found "
                                                << value->describe());
    return *b;
  }

  double real(const char* key, double fallback) const {
    const JsonValue* value = node(key);
    return value == nullptr ? fallback : number(*value, key);
  }

  std::string text(const char* key, const std::string& fallback) const {
    const JsonValue* value = node(key);
    return value == nullptr ? fallback : string(*value, key);
  }

  /// The value of `key`; nullptr when absent or null.
  const JsonValue* node(const char* key) const {
    const JsonValue* value = root_.find(key);
    return value == nullptr || value->is_null() ? nullptr : value;
  }

  /// The rotary embedding of a Llama-family config: its base into `theta`
  /// (the flat `rope_theta` it was given, else 10000 unless the entry names
  /// one) and its scaling. transformers 5 reads the entry from
  /// `rope_scaling` when that is set (transformers 4's form), else from
  /// `rope_parameters`.
  model::RopeScaling rope(std::int64_t max_positions, double& theta) const {
    theta = real("rope_theta", 10000.0);
    for (const char* key : {"rope_scaling", "rope_parameters"})
      if (const JsonValue* entry = node(key)) return rope_entry(*entry, key, max_positions, theta);
    return {};
  }

  /// Phi3Config's reading of the same: its older rope types "su" and "yarn"
  /// are LongRoPE, its own original_max_position_embeddings (default 4096)
  /// is the entry's original context, and partial_rotary_factor must be 1.
  model::RopeScaling phi3_rope(std::int64_t max_positions, double& theta) const {
    DISTZO_INPUT_REQUIRE(real("partial_rotary_factor", 1.0) == 1.0,
                         source_ << ": partial_rotary_factor is "
                                 << real("partial_rotary_factor", 1.0)
                                 << ": distzo rotates every channel of a head (Phi-4-mini's 0.75 "
                                    "is not supported)");
    longrope_aliases_ = true;
    model::RopeScaling r = rope(max_positions, theta);
    longrope_aliases_ = false;
    if (r.original_max_position_embeddings != 0)
      r.original_max_position_embeddings = integer("original_max_position_embeddings", 4096);
    return r;
  }

  /// One rope_parameters entry (`key` names it in errors): its rope_type
  /// (or transformers 4's `type`) and the parameters that type reads, with
  /// transformers' defaults; its rope_theta, when it names one, into `theta`.
  /// A key the type does not read is refused: it may change the angles.
  model::RopeScaling rope_entry(const JsonValue& rope, const std::string& key,
                                std::int64_t max_positions, double& theta) const {
    DISTZO_INPUT_REQUIRE(rope.is_object(), source_ << ": " << key << " must be a JSON object");
    model::RopeScaling r;
    std::string type = "default";
    for (const char* type_key : {"type", "rope_type"})  // rope_type wins
      if (const JsonValue* value = rope.find(type_key); value != nullptr && !value->is_null())
        type = string(*value, key + "." + type_key);
    if (longrope_aliases_ && (type == "su" || type == "yarn")) type = "longrope";
    DISTZO_INPUT_REQUIRE(model::rope_type_from_name(type, r.type),
                         source_ << ": " << key << " has rope_type '" << type
                                 << "': distzo implements default, linear, dynamic, llama3, yarn "
                                    "and longrope");
    using T = model::RopeType;
    const auto reads = [&](const std::string& name) {
      if (name == "rope_type" || name == "type" || name == "rope_theta") return true;
      if (name == "factor") return r.type != T::plain;
      if (name == "original_max_position_embeddings")
        return r.type == T::llama3 || r.type == T::yarn || r.type == T::longrope;
      if (name == "low_freq_factor" || name == "high_freq_factor") return r.type == T::llama3;
      if (name == "attention_factor") return r.type == T::yarn || r.type == T::longrope;
      if (name == "beta_fast" || name == "beta_slow" || name == "mscale" ||
          name == "mscale_all_dim" || name == "truncate")
        return r.type == T::yarn;
      return (name == "short_factor" || name == "long_factor") && r.type == T::longrope;
    };
    for (const auto& [name, value] : rope.members()) {
      const std::string where = key + "." + name;
      if (value.is_null()) continue;
      if (name == "partial_rotary_factor") {
        DISTZO_INPUT_REQUIRE(number(value, where) == 1.0,
                             source_ << ": " << where << " is " << value.describe()
                                     << ": distzo rotates every channel of a head "
                                        "(partial_rotary_factor 1)");
        continue;
      }
      DISTZO_INPUT_REQUIRE(reads(name), source_ << ": " << where << " is set, but rope_type '"
                                                << type << "' has no such parameter");
      if (name == "rope_theta") theta = number(value, where);
      if (name == "factor") r.factor = number(value, where);
      if (name == "original_max_position_embeddings") {
        const std::optional<std::int64_t> n = value.integer();
        DISTZO_INPUT_REQUIRE(n.has_value(), source_ << ": " << where
                                                    << " must be an integer, found "
                                                    << value.describe());
        r.original_max_position_embeddings = *n;
      }
      if (name == "low_freq_factor") r.low_freq_factor = number(value, where);
      if (name == "high_freq_factor") r.high_freq_factor = number(value, where);
      if (name == "attention_factor") r.attention_factor = number(value, where);
      if (name == "beta_fast") r.beta_fast = number(value, where);
      if (name == "beta_slow") r.beta_slow = number(value, where);
      if (name == "mscale") r.mscale = number(value, where);
      if (name == "mscale_all_dim") r.mscale_all_dim = number(value, where);
      if (name == "truncate") {
        const std::optional<bool> b = value.boolean();
        DISTZO_INPUT_REQUIRE(b.has_value(), source_ << ": " << where
                                                    << " must be true or false, found "
                                                    << value.describe());
        r.truncate = *b;
      }
      if (name == "short_factor" || name == "long_factor") {
        DISTZO_INPUT_REQUIRE(value.is_array(), source_ << ": " << where
                                                       << " must be a list of numbers, found "
                                                       << value.describe());
        std::vector<double>& list = name == "short_factor" ? r.short_factor : r.long_factor;
        for (const JsonValue& x : value.elements()) list.push_back(number(x, where));
      }
    }
    // transformers' standardize_rope_params: the original context defaults
    // to max_position_embeddings.
    if ((r.type == T::llama3 || r.type == T::yarn || r.type == T::longrope) &&
        r.original_max_position_embeddings == 0)
      r.original_max_position_embeddings = max_positions;
    return r;
  }

  /// A rope_parameters entry that must be plain RoPE (Gemma 3's): its
  /// rope_theta (0 if it names none); a scaled one is refused, naming `key`.
  double plain_rope(const JsonValue& rope, const std::string& key) const {
    double theta = 0;
    const model::RopeScaling r = rope_entry(rope, key, 0, theta);
    DISTZO_INPUT_REQUIRE(!r.scaled(), source_ << ": " << key << " has rope_type '"
                                              << model::rope_type_name(r.type)
                                              << "': distzo scales no rotary embedding of Gemma "
                                                 "3 (the text models, 270M and 1B, have none)");
    return theta;
  }

 private:
  double number(const JsonValue& value, const std::string& key) const {
    const std::optional<double> x = value.number();
    DISTZO_INPUT_REQUIRE(x.has_value(),
                         source_ << ": " << key << " must be a number, found " << value.describe());
    return *x;
  }

  std::string string(const JsonValue& value, const std::string& key) const {
    std::optional<std::string> text = value.string();
    DISTZO_INPUT_REQUIRE(text.has_value(),
                         source_ << ": " << key << " must be a string, found " << value.describe());
    return std::move(*text);
  }

  std::string source_;
  JsonValue root_;
  mutable bool longrope_aliases_ = false;  // phi3_rope: "su" and "yarn" name LongRoPE
};

/// LlamaConfig's keys and defaults (transformers' LlamaConfig), for the
/// Llama family: Qwen2Config, Qwen3Config and MistralConfig have the same
/// keys (defaults differ; released configs give every key read here), and
/// their own sliding-window keys, read at the end.
model::ModelConfig parse_llama(const JsonConfig& j, const std::string& source,
                               model::Architecture architecture) {
  model::ModelConfig c;
  c.architecture = architecture;
  c.hidden_size = j.integer("hidden_size", 4096);
  c.num_hidden_layers = j.integer("num_hidden_layers", 32);
  c.num_attention_heads = j.integer("num_attention_heads", 32);
  c.num_key_value_heads = j.integer("num_key_value_heads", c.num_attention_heads);
  c.head_dim =
      j.integer("head_dim", c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0);
  c.ffn_dim = j.integer("intermediate_size", 11008);
  c.vocab_size = j.integer("vocab_size", 32000);
  c.max_position_embeddings = j.integer("max_position_embeddings", 2048);
  c.tie_word_embeddings = j.boolean("tie_word_embeddings", false);
  c.attention_bias = j.boolean("attention_bias", false);
  c.mlp_bias = j.boolean("mlp_bias", false);
  c.activation_function = j.text("hidden_act", "silu");
  c.rms_norm_eps = j.real("rms_norm_eps", 1e-6);
  c.rope_scaling = architecture == model::Architecture::phi3
                       ? j.phi3_rope(c.max_position_embeddings, c.rope_theta)
                       : j.rope(c.max_position_embeddings, c.rope_theta);
  c.word_embed_proj_dim = c.hidden_size;
  DISTZO_INPUT_REQUIRE(j.integer("pretraining_tp", 1) == 1,
                       source << ": pretraining_tp is " << j.integer("pretraining_tp", 1)
                              << ": distzo computes the projections whole (pretraining_tp 1)");
  if (architecture == model::Architecture::qwen2) {
    // Qwen2's projections: q, k, v with biases, o without (no attention_bias key).
    DISTZO_INPUT_REQUIRE(!j.boolean("attention_bias", false),
                         source << ": attention_bias is true: Qwen2 has biases on q, k and v only");
  }
  if (architecture == model::Architecture::phi3) {
    // Phi3Config: sliding_window null (none, its default) or a window.
    c.sliding_window = j.integer("sliding_window", 0);
    DISTZO_INPUT_REQUIRE(c.sliding_window >= 0, source << ": sliding_window " << c.sliding_window
                                                       << " must be null or >= 1");
  } else if (architecture == model::Architecture::mistral) {
    // MistralConfig: sliding_window null (none) or a window length in
    // positions; a config without the key has MistralConfig's 4096.
    c.sliding_window = j.has("sliding_window") ? j.integer("sliding_window", 0) : 4096;
    DISTZO_INPUT_REQUIRE(c.sliding_window >= 0, source << ": sliding_window " << c.sliding_window
                                                       << " must be null or >= 1");
  } else if (architecture == model::Architecture::qwen2 ||
             architecture == model::Architecture::qwen3) {
    // Qwen2Config/Qwen3Config: with use_sliding_window, the layers from
    // max_window_layers (default 28) on attend within sliding_window (4096);
    // layer_types, when given, must be that pattern (and says where it starts).
    const bool sliding = j.boolean("use_sliding_window", false);
    c.sliding_window = sliding ? j.integer("sliding_window", 4096) : 0;
    c.max_window_layers = sliding ? j.integer("max_window_layers", 28) : 0;
    DISTZO_INPUT_REQUIRE(!sliding || c.sliding_window >= 1,
                         source << ": sliding_window " << c.sliding_window
                                << " must be >= 1 with use_sliding_window");
    if (const JsonValue* types = j.node("layer_types")) {
      const std::int64_t L = c.num_hidden_layers;
      DISTZO_INPUT_REQUIRE(
          types->is_array() && static_cast<std::int64_t>(types->elements().size()) == L,
          source << ": layer_types must be a list of num_hidden_layers (" << L << ") entries");
      std::int64_t first_sliding = L;
      for (std::int64_t k = L - 1; k >= 0; --k) {
        const JsonValue& t = types->elements()[static_cast<std::size_t>(k)];
        const std::string type = t.string().value_or(t.describe());
        DISTZO_INPUT_REQUIRE(type == "full_attention" || type == "sliding_attention",
                             source << ": layer_types holds '" << type
                                    << "': Qwen's layers are full_attention or sliding_attention");
        if (type == "sliding_attention" && first_sliding == k + 1) first_sliding = k;
      }
      for (std::int64_t k = 0; k < first_sliding; ++k)
        DISTZO_INPUT_REQUIRE(types->elements()[static_cast<std::size_t>(k)].string() ==
                                 std::optional<std::string>("full_attention"),
                             source << ": layer_types: layer " << k
                                    << " is sliding_attention before a full_attention one; Qwen's "
                                       "sliding layers are the last ones (from max_window_layers)");
      if (sliding) c.max_window_layers = first_sliding;
    }
    if (sliding) c.max_window_layers = std::min(c.max_window_layers, c.num_hidden_layers);
    if (sliding && c.max_window_layers == c.num_hidden_layers) {
      c.sliding_window = 0;  // no layer slides: plain causal attention
      c.max_window_layers = 0;
    }
  }
  return c;
}

/// Gemma3TextConfig's keys and defaults (transformers 5; transformers 4's
/// flat rope_theta / rope_local_base_freq and sliding_window_pattern too).
/// Its layer_types list becomes sliding_window_pattern, which must describe
/// it exactly.
model::ModelConfig parse_gemma3(const JsonConfig& j, const std::string& source) {
  model::ModelConfig c;
  c.architecture = model::Architecture::gemma3;
  c.hidden_size = j.integer("hidden_size", 2304);
  c.num_hidden_layers = j.integer("num_hidden_layers", 26);
  c.num_attention_heads = j.integer("num_attention_heads", 8);
  c.num_key_value_heads = j.integer("num_key_value_heads", 4);
  c.head_dim = j.integer("head_dim", 256);
  c.ffn_dim = j.integer("intermediate_size", 9216);
  c.vocab_size = j.integer("vocab_size", 262208);
  c.max_position_embeddings = j.integer("max_position_embeddings", 131072);
  c.tie_word_embeddings = j.boolean("tie_word_embeddings", true);
  c.attention_bias = j.boolean("attention_bias", false);
  c.activation_function = j.text("hidden_activation", j.text("hidden_act", "gelu_pytorch_tanh"));
  c.rms_norm_eps = j.real("rms_norm_eps", 1e-6);
  c.query_pre_attn_scalar = j.real("query_pre_attn_scalar", 256);
  c.word_embed_proj_dim = c.hidden_size;
  // null: no window; no key: Gemma3TextConfig's 4096 positions.
  c.sliding_window = j.has("sliding_window") ? j.integer("sliding_window", 0) : 4096;
  DISTZO_INPUT_REQUIRE(c.sliding_window >= 0, source << ": sliding_window " << c.sliding_window
                                                     << " must be null or >= 1");
  for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"})
    DISTZO_INPUT_REQUIRE(!j.present(key), source << ": " << key
                                                 << " is set: distzo implements no soft-capping "
                                                    "(Gemma 3 has none; Gemma 2 did)");
  DISTZO_INPUT_REQUIRE(!j.boolean("use_bidirectional_attention", false),
                       source << ": use_bidirectional_attention is true: distzo's attention is "
                                 "causal (bidirectional Gemma 3 models are embedding models)");

  // Rotary bases: {"full_attention": {...}, "sliding_attention": {...}}
  // (transformers 5) or rope_theta, rope_local_base_freq and rope_scaling.
  c.rope_theta = j.real("rope_theta", 1e6);
  c.rope_local_base_freq = j.real("rope_local_base_freq", 1e4);
  DISTZO_INPUT_REQUIRE(!j.present("rope_scaling"),
                       source << ": rope_scaling is set: distzo implements only the default "
                                 "rotary embedding (Gemma 3 270M and 1B have none)");
  if (const JsonValue* rope = j.node("rope_parameters")) {
    DISTZO_INPUT_REQUIRE(rope->is_object(), source << ": rope_parameters must be a JSON object");
    for (const auto& [type, entry] : rope->members()) {
      DISTZO_INPUT_REQUIRE(type == "full_attention" || type == "sliding_attention",
                           source << ": rope_parameters." << type
                                  << ": Gemma 3's rope_parameters has one entry per layer type, "
                                     "full_attention and sliding_attention");
      if (entry.is_null()) continue;
      const double theta = j.plain_rope(entry, "rope_parameters." + type);
      if (theta > 0) (type == "full_attention" ? c.rope_theta : c.rope_local_base_freq) = theta;
    }
  }

  // layer_types: "sliding_attention" / "full_attention" per layer, or from
  // sliding_window_pattern (default 6) as Gemma3TextConfig makes it.
  const std::int64_t L = c.num_hidden_layers;
  const JsonValue* types = j.node("layer_types");
  if (types == nullptr) {
    c.sliding_window_pattern =
        j.integer("sliding_window_pattern", j.integer("_sliding_window_pattern", 6));
    DISTZO_INPUT_REQUIRE(
        c.sliding_window_pattern >= 1,
        source << ": sliding_window_pattern must be >= 1, got " << c.sliding_window_pattern);
    // Beyond L + 1 every layer is a sliding one, as with L + 1.
    c.sliding_window_pattern = std::min(c.sliding_window_pattern, L + 1);
    return c;
  }
  DISTZO_INPUT_REQUIRE(
      types->is_array() && static_cast<std::int64_t>(types->elements().size()) == L,
      source << ": layer_types must be a list of num_hidden_layers (" << L << ") entries");
  std::vector<bool> full;
  for (const JsonValue& t : types->elements()) {
    const std::string type = t.string().value_or(t.describe());
    DISTZO_INPUT_REQUIRE(type == "full_attention" || type == "sliding_attention",
                         source << ": layer_types holds '" << type
                                << "': Gemma 3's layers are full_attention or sliding_attention");
    full.push_back(type == "full_attention");
  }
  std::int64_t P = L + 1;  // no full layer: every layer a sliding one
  for (std::int64_t k = 0; k < L; ++k)
    if (full[static_cast<std::size_t>(k)]) {
      P = k + 1;
      break;
    }
  for (std::int64_t k = 0; k < L; ++k)
    DISTZO_INPUT_REQUIRE(full[static_cast<std::size_t>(k)] == ((k + 1) % P == 0),
                         source << ": layer_types: layer " << k << " is "
                                << (full[static_cast<std::size_t>(k)] ? "full" : "sliding")
                                << "_attention, but distzo keeps Gemma 3's layer kinds as one "
                                   "repeating pattern (every "
                                << P << "th layer full, from layer " << P - 1 << ")");
  c.sliding_window_pattern = P;
  return c;
}

}  // namespace

model::ModelConfig parse_hf_config(const std::string& json_text, const std::string& source) {
  const JsonConfig j(json_text, source);
  DISTZO_INPUT_REQUIRE(j.present("model_type"),
                       source << ": no model_type key: not a Hugging Face config.json (one says "
                                 "\"model_type\": one of "
                              << model::architecture_names() << ")");
  const std::string type = j.text("model_type", "");
  model::Architecture architecture = model::Architecture::opt;
  DISTZO_INPUT_REQUIRE(model::architecture_from_name(type, architecture),
                       source << ": model_type is '" << type << "': distzo supports "
                              << model::architecture_names()
                              << " (OPTForCausalLM; LlamaForCausalLM: Llama, SmolLM2, TinyLlama; "
                                 "Qwen2ForCausalLM; Qwen3ForCausalLM; MistralForCausalLM; "
                                 "Gemma3ForCausalLM; Olmo2ForCausalLM; Phi3ForCausalLM)");
  if (architecture != model::Architecture::opt) {
    model::ModelConfig c = architecture == model::Architecture::gemma3
                               ? parse_gemma3(j, source)
                               : parse_llama(j, source, architecture);
    try {
      c.validate();
    } catch (const Error& e) {
      throw Error(source + ": " + e.what());
    }
    return c;
  }
  DISTZO_INPUT_REQUIRE(j.boolean("enable_bias", true),
                       source << ": enable_bias is false: distzo needs the linear biases");
  DISTZO_INPUT_REQUIRE(
      j.boolean("layer_norm_elementwise_affine", true),
      source << ": layer_norm_elementwise_affine is false: distzo needs layer-norm "
                "weights and biases");
  model::ModelConfig c;
  c.hidden_size = j.integer("hidden_size", 768);
  c.num_hidden_layers = j.integer("num_hidden_layers", 12);
  c.num_attention_heads = j.integer("num_attention_heads", 12);
  c.ffn_dim = j.integer("ffn_dim", 3072);
  c.vocab_size = j.integer("vocab_size", 50272);
  c.max_position_embeddings = j.integer("max_position_embeddings", 2048);
  c.word_embed_proj_dim = j.integer("word_embed_proj_dim", c.hidden_size);
  c.do_layer_norm_before = j.boolean("do_layer_norm_before", true);
  DISTZO_INPUT_REQUIRE(
      !(c.do_layer_norm_before && j.boolean("_remove_final_layer_norm", false)),
      source << ": _remove_final_layer_norm is true: models without the final layer "
                "norm (pre-v4.20 fine-tunes) are not supported");
  c.tie_word_embeddings = j.boolean("tie_word_embeddings", true);
  c.activation_function = j.text("activation_function", "relu");
  model::complete_opt(c);
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return c;
}

namespace {
std::string read_text(const std::string& path) {
  std::error_code ec;
  DISTZO_INPUT_REQUIRE(
      std::filesystem::is_regular_file(path, ec),
      path << ": cannot read the config: "
           << (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

bool is_hf_config_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  // A config.json is a few KiB: a large file is not one, and is not parsed
  // to find out (whoever reads it as a deck refuses it by its size).
  constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;
  if (std::filesystem::file_size(path, ec) > kMaxConfigBytes || ec) return false;
  try {
    return parse_json(read_text(path)).find("model_type") != nullptr;
  } catch (const Error&) {
    return false;  // not JSON: whoever reads it as a deck says so
  }
}

model::ModelConfig read_hf_config(const std::string& path) {
  return parse_hf_config(read_text(path), path);
}

std::string hf_config_dtype(const std::string& path) {
  const JsonValue root = parse_json(read_text(path));
  for (const char* key : {"dtype", "torch_dtype"})
    if (const JsonValue* v = root.find(key); v && v->string()) return *v->string();
  return "";
}

model::RopeScaling parse_rope_scaling(const std::string& json, const std::string& source) {
  const JsonConfig j("{\"rope_scaling\": " + json + "}", source);
  double theta = 0;
  return j.rope(0, theta);
}

}  // namespace distzo::io
