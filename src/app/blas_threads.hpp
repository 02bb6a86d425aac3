#pragma once
// BLAS threads per rank. OpenBLAS starts as many threads as the machine has
// cores in every process, so R ranks on one node run R x cores threads and
// slow each other down (a P=2 demo ran 2-4x slower than with one thread per
// rank). Unless the user set OPENBLAS_NUM_THREADS, distzo gives each rank
// its share of the cores it may run on.

#include <string>

namespace distzo::app {

/// Sets OpenBLAS's thread count for this rank, given the ranks on its node:
/// the CPUs of its affinity mask when the launcher bound it to some, else the
/// machine's cores divided by the ranks on the node, at least 1. Returns the
/// line for run.log, empty when nothing was changed (OPENBLAS_NUM_THREADS set,
/// or the BLAS is not OpenBLAS).
std::string set_blas_threads(int ranks_on_node);

}  // namespace distzo::app
