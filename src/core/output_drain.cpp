#include "core/output_drain.hpp"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <thread>

namespace distzo {

namespace {
/// Bytes written to `fd` and not yet read; negative when this cannot tell.
int unread_bytes(int fd, bool socket) {
  int n = 0;
  if (ioctl(fd, socket ? SIOCOUTQ : FIONREAD, &n) != 0) return -1;
  return n;
}
}  // namespace

bool wait_until_read(int fd, std::chrono::milliseconds limit) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return true;
  const bool socket = S_ISSOCK(st.st_mode);
  if (!S_ISFIFO(st.st_mode) && !socket) return true;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (unread_bytes(fd, socket) <= 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void flush_output_to_launcher(std::chrono::milliseconds limit) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  const auto start = std::chrono::steady_clock::now();
  wait_until_read(STDERR_FILENO, limit);
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  wait_until_read(STDOUT_FILENO, spent < limit ? limit - spent : std::chrono::milliseconds(0));
}

}  // namespace distzo
