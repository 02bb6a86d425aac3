#include "app/process_start.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <optional>

#include "core/process_limits.hpp"

namespace distzo::app {

namespace {

// OpenBLAS's thread count; null when the BLAS is another library.
extern "C" int openblas_get_num_threads(void) __attribute__((weak));

/// Carries OPENBLAS_NUM_THREADS across the re-execution: its value, or
/// empty when it was unset.
constexpr const char* kHeldVariable = "DISTZO_HELD_OPENBLAS_NUM_THREADS";

/// What the handlers below need while MPI_Init runs under a limit; set
/// before, read from a signal handler (so plain values, no allocation).
struct MpiStart {
  bool active = false;
  int stderr_copy = -1;  // the process's stderr while MPI's is captured
  int captured = -1;     // a memory file that receives what MPI prints
  double page = 4096;    // bytes
  char rank[32] = "";    // " on rank N" under a launcher, else ""
};
MpiStart g_start;

constexpr double kMiB = 1024.0 * 1024.0;

/// Appends `text` to the buffer [at, end) (async-signal-safe).
char* append(char* at, const char* end, const char* text) {
  while (*text != '\0' && at < end) *at++ = *text++;
  return at;
}

/// Appends the decimal digits of `value` (async-signal-safe).
char* append(char* at, const char* end, unsigned long long value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0 && at < end) *at++ = digits[--n];
  return at;
}

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n <= 0) return;  // nothing better to do on the way out
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

/// Bytes mapped now (VmSize), read the async-signal-safe way.
double mapped_now() {
  const int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return 0;
  char text[64] = {};
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  double pages = 0;
  for (ssize_t i = 0; i < n && text[i] >= '0' && text[i] <= '9'; ++i)
    pages = pages * 10 + (text[i] - '0');
  return pages * g_start.page;
}

/// Writes what MPI printed while it started (the capture) to `out`.
/// Async-signal-safe.
void replay_capture(int out) {
  char copy[4096];
  if (g_start.captured < 0 || lseek(g_start.captured, 0, SEEK_SET) != 0) return;
  for (ssize_t n; (n = read(g_start.captured, copy, sizeof copy)) > 0;)
    write_all(out, copy, static_cast<std::size_t>(n));
}

/// distzo's refusal of a start that the address-space limit cannot hold,
/// on `out`, then exit status 2. `what`: what could not start; `how`: how it
/// failed; `more`: bytes the next try needs beyond what is mapped (or the
/// limit, whichever is more); `also`: other advice. Async-signal-safe.
[[noreturn]] void refuse(int out, const char* what, const char* how, double more,
                         const char* also) {
  rlimit limit{};
  getrlimit(RLIMIT_AS, &limit);
  const auto limit_bytes = static_cast<double>(limit.rlim_cur);
  const double mapped = mapped_now();
  // Rounded up to 16 MiB: the start gets further there; the run itself
  // needs more, which its own check then names.
  const double need = (mapped > limit_bytes ? mapped : limit_bytes) + more;
  const auto advised_mib = static_cast<unsigned long long>((need / kMiB + 15) / 16) * 16;
  char line[1024];
  char* at = line;
  const char* end = line + sizeof line - 1;
  at = append(at, end, "distzo: error");
  at = append(at, end, g_start.rank);
  at = append(at, end, ": the address-space limit of this process is ulimit -v ");
  at = append(at, end, static_cast<unsigned long long>(limit_bytes / 1024));
  at = append(at, end, " (");
  at = append(at, end, static_cast<unsigned long long>(limit_bytes / kMiB));
  at = append(at, end, " MiB), too small for ");
  at = append(at, end, what);
  at = append(at, end, " to start: ");
  at = append(at, end, how);
  at = append(at, end, " with ");
  at = append(at, end, static_cast<unsigned long long>(mapped / kMiB));
  at = append(at, end, " MiB mapped. Raise the limit to at least ulimit -v ");
  at = append(at, end, advised_mib * 1024);
  at = append(at, end, " (");
  at = append(at, end, advised_mib);
  at = append(at, end, " MiB), or the batch system's memory request");
  at = append(at, end, also);
  at = append(at, end, "; a run needs more, which `distzo plan DECK` predicts\n");
  write_all(out, line, static_cast<std::size_t>(at - line));
  _exit(2);
}

/// MPI's start failed under the limit (`how`: "MPI_Init aborted", ...):
/// what MPI printed (its cause), then distzo's refusal.
[[noreturn]] void refuse_mpi_start(const char* how) {
  g_start.active = false;
  const int out = g_start.stderr_copy >= 0 ? g_start.stderr_copy : STDERR_FILENO;
  replay_capture(out);
  // A thread's stack and a margin: what MPI's transport maps next.
  refuse(out, "MPI", how, 8 * kMiB + 64 * kMiB, "");
}

extern "C" void on_abort_in_mpi_start(int) { refuse_mpi_start("MPI_Init aborted"); }

/// MPI implementations end a failed MPI_Init with exit() as well as abort().
void on_exit_in_mpi_start() {
  if (g_start.active) refuse_mpi_start("MPI_Init exited");
}

/// OpenBLAS's library constructor raises SIGINT when it cannot start a
/// thread (pthread_create refused: no room for the stack under the limit).
/// Until main() the only SIGINT can be that one, or a user's Ctrl-C in the
/// first milliseconds, which this reports as what it is.
extern "C" void on_interrupt_while_loading(int) {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) _exit(130);
  // A thread's stack and its 128 MiB work buffer, and a margin.
  refuse(STDERR_FILENO, "the BLAS library", "OpenBLAS could not start its threads as it loaded",
         8 * kMiB + 128 * kMiB + 64 * kMiB, ", or set OPENBLAS_NUM_THREADS=1");
}

struct sigaction g_sigint_before;  // as the process received it (SIG_IGN under `cmd &`)
bool g_sigint_caught = false;

/// Runs before every library's constructor (the executable's ELF
/// pre-initialiser), under an address-space limit: catches OpenBLAS's SIGINT
/// above; main() gives SIGINT back the disposition it had.
void catch_blas_start_failure(int, char**, char**) {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  struct sigaction caught {};
  caught.sa_handler = on_interrupt_while_loading;
  g_sigint_caught = sigaction(SIGINT, &caught, &g_sigint_before) == 0;
}

/// Under a launcher, a rank whose MPI_Init fails does not get to say why:
/// MPICH tells the launcher to abort the job (PMI), which kills every rank
/// before anything else is printed. So a launched rank first starts MPI
/// alone in a child process (its own MPI world: no launcher variables) under
/// this limit less kTrialMargin, for what a rank of a job maps beyond a
/// process alone (its peers' shared-memory queues): null when that started,
/// else how it failed. What the child prints lands in the capture.
constexpr double kTrialMargin = 32 * kMiB;
constexpr int kTrialSeconds = 60;

const char* trial_start(int argc, char** argv) {
  const pid_t child = fork();
  if (child == 0) {
    rlimit limit{};
    getrlimit(RLIMIT_AS, &limit);
    if (limit.rlim_cur > static_cast<rlim_t>(kTrialMargin)) {
      limit.rlim_cur -= static_cast<rlim_t>(kTrialMargin);
      setrlimit(RLIMIT_AS, &limit);
    }
    for (const char* name :
         {"PMI_FD", "PMI_PORT", "PMI_RANK", "PMI_SIZE", "PMI_ID", "PMI_SUBVERSION", "PMI_VERSION",
          "PMI_SPAWNED", "PMI_KVSNAME", "PMI_DEBUG"})
      unsetenv(name);
    signal(SIGABRT, SIG_DFL);
    if (g_start.captured >= 0) dup2(g_start.captured, STDOUT_FILENO);
    _exit(MPI_Init(&argc, &argv) == MPI_SUCCESS ? 0 : 1);
  }
  if (child < 0) return nullptr;  // no trial: the start below is the test
  int status = 0;
  for (int waited = 0; waitpid(child, &status, WNOHANG) == 0; ++waited) {
    if (waited == kTrialSeconds * 100) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return "MPI_Init did not end within 60 s in a trial start (a process of its own)";
    }
    usleep(10000);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return nullptr;
  // kTrialMargin's 32 MiB, said in words.
  return WIFSIGNALED(status) ? "MPI_Init aborted in a trial start (a process of its own, under the "
                               "limit less 32 MiB for the job's shared memory)"
                             : "MPI_Init failed in a trial start (a process of its own, under the "
                               "limit less 32 MiB for the job's shared memory)";
}

}  // namespace

// Outside the unnamed namespace: nvcc warns (#177) of an internal variable
// that nothing references, whatever its `used` attribute.
__attribute__((section(".preinit_array"),
               used)) void (*g_pre_initialiser)(int, char**, char**) = &catch_blas_start_failure;

void hold_blas_to_one_thread(char** argv) {
  // Loading is over: SIGINT as the process received it.
  if (g_sigint_caught) sigaction(SIGINT, &g_sigint_before, nullptr);
  if (const char* held = std::getenv(kHeldVariable)) {  // the re-executed process
    if (*held != '\0')
      setenv("OPENBLAS_NUM_THREADS", held, 1);
    else
      unsetenv("OPENBLAS_NUM_THREADS");
    unsetenv(kHeldVariable);
    return;
  }
  if (!address_space_limit() || openblas_get_num_threads == nullptr ||
      openblas_get_num_threads() <= 1)
    return;
  const char* asked = std::getenv("OPENBLAS_NUM_THREADS");
  setenv(kHeldVariable, asked != nullptr ? asked : "", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  execv("/proc/self/exe", argv);  // returns only when it failed: go on as before
  if (asked != nullptr)
    setenv("OPENBLAS_NUM_THREADS", std::getenv(kHeldVariable), 1);
  else
    unsetenv("OPENBLAS_NUM_THREADS");
  unsetenv(kHeldVariable);
}

void start_mpi(int* argc, char*** argv) {
  const std::optional<double> limit = address_space_limit();
  if (!limit) {
    MPI_Init(argc, argv);
    return;
  }
  g_start.page = static_cast<double>(sysconf(_SC_PAGESIZE));
  if (const char* rank = std::getenv("PMI_RANK")) {
    char* at = append(g_start.rank, g_start.rank + sizeof g_start.rank - 1, " on rank ");
    append(at, g_start.rank + sizeof g_start.rank - 1, rank);
  }
  // What MPI prints while it starts is held back: shown as it is when it
  // starts, before distzo's message when it does not.
  g_start.captured = memfd_create("distzo-mpi-start", MFD_CLOEXEC);
  g_start.stderr_copy = g_start.captured >= 0 ? dup(STDERR_FILENO) : -1;
  if (g_start.stderr_copy >= 0) dup2(g_start.captured, STDERR_FILENO);
  if (std::getenv("PMI_FD") != nullptr || std::getenv("PMI_PORT") != nullptr) {
    if (const char* failed = trial_start(*argc, *argv)) refuse_mpi_start(failed);
  }
  struct sigaction on_abort {};
  struct sigaction previous {};
  on_abort.sa_handler = on_abort_in_mpi_start;
  sigaction(SIGABRT, &on_abort, &previous);
  std::atexit(on_exit_in_mpi_start);
  g_start.active = true;
  const int status = MPI_Init(argc, argv);
  if (status != MPI_SUCCESS) refuse_mpi_start("MPI_Init failed");
  g_start.active = false;
  sigaction(SIGABRT, &previous, nullptr);
  if (g_start.stderr_copy >= 0) {
    dup2(g_start.stderr_copy, STDERR_FILENO);
    close(g_start.stderr_copy);
    replay_capture(STDERR_FILENO);
  }
  if (g_start.captured >= 0) close(g_start.captured);
  g_start.stderr_copy = g_start.captured = -1;
}

}  // namespace distzo::app
