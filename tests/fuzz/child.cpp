#include "child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace distzo::fuzz {

namespace {

volatile sig_atomic_t g_stop = 0;

void on_stop(int) { g_stop = 1; }

// A file's first `head` and last `tail` bytes: distzo's message comes first,
// a crash's report last, and an error may quote a megabyte in between.
std::string ends_of(const std::string& path, std::size_t head = 64 * 1024,
                    std::size_t tail = 192 * 1024) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(std::max<std::streamoff>(0, in.tellg()));
  in.seekg(0);
  std::string text(std::min(size, head + tail), '\0');
  if (size <= head + tail) {
    in.read(&text[0], static_cast<std::streamsize>(size));
    return text;
  }
  in.read(&text[0], static_cast<std::streamsize>(head));
  in.seekg(static_cast<std::streamoff>(size - tail));
  in.read(&text[head], static_cast<std::streamsize>(tail));
  return text.insert(
      head, "\n[distzo_fuzz: " + std::to_string(size - head - tail) + " bytes left out]\n");
}

[[noreturn]] void exec_child(const std::string& distzo, const std::vector<std::string>& args,
                             const std::string& dir, const Limits& limits,
                             const std::string& log_prefix, const sigset_t& parent_mask,
                             pid_t parent) {
  setpgid(0, 0);
  // Outside the harness's process group a Ctrl-C does not reach it, so it
  // dies with the harness instead (a harness killed by ctest's timeout
  // leaves no hung distzo behind).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);  // the harness died before prctl
  sigprocmask(SIG_SETMASK, &parent_mask,
              nullptr);  // exec keeps the mask; distzo expects none blocked
  const int in = open("/dev/null", O_RDONLY);
  const int out = open((log_prefix + ".stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open((log_prefix + ".stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
    _exit(126);
  if (chdir(dir.c_str()) != 0) {
    std::fprintf(stderr, "distzo_fuzz: cannot enter %s: %s\n", dir.c_str(), std::strerror(errno));
    _exit(126);
  }
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (limits.memory_mib > 0 && limits.limit_rss_by_asan) {
    const char* options = std::getenv("ASAN_OPTIONS");
    const std::string limited = std::string(options ? options : "") + (options ? ":" : "") +
                                "soft_rss_limit_mb=" + std::to_string(limits.memory_mib);
    setenv("ASAN_OPTIONS", limited.c_str(), 1);
  } else if (limits.memory_mib > 0) {
    const rlim_t bytes = static_cast<rlim_t>(limits.memory_mib) << 20;
    const rlimit address_space{bytes, bytes};
    setrlimit(RLIMIT_AS, &address_space);
  }
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  std::vector<char*> argv{const_cast<char*>(distzo.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(distzo.c_str(), argv.data());
  std::fprintf(stderr, "distzo_fuzz: cannot run %s: %s\n", distzo.c_str(), std::strerror(errno));
  _exit(127);
}

// gdb's backtrace of every thread of `pid` ("" without gdb, or when it may
// not attach): which loop a hang is stuck in, for its reproducer.
std::string backtrace_of(pid_t pid, const std::string& log_prefix, const sigset_t& parent_mask) {
  const std::string path = log_prefix + ".hang";
  const pid_t gdb = fork();
  if (gdb < 0) return "";
  if (gdb == 0) {
    sigprocmask(SIG_SETMASK, &parent_mask, nullptr);  // gdb follows its inferior through SIGCHLD
    const int out = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) _exit(126);
    const std::string target = std::to_string(pid);
    execlp("gdb", "gdb", "-batch", "-p", target.c_str(), "-ex", "thread apply all bt 40",
           static_cast<char*>(nullptr));
    _exit(127);
  }
  // gdb reads distzo's symbols in a second or two; a gdb stuck itself is not waited for.
  for (int waited_ms = 0; waited_ms < 60000; waited_ms += 20) {
    if (waitpid(gdb, nullptr, WNOHANG) == gdb) return ends_of(path);
    usleep(20000);
  }
  kill(gdb, SIGKILL);
  waitpid(gdb, nullptr, 0);
  return ends_of(path);
}

bool contains(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

bool stop_requested() { return g_stop != 0; }

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop;  // no SA_RESTART: the wait for a child wakes up
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

Outcome run_distzo(const std::string& distzo, const std::vector<std::string>& args,
                   const std::string& dir, const Limits& limits, const std::string& log_prefix) {
  // SIGCHLD stays blocked while the child runs, so sigtimedwait sees its end.
  sigset_t chld, parent_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &parent_mask);
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(limits.timeout_s));
  Outcome outcome;
  const pid_t harness = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("distzo_fuzz: fork");
    std::exit(2);
  }
  if (pid == 0) exec_child(distzo, args, dir, limits, log_prefix, parent_mask, harness);
  setpgid(pid, pid);  // also here: kill(-pid) must work even before the child ran
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    const auto now = std::chrono::steady_clock::now();
    outcome.interrupted = stop_requested();
    if (now >= deadline || outcome.interrupted) {
      outcome.timed_out = !outcome.interrupted;
      if (outcome.timed_out) outcome.hang_backtrace = backtrace_of(pid, log_prefix, parent_mask);
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    const auto left =
        std::min<std::chrono::nanoseconds>(deadline - now, std::chrono::milliseconds(100));
    const timespec wait{0, static_cast<long>(left.count())};
    sigtimedwait(&chld, nullptr, &wait);
  }
  kill(-pid, SIGKILL);  // whatever it left behind in its group
  sigprocmask(SIG_SETMASK, &parent_mask, nullptr);
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  if (WIFEXITED(status)) outcome.exit_status = WEXITSTATUS(status);
  outcome.stdout_text = ends_of(log_prefix + ".stdout");
  outcome.stderr_text = ends_of(log_prefix + ".stderr");
  return outcome;
}

std::string finding(const Outcome& o, const Limits& limits) {
  for (const char* report : {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                             "ERROR: UndefinedBehaviorSanitizer", "WARNING: ThreadSanitizer"}) {
    if (contains(o.stderr_text, report)) return std::string("sanitizer report: ") + report;
  }
  std::ostringstream why;
  if (o.timed_out) {
    why << "hang: still running after " << limits.timeout_s << " s";
  } else if (o.signal != 0) {
    why << "killed by signal " << o.signal << " (" << strsignal(o.signal) << ")";
  } else if (contains(o.stderr_text, "internal error")) {
    why << "internal error (exit status " << o.exit_status << ")";
  } else if (o.exit_status == 2 && !contains(o.stderr_text, "distzo: error")) {
    why << "exit status 2 without a \"distzo: error\" message";
  } else if ((o.exit_status == 75 || o.exit_status == 76) && !contains(o.stderr_text, "distzo")) {
    why << "exit status " << o.exit_status << " without a message from distzo";
  } else if (o.exit_status != 0 && o.exit_status != 2 && o.exit_status != 75 &&
             o.exit_status != 76) {
    why << "exit status " << o.exit_status;
  }
  return why.str();
}

}  // namespace distzo::fuzz
