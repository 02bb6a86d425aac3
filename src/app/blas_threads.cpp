#include "app/blas_threads.hpp"

#include <sched.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <system_error>
#include <thread>

#include "app/memory_limit.hpp"
#include "core/error.hpp"
#include "kernels/host_gemm.hpp"

// OpenBLAS's name for the kernels it chose and its build; absent from other BLAS builds.
extern "C" char* openblas_get_corename(void) __attribute__((weak));
extern "C" char* openblas_get_config(void) __attribute__((weak));

namespace distzo::app {

namespace {

/// A warning when a DYNAMIC_ARCH OpenBLAS runs kernels older than the CPU's
/// vector units: it does not know the CPU model (OpenBLAS 0.3.21 on a KVM
/// Xeon with AVX-512 FP16 picks Prescott, SSE3) and falls back, and every
/// GEMM runs several times slower than the machine allows. "" otherwise.
std::string blas_kernel_warning() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (openblas_get_corename == nullptr || std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";
  std::string core = openblas_get_corename();
  std::transform(core.begin(), core.end(), core.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static const char* const kPreAvx2[] = {"prescott", "core2",      "penryn", "dunnington",
                                         "nehalem",  "atom",       "katmai", "northwood",
                                         "banias",   "sandybridge"};
  const bool old = std::any_of(std::begin(kPreAvx2), std::end(kPreAvx2),
                               [&](const char* name) { return core == name; });
  const bool avx512 = __builtin_cpu_supports("avx512f") != 0;
  if (!old || __builtin_cpu_supports("avx2") == 0) return "";
  return std::string("warning: OpenBLAS runs its ") + openblas_get_corename() +
         " kernels on this CPU, which has " + (avx512 ? "AVX-512" : "AVX2") +
         ": it did not recognise the CPU model and fell back, so every GEMM runs several "
         "times slower than it could (3 to 5x measured on a KVM Xeon with OpenBLAS 0.3.21). "
         "Set OPENBLAS_CORETYPE=" +
         (avx512 ? "SkylakeX" : "Haswell") +
         " in the job's environment (the digest then follows the kernels it picks)\n";
#else
  return "";
#endif
}

/// run.log's line on the BLAS kernels in use and who chose them: a float32
/// digest depends on them and on nothing else of the machine (docs/formats.md).
std::string blas_kernel_line() {
  if (openblas_get_corename == nullptr) return "BLAS: not OpenBLAS (its kernels are its own)\n";
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  std::string config = openblas_get_config != nullptr ? openblas_get_config() : "OpenBLAS";
  config = config.substr(0, config.find(' ', config.find(' ') + 1));  // "OpenBLAS 0.3.21"
  return "BLAS: " + config + ", " + openblas_get_corename() + " kernels (" +
         (forced != nullptr && *forced != '\0'
              ? std::string("chosen by OPENBLAS_CORETYPE=") + forced + " in the environment"
              : std::string("chosen by OpenBLAS for this CPU")) +
         "); θ's digest follows the kernels\n";
}

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

/// distzo's share of the cores for one rank: OPENBLAS_NUM_THREADS, else the
/// launcher's binding, else an equal share of the machine.
BlasThreads share_of_cores(int ranks_on_node) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t mask;
  const int allowed = sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : cores;
  // Bound by the launcher (srun --cpu-bind, mpiexec -bind-to): its own CPUs.
  // Unbound: an equal share of the machine.
  const bool bound = allowed < cores;
  const int from_env = env_threads("OPENBLAS_NUM_THREADS");
  BlasThreads chosen;
  chosen.threads = from_env > 0 ? from_env
                   : bound      ? allowed
                                : std::max(1, cores / std::max(1, ranks_on_node));
  chosen.path = env_path();
  chosen.why = from_env > 0 ? "OPENBLAS_NUM_THREADS"
               : bound
                   ? std::to_string(allowed) + " CPUs bound to this rank"
                   : std::to_string(cores) + " cores shared by " + std::to_string(ranks_on_node) +
                         " rank" + (ranks_on_node == 1 ? "" : "s") + " on this node";
  return chosen;
}

/// Why Kokkos has the host threads it has: set by give_kokkos_host_threads.
std::string g_kokkos_threads_why;

/// The first of Kokkos' own thread settings that is set ("" for none), in
/// the order Kokkos takes them: its argument, its variable, OpenMP's.
std::string kokkos_thread_setting(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--kokkos-num-threads", 20) == 0 ||
        std::strncmp(argv[i], "--kokkos-threads", 16) == 0)
      return argv[i];
  for (const char* name : {"KOKKOS_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0')
      return std::string(name) + "=" + v;
  return "";
}

}  // namespace

void give_kokkos_host_threads(int ranks_on_node, int argc, char** argv) {
  if (!kernels::kokkos_owns_host_threads()) return;
  // OpenMP takes a list ("4,2": nested levels); a value it cannot read it
  // reports and ignores, and run.log would name it as the count's source.
  if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp != nullptr && *omp != '\0') {
    char* end = nullptr;
    const long n = std::strtol(omp, &end, 10);
    DISTZO_INPUT_REQUIRE(n >= 1 && end != omp && (*end == '\0' || *end == ','),
                         "OMP_NUM_THREADS=" << omp
                                            << ": expected a positive thread count (Kokkos' "
                                               "OpenMP threads per rank), or unset it");
  }
  const std::string set = kokkos_thread_setting(argc, argv);
  const BlasThreads share = share_of_cores(ranks_on_node);
  // The count Kokkos will start: the number in its setting ("N" or "N,M"
  // after the '=' of `--kokkos-num-threads=N` or `NAME=N`), else the share.
  const int threads =
      set.empty() ? share.threads : std::max(1, std::atoi(set.substr(set.find('=') + 1).c_str()));
  if (const std::string shortfall = kokkos_threads_shortfall(threads); !shortfall.empty())
    DISTZO_INPUT_FAIL(shortfall);
  if (!set.empty()) {
    g_kokkos_threads_why = set;
    return;
  }
  setenv("KOKKOS_NUM_THREADS", std::to_string(share.threads).c_str(), 1);
  g_kokkos_threads_why = share.why +
                         ", given to Kokkos as KOKKOS_NUM_THREADS; OMP_NUM_THREADS, "
                         "--kokkos-num-threads" +
                         (share.why == "OPENBLAS_NUM_THREADS" ? "" : " or OPENBLAS_NUM_THREADS") +
                         " overrides";
}

BlasThreads choose_blas_threads(int ranks_on_node) {
  if (!kernels::kokkos_owns_host_threads()) {
    BlasThreads chosen = share_of_cores(ranks_on_node);
    if (chosen.why != "OPENBLAS_NUM_THREADS") chosen.why += "; OPENBLAS_NUM_THREADS overrides";
    return chosen;
  }
  BlasThreads chosen;
  chosen.threads = std::max(1, Kokkos::DefaultHostExecutionSpace().concurrency());
  chosen.path = env_path();
  chosen.why = std::string("Kokkos' ") + Kokkos::DefaultHostExecutionSpace::name() + " threads, " +
               (g_kokkos_threads_why.empty() ? "as Kokkos chose them" : g_kokkos_threads_why);
  return chosen;
}

std::string start_blas_threads(const BlasThreads& chosen) {
  try {
    kernels::set_gemm_threads(chosen.threads, chosen.path);
  } catch (const std::system_error& e) {
    // pthread_create's EAGAIN: no room for a thread's stack under the
    // address-space limit, or the process limit (ulimit -u) reached.
    DISTZO_INPUT_FAIL("cannot start " << chosen.threads << " GEMM threads (" << chosen.why
                                      << "): " << e.what() << ". Lower OPENBLAS_NUM_THREADS, or "
                                      << "raise the address-space limit (ulimit -v) or the "
                                         "process limit (ulimit -u)");
  }
  return blas_kernel_warning() + blas_kernel_line() +
         "GEMM threads: " + std::to_string(chosen.threads) + " per rank (" + chosen.why + ")\n" +
         kernels::gemm_numerics();
}

}  // namespace distzo::app
