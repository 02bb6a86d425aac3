#pragma once
// Ordering between execution-space instances without blocking the host, the
// one place distzo touches a backend's streams directly (STYLE.md).
//
// Kokkos orders work within one instance; the block streamer
// (runtime/block_streamer.hpp) runs uploads, compute and write-backs on three
// instances and orders them with events:
// record an event after some work on instance A, then make instance B wait
// for it before its next work. Under CUDA these are cudaEvent_t and
// cudaStreamWaitEvent. On host backends (Serial, OpenMP) an instance runs
// its work before the enqueueing call returns, so recording fences the
// instance (a no-op there) and waiting has nothing to wait for.

#include <memory>

#include "core/types.hpp"

namespace distzo {

/// The three instances of the streamer. On a device backend Kokkos >= 4
/// partitions them off the compute instance (CUDA: three streams); on host
/// backends, and with Kokkos 3.4, all three are the compute instance.
struct StreamInstances {
  ExecSpace compute;
  ExecSpace upload;
  ExecSpace writeback;
  bool distinct = false;  // whether upload and write-back run on instances of their own

  static StreamInstances make(const ExecSpace& compute);
};

class StreamEvent {
 public:
  /// An event that has already happened.
  StreamEvent() = default;
  /// Marks the point after everything enqueued on `space` so far.
  static StreamEvent record(const ExecSpace& space);
  /// Work enqueued on `space` after this call starts after the event.
  void enqueue_wait(const ExecSpace& space) const;
  /// Blocks the host until the event has happened.
  void host_wait() const;

 private:
  std::shared_ptr<void> event_;  // the backend's event; null when already complete
};

}  // namespace distzo
