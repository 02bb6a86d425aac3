#pragma once
// The watchdog: a job whose rank stopped (SIGSTOP), hung in a driver or
// vanished with its node would otherwise wait in a collective forever.
//
// A thread on every rank watches the time since its rank last showed
// progress: a phase of the trainer (the start and end of every step, each
// evaluation and checkpoint), a liveness tick within one, or the start of a
// collective. Every rank starts the same collectives in the same order, so
// each posts its count of them to the ProgressBoard. Past the deadline,
// rank 0 names the ranks whose count is behind its own (they never arrived
// where rank 0 waits), and those of its host whose process is stopped (a
// rank stopped inside a collective has begun it like the rest: only the
// OS can tell it apart), and aborts the job with kExitWatchdog (MPI_Abort:
// the launcher ends every rank and reports that status). The other ranks give
// rank 0 a grace period to do that and then abort themselves: rank 0 may be
// the one that stopped. The thread calls MPI for nothing else.

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/communicator.hpp"
#include "runtime/heartbeat.hpp"

namespace distzo::runtime {

/// The exit status of a job ended by the watchdog.
constexpr int kExitWatchdog = 76;

/// Whether process `pid` of this host is stopped: state T or t in
/// /proc/PID/stat (SIGSTOP, SIGTSTP, a debugger). False where /proc does not
/// say (no such process, another OS).
bool process_stopped(std::uint64_t pid);

struct WatchdogConfig {
  bool enabled = true;
  /// The deadline in seconds between two progress points; 0 = automatic:
  /// `step_factor` times the median of recent step times, at least `min_seconds`.
  double seconds = 0;
  double min_seconds = 600;
  double step_factor = 10;
  /// Where the deadline is set, for the message ("parallel.watchdog").
  std::string setting = "parallel.watchdog";
  /// A log the message is appended to as well as stderr (the run's run.log);
  /// empty: stderr only.
  std::string log_path;
};

class Watchdog final : public Heartbeat {
 public:
  /// Collective over `world` (gathers every rank's host and pid, and makes
  /// the progress board); when enabled, counts the collectives of `world`
  /// and of every communicator split from it, and starts the thread.
  Watchdog(const Communicator& world, WatchdogConfig config);
  /// Unwinding from an error of this rank alone in a job of several (the
  /// job is about to be aborted), leaves the progress board unfreed:
  /// freeing it is collective. Otherwise, close().
  ~Watchdog() override;
  /// Collective: stops watching and frees the board. Call it where every
  /// rank stops together because of an error (a CollectiveError).
  void close();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// A phase begins, the same on every rank: `what` (a string literal,
  /// "the start of step") and `step` (appended when >= 0) name it in the
  /// message that says where each rank was last seen. Kept as they are and
  /// formatted only if the watchdog fires: nothing is allocated per step.
  void phase(const char* what, std::int64_t step = -1) override;
  /// A phase that ends a step: the time between two of them feeds the
  /// automatic deadline.
  void step_finished(const char* what, std::int64_t step) override;
  /// Liveness within a long phase (an evaluation batch, a checkpoint
  /// tensor): resets this rank's clock without a progress point.
  void alive() override;

  /// The deadline now, in seconds.
  double deadline_seconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  void watch();
  void arrive();                         // a collective begins
  void fire(double idle, double limit);  // aborts the job (world_.abort)
  /// A phase, and how many collectives had begun in it.
  struct Point {
    const char* what = "the start of the run";
    std::int64_t step = -1;
    std::int64_t collective = 0;  // 0: the phase itself
  };
  static std::string describe(const Point& point);
  Point point_of(std::int64_t count) const;  // under mutex_
  std::string who(int rank) const;
  /// " Stopped (...): rank 1 (host, pid)." for those of `ranks` on this
  /// host whose process is stopped; empty when none is.
  std::string stopped_among(const std::vector<int>& ranks) const;

  WatchdogConfig config_;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  std::vector<std::uint64_t> pids_;
  std::unique_ptr<ProgressBoard> board_;

  std::atomic<Clock::rep> last_tick_;  // Clock ticks of the last progress or liveness
  mutable std::mutex mutex_;
  const Communicator& world_;
  Point phase_;                   // the current phase
  std::int64_t phase_start_ = 0;  // count_ when it began
  std::int64_t count_ = 0;        // collectives begun
  std::vector<Point> recent_;     // where the last kRecent ones were, by count % kRecent
  static constexpr std::size_t kRecentSteps = 64;
  // The last kRecentSteps step intervals, a ring of which min(steps_seen_,
  // kRecentSteps) are filled. A fixed array: the watching thread copies it
  // and must not allocate (a thread's first malloc maps a 64 MiB arena,
  // address space the run's limit check cannot see coming).
  std::array<double, kRecentSteps> step_seconds_{};
  std::size_t steps_seen_ = 0;
  Clock::time_point last_step_end_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
  bool closed_ = false;
  void stop_thread();
};

}  // namespace distzo::runtime
