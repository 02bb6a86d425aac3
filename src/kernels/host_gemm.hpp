#pragma once
// The host GEMM whose bits do not depend on the thread count (DESIGN.md
// invariant 6).
//
// A multi-threaded BLAS splits a GEMM differently per thread count, and the
// split changes the order of the floating-point operations: OpenBLAS 0.3.21
// at 1 and 2 threads gives different bits on an AVX-512 EPYC for 1000x999x777
// and, at 192x200, for most inner dimensions from 321 on (not for 768 or
// 3072, OPT-125m's), and on an AVX2 Zen EPYC for the model's shapes. Even one
// thread gives different bits for an element depending on the shape of the
// call it sits in (small-matrix and edge kernels: 16x16 or 7x5 pieces of a
// product differ from the whole). So on host execution spaces distzo fixes
// the decomposition itself: C is cut into tiles whose shape is a pure
// function of (m, n, k) and constants (gemm_tile_shape), never of the thread
// count; each tile is computed over the full inner dimension by one
// single-threaded BLAS call; the tiles are spread over distzo's own threads.
// Whatever the thread count, every element of C comes out of the same call
// (same shape, same operands, same position in it), hence the same bits.
// The BLAS itself is kept single-threaded (OpenBLAS: openblas_set_num_threads(1))
// so that nothing else splits the work.
//
// CUDA and the other device backends keep cuBLAS (or the vendor library)
// through KokkosBlas::gemm; their bits may differ from the host's.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/types.hpp"

namespace distzo::kernels {

/// The tiles of one GEMM: C is cut in two along one side (m in two halves,
/// or n when n >= gemm_wide_ratio * m: the LM head), each half a multiple of
/// gemm_tile_align rows or columns; a side shorter than gemm_min_split, or a
/// GEMM of fewer than gemm_min_split_macs multiply-adds (the per-head
/// products of attention: two calls cost more than one), stays whole. Constants, never a function
/// of the thread count: changing them changes the bits of GEMMs (and so the digests quoted for such
/// models).
///
/// Why only two: every tile packs its panels of A and B again, and that
/// costs. Measured on an AVX-512 AMD EPYC (OpenBLAS 0.3.21, Cooperlake
/// kernels, 1 thread, CPU time, OPT-125m's shapes at 1024 tokens), against
/// one call: fixed 256 x 256 tiles +8 to +17 %; 512 x 1024 (the LM head in
/// 100 tiles) +2 to +15 %; two halves of m +1 to +2 % for the blocks'
/// GEMMs, +4.7 % for the LM head, whose two halves of n cost +1.2 %. The
/// price: one GEMM runs on at most two threads; more cores per node are
/// better used by more ranks (P, D), which leave the digest as it is.
inline constexpr std::size_t gemm_tile_pieces = 2;
inline constexpr std::size_t gemm_wide_ratio = 8;
inline constexpr std::size_t gemm_min_split = 64;
inline constexpr double gemm_min_split_macs = 4.0 * 1024 * 1024;
inline constexpr std::size_t gemm_tile_align = 16;

/// The tile of an m x n C with inner dimension k (rows, cols); the last
/// tile holds what is left.
struct GemmTile {
  std::size_t rows, cols;
};
GemmTile gemm_tile_shape(std::size_t m, std::size_t n, std::size_t k);

/// How gemm computes on host execution spaces.
enum class GemmPath {
  /// Fixed tiles, single-threaded BLAS per tile, spread over gemm_threads()
  /// threads: the bits depend on neither the thread count nor the placement.
  tiled,
  /// One BLAS call with the BLAS's own threads (the path before the tiles,
  /// kept to measure against): the bits may change with the thread count.
  library,
};

/// Sets the threads of the host GEMM (at least 1) and the path. With `tiled`,
/// the tiles and tasks go to `threads` threads (the caller's included) and the
/// BLAS is made single-threaded: distzo's own pool of threads under a Serial
/// Kokkos host backend, Kokkos' own threads (OpenMP, Threads) otherwise, so
/// that one set of threads owns the host cores (kokkos_owns_host_threads); with `library`, the BLAS
/// is given `threads` (OpenBLAS only: another BLAS keeps its own setting). Not thread-safe: call it
/// between GEMMs, from the thread that runs them. Until it is called the host GEMM is tiled on 1
/// thread. When the system refuses a thread (std::system_error: no room for its stack) the pool
/// keeps one and the setting is unchanged.
void set_gemm_threads(int threads, GemmPath path = GemmPath::tiled);

/// The values last set (1 and tiled by default).
int gemm_threads();
GemmPath gemm_path();

/// Whether Kokkos' host execution space runs threads of its own (OpenMP,
/// Threads, HPX, not Serial): then distzo's host tasks and tiles run on them
/// and distzo starts no thread of its own for them. Their number is Kokkos'
/// (fixed when Kokkos starts: app/blas_threads.hpp chooses it).
bool kokkos_owns_host_threads();

/// Whether the tiled host path is compiled in (Kokkos Kernels with a host
/// BLAS TPL). Without one, gemm uses the native Kokkos Kernels gemm on one
/// call, and on a host backend its bits are whatever that gives.
bool host_tiled_gemm_available();

/// One line for run.log: the path, the tile, the threads, and what may change
/// the bits.
std::string gemm_numerics();

/// fn(context, task) once for every task < tasks, spread over the host
/// GEMM's threads (gemm_threads(), the caller's included): for work made of
/// whole GEMMs and what lies between them (attention's (batch row, key/value
/// head) pairs). A GEMM inside a task runs on its task's thread alone, with
/// the same calls as on one thread, so tasks give the same bits at any thread
/// count as long as each writes only its own outputs. Runs the tasks in order
/// on the caller when there is one task, one thread, inside a task, or while
/// another host thread's GEMM holds the pool. Host memory only; no Kokkos
/// dispatch inside a task (host_parallel_tasks and GEMMs inside one run on
/// its thread alone).
using HostTaskFn = void (*)(const void* context, std::int64_t task);
void host_parallel_tasks(std::int64_t tasks, HostTaskFn fn, const void* context);

/// C = alpha * op(A) * op(B) + beta * C on host memory, row-major with
/// leading dimensions (elements between rows; >= the row length). op(A) is
/// m x k, op(B) is k x n, k >= 1. C must not alias A or B. beta == 0
/// overwrites C without reading it. The tiled path of gemm; throws
/// distzo::Error when host_tiled_gemm_available() is false. Several host
/// threads may call it at once: one uses the pool, the others compute their
/// tiles alone (the same calls, so the same bits).
void host_tiled_gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                     real alpha, const real* a, std::size_t lda, const real* b, std::size_t ldb,
                     real beta, real* c, std::size_t ldc);

}  // namespace distzo::kernels
