#pragma once
// Signals that stop a run. The first asks it to stop after the current step,
// checkpointed:
//
//   SIGTERM, SIGUSR1  exit 75 (kExitStopped), which the job script requeues
//                     on (SLURM sends USR1 before the time limit with
//                     `--signal=USR1@SECONDS`, and TERM at it or on
//                     scancel/requeue);
//   SIGINT            exit 130 (kExitInterrupted: Ctrl-C, no requeue).
//                     mpiexec (MPICH Hydra) forwards the first SIGINT to
//                     every rank, which run in sessions of their own (a
//                     terminal's Ctrl-C reaches them only through mpiexec);
//                     a job of several ranks ends with MPI_Abort(130), the
//                     status Hydra then exits with (main.cpp says why).
//                     A run that starts with SIGINT ignored (a background
//                     command of a non-interactive shell) leaves it ignored.
//
// The handler only records the reason; the trainer combines the reasons of
// every rank after each step, so all stop after the same step. A second
// signal ends the process at once, with status 128 + the signal: the last
// checkpoint written stays, the temporary file of one being written and the
// lock of output.dir are removed (unlink_registered_files). mpiexec does not
// forward a second SIGINT: it kills the ranks (SIGKILL) and exits 255; the
// next run in output.dir takes over the dead run's lock and removes its
// temporary checkpoint.

#include "core/error.hpp"

namespace distzo::app {

/// Installs the handlers (once per process); with `announce` (rank 0) the
/// first signal is acknowledged on stderr at once.
void install_stop_handlers(bool announce);

/// Why this process was asked to stop (none: no signal).
StopReason stop_signal_received();

}  // namespace distzo::app
