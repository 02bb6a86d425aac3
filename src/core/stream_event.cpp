#include "core/stream_event.hpp"

#include <type_traits>

#include "core/error.hpp"
#include "core/fence.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

namespace distzo {

StreamInstances StreamInstances::make(const ExecSpace& compute) {
  StreamInstances s{compute, compute, compute, false};
  // Instances of their own only where they run concurrently: on a device
  // backend (CUDA: streams). A host backend runs each instance's work as it
  // is enqueued, so partitioning buys nothing there, and OpenMP would split
  // its threads between the partitions (with one thread, into empty ones,
  // which Kokkos refuses).
#if KOKKOS_VERSION >= 40000
  if (!std::is_same<ExecSpace::memory_space, Kokkos::HostSpace>::value) {
    auto parts = Kokkos::Experimental::partition_space(compute, 1, 1);
    s.upload = parts[0];
    s.writeback = parts[1];
    s.distinct = true;
  }
#endif
  return s;
}

#ifdef KOKKOS_ENABLE_CUDA

namespace {
void check(cudaError_t status, const char* what) {
  DISTZO_REQUIRE(status == cudaSuccess, what << ": " << cudaGetErrorString(status));
}
}  // namespace

StreamEvent StreamEvent::record(const ExecSpace& space) {
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check(cudaEventRecord(event, space.cuda_stream()), "cudaEventRecord");
  StreamEvent e;
  // Destroying an event whose work is still pending is allowed: CUDA releases
  // it once the work completes.
  e.event_ = std::shared_ptr<void>(static_cast<void*>(event),
                                   [](void* p) { cudaEventDestroy(static_cast<cudaEvent_t>(p)); });
  return e;
}

void StreamEvent::enqueue_wait(const ExecSpace& space) const {
  if (!event_) return;
  check(cudaStreamWaitEvent(space.cuda_stream(), static_cast<cudaEvent_t>(event_.get()), 0),
        "cudaStreamWaitEvent");
}

void StreamEvent::host_wait() const {
  if (!event_) return;
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(event_.get())), "cudaEventSynchronize");
}

#else

StreamEvent StreamEvent::record(const ExecSpace& space) {
  fence(space, "distzo: stream event (host backends complete work as it is enqueued)");
  return StreamEvent();
}

void StreamEvent::enqueue_wait(const ExecSpace&) const {}

void StreamEvent::host_wait() const {}

#endif

}  // namespace distzo
