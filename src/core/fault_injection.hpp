#pragma once
// Faults a test injects into a run to show that a guard catches them (the
// way LLVM and SQLite arm fault-injection points): one set per process,
// armed by the application (`distzo run --debug-...`) or by a test, read
// where the fault happens. Nothing is armed in a normal run, and no
// production type carries a test switch.

namespace distzo::fault {

struct Injection {
  /// This world rank overwrites one element of θ before each replica check
  /// (the run's trainer hook calls runtime::corrupt_one_element): in its own
  /// θ, or, with a node-shared master, in the next rank's slice (a stray
  /// write). The divergence and slice guards must stop the run. -1: none.
  int corrupt_theta_rank = -1;
  /// `distzo run` fills every device slot of its streamer with NaN as it
  /// is released (runtime::poison_released_slots), so a read after release
  /// shows up as a non-finite loss.
  bool poison_released_slots = false;
  /// After this step the rank stops making progress, as in a library call
  /// that never returns, and an exit handler that waits forever is
  /// registered, as OpenBLAS's waits for its stuck thread: the watchdog must
  /// still end the process. -1: none.
  long long hang_after_step = -1;
  /// Each tensor (or slice) of a checkpoint is written this many
  /// milliseconds late, so that a test can signal the run while the
  /// temporary checkpoint file exists. 0: none.
  int slow_checkpoint_ms = 0;
};

/// The faults armed in this process (none unless inject() was called).
const Injection& injected();
/// Arms `faults` for this process, replacing what was armed.
void inject(const Injection& faults);

/// Arms `faults` for the lifetime of the guard (tests), then restores what
/// was armed before.
class ScopedInjection {
 public:
  explicit ScopedInjection(const Injection& faults) : saved_(injected()) { inject(faults); }
  ~ScopedInjection() { inject(saved_); }
  ScopedInjection(const ScopedInjection&) = delete;
  ScopedInjection& operator=(const ScopedInjection&) = delete;

 private:
  Injection saved_;
};

}  // namespace distzo::fault
