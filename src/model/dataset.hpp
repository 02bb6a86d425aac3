#pragma once
// Tokenised examples in host memory: what a dataset file holds (io/dataset.hpp
// reads, validates and writes the file) and what model::BatchBuilder copies
// into the device batches the forward pass consumes. Plain data, no files,
// no device memory.

#include <cstdint>
#include <string>
#include <vector>

#include "model/batch.hpp"

namespace distzo::model {

/// One dataset in host memory. N examples, each right-padded to T tokens.
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
  BatchShape batch_shape(int micro_batch) const {
    return {task, micro_batch, static_cast<int>(seq_len), static_cast<int>(num_candidates())};
  }
  std::int32_t token(std::int64_t example, std::int64_t t) const {
    return input_ids[static_cast<std::size_t>(example * seq_len + t)];
  }
};

}  // namespace distzo::model
