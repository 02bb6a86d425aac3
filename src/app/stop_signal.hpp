#pragma once
// SIGTERM and SIGUSR1 ask a run to stop after the current step, checkpointed
// (SLURM sends USR1 before the time limit with `--signal=USR1@SECONDS`, and
// TERM at it or on scancel/requeue). The handler only raises a flag; the
// trainer combines the flags of every rank after each step, so all stop
// after the same step. A second signal ends the process at once.

namespace distzo::app {

/// Installs the handlers (once per process).
void install_stop_handlers();

/// Whether this process received SIGTERM or SIGUSR1.
bool stop_signal_received();

}  // namespace distzo::app
