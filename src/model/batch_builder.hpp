#pragma once
// Device micro-batches from a dataset in host memory (model/dataset.hpp): the
// views the forward pass and the losses read (model/batch.hpp), allocated
// once and refilled for every step through pinned staging buffers. The data
// order (which examples) is io::DataOrder's; this only lays them out.

#include <cstdint>
#include <vector>

#include "core/stream_event.hpp"
#include "core/types.hpp"
#include "model/batch.hpp"
#include "model/dataset.hpp"

namespace distzo::model {

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
  BatchBuilder(const Dataset& data, int micro_batch, BatchWidth width = BatchWidth::trimmed);

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
  BatchWidth width() const { return width_; }

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
  BatchWidth width_;
  Batch batch_;
  IntVec tokens_, mask_, targets_;  // the device buffers batch_'s views are prefixes of, (B*T)
  Staging staging_[2];
  int next_staging_ = 0;
};

}  // namespace distzo::model
