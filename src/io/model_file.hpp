#pragma once
// distzo model files (docs/formats.md): Hugging Face-named float32 tensors at
// the root, the architecture as root attributes, format version 1. Tensors
// move one at a time through host memory: a model is read into, and written
// out of, whatever holds θ (runtime::ParameterStore) without being whole in
// the execution space, and `distzo inspect` touches no device memory at all.

#include "core/types.hpp"
#include "io/hdf5_file.hpp"
#include "model/model_config.hpp"
#include "model/parameter_registry.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace distzo::io {

constexpr std::int64_t kModelFormatVersion = 1;

/// What a model file describes, without its tensors.
struct ModelInfo {
  model::ModelConfig config;
  model::ParameterRegistry registry;
  std::string kind;            // "model" or "checkpoint"
  std::string hf_config_json;  // kept for the way back to Hugging Face
  // The `digest_version` a file recorded (0: none, written before version 2
  // or by tools/distzo_h5.py): the definition of the digests its writer
  // printed. Writers always record kDigestVersion (core/digest.hpp).
  std::int64_t digest_version = 0;
};

/// Reads and validates the root attributes; errors name the file and key.
model::ModelConfig read_model_config(const Hdf5File& file);
void write_model_config(Hdf5File& file, const model::ModelConfig& config,
                      const std::string& hf_config_json);

/// An open model file whose tensor list has been checked against the
/// architecture: exactly the tensors it needs, each with the expected shape
/// and float32. Tensors are read on demand.
class ModelReader {
 public:
  explicit ModelReader(const std::string& path);

  const ModelInfo& info() const { return info_; }
  const std::string& path() const { return file_.path(); }

  /// Writes the numel elements of parameter `id` to dst (host memory).
  void read(std::uint32_t id, real* dst) const;
  /// Elements [first, first + count) of parameter `id`, row-major.
  void read_range(std::uint32_t id, std::uint64_t first, std::size_t count, real* dst) const;
  /// The parameter digest (core/digest.hpp) of the file's tensors.
  std::string digest() const;

 private:
  Hdf5File file_;
  ModelInfo info_;
};

/// Receives every parameter in canonical order, its elements in host memory.
using TensorSink = std::function<void(std::uint32_t id, const real* data)>;
/// Produces every parameter into a sink (e.g. ParameterStore::visit).
using TensorSource = std::function<void(const TensorSink& sink)>;

/// Writes the config attributes (distzo_format = info.kind, "model" when
/// empty), digest_version and every tensor from `tensors` into an open file.
void write_model_tensors(Hdf5File& file, const ModelInfo& info, const TensorSource& tensors);

/// One rank's part of θ for a file written in parallel: for each piece it
/// writes, in increasing id order, (parameter id, first element, element
/// count, the elements in host memory, valid during the call). A tensor has
/// at most one piece per rank.
using SliceSink =
    std::function<void(std::uint32_t id, std::uint64_t first, std::size_t count, const real* data)>;
using SliceSource = std::function<void(const SliceSink& sink)>;

/// write_model_tensors on a parallel file (Hdf5File over MPI-IO): every
/// rank calls it; each writes the pieces `slices` gives it, in one collective
/// write per tensor. Together the pieces must cover every tensor once.
void write_model_slices(Hdf5File& file, const ModelInfo& info, const SliceSource& slices);

}  // namespace distzo::io
