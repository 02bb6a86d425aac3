#pragma once
// A Hugging Face config.json of an OPT or Llama model, read without its
// weights (for `distzo plan` and `distzo make-model`). Same defaults and the
// same refusals as tools/distzo_h5.py's config_from_hf: keys left out take
// OPTConfig's / LlamaConfig's defaults, and the variants distzo does not
// implement (rope scaling, other activations, ...) are errors naming the key.

#include "model/model_config.hpp"

#include <string>

namespace distzo::io {

/// Parses config.json text; `source` names it in errors.
model::ModelConfig parse_hf_config(const std::string& json_text, const std::string& source);
/// Whether `path` holds a config (a JSON/YAML map with a model_type key)
/// rather than, say, a deck: what `distzo plan` goes by, not the file name.
bool is_hf_config_file(const std::string& path);

/// Reads and parses a config.json file.
model::ModelConfig read_hf_config(const std::string& path);
/// The config.json of `config` (the keys its architecture needs; parses back to it).
std::string hf_config_json(const model::ModelConfig& config);

}  // namespace distzo::io
