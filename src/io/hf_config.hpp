#pragma once
// A Hugging Face config.json of an OPT, Llama(-family: Qwen2, Qwen3, Mistral,
// OLMo 2, Phi-3) or Gemma 3 model,
// read without its weights (for `distzo plan` and `distzo make-model`). Same
// defaults and the same refusals as distzo_tools.formats.config_from_hf: keys
// left out take OPTConfig's / LlamaConfig's / Gemma3TextConfig's defaults,
// and the variants distzo does not
// implement (other activations, partial rotary embeddings, ...) are errors
// naming the key.

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace distzo::io {

/// The config keys of each architecture that distzo keeps: Hugging Face's
/// config.json names and the ModelConfig fields they hold. One table for
/// the model file's attributes (io/model_file.cpp; booleans as 0/1) and for
/// the config.json distzo writes (hf_config_json).
template <class T>
using ConfigMember =
    T model::ModelConfig::*;  // (an alias: nvcc's host pass warns on the spelled-out form)
struct ConfigFields {
  std::vector<std::pair<const char*, ConfigMember<std::int64_t>>> ints;
  std::vector<std::pair<const char*, ConfigMember<bool>>> bools;
  std::vector<std::pair<const char*, ConfigMember<double>>> reals;
  const char* activation_key;  // activation_function (OPT), hidden_act (Llama),
                               // hidden_activation (Gemma 3)
};
const ConfigFields& config_fields(model::Architecture architecture);

/// Parses config.json text (io/json.hpp); `source` names it in errors.
model::ModelConfig parse_hf_config(const std::string& json_text, const std::string& source);
/// Whether `path` holds a config (a JSON object with a model_type key)
/// rather than, say, a deck: what `distzo plan` goes by, not the file name.
bool is_hf_config_file(const std::string& path);

/// Reads and parses a config.json file.
model::ModelConfig read_hf_config(const std::string& path);
/// The weights' dtype a config.json names ("torch_dtype", or transformers
/// 5's "dtype"): "bfloat16", "float16", "float32", ...; "" when it names none.
std::string hf_config_dtype(const std::string& path);
/// The config.json of `config` (the keys its architecture needs; parses back to it).
std::string hf_config_json(const model::ModelConfig& config);

/// A scaled rotary embedding as a rope_parameters entry, one line of JSON
/// with Hugging Face's keys (those it sets; no rope_theta): config.json's
/// `rope_scaling` and the model file's `rope_scaling` attribute.
std::string rope_scaling_json(const model::RopeScaling& scaling);
/// The scaling of a rope_parameters entry's JSON text (what
/// rope_scaling_json writes; `source` names it in errors).
model::RopeScaling parse_rope_scaling(const std::string& json, const std::string& source);

}  // namespace distzo::io
