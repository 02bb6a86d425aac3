#include "app/memory_limit.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <type_traits>

#include "app/format.hpp"
#include "core/process_limits.hpp"
#include "core/types.hpp"
#include "kernels/host_gemm.hpp"

namespace distzo::app {

namespace {
/// HDF5's and the datasets' buffers, MPI's, the evaluation's: what the plan
/// does not itemise.
constexpr double kMarginBytes = 64.0 * 1024 * 1024;

/// "ulimit -v 1048576 (1 GiB)": the setting as the shell takes it, in KiB.
std::string ulimit_setting(double bytes) {
  std::ostringstream s;
  s << "ulimit -v " << static_cast<long long>((bytes + 1023) / 1024) << " (" << human_bytes(bytes)
    << ")";
  return s.str();
}

/// The limit to ask for: `needed` rounded up to a multiple of 16 MiB, and
/// 16 MiB more for the pages by which another start of the same run maps more
/// (the environment, where the stacks land).
double advised_limit(double needed) {
  constexpr double kStep = 16.0 * 1024 * 1024;
  return std::ceil(needed / kStep) * kStep + kStep;
}

/// The variable that sets a rank's GEMM threads: OpenMP's under a parallel
/// Kokkos host backend, whose threads they are (app/blas_threads.hpp).
const char* fewer_threads_setting() {
  return kernels::kokkos_owns_host_threads() ? "OMP_NUM_THREADS=1" : "OPENBLAS_NUM_THREADS=1";
}

/// What `threads` GEMM threads map once started: a BLAS work buffer each,
/// and a stack each but the calling thread's (they start after the check).
double gemm_threads_bytes(int threads) {
  return threads * kBlasBufferBytesPerThread + (threads - 1) * thread_stack_bytes();
}
}  // namespace

std::string address_space_shortfall(const MemoryPlan& plan, int gemm_threads, bool starts_watchdog,
                                    const std::string& deck_path) {
  const std::optional<double> limit = address_space_limit();
  if (!limit) return "";
  // On host backends the "device" buffers are host memory too.
  constexpr bool device_is_host = std::is_same<MemSpace, Kokkos::HostSpace>::value;
  const double buffers = static_cast<double>(plan.host_master) +
                         (device_is_host ? static_cast<double>(plan.device_total()) : 0.0);
  const double threads = gemm_threads_bytes(gemm_threads);
  const double stacks = starts_watchdog ? thread_stack_bytes() : 0.0;
  const double in_use = address_space_in_use();
  const double more = buffers + threads + stacks + kMarginBytes;
  const double needed = in_use + more;
  if (needed <= *limit && address_space_available(more)) return "";
  std::ostringstream s;
  s << "the address-space limit of this process is " << ulimit_setting(*limit)
    << ", too small for this run: it needs about " << human_bytes(needed) << " = "
    << human_bytes(in_use) << " mapped now (libraries, MPI, the datasets) + "
    << human_bytes(buffers) << " for θ and the run's buffers (`distzo plan " << deck_path << "`) + "
    << human_bytes(threads) << " for its " << gemm_threads
    << " GEMM thread(s) (a BLAS work buffer each, a stack each but the first) + ";
  if (starts_watchdog) s << human_bytes(stacks) << " for the stack of its watchdog's thread + ";
  s << human_bytes(kMarginBytes) << " of margin. Raise the limit to at least "
    << ulimit_setting(advised_limit(needed))
    << " (the need rounded up, with 16 MiB to spare; or the batch system's memory request)";
  if (gemm_threads > 1)
    s << ", or run fewer GEMM threads (" << fewer_threads_setting() << " saves at least "
      << human_bytes(kBlasBufferBytesPerThread) << " per thread)";
  return s.str();
}

std::string blas_buffers_shortfall(int gemm_threads) {
  const std::optional<double> limit = address_space_limit();
  const double threads = gemm_threads_bytes(gemm_threads);
  if (!limit || address_space_available(threads + kMarginBytes)) return "";
  const double needed = address_space_in_use() + threads + kMarginBytes;
  std::ostringstream s;
  s << "the address-space limit of this process is " << ulimit_setting(*limit) << ": with "
    << human_bytes(address_space_in_use()) << " mapped (the model and its buffers), the BLAS work "
    << "buffers and stacks of its " << gemm_threads << " GEMM thread(s) (" << human_bytes(threads)
    << ") and a margin of " << human_bytes(kMarginBytes) << " do not fit. Raise the limit to at "
    << "least " << ulimit_setting(advised_limit(needed)) << ", or run fewer GEMM threads ("
    << fewer_threads_setting() << ")";
  return s.str();
}

std::string kokkos_threads_shortfall(int threads) {
  const std::optional<double> limit = address_space_limit();
  const double stacks = (threads - 1) * thread_stack_bytes();
  if (!limit || threads <= 1 || address_space_available(stacks + kMarginBytes)) return "";
  const double needed = address_space_in_use() + stacks + kMarginBytes;
  std::ostringstream s;
  s << "the address-space limit of this process is " << ulimit_setting(*limit) << ": with "
    << human_bytes(address_space_in_use()) << " mapped, the stacks of Kokkos' " << threads
    << " OpenMP threads (" << human_bytes(stacks) << ") and a margin of "
    << human_bytes(kMarginBytes) << " do not fit. Raise the limit to at least "
    << ulimit_setting(advised_limit(needed)) << ", or run fewer threads ("
    << fewer_threads_setting() << ")";
  return s.str();
}

std::string reading_shortfall(const std::string& files, const std::string& more) {
  const std::optional<double> limit = address_space_limit();
  if (!limit || address_space_available(kMarginBytes)) return "";
  const double in_use = address_space_in_use();
  std::ostringstream s;
  s << "the address-space limit of this process is " << ulimit_setting(*limit) << ": with "
    << human_bytes(in_use) << " mapped (the libraries, MPI), less than "
    << human_bytes(kMarginBytes) << " is left to read " << files
    << " in (HDF5 dies of SIGSEGV when an allocation fails while it opens a file). Raise the "
       "limit to at least "
    << ulimit_setting(advised_limit(in_use + kMarginBytes)) << "; " << more;
  return s.str();
}

std::string address_space_exhausted_note(const std::string& what) {
  const std::optional<double> limit = address_space_limit();
  if (!limit || what.find("address-space limit") != std::string::npos ||
      address_space_available(kMarginBytes))
    return "";
  const double needed = std::max(*limit, address_space_in_use()) + kMarginBytes;
  return " (the address-space limit of this process is " + ulimit_setting(*limit) +
         " and less than " + human_bytes(kMarginBytes) +
         " of it is left unmapped: the likely "
         "cause. Raise the limit to at least " +
         ulimit_setting(advised_limit(needed)) + "; `distzo plan DECK` predicts what a run needs)";
}

}  // namespace distzo::app
