#include "kernels/host_gemm.hpp"

#include <KokkosKernels_config.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/error.hpp"

#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#include <KokkosBlas_Host_tpl.hpp>
#define DISTZO_HOST_BLAS 1
#else
#define DISTZO_HOST_BLAS 0
#endif

// OpenBLAS's own thread setter; null when the BLAS is another library.
extern "C" void openblas_set_num_threads(int threads) __attribute__((weak));

namespace distzo::kernels {

namespace {

/// A persistent pool: threads() - 1 workers and the calling thread take the
/// tiles of one GEMM (or the tasks of host_parallel_tasks) from a shared
/// counter. Idle workers spin for a short
/// while (GEMMs come in bursts: a block's projections, the heads of
/// attention) and then sleep on a condition variable.
class TilePool {
 public:
  using TileFn = HostTaskFn;

  ~TilePool() { resize(1); }

  void resize(int threads) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
    stop_.store(false, std::memory_order_release);
    // Each worker starts from the generation before its first GEMM: reading
    // it in the new thread could see that GEMM already posted and miss it.
    const std::uint64_t now = generation_.load(std::memory_order_acquire);
    try {
      for (int w = 1; w < threads; ++w) workers_.emplace_back([this, now] { work(now); });
    } catch (const std::system_error&) {
      resize(1);  // the system refused a thread: none of the new ones stays
      throw;
    }
  }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  /// fn(context, t) for every t < tiles, on every thread of the pool; returns
  /// true when all are done (their writes visible to the caller), false
  /// without doing anything when another host thread's GEMM holds the pool
  /// (the caller then computes its tiles alone: the same calls, the same bits).
  bool try_run(std::int64_t tiles, TileFn fn, const void* context) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    run(tiles, fn, context);
    busy_.store(false, std::memory_order_release);
    return true;
  }

 private:
  void run(std::int64_t tiles, TileFn fn, const void* context) {
    const int workers = static_cast<int>(workers_.size());
    bool notify = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = fn;
      context_ = context;
      tiles_ = tiles;
      next_.store(0, std::memory_order_relaxed);
      finished_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      notify = sleeping_ > 0;
    }
    if (notify) wake_.notify_all();
    take_tiles(fn, context, tiles);
    for (unsigned spin = 1; finished_.load(std::memory_order_acquire) < workers; ++spin)
      relax(spin);
  }

  /// One turn of a spin-wait: a pause, and every 64th turn the CPU to
  /// whoever else needs it (ranks and threads may outnumber the cores).
  static void relax(unsigned spin) {
    if (spin % 64 == 0) {
      std::this_thread::yield();
      return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  void take_tiles(TileFn fn, const void* context, std::int64_t tiles) {
    for (std::int64_t t = next_.fetch_add(1, std::memory_order_relaxed); t < tiles;
         t = next_.fetch_add(1, std::memory_order_relaxed))
      fn(context, t);
  }

  void work(std::uint64_t seen) {
    for (;;) {
      if (!wait_for_job(seen)) return;
      seen = generation_.load(std::memory_order_acquire);
      take_tiles(fn_, context_, tiles_);
      finished_.fetch_add(1, std::memory_order_release);
    }
  }

  /// Waits until a GEMM newer than `seen` is posted (true) or the pool stops.
  bool wait_for_job(std::uint64_t seen) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    for (unsigned spin = 1;; ++spin) {
      if (stop_.load(std::memory_order_acquire)) return false;
      if (generation_.load(std::memory_order_acquire) != seen) return true;
      if (spin % 64 == 0 && std::chrono::steady_clock::now() > until) break;
      relax(spin);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    ++sleeping_;
    wake_.wait(lock, [&] {
      return stop_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen;
    });
    --sleeping_;
    return !stop_.load(std::memory_order_acquire);
  }

  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // a GEMM is using the pool
  std::mutex mutex_;
  std::condition_variable wake_;
  int sleeping_ = 0;  // guarded by mutex_
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::int64_t> next_{0};
  std::atomic<int> finished_{0};
  // The posted GEMM; written under mutex_ before generation_ is bumped.
  TileFn fn_ = nullptr;
  const void* context_ = nullptr;
  std::int64_t tiles_ = 0;
};

TilePool& pool() {
  static TilePool p;
  return p;
}

int g_threads = 1;
GemmPath g_path = GemmPath::tiled;
std::once_flag g_blas_single;

#if defined(KOKKOS_ENABLE_SERIAL)
constexpr bool kKokkosHostIsSerial =
    std::is_same<Kokkos::DefaultHostExecutionSpace, Kokkos::Serial>::value;
#else
constexpr bool kKokkosHostIsSerial = false;
#endif

/// Set on the thread that runs a task of run_tasks on Kokkos' threads: work
/// that a task starts (a GEMM inside an attention task) runs on that thread
/// alone. Kokkos' OpenMP backend holds a lock for the whole of a parallel_for,
/// so a nested one would wait for itself.
thread_local bool t_in_kokkos_task = false;

/// fn(context, t) for every t < tasks: on Kokkos' host threads when they own
/// the cores, else on the pool; on the caller alone for one task, one thread,
/// inside a task, or while another host thread's GEMM holds the pool. Each
/// task is the same call wherever it runs, so the bits are the same.
void run_tasks(std::int64_t tasks, HostTaskFn fn, const void* context) {
  if (tasks <= 0) return;
  const bool alone = tasks == 1 || g_threads == 1 || t_in_kokkos_task;
  if (!alone && !kKokkosHostIsSerial) {
    Kokkos::parallel_for(
        "distzo::kernels::host_tasks",
        Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<std::int64_t>>(
            0, tasks),
        [=](std::int64_t t) {
          t_in_kokkos_task = true;
          fn(context, t);
          t_in_kokkos_task = false;
        });
    return;
  }
  if (alone || !pool().try_run(tasks, fn, context)) {
    for (std::int64_t t = 0; t < tasks; ++t) fn(context, t);
  }
}

/// The BLAS must not split a tile: OpenBLAS to one thread, once, before the
/// first tile (set_gemm_threads does it again on every change).
void blas_single_threaded() {
  std::call_once(g_blas_single, [] {
    if (openblas_set_num_threads != nullptr) openblas_set_num_threads(1);
  });
}

struct Tiles {
  GemmTile tile;
  bool ta, tb;
  std::size_t m, n, k;
  real alpha, beta;
  const real* a;
  std::size_t lda;
  const real* b;
  std::size_t ldb;
  real* c;
  std::size_t ldc;
  std::int64_t row_tiles;
};

/// Tile t: column tiles outer, row tiles inner, so that consecutive tiles
/// share op(B)'s panel (for linear(), the same rows of the weight).
void compute_tile(const void* context, std::int64_t t) {
#if DISTZO_HOST_BLAS
  const Tiles& g = *static_cast<const Tiles*>(context);
  const std::size_t i0 = static_cast<std::size_t>(t % g.row_tiles) * g.tile.rows;
  const std::size_t j0 = static_cast<std::size_t>(t / g.row_tiles) * g.tile.cols;
  const std::size_t rows = std::min(g.tile.rows, g.m - i0);
  const std::size_t cols = std::min(g.tile.cols, g.n - j0);
  // Row-major op(A) rows i0.. are A's rows (N) or columns (T); op(B) columns
  // j0.. are B's columns (N) or rows (T).
  const real* a = g.a + (g.ta ? i0 : i0 * g.lda);
  const real* b = g.b + (g.tb ? j0 * g.ldb : j0);
  real* c = g.c + i0 * g.ldc + j0;
  // Column-major BLAS on row-major data: C^T = op(B)^T op(A)^T, the call
  // Kokkos Kernels makes for LayoutRight (the transposes pass through).
  KokkosBlas::Impl::HostBlas<real>::gemm(g.tb ? 'T' : 'N', g.ta ? 'T' : 'N', static_cast<int>(cols),
                                         static_cast<int>(rows), static_cast<int>(g.k), g.alpha, b,
                                         static_cast<int>(g.ldb), a, static_cast<int>(g.lda),
                                         g.beta, c, static_cast<int>(g.ldc));
#else
  // No host BLAS in this build (a device TPL only): the tiled path is never taken.
  (void)context;
  (void)t;
#endif
}

/// One side cut in gemm_tile_pieces, each rounded up to gemm_tile_align;
/// whole when shorter than gemm_min_split.
std::size_t piece(std::size_t extent) {
  if (extent < gemm_min_split) return std::max<std::size_t>(extent, 1);
  const std::size_t even = (extent + gemm_tile_pieces - 1) / gemm_tile_pieces;
  return std::min(extent, (even + gemm_tile_align - 1) / gemm_tile_align * gemm_tile_align);
}

}  // namespace

GemmTile gemm_tile_shape(std::size_t m, std::size_t n, std::size_t k) {
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (macs < gemm_min_split_macs) return {std::max<std::size_t>(m, 1), std::max<std::size_t>(n, 1)};
  // Halving m repacks B once more, halving n repacks A: m is the cheaper
  // side to cut except for a B far wider than A is tall (the LM head's
  // vocabulary-wide weight, which does not stay in cache).
  if (n >= gemm_wide_ratio * m) return {std::max<std::size_t>(m, 1), piece(n)};
  return {piece(m), std::max<std::size_t>(n, 1)};
}

void set_gemm_threads(int threads, GemmPath path) {
  DISTZO_REQUIRE(threads >= 1 && threads <= 1024, "distzo::kernels::set_gemm_threads: "
                                                      << threads << " threads; expected 1 to 1024");
  const bool tiled = path == GemmPath::tiled;
  // Under a parallel Kokkos host backend its threads take the tasks: distzo starts none.
  const int workers = tiled && kKokkosHostIsSerial ? threads : 1;
  if (pool().threads() != workers) pool().resize(workers);
  g_threads = threads;
  g_path = path;
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(tiled ? 1 : threads);
}

int gemm_threads() { return g_threads; }

GemmPath gemm_path() { return g_path; }

bool host_tiled_gemm_available() { return DISTZO_HOST_BLAS != 0; }

bool kokkos_owns_host_threads() { return !kKokkosHostIsSerial; }

std::string gemm_numerics() {
  std::ostringstream s;
  if (!host_tiled_gemm_available()) {
    s << "GEMM: native Kokkos Kernels gemm (no host BLAS): " << g_threads
      << " thread(s) set, but its bits are not guaranteed across thread counts";
  } else if (g_path == GemmPath::tiled) {
    s << "GEMM: up to " << gemm_tile_pieces
      << " tiles per GEMM fixed by its shape, one single-threaded BLAS call each, on " << g_threads
      << " thread(s) per rank: the bits do not depend on threads, ranks per node or nodes "
         "(they may on the CPU model and BLAS build)"
      << (kKokkosHostIsSerial ? "" : "; the threads are Kokkos' host threads");
  } else {
    s << "GEMM: library path, one BLAS call on the BLAS's own " << g_threads
      << " thread(s) per rank: the bits may change with the thread count, so digests need not "
         "match runs with other threads per rank";
  }
  return s.str();
}

void host_parallel_tasks(std::int64_t tasks, HostTaskFn fn, const void* context) {
  run_tasks(tasks, fn, context);
}

void host_tiled_gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                     real alpha, const real* a, std::size_t lda, const real* b, std::size_t ldb,
                     real beta, real* c, std::size_t ldc) {
  DISTZO_REQUIRE(host_tiled_gemm_available(),
                 "distzo::kernels::host_tiled_gemm: built without a host BLAS (Kokkos Kernels' "
                 "BLAS TPL)");
  if (m == 0 || n == 0) return;
  const std::size_t a_row = trans_a ? m : k, b_row = trans_b ? k : n;
  DISTZO_REQUIRE(k >= 1 && lda >= a_row && ldb >= b_row && ldc >= n,
                 "distzo::kernels::host_tiled_gemm: k = "
                     << k << ", leading dimensions " << lda << ", " << ldb << ", " << ldc
                     << " must be >= the rows' lengths " << a_row << ", " << b_row << ", " << n);
  const std::size_t int_max = static_cast<std::size_t>(INT_MAX);
  DISTZO_REQUIRE(k <= int_max && lda <= int_max && ldb <= int_max && ldc <= int_max,
                 "distzo::kernels::host_tiled_gemm: dimensions beyond the BLAS's int");
  blas_single_threaded();
  const GemmTile tile = gemm_tile_shape(m, n, k);
  const auto row_tiles = static_cast<std::int64_t>((m + tile.rows - 1) / tile.rows);
  const auto col_tiles = static_cast<std::int64_t>((n + tile.cols - 1) / tile.cols);
  const Tiles g{tile, trans_a, trans_b, m, n, k, alpha, beta, a, lda, b, ldb, c, ldc, row_tiles};
  run_tasks(row_tiles * col_tiles, compute_tile, &g);
}

}  // namespace distzo::kernels
