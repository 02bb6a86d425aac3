#include "core/memory.hpp"

#include <Kokkos_Core.hpp>

#include "core/types.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>

namespace distzo {

namespace {

const char* const kRoleNames[kMemoryRoles] = {"weights", "scratch", "activations", "host_master",
                                              "other"};

/// Is the execution space's memory the host's? Then space names cannot tell
/// device from host memory and the role does.
constexpr bool kHostBackend = std::is_same<MemSpace, Kokkos::HostSpace>::value;

struct Live {
  MemoryRole role;
  std::uint64_t bytes;
  bool device;
};

struct Ledger {
  std::mutex mutex;
  bool active = false;
  MemoryUsage usage;
  std::unordered_map<const void*, Live> live;
};

Ledger& ledger() {
  static Ledger l;
  return l;
}

bool device_space(const char* space_name, MemoryRole role) {
  if (kHostBackend) return is_device_role(role);
  // Under a device backend: Kokkos names host memory "Host" and pinned host
  // memory "<Backend>HostPinned" (e.g. "CudaHostPinned").
  return std::strcmp(space_name, "Host") != 0 && std::strstr(space_name, "HostPinned") == nullptr;
}

void on_allocate(const Kokkos_Profiling_SpaceHandle space, const char* label, const void* ptr,
                 const std::uint64_t size) {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (!l.active || ptr == nullptr) return;
  const MemoryRole role = memory_role_of(label ? label : "");
  const Live entry{role, size, device_space(space.name, role)};
  l.live[ptr] = entry;
  MemoryUsage& u = l.usage;
  const int r = static_cast<int>(role);
  u.current[r] += size;
  if (u.current[r] > u.peak[r]) u.peak[r] = u.current[r];
  if (entry.device) {
    u.device_current += size;
    if (u.device_current > u.device_peak) u.device_peak = u.device_current;
  }
  ++u.allocations;
}

void on_deallocate(const Kokkos_Profiling_SpaceHandle, const char*, const void* ptr,
                   const std::uint64_t) {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  const auto it = l.live.find(ptr);
  if (it == l.live.end()) return;  // allocated before start()
  MemoryUsage& u = l.usage;
  u.current[static_cast<int>(it->second.role)] -= it->second.bytes;
  if (it->second.device) u.device_current -= it->second.bytes;
  l.live.erase(it);
}

}  // namespace

const char* to_string(MemoryRole role) { return kRoleNames[static_cast<int>(role)]; }

std::string memory_label(MemoryRole role, const std::string& name) {
  return std::string("distzo:") + to_string(role) + ":" + name;
}

MemoryRole memory_role_of(const std::string& label) {
  const std::string prefix = "distzo:";
  if (label.compare(0, prefix.size(), prefix) != 0) return MemoryRole::other;
  const std::size_t end = label.find(':', prefix.size());
  if (end == std::string::npos) return MemoryRole::other;
  const std::string role = label.substr(prefix.size(), end - prefix.size());
  for (int r = 0; r < kMemoryRoles; ++r)
    if (role == kRoleNames[r]) return static_cast<MemoryRole>(r);
  return MemoryRole::other;
}

bool is_device_role(MemoryRole role) {
  return role == MemoryRole::weights || role == MemoryRole::scratch ||
         role == MemoryRole::activations;
}

void MemoryAccounting::start() {
  {
    Ledger& l = ledger();
    std::lock_guard<std::mutex> lock(l.mutex);
    l.usage = MemoryUsage{};
    l.live.clear();
    l.active = true;
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(&on_allocate);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(&on_deallocate);
}

void MemoryAccounting::stop() {
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.active = false;
}

bool MemoryAccounting::active() {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  return l.active;
}

MemoryUsage MemoryAccounting::usage() {
  Ledger& l = ledger();
  std::lock_guard<std::mutex> lock(l.mutex);
  return l.usage;
}

std::uint64_t proportional_set_size() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string key;
  std::uint64_t kib = 0;
  while (in >> key) {
    if (key == "Pss:" && in >> kib) return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

void pin_host_memory(void* data, std::size_t bytes) {
#ifdef KOKKOS_ENABLE_CUDA
  const cudaError_t status = cudaHostRegister(data, bytes, cudaHostRegisterPortable);
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("cannot pin ") + std::to_string(bytes) +
                             " bytes of host memory (cudaHostRegister: " +
                             cudaGetErrorString(status) + "); check `ulimit -l`");
#else
  (void)data;
  (void)bytes;
#endif
}

void unpin_host_memory(void* data) {
#ifdef KOKKOS_ENABLE_CUDA
  cudaHostUnregister(data);
#else
  (void)data;
#endif
}

}  // namespace distzo
