#pragma once
// The faults `distzo run --debug-...` installs so that the command-line
// tests can show a guard catching them (tests/cli: mesh.sh, placement.sh,
// watchdog.sh, signals.sh, write_faults.sh), the way LLVM and SQLite arm
// fault-injection points from the application. The run installs each through
// a seam — its streamer's on_release work, its trainer hooks — so no type
// below app/ carries a switch for them; a normal run installs none.

namespace distzo::app {

struct RunFaults {
  /// This world rank overwrites one element of θ before each replica check
  /// (runtime::corrupt_one_element): in its own θ, or, with a node-shared
  /// master, in the next rank's slice (a stray write). The divergence and
  /// slice guards must stop the run. -1: none.
  int corrupt_theta_rank = -1;
  /// Every device slot of the run's streamer is filled with NaN as it is
  /// released (runtime::poison_released_slots), so a read after release
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

}  // namespace distzo::app
