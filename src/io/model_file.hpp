#pragma once
// distzo model files (docs/formats.md): Hugging Face-named float32 tensors at
// the root, the architecture as root attributes, format version 1.

#include "io/hdf5_file.hpp"
#include "model/opt_config.hpp"
#include "model/opt_weights.hpp"
#include "model/parameter_registry.hpp"

#include <string>

namespace distzo::io {

constexpr std::int64_t kModelFormatVersion = 1;

/// A model in device memory, with the description that goes with it.
struct LoadedModel {
  model::OptConfig config;
  model::ParameterRegistry registry;
  model::TensorTable tensors;
  std::string kind;            // "model" or "checkpoint"
  std::string hf_config_json;  // kept for the way back to Hugging Face
};

/// Reads and validates the root attributes; errors name the file and key.
model::OptConfig read_opt_config(const Hdf5File& file);
void write_opt_config(Hdf5File& file, const model::OptConfig& config,
                      const std::string& hf_config_json);

/// Loads every parameter, checking that the file holds exactly the tensors
/// the architecture needs, each with the expected shape.
LoadedModel load_model(const std::string& path);

/// Writes the parameters (copied from the device) and the config attributes
/// into an open file; `kind` is "model" or "checkpoint".
void write_model_tensors(Hdf5File& file, const LoadedModel& model);

}  // namespace distzo::io
