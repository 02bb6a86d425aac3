#pragma once
// Tokenised training/evaluation data (docs/datasets.md): the HDF5 dataset file,
// its validation, and the deterministic, stateless order in which a run
// visits the examples. What it reads is plain host data (model::Dataset);
// model::BatchBuilder (model/batch_builder.hpp) lays examples out on the device.
//
//   load_dataset / write_dataset / validate_dataset  the file and its rules;
//   DataOrder  which examples step s / replica d uses: a pure function of
//              (num_examples, shuffle_seed, step, data_rank, data_size,
//              micro_batch), so a resumed run continues exactly.

#include <cstdint>
#include <string>
#include <vector>

#include "model/dataset.hpp"

namespace distzo::io {

constexpr std::int64_t kDatasetFormatVersion = 1;

using model::Task;

/// "causal_lm" | "classification" (the spelling used in files and decks).
const char* to_string(Task task);
/// Inverse of to_string; throws distzo::Error naming the allowed values.
Task parse_task(const std::string& name);

/// A dataset file's contents in host memory (model/dataset.hpp).
using model::Dataset;

/// Checks every rule of docs/datasets.md ("Validation"); `source` (usually the
/// file path) starts each message, which also names the dataset and the first
/// offending example. vocab_size bounds token ids, pad_token_id and candidates.
void validate_dataset(const Dataset& data, std::int64_t vocab_size, const std::string& source);

/// 16 hex digits that change with any token, length, target, candidate or
/// label (FNV-1a over them with the task and shape): what a checkpoint
/// records of its training set, so a resume can tell the data changed.
std::string dataset_digest(const Dataset& data);

/// Reads and validates a dataset file against a model's vocabulary.
Dataset load_dataset(const std::string& path, std::int64_t vocab_size);

/// Writes a dataset file atomically (temporary file, then rename), after
/// validating it (token ids are only checked to be non-negative here: the
/// file does not know the model it will be used with).
void write_dataset(const std::string& path, const Dataset& data);

/// Philox domain-separation tags of the data order (ASCII "DKEY", "DSWP"),
/// distinct from the perturbation's "ZKEY"/"ZVAL" (core/perturbation.hpp).
constexpr std::uint32_t kDataOrderKeyTag = 0x444B4559u;
constexpr std::uint32_t kDataOrderSwapTag = 0x44535750u;

/// The order in which training visits the examples: epoch e is a permutation
/// of [0, N) drawn by Fisher-Yates from Philox keyed by (shuffle_seed, e)
/// (recipe in docs/datasets.md); the epochs are concatenated into one infinite
/// sequence and step s takes the global batch at positions [s*G, (s+1)*G),
/// G = micro_batch * data_size. Replica d takes [s*G + d*mb, s*G + (d+1)*mb).
/// Stateless: any step can be asked for first, so a resumed run continues
/// exactly. Not thread-safe (it caches the two most recent permutations).
class DataOrder {
 public:
  DataOrder(std::int64_t num_examples, std::uint64_t shuffle_seed);

  std::int64_t num_examples() const { return num_examples_; }
  std::uint64_t shuffle_seed() const { return shuffle_seed_; }

  /// The permutation of epoch `epoch` (>= 0).
  std::vector<std::int64_t> permutation(std::int64_t epoch) const;

  /// Example indices (micro_batch of them) for `step` on data-parallel replica
  /// data_rank of data_size.
  std::vector<std::int64_t> micro_batch(std::int64_t step, int data_rank, int data_size,
                                        int micro_batch);

  /// Epoch that position `step * global_batch` (the first example of a step)
  /// falls in; for progress reports.
  std::int64_t epoch_of_step(std::int64_t step, std::int64_t global_batch) const;

 private:
  const std::vector<std::int64_t>& cached_permutation(std::int64_t epoch);

  std::int64_t num_examples_;
  std::uint64_t shuffle_seed_;
  struct Cached {
    std::int64_t epoch = -1;
    std::vector<std::int64_t> perm;
  };
  Cached cache_[2];
  int next_slot_ = 0;
};

}  // namespace distzo::io
