#pragma once
// distzo model files (docs/formats.md): Hugging Face-named tensors at the
// root — float32, or θ's 2-byte storage (float16, bfloat16) — the
// architecture as root attributes, format version 1. Tensors
// move one at a time through host memory: a model is read into, and written
// out of, whatever holds θ (runtime::ParameterStore) without being whole in
// the execution space, and `distzo inspect` touches no device memory at all.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/storage_dtype.hpp"
#include "core/types.hpp"
#include "io/hdf5_file.hpp"
#include "model/model_config.hpp"
#include "model/parameter_registry.hpp"

namespace distzo::io {

constexpr std::int64_t kModelFormatVersion = 1;

/// What a model file describes, without its tensors.
struct ModelInfo {
  model::ModelConfig config;
  model::ParameterRegistry registry;
  std::string kind;            // "model" or "checkpoint"
  std::string hf_config_json;  // kept for the way back to Hugging Face
  // The Hugging Face tokenizer files an importer kept (tools/hf_to_h5.py,
  // tools/gguf_to_h5.py --tokenizer-dir), for the way back: a JSON object of
  // file name -> text ({"tokenizer.json": "...", ...}); "" when none. distzo
  // never tokenizes; it carries the files into every checkpoint unchanged.
  std::string hf_tokenizer_files;
  // The `digest_version` a file recorded (0: none, written before version 2
  // or by tools/distzo_tools): the definition of the digests its writer
  // printed. Writers always record kDigestVersion (core/digest.hpp).
  std::int64_t digest_version = 0;
};

/// One file of ModelInfo::hf_tokenizer_files: its name and the length of its
/// text in bytes, as JSON escapes it (the file is about that long).
struct TokenizerFile {
  std::string name;
  std::size_t json_bytes = 0;
};
/// The files of an hf_tokenizer_files value, in its order; throws InputError
/// naming `source` unless the value is a JSON object (io/json.hpp) of strings
/// whose names, decoded, are plain file names (no '/', not starting with '.').
std::vector<TokenizerFile> tokenizer_files(const std::string& json, const std::string& source);

/// Reads and validates the root attributes; errors name the file and key.
model::ModelConfig read_model_config(const Hdf5File& file);
void write_model_config(Hdf5File& file, const model::ModelConfig& config,
                        const std::string& hf_config_json);

/// An open model file whose tensor list has been checked against the
/// architecture: exactly the tensors it needs, each with the expected shape,
/// in float32, float16 or bfloat16 (each tensor its own). Tensors are read
/// on demand.
class ModelReader {
 public:
  explicit ModelReader(const std::string& path);

  const ModelInfo& info() const { return info_; }
  const std::string& path() const { return file_.path(); }

  /// How the file holds parameter `id`.
  StorageDtype dtype(std::uint32_t id) const { return dtypes_.at(id); }
  /// The storage that holds most of the file's elements (all of them in a
  /// file of one dtype; a tie goes to the wider): what a run stores θ in
  /// when its deck does not say (precision.storage).
  StorageDtype theta_dtype() const;
  /// Whether every tensor is held in `dtype`.
  bool all_in(StorageDtype dtype) const;
  /// "bf16 (every tensor)", or "fp16 (95.1 % of the elements, 120 tensors),
  /// fp32 (4.9 %, 61 tensors)".
  std::string describe_dtypes() const;

  /// Writes the numel elements of parameter `id` to dst (host memory), as
  /// float32 values (a 2-byte tensor decoded, exact).
  void read(std::uint32_t id, real* dst) const;
  /// Elements [first, first + count) of parameter `id`, row-major.
  void read_range(std::uint32_t id, std::uint64_t first, std::size_t count, real* dst) const;
  /// The parameter digest (core/digest.hpp) of the file's tensors, over
  /// their stored bits.
  std::string digest() const;
  /// digest(), having also checked every tensor for NaN and Inf as read()
  /// does: what a checkpoint must pass to be resumed. Throws InputError
  /// naming the tensor.
  std::string verified_digest() const;

 private:
  std::string digest_of_tensors(bool check_finite) const;

  Hdf5File file_;
  ModelInfo info_;
  std::vector<StorageDtype> dtypes_;  // by parameter id
};

/// Receives every parameter in canonical order, its elements in host memory
/// as stored: float32 values (a `const real*` converts), or 2-byte words,
/// written in their own format (float16, bfloat16).
using TensorSink = std::function<void(std::uint32_t id, StoredElements data)>;
/// Produces every parameter into a sink (e.g. ParameterStore::visit).
using TensorSource = std::function<void(const TensorSink& sink)>;

/// Writes the config attributes (distzo_format = info.kind, "model" when
/// empty), digest_version and every tensor from `tensors` into an open file.
/// Every tensor comes in `dtype` (distzo writes one dtype per file; the
/// digest_version recorded depends on it: core/digest.hpp).
void write_model_tensors(Hdf5File& file, const ModelInfo& info, const TensorSource& tensors,
                         StorageDtype dtype = StorageDtype::fp32);

/// One rank's part of θ for a file written in parallel: for each piece it
/// writes, in increasing id order, (parameter id, first element, element
/// count, the elements in host memory as stored, valid during the call). A
/// tensor has at most one piece per rank.
using SliceSink = std::function<void(std::uint32_t id, std::uint64_t first, std::size_t count,
                                     StoredElements data)>;
using SliceSource = std::function<void(const SliceSink& sink)>;

/// write_model_tensors on a parallel file (Hdf5File over MPI-IO): every
/// rank calls it; each writes the pieces `slices` gives it, in one collective
/// write per tensor, every tensor in `dtype` (the pieces' storage).
/// Together the pieces must cover every tensor once.
void write_model_slices(Hdf5File& file, const ModelInfo& info, StorageDtype dtype,
                        const SliceSource& slices);

}  // namespace distzo::io
