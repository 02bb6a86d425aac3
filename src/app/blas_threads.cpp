#include "app/blas_threads.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "kernels/host_gemm.hpp"

namespace distzo::app {

namespace {

/// A positive thread count from the environment, 0 when unset.
int env_threads(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  DISTZO_INPUT_REQUIRE(*end == '\0' && n >= 1 && n <= 1024,
                       name << "=" << v << ": expected a thread count from 1 to 1024");
  return static_cast<int>(n);
}

kernels::GemmPath env_path() {
  const char* v = std::getenv("DISTZO_GEMM");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "tiled") == 0) return kernels::GemmPath::tiled;
  DISTZO_INPUT_REQUIRE(std::strcmp(v, "library") == 0,
                       "DISTZO_GEMM=" << v << ": expected tiled (the default) or library");
  return kernels::GemmPath::library;
}

}  // namespace

std::string set_blas_threads(int ranks_on_node) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t mask;
  const int allowed = sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : cores;
  // Bound by the launcher (srun --cpu-bind, mpiexec -bind-to): its own CPUs.
  // Unbound: an equal share of the machine.
  const bool bound = allowed < cores;
  const int from_env = env_threads("OPENBLAS_NUM_THREADS");
  const int threads = from_env > 0 ? from_env
                      : bound      ? allowed
                                   : std::max(1, cores / std::max(1, ranks_on_node));
  kernels::set_gemm_threads(threads, env_path());
  const std::string why = from_env > 0 ? "OPENBLAS_NUM_THREADS"
                          : bound      ? std::to_string(allowed) + " CPUs bound to this rank"
                                       : std::to_string(cores) + " cores shared by " +
                                        std::to_string(ranks_on_node) + " rank" +
                                        (ranks_on_node == 1 ? "" : "s") + " on this node";
  return "GEMM threads: " + std::to_string(threads) + " per rank (" + why +
         (from_env > 0 ? "" : "; OPENBLAS_NUM_THREADS overrides") + ")\n" +
         kernels::gemm_numerics();
}

}  // namespace distzo::app
