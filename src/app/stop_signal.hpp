#pragma once
// SIGTERM and SIGUSR1 ask a run to stop after the current step, checkpointed
// (SLURM sends USR1 before the time limit with `--signal=USR1@SECONDS`, and
// TERM at it or on scancel/requeue). The handler only raises a flag; the
// trainer combines the flags of every rank after each step, so all stop
// after the same step. A second signal ends the process at once, with status
// 128 + the signal: the last checkpoint written stays, the temporary file of
// one being written and the lock of output.dir are removed
// (unlink_registered_files).

namespace distzo::app {

/// Installs the handlers (once per process).
void install_stop_handlers();

/// Whether this process received SIGTERM or SIGUSR1.
bool stop_signal_received();

}  // namespace distzo::app
