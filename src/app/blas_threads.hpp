#pragma once
// GEMM threads per rank: the one place that decides them. OpenBLAS starts as
// many threads as the machine has cores in every process, so R ranks on one
// node would run R x cores threads and slow each other down (a P=2 demo ran
// 2-4x slower than with one thread per rank). distzo gives each rank its
// share of the cores it may run on, for its own tiled host GEMM
// (kernels/host_gemm.hpp: the bits do not depend on the count), and keeps
// OpenBLAS itself on one thread. Under a parallel Kokkos host backend
// (OpenMP) Kokkos' threads are the rank's only host threads: distzo's own
// would compete with them for the cores (3x slower measured), so distzo sizes
// Kokkos' before it starts and runs its tiles and tasks on them.

#include <string>

#include "kernels/host_gemm.hpp"

namespace distzo::app {

/// The host GEMM's threads for this rank, chosen but not started.
struct BlasThreads {
  int threads = 1;
  kernels::GemmPath path = kernels::GemmPath::tiled;
  std::string why;  // "OPENBLAS_NUM_THREADS", "2 cores shared by 1 rank on this node", ...
};

/// The threads for this rank, given the ranks on its node. Under a parallel
/// Kokkos host backend: Kokkos' threads (give_kokkos_host_threads chose them).
/// Else:
/// OPENBLAS_NUM_THREADS when set (a positive integer), else the CPUs of the
/// affinity mask when the launcher bound the rank to some, else the machine's
/// cores divided by the ranks on the node, at least 1. DISTZO_GEMM=library
/// (default: tiled) gives the threads to the BLAS instead, one call per GEMM,
/// the path before the tiles (its bits may depend on the thread count).
/// Starts nothing: a run checks its memory (the threads' stacks and BLAS
/// buffers included) first. Throws distzo::Error (naming the variable) for a
/// malformed value.
BlasThreads choose_blas_threads(int ranks_on_node);

/// Under a parallel Kokkos host backend (kernels::kokkos_owns_host_threads),
/// before Kokkos starts: the threads Kokkos will run, which are all of the
/// rank's host threads. Kokkos' own setting when one is given
/// (--kokkos-num-threads, KOKKOS_NUM_THREADS, OMP_NUM_THREADS), else the
/// share choose_blas_threads gives under Serial Kokkos, set as
/// KOKKOS_NUM_THREADS (OpenMP's default, every core for every rank, would
/// oversubscribe a node of several ranks). Does nothing under Serial Kokkos.
void give_kokkos_host_threads(int ranks_on_node, int argc, char** argv);

/// Starts the chosen threads. Returns the lines for run.log: a warning when
/// OpenBLAS fell back to kernels older than the CPU (and what to set), the
/// BLAS kernels in use and whether the environment chose them, the threads
/// and why, then the numerics contract. A thread the system refuses
/// (an address-space or process limit) is an input error that says which.
std::string start_blas_threads(const BlasThreads& chosen);

}  // namespace distzo::app
