#pragma once
// The block streamer (DESIGN.md, Placement; ZO2's offloading schedule).
// Blocks 0..K-1 and the edges live on the device; blocks K..L-1 live in host
// memory and pass through a ring of S device slots as the walk reaches them:
//
//   acquire(k)   makes θ_k usable by work enqueued on the compute instance
//                (waits, on the device, for its upload) and starts the uploads
//                of the next `prefetch` blocks on the upload instance, so they
//                overlap the compute of k;
//   release(k)   after the compute of k was enqueued: if the pass changed θ_k,
//                writes it back to the host master on the write-back
//                instance; the slot is free again once that (or, unchanged,
//                the compute reading it) is done.
//
// With a sliced store (Placement II) a rank uploads only its own slice of
// θ_k for the update and perturbation, and writes back only its own slice:
// 1/S of each block over each rank's link, DistZO2's sliced transfers.
//
// Upload k → (compute k: fused update + perturbation, every owned
// evaluation) → write back k, per block, with three instances so the upload
// of k+1 and the write-back of k−1 run under the compute of k. Slot j of the
// ring holds blocks K+j, K+j+S, ...; an upload into a slot waits for the
// slot's previous occupant to be free. end_pass() waits until every
// write-back is done, so the host master is current between passes.
//
// On host backends the "device" slots are separate host buffers and the
// copies are real, so the schedule runs and is tested on the CPU. Kokkos
// there has one instance and its fences do nothing, so a missing wait or an
// early slot reuse would go unseen; the streamer therefore keeps a trace of
// what it enqueued, on which instance, after which waits (tests assert the
// order), and runs the work a caller installs on every released slot
// (on_release: runtime/faults.hpp fills slots with NaN there, so that any use
// after release becomes a non-finite loss).

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/stream_event.hpp"
#include "core/types.hpp"
#include "model/weights.hpp"
#include "runtime/parameter_store.hpp"

namespace distzo::runtime {

/// The logical instance (lane) an operation was enqueued on.
enum class Lane { compute, upload, writeback };
const char* to_string(Lane lane);

/// One operation of the schedule, in the order the streamer enqueued it.
struct StreamOp {
  enum class Kind {
    upload,       // host master of `block` → slot, on the upload lane
    wait,         // `lane` waits for the event of (`on_lane`, `on_block`)
    compute,      // `block` handed to the walk (acquire)
    compute_end,  // the walk is done enqueuing work on `block` (release)
    writeback,    // slot → host master of `block`, on the write-back lane
    on_release,   // the on_release work on the slot, on the write-back lane
    pass_end,     // end_pass(): the host waited for every upload and write-back
  };
  Kind kind;
  int block = -1;
  int slot = -1;  // -1: a device-resident block
  Lane lane = Lane::compute;
  Lane on_lane = Lane::compute;  // wait only
  int on_block = -1;             // wait only
};
const char* to_string(StreamOp::Kind kind);

/// Bytes moved between the host master and the device slots (2 per element
/// of a bf16 / fp16 θ).
struct TransferBytes {
  std::uint64_t to_device = 0;  // uploads
  std::uint64_t to_host = 0;    // write-backs
};

class BlockStreamer {
 public:
  BlockStreamer(ParameterStore& store, const ExecSpace& compute);
  BlockStreamer(const BlockStreamer&) = delete;
  BlockStreamer& operator=(const BlockStreamer&) = delete;

  const ParameterStore& store() const { return store_; }
  ParameterStore& store() { return store_; }
  const StreamInstances& instances() const { return instances_; }
  int slots() const { return static_cast<int>(slots_.size()); }

  /// Starts a walk: the uploads of the first streamed block and the
  /// `prefetch` after it, so they overlap the work on the embeddings.
  /// `own_slices`: the pass reads only this rank's slice of each block
  /// (sliced store: the update and perturbation), so only it is uploaded.
  void begin_pass(bool own_slices = false);
  /// θ_k by id, on the device, ready for work enqueued on the compute instance.
  const ThetaTable& acquire(int block);
  /// The walk has enqueued all its work on θ_k; `modified`: θ_k changed.
  void release(int block, bool modified);
  /// Blocks the host until every upload and write-back of the pass is done.
  void end_pass();

  /// Bytes moved by the last pass, and since construction.
  const TransferBytes& last_pass_bytes() const { return last_pass_; }
  const TransferBytes& total_bytes() const { return total_; }

  /// The schedule trace, recorded while enabled (tests).
  void record_trace(bool on) { tracing_ = on; }
  const std::vector<StreamOp>& trace() const { return trace_; }
  void clear_trace() { trace_.clear(); }

  /// Work on a slot whose block was released: `work(writeback, slot)`
  /// enqueues on the write-back instance, after the block's write-back (if
  /// any); the slot is free for the next upload only once that work is
  /// done. `slot` is the slot's whole arena.
  using SlotWork = std::function<void(const ExecSpace& writeback, const StoredVec& slot)>;
  /// Runs `work` at every release of a streamed block from now on (an empty
  /// one: none).
  void on_release(SlotWork work) { on_release_ = std::move(work); }

 private:
  struct Slot {
    StoredVec arena;                 // (max block elements) of θ's dtype, device
    ThetaTable tensors;              // the occupant's tensors by id, into `arena`
    int occupant = -1;               // block uploaded into it last
    bool in_use = false;             // acquired and not yet released
    StreamEvent uploaded;            // after the occupant's upload
    StreamEvent free;                // after the last work that reads or writes the slot
    Lane free_lane = Lane::compute;  // where `free` was recorded (trace)
  };

  int slot_of(int block) const;
  /// Elements of block's arena that move: all, or this rank's slice.
  std::pair<std::size_t, std::size_t> moved_range(int block, bool own_slice) const;
  void upload(int block);
  void note(const StreamOp& op);

  ParameterStore& store_;
  StreamInstances instances_;
  int first_streamed_ = 0;  // K
  int num_blocks_ = 0;      // L
  int prefetch_ = 1;
  SlotWork on_release_;
  std::vector<Slot> slots_;
  int next_upload_ = 0;     // the next streamed block whose upload is not enqueued yet
  int last_acquired_ = -1;  // blocks are acquired in increasing order within a pass
  bool in_pass_ = false;
  bool own_slices_ = false;  // this pass uploads only this rank's slices
  TransferBytes pass_, last_pass_, total_;
  bool tracing_ = false;
  std::vector<StreamOp> trace_;
};

}  // namespace distzo::runtime
