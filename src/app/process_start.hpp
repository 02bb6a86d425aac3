#pragma once
// What the `distzo` executable does before its runtime exists: keep
// OpenBLAS's own threads from spinning under an address-space limit, and
// start MPI so that a failure under such a limit ends as distzo's own
// refusal, not a foreign abort.

namespace distzo::app {

/// Under an address-space limit (ulimit -v), makes sure OpenBLAS runs no
/// thread of its own: its library constructor starts one per core (or
/// OPENBLAS_NUM_THREADS), and each allocates its 128 MiB work buffer at
/// once, retrying forever when the limit refuses it. Such a spinning thread
/// made MPI's start abort on one CPU and the next fork() hang on another
/// (OpenBLAS's fork handler waits for its threads), at limits that depended
/// on which thread won the race. So when OpenBLAS started threads under a
/// limit, the process executes itself again (execve ends every thread) with
/// OPENBLAS_NUM_THREADS=1 for the library, and the re-executed process gives
/// the variable back its value before distzo reads it. distzo computes its
/// GEMMs on threads of its own (kernels/host_gemm.hpp), started after the
/// run's memory check, and gives OpenBLAS threads only when asked
/// (DISTZO_GEMM=library), after that check too. Without a limit nothing
/// happens (no allocation of theirs can fail). Call first in main().
void hold_blas_to_one_thread(char** argv);

/// MPI_Init. Under an address-space limit, MPI's transport can fail to map
/// what it needs and abort (UCX: an assertion, SIGABRT) or exit with its own
/// message: then the process ends with status 2 and distzo's message naming
/// the limit, what was mapped, the limit to ask for and what MPI said.
/// Without a limit it is MPI_Init and nothing else.
void start_mpi(int* argc, char*** argv);

}  // namespace distzo::app
