#pragma once
// Where θ lives (DESIGN.md, Placement), as plain data: the deck's
// `placement:` section after validation.
//
//   resident  every group's master copy lives in the execution space;
//   offload   (ZO2) blocks K..L-1 live in host memory and stream through a
//             ring of device slots; the embeddings, the head and blocks
//             0..K-1 stay on the device.

#include <cstddef>
#include <string>

#include "core/placement_kinds.hpp"
#include "core/storage_dtype.hpp"

namespace distzo::runtime {

using distzo::PlacementMode;

/// The mode named "resident" or "offload"; throws distzo::Error naming
/// `what` (the option or key) otherwise.
PlacementMode placement_mode(const std::string& name, const std::string& what);

/// Whether the perturbed weights named "together" or "one_at_a_time" (the
/// deck's placement.perturbed_weights, an option's value) are one at a time;
/// throws distzo::Error naming `what` for any other name.
bool perturbs_one_at_a_time(const std::string& name, const std::string& what);

/// A setting that the others of a PlacementConfig rule out: the deck key at
/// fault ("placement.perturbed_weights") and why, with what to set instead.
struct PlacementProblem {
  std::string key;  // empty: no problem
  std::string why;
};

struct PlacementConfig {
  PlacementMode mode = PlacementMode::resident;
  int resident_blocks = 0;  // K (offload): blocks 0..K-1 stay on the device; K >= L is resident
  int prefetch = 1;         // offload: uploads in flight ahead of the block in use, >= 1
  // offload: device slots of the ring, 0 = prefetch + 2. prefetch + 1 is the
  // least that works: the upload into a slot then waits for the write-back
  // of the block that left it, instead of running beside it.
  int slots = 0;
  // Placement II: one host master per node in node-shared memory, cut into
  // slices that the node's ranks update and perturb (runtime/arena_layout.hpp).
  bool share_host_master = false;
  // placement.perturbed_weights: one_at_a_time. A rank's evaluations share
  // one block arena and one copy of the edges for their w, materialised one
  // after the other, instead of w+ and w- of a block and the edges' w of
  // every evaluation at once: a block arena and (evaluations - 1) edge copies
  // less device memory, for z evaluated once per evaluation instead of once
  // per query, and again for the head's edges. The same bits either way.
  bool perturb_one_at_a_time = false;
  // How θ is stored (the deck's precision section). Here, with where θ
  // lives, because the parameter store is built from this config and the
  // kernels that write θ (zo::PerturbedWeights::materialise, the engine's
  // flush) are reached through the store: nothing else needs them.
  StorageDtype storage = StorageDtype::fp32;  // 4 bytes per element, or 2 (bf16, fp16)
  Rounding rounding = Rounding::stochastic;   // how an update is stored in 2 bytes
  // precision.gemm_inputs: storage. The blocks' matrices are multiplied as
  // 2-byte words of `storage`: their w± are materialised as words (half the
  // scratch), an evaluation reads θ's words in place, and the activations
  // are rounded to the same format at each GEMM (float32 accumulation).
  bool two_byte_gemm_inputs = false;

  /// The format the blocks' GEMMs take their inputs in: `storage` with
  /// two_byte_gemm_inputs, else fp32.
  StorageDtype gemm_inputs() const { return two_byte_gemm_inputs ? storage : StorageDtype::fp32; }

  /// Blocks that live on the device for the whole run: all L when resident,
  /// min(K, L) when offloaded.
  int device_blocks(int num_blocks) const;
  /// Blocks that stream through the slots: L - device_blocks.
  int streamed_blocks(int num_blocks) const { return num_blocks - device_blocks(num_blocks); }
  /// Device slots of the streamer: the block in use, `prefetch` uploads
  /// ahead of it and one write-back in flight (prefetch + 2), or `slots`
  /// when set, but no more than there are streamed blocks.
  int stream_slots(int num_blocks) const;
  /// "" when `slots` is 0 or at least prefetch + 1, else what is wrong.
  std::string slots_problem() const;
  /// What a node-shared master (share_host_master) cannot hold, none
  /// without one: its slices of every evaluation's w are materialised and
  /// exchanged at once, in float32, so neither one evaluation's w at a time
  /// nor 2-byte GEMM inputs. The one statement of the rule: the deck's
  /// placement (run and plan) and the perturbed weights check it.
  PlacementProblem shared_master_problem() const;
};

/// Elements an arena segment is aligned to: 16 floats = 64 bytes, a cache
/// line and four Philox blocks of 4, so tensors start on a line and a slice
/// of an arena can be cut without splitting a Philox block.
constexpr std::size_t kArenaAlignElements = 16;

/// `n` rounded up to a multiple of kArenaAlignElements.
constexpr std::size_t aligned_to_arena(std::size_t n) {
  return (n + kArenaAlignElements - 1) / kArenaAlignElements * kArenaAlignElements;
}

}  // namespace distzo::runtime
