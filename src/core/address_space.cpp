#include "core/address_space.hpp"

#include <fstream>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

namespace distzo {

std::optional<double> address_space_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<double>(limit.rlim_cur);
}

double address_space_in_use() {
  std::ifstream statm("/proc/self/statm");
  double pages = 0;
  if (!(statm >> pages)) return 0;
  return pages * static_cast<double>(sysconf(_SC_PAGESIZE));
}

bool address_space_available(double bytes) {
  if (bytes <= 0) return true;
  const auto length = static_cast<std::size_t>(bytes);
  void* reserved = mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
  if (reserved == MAP_FAILED) return false;
  munmap(reserved, length);
  return true;
}

}  // namespace distzo
