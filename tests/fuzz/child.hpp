#pragma once
// One distzo process under the harness's limits, and what its end means.

#include <cstdint>
#include <string>
#include <vector>

namespace distzo::fuzz {

struct Limits {
  double timeout_s = 20;         // longer is a hang
  std::uint64_t memory_mib = 0;  // the process's memory; 0 = no limit
  // How memory_mib is enforced: RLIMIT_AS, or for a distzo built with
  // AddressSanitizer (whose shadow memory reserves terabytes of address
  // space) ASan's soft_rss_limit_mb, past which allocations fail.
  bool limit_rss_by_asan = false;
};

struct Outcome {
  bool timed_out = false;
  bool interrupted = false;  // the harness was asked to stop (SIGINT, SIGTERM) while it ran
  int signal = 0;            // the signal that ended it; 0 when it exited
  int exit_status = 0;
  double seconds = 0;
  std::string stdout_text, stderr_text;  // their first 64 KiB and last 192 KiB each
  std::string hang_backtrace;  // where a hung process was: gdb's backtrace of every thread
};

/// Runs `distzo args...` in `dir`, in a process group of its own (a hang is
/// killed whole, MPI helpers included) with stdin from /dev/null, one BLAS
/// and OpenMP thread, no core file and `limits`. stdout and stderr go through
/// `log_prefix`.stdout / .stderr. A process that outlives the timeout is
/// shown to gdb (where there is one) before it is killed.
Outcome run_distzo(const std::string& distzo, const std::vector<std::string>& args,
                   const std::string& dir, const Limits& limits, const std::string& log_prefix);

/// Why `outcome` is a finding, or "" when distzo behaved: it exited 0, or 2
/// with its "distzo: error" message (src/app/main.cpp), or 75 (stopped) or 76
/// (watchdog) with a message. Findings: a sanitizer report, a hang, a death
/// by signal, "internal error" (exit status 3), any other exit status.
std::string finding(const Outcome& outcome, const Limits& limits);

/// Set by SIGINT and SIGTERM (install_stop_handlers): finish up, report, exit.
bool stop_requested();
void install_stop_handlers();

}  // namespace distzo::fuzz
