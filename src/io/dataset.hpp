#pragma once
// Tokenised training/evaluation data (docs/datasets.md): the HDF5 dataset file,
// its validation, micro-batches in device memory, and the deterministic,
// stateless order in which a run visits the examples.
//
// Three pieces, each testable alone:
//   Dataset       host-memory copy of one file (std::vector, row-major);
//   BatchBuilder  copies chosen examples into device views allocated once;
//   DataOrder     which examples step s / replica d uses: a pure function of
//                 (num_examples, shuffle_seed, step, data_rank, data_size,
//                 micro_batch), so a resumed run continues exactly.

#include "core/types.hpp"
#include "core/stream_event.hpp"
#include "model/batch.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace distzo::io {

constexpr std::int64_t kDatasetFormatVersion = 1;

/// Label value of an ignored position or row, the same as PyTorch's
/// ignore_index and kernels::kIgnoreIndex (the loss kernels skip it).
inline constexpr int kIgnoreLabel = -100;

using model::Task;

/// "causal_lm" | "classification" (the spelling used in files and decks).
const char* to_string(Task task);
/// Inverse of to_string; throws distzo::Error naming the allowed values.
Task parse_task(const std::string& name);

/// One dataset file in host memory. N examples, each right-padded to T tokens.
struct Dataset {
  Task task = Task::causal_lm;
  std::int64_t pad_token_id = 0;
  std::string description;  // free text, optional in the file

  std::int64_t num_examples = 0;  // N
  std::int64_t seq_len = 0;       // T

  std::vector<std::int32_t> input_ids;    // (N, T) row-major, pad_token_id from lengths[i] on
  std::vector<std::int32_t> lengths;      // (N) in [1, T]
  std::vector<std::int32_t> target_mask;  // (N, T) causal_lm only, 0/1: token t is a target
  std::vector<std::int32_t> candidates;   // (K) classification only: label-word token ids
  std::vector<std::int32_t> labels;       // (N) classification only, in [0, K)

  std::int64_t num_candidates() const { return static_cast<std::int64_t>(candidates.size()); }
  /// The shape of this dataset's micro-batches of `micro_batch` rows.
  model::BatchShape batch_shape(int micro_batch) const {
    return {task, micro_batch, static_cast<int>(seq_len), static_cast<int>(num_candidates())};
  }
  std::int32_t token(std::int64_t example, std::int64_t t) const {
    return input_ids[static_cast<std::size_t>(example * seq_len + t)];
  }
  /// Number of positions the loss counts for one example: the targets of a
  /// causal_lm example, 1 for a classification example.
  std::int64_t targets_of(std::int64_t example) const;
};

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

using model::Batch;

/// Fills one Batch again and again without reallocating: the device views and
/// two sets of pinned host staging buffers are allocated once, in the
/// constructor, for the dataset's T. With BatchWidth::trimmed each fill is
/// laid out at its own width T' (model/batch.hpp) as a contiguous (B, T')
/// prefix of those buffers, so the batch's views have exactly the shapes a
/// dataset of width T' would give. Fills alternate between the staging sets,
/// so the host writes the next batch while the copy out of the other set may
/// still run. The Dataset must outlive the builder (it is referenced, not copied).
class BatchBuilder {
 public:
  BatchBuilder(const Dataset& data, int micro_batch,
               model::BatchWidth width = model::BatchWidth::trimmed);

  /// Copies examples `example_indices` (at most B, each in [0, N), repeats
  /// allowed) into rows 0.. of the batch; the remaining rows become padding.
  /// Writes a staging set (after waiting for its copy of two fills ago),
  /// then enqueues the copies to the device views on `space`: kernels
  /// enqueued on `space` before see the previous batch, after it the new one
  /// (the views returned before keep their own width: use the new ones).
  /// Work on other instances that reads the batch must be ordered by the caller.
  /// `seq_len`: the width to lay the batch out at, from width_of(these
  /// examples) to the dataset's T (a data-parallel replica passes its global
  /// batch's width, so that every layout runs a step at the same shapes);
  /// 0 = width_of(example_indices).
  const Batch& fill(const ExecSpace& space, const std::vector<std::int64_t>& example_indices,
                    int seq_len = 0);

  /// Same on the default instance, and fenced after the copies: the batch is
  /// ready for any instance when this returns.
  const Batch& fill(const std::vector<std::int64_t>& example_indices);

  const Batch& batch() const { return batch_; }
  model::BatchWidth width() const { return width_; }

  /// The width a fill of these examples gets (at most the dataset's T).
  int width_of(const std::vector<std::int64_t>& example_indices) const;

 private:
  /// Pinned host buffers of one batch, and the event after their last copy.
  struct Staging {
    Kokkos::View<int*, Kokkos::LayoutRight, PinnedSpace> tokens, mask;  // (B*T)
    Kokkos::View<int*, Kokkos::LayoutRight, PinnedSpace> targets;       // (B*T) causal LM
    Kokkos::View<int*, Kokkos::LayoutRight, PinnedSpace> rows, gold;    // (B) classification
    StreamEvent copied;
  };

  const Dataset* data_;
  model::BatchWidth width_;
  Batch batch_;
  IntVec tokens_, mask_, targets_;  // the device buffers batch_'s views are prefixes of, (B*T)
  Staging staging_[2];
  int next_staging_ = 0;
};

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
