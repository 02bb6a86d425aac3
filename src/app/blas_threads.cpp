#include "app/blas_threads.hpp"

#include <algorithm>
#include <cstdlib>
#include <sched.h>
#include <thread>

// OpenBLAS's own setter; absent (null) when the BLAS is another library.
extern "C" void openblas_set_num_threads(int threads) __attribute__((weak));

namespace distzo::app {

std::string set_blas_threads(int ranks_on_node) {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr || openblas_set_num_threads == nullptr)
    return "";
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t mask;
  const int allowed = sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : cores;
  // Bound by the launcher (srun --cpu-bind, mpiexec -bind-to): its own CPUs.
  // Unbound: an equal share of the machine.
  const bool bound = allowed < cores;
  const int threads = bound ? allowed : std::max(1, cores / std::max(1, ranks_on_node));
  openblas_set_num_threads(threads);
  return "BLAS threads: " + std::to_string(threads) + " per rank (" +
         (bound ? std::to_string(allowed) + " CPUs bound to this rank"
                : std::to_string(cores) + " cores shared by " + std::to_string(ranks_on_node) +
                      " rank" + (ranks_on_node == 1 ? "" : "s") + " on this node") +
         "; OPENBLAS_NUM_THREADS overrides)";
}

}  // namespace distzo::app
