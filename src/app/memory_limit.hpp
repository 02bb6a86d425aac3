#pragma once
// Refusing a run that its address-space limit (ulimit -v) cannot hold, before
// it allocates anything or starts its threads: past the limit OpenBLAS
// retries a failed buffer allocation forever and threads fail to start
// (core/process_limits.hpp).

#include <string>

#include "app/plan.hpp"

namespace distzo::app {

/// Nothing when the process has no address-space limit or the run fits in
/// it; else why not and what it needs: the bytes in use now, the plan's
/// (`plan`, this rank's), `gemm_threads` BLAS work buffers and the stacks
/// of the threads not started yet (choose_blas_threads: they start after
/// the check), the stack of the watchdog's thread when `starts_watchdog` (it starts
/// after the check), and a margin, against the limit. `deck_path` goes
/// into the advice.
std::string address_space_shortfall(const MemoryPlan& plan, int gemm_threads, bool starts_watchdog,
                                    const std::string& deck_path);

/// Nothing when the BLAS work buffers and stacks of `gemm_threads` threads
/// (and the margin) still fit under the address-space limit, else the message: the
/// check of a command whose other buffers are allocated (`distzo forward`).
std::string blas_buffers_shortfall(int gemm_threads);

/// Nothing when the stacks of `threads` Kokkos host threads (all but the
/// caller's) and the margin fit under the address-space limit, else the
/// message: checked before an OpenMP Kokkos starts them, since OpenMP ends the
/// process (exit 1, "Thread creation failed") when one does not start.
std::string kokkos_threads_shortfall(int threads);

/// Nothing when the process has no address-space limit or a margin (64
/// MiB) of it is still unmapped, else the message: checked before a command
/// reads its inputs (`files`, "the model and the datasets"), since HDF5 1.10
/// dereferences an allocation that failed in H5Fopen (a SIGSEGV, seen with
/// MPI started just under the limit). Every command needs this margin and
/// more later (address_space_shortfall, blas_buffers_shortfall), so none
/// that would fit is refused; `more` says so in the message.
std::string reading_shortfall(const std::string& files, const std::string& more);

/// For an error `what` raised under an address-space limit that leaves less
/// than a margin (64 MiB) unmapped: a sentence saying that the limit is the
/// likely cause (a library's allocation failed: HDF5 reports a failed read,
/// not a failed malloc) and the limit to ask for at the least. Empty
/// otherwise, and when `what` is already about the limit (the run's own
/// check: its advice is the one to follow).
std::string address_space_exhausted_note(const std::string& what);

}  // namespace distzo::app
