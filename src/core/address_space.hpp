#pragma once
// The address-space limit (ulimit -v, RLIMIT_AS: how batch systems and users
// cap a process's memory) and what a run maps under it. Running into the limit
// mid-run does not fail cleanly everywhere: OpenBLAS retries a failed buffer
// allocation forever, UCX aborts in MPI_Init, a thread cannot be started.
// So distzo checks before it starts, and says how much it needs.

#include <optional>

namespace distzo {

/// This process's soft address-space limit in bytes; none when unlimited.
std::optional<double> address_space_limit();

/// Bytes of address space this process maps now (VmSize, /proc/self/statm);
/// 0 where the kernel does not report it.
double address_space_in_use();

/// What every thread that runs GEMMs maps at its first BLAS call, in bytes:
/// the BLAS's work buffer (OpenBLAS allocates 128 MiB + 4 KiB per calling
/// thread on x86-64, and retries forever if it cannot). The threads
/// themselves, their stacks and malloc arenas, exist before a run's check
/// (kernels::set_gemm_threads starts them) and are in address_space_in_use().
constexpr double kBlasBufferBytesPerThread = 128.0 * 1024 * 1024 + 4096;

/// What distzo maps to start at all (its libraries, MPI's and Kokkos's
/// threads) before any of a run's own buffers: 256 MiB. Below it MPI_Init
/// aborts or a thread cannot be created (measured on Debian 12's MPICH 4.0
/// with UCX: 160 MiB for an error message, 300 MiB for a tiny run).
constexpr double kAddressSpaceToStart = 256.0 * 1024 * 1024;

/// Whether `bytes` more address space can be mapped now: they are reserved
/// (PROT_NONE, no memory used) and released at once.
bool address_space_available(double bytes);

}  // namespace distzo
