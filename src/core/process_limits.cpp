#include "core/process_limits.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace distzo {

std::string raise_open_files_limit() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= kOpenFilesNeeded) return "";
  constexpr rlim_t kRaisedTo = 1024;  // plenty, and what select()-era code still expects
  const rlim_t wanted =
      files.rlim_max == RLIM_INFINITY ? kRaisedTo : std::min<rlim_t>(files.rlim_max, kRaisedTo);
  const rlim_t was = files.rlim_cur;
  files.rlim_cur = wanted;
  if (wanted >= static_cast<rlim_t>(kOpenFilesNeeded) && setrlimit(RLIMIT_NOFILE, &files) == 0)
    return "";
  return "the open-files limit of this process is ulimit -n " + std::to_string(was) +
         " (hard limit " +
         (files.rlim_max == RLIM_INFINITY ? std::string("unlimited")
                                          : std::to_string(files.rlim_max)) +
         "); distzo needs at least " + std::to_string(kOpenFilesNeeded) +
         " (MPI's transport alone takes about 16). Raise it: ulimit -n 1024 (a user may raise it "
         "up to the hard limit; past that, ask the batch system or the administrator)";
}

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

double thread_stack_bytes() {
  std::size_t stack = 8u << 20;  // glibc's default where it cannot say
  pthread_attr_t attr;
  if (pthread_getattr_default_np(&attr) == 0) {
    pthread_attr_getstacksize(&attr, &stack);
    pthread_attr_destroy(&attr);
  }
  return static_cast<double>(stack + static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
}

bool address_space_available(double bytes) {
  if (bytes <= 0) return true;
  const auto length = static_cast<std::size_t>(bytes);
  void* reserved =
      mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) return false;
  munmap(reserved, length);
  return true;
}

}  // namespace distzo
