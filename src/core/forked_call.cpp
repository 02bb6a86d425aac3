#include "core/forked_call.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace distzo {

namespace {

constexpr int kCallFailed = 3;  // the child's exit status when `call` returned false

void write_all_and_exit(int fd, const std::string& bytes) {
  for (std::size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + sent, bytes.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(kCallFailed);
    sent += static_cast<std::size_t>(n);
  }
  _exit(0);
}

/// Reads the child's bytes until it closes the pipe; false if `deadline` passed first.
bool read_until_closed(int fd, std::chrono::steady_clock::time_point deadline, std::string& out) {
  char buffer[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // closed (or broken): the exit status tells which
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace

ForkedCall call_in_forked_child(const std::function<bool(std::string&)>& call,
                                int timeout_seconds) {
  int fds[2];
  DISTZO_REQUIRE(pipe(fds) == 0, "call_in_forked_child: pipe: " << std::strerror(errno));
  std::fflush(nullptr);  // what the parent buffered is not written twice
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    // Ends with the parent (killed by a batch system's time limit while the
    // call loops): a forked reader must not spin on, orphaned.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(kCallFailed);  // the parent died before prctl
    // The child's crash is an answer, not an error to report: the handlers
    // that MPI's transport (UCX) or a sanitizer installed would print a
    // backtrace, or wait for a debugger, before it ends.
    for (const int fatal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(fatal, SIG_DFL);
    // Nor does what the call prints on its way down (a library's error
    // stack, AddressSanitizer's report of the library's bad memcpy) belong on
    // the run's stderr: the parent says what happened.
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    std::string out;
    if (!call(out)) _exit(kCallFailed);
    write_all_and_exit(fds[1], out);
  }
  const int fork_error = errno;
  close(fds[1]);
  if (child < 0) {
    close(fds[0]);
    DISTZO_FAIL("call_in_forked_child: fork: " << std::strerror(fork_error));
  }
  ForkedCall result;
  const bool closed = read_until_closed(
      fds[0], std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds),
      result.output);
  close(fds[0]);
  if (!closed) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!closed)
    result.failure = "did not finish in " + std::to_string(timeout_seconds) + " s";
  else if (WIFSIGNALED(status))
    result.failure = "died of signal " + std::to_string(WTERMSIG(status)) + " (" +
                     strsignal(WTERMSIG(status)) + ")";
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    result.failure = "failed";
  return result;
}

}  // namespace distzo
