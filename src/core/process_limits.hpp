#pragma once
// The process limits a run can meet before it has started: the address-space
// limit (ulimit -v, RLIMIT_AS: how batch systems and users cap a process's
// memory) and the open-files limit (ulimit -n). Running into either mid-run
// does not fail cleanly everywhere: OpenBLAS retries a failed buffer
// allocation forever, UCX aborts or fails in MPI_Init, a thread cannot be
// started. So distzo checks before it starts, and says what it needs.

#include <optional>
#include <string>

namespace distzo {

/// Files distzo may hold open at once: MPI's transport (UCX takes about 16),
/// the model, datasets and checkpoint, the run's logs and lock, a margin.
constexpr long kOpenFilesNeeded = 64;

/// Raises the soft open-files limit to the hard one (at most 1024; an
/// unprivileged process may) when it is below kOpenFilesNeeded. Nothing when
/// that gives enough, else the message that the limit is too small.
std::string raise_open_files_limit();

/// This process's soft address-space limit in bytes; none when unlimited.
std::optional<double> address_space_limit();

/// Bytes of address space this process maps now (VmSize, /proc/self/statm);
/// 0 where the kernel does not report it.
double address_space_in_use();

/// What every thread that runs GEMMs maps at its first BLAS call, in bytes:
/// the BLAS's work buffer (OpenBLAS allocates 128 MiB + 4 KiB per calling
/// thread on x86-64, its build's BUFFER_SIZE, and retries forever if it
/// cannot). The threads' stacks come on top (thread_stack_bytes).
constexpr double kBlasBufferBytesPerThread = 128.0 * 1024 * 1024 + 4096;

/// The address space a thread started now maps for its stack and guard
/// page, in bytes: the default of this process's threads (glibc takes it
/// from ulimit -s; 8 MiB on most systems).
double thread_stack_bytes();

/// Whether `bytes` more address space can be mapped now: they are reserved
/// (PROT_NONE, no memory used) and released at once.
bool address_space_available(double bytes);

}  // namespace distzo
