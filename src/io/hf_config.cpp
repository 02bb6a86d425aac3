#include "io/hf_config.hpp"

#include "core/error.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace distzo::io {

namespace {

/// A JSON value as yaml-cpp reads it (JSON is YAML 1.2 flow style).
class JsonConfig {
 public:
  JsonConfig(const std::string& text, std::string source) : source_(std::move(source)) {
    try {
      root_ = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      DISTZO_INPUT_FAIL(source_ << ": not valid JSON: " << e.msg);
    }
    DISTZO_INPUT_REQUIRE(root_.IsMap(), source_ << ": expected a JSON object (a config.json)");
  }

  bool present(const char* key) const { return root_[key] && !root_[key].IsNull(); }

  std::int64_t integer(const char* key, std::int64_t fallback) const {
    if (!present(key)) return fallback;
    try {
      return root_[key].as<std::int64_t>();
    } catch (const YAML::Exception&) {
      DISTZO_INPUT_FAIL(source_ << ": " << key << " must be an integer, found '" << root_[key].Scalar()
                          << "'");
    }
  }

  bool boolean(const char* key, bool fallback) const {
    if (!present(key)) return fallback;
    try {
      return root_[key].as<bool>();
    } catch (const YAML::Exception&) {
      DISTZO_INPUT_FAIL(source_ << ": " << key << " must be true or false");
    }
  }

  std::string text(const char* key, const std::string& fallback) const {
    return present(key) ? root_[key].as<std::string>() : fallback;
  }

 private:
  std::string source_;
  YAML::Node root_;
};

}  // namespace

model::ModelConfig parse_hf_config(const std::string& json_text, const std::string& source) {
  const JsonConfig j(json_text, source);
  DISTZO_INPUT_REQUIRE(j.present("model_type"),
                 source << ": no model_type key: not a Hugging Face config.json (an OPT one "
                           "says \"model_type\": \"opt\")");
  const std::string type = j.text("model_type", "");
  DISTZO_INPUT_REQUIRE(type == "opt", source << ": model_type is '" << type
                                       << "': only 'opt' is supported (an OPT config.json from "
                                          "Hugging Face)");
  DISTZO_INPUT_REQUIRE(j.boolean("enable_bias", true),
                 source << ": enable_bias is false: distzo needs the linear biases");
  DISTZO_INPUT_REQUIRE(j.boolean("layer_norm_elementwise_affine", true),
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
  DISTZO_INPUT_REQUIRE(!(c.do_layer_norm_before && j.boolean("_remove_final_layer_norm", false)),
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
  DISTZO_INPUT_REQUIRE(std::filesystem::is_regular_file(path, ec),
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
  try {
    const YAML::Node root = YAML::Load(read_text(path));
    return root.IsMap() && root["model_type"];
  } catch (const std::exception&) {
    return false;  // not YAML or JSON: whoever reads it as a deck says so
  }
}

model::ModelConfig read_hf_config(const std::string& path) {
  return parse_hf_config(read_text(path), path);
}

std::string hf_config_json(const model::ModelConfig& c) {
  std::ostringstream os;
  os << "{\n  \"model_type\": \"opt\",\n  \"architectures\": [\"OPTForCausalLM\"],\n"
     << "  \"hidden_size\": " << c.hidden_size << ",\n"
     << "  \"num_hidden_layers\": " << c.num_hidden_layers << ",\n"
     << "  \"num_attention_heads\": " << c.num_attention_heads << ",\n"
     << "  \"ffn_dim\": " << c.ffn_dim << ",\n"
     << "  \"vocab_size\": " << c.vocab_size << ",\n"
     << "  \"max_position_embeddings\": " << c.max_position_embeddings << ",\n"
     << "  \"word_embed_proj_dim\": " << c.word_embed_proj_dim << ",\n"
     << "  \"do_layer_norm_before\": " << (c.do_layer_norm_before ? "true" : "false") << ",\n"
     << "  \"activation_function\": \"" << c.activation_function << "\",\n"
     << "  \"tie_word_embeddings\": true,\n  \"enable_bias\": true,\n"
     << "  \"torch_dtype\": \"float32\"\n}\n";
  return os.str();
}

}  // namespace distzo::io
