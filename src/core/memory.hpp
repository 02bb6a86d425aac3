#pragma once
// Memory by role (DESIGN.md, Placement: accounting). Every allocation distzo
// makes carries its role in its Kokkos label, "distzo:<role>:<name>":
//
//   weights      θ on the device: resident arenas and the streaming slots
//   scratch      per-step device buffers: the perturbed weights w±, row marks
//   activations  forward activations, hidden states, batches, loss sums
//   host_master  θ's master copy in host memory (offloaded blocks), staging
//
// MemoryAccounting listens to Kokkos Tools' allocation callbacks (Kokkos >=
// 3.3) and keeps live bytes and high-water marks per role. It is a listener,
// not a counter the allocating code updates, so what it reports is what
// Kokkos allocated. On host backends every space reports itself as "Host":
// there the role says whether an allocation stands for device memory; under
// CUDA the space says it, and device allocations without a distzo role
// (Kokkos' own, a library's) count as `other`.

#include <cstddef>
#include <cstdint>
#include <string>

namespace distzo {

enum class MemoryRole { weights, scratch, activations, host_master, other };
constexpr int kMemoryRoles = 5;

const char* to_string(MemoryRole role);

/// "distzo:<role>:<name>": the label of a View allocated for `role`.
std::string memory_label(MemoryRole role, const std::string& name);

/// The role a label names; `other` for labels distzo did not make.
MemoryRole memory_role_of(const std::string& label);

/// Bytes a View of `elements` elements of `element_bytes` each allocates:
/// Kokkos (3.4 and 4.x alike) rounds a View's span up to a multiple of
/// 8 bytes, which is what Kokkos Tools sees and what a plan must add up.
constexpr std::uint64_t view_bytes(std::uint64_t elements, std::uint64_t element_bytes) {
  return (elements * element_bytes + 7) / 8 * 8;
}

/// Whether `role` stands for device memory (weights, scratch, activations).
bool is_device_role(MemoryRole role);

struct MemoryUsage {
  std::uint64_t current[kMemoryRoles] = {};  // live bytes per role
  std::uint64_t peak[kMemoryRoles] = {};     // high-water mark per role
  std::uint64_t device_current = 0;          // live device bytes, every role together
  std::uint64_t device_peak = 0;             // their high-water mark
  std::uint64_t allocations = 0;             // allocations seen since start()

  std::uint64_t peak_of(MemoryRole role) const { return peak[static_cast<int>(role)]; }
};

/// Pins (page-locks) host memory that Kokkos did not allocate, such as a
/// node-shared window, so device copies from and to it are asynchronous DMA
/// (cudaHostRegister). Does nothing on host backends.
void pin_host_memory(void* data, std::size_t bytes);
/// Undoes pin_host_memory.
void unpin_host_memory(void* data);

/// This process's proportional set size in bytes (Pss of
/// /proc/self/smaps_rollup: private pages plus each shared page divided by
/// the processes mapping it, so the sum over a node's processes is the
/// node's memory for them); 0 where the kernel does not report it.
std::uint64_t proportional_set_size();

/// Process-wide listener (Kokkos Tools callbacks are global).
class MemoryAccounting {
 public:
  /// Installs the callbacks and starts from zero; call after Kokkos is
  /// initialised. Allocations made before are not seen, nor their frees.
  static void start();
  /// Removes the callbacks; usage() stays readable.
  static void stop();
  static bool active();
  static MemoryUsage usage();
};

}  // namespace distzo
