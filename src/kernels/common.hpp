#pragma once
// Policy aliases and small helpers shared by the kernels in this folder.
//
// Every kernel takes the execution-space instance it runs on as its first
// argument and builds all of its policies on that instance, so that work
// queued by one caller on one stream stays ordered on that stream.

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>

#include "core/fence.hpp"
#include "core/types.hpp"
#include "kernels/host_gemm.hpp"

namespace distzo::kernels {

using TeamPolicy = Kokkos::TeamPolicy<ExecSpace>;
using TeamMember = TeamPolicy::member_type;
using RangePolicy = Kokkos::RangePolicy<ExecSpace>;
/// Element-wise kernels over rows*cols elements: 64-bit so that large
/// activations (e.g. 16k tokens x 50k vocabulary) cannot overflow the index.
using RangePolicy64 = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

/// Element-wise kernels over (rows, cols) without index division.
using MDRangePolicy2 =
    Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>;

/// Per-team scratch buffer of `real` (level 0: shared memory on GPUs).
using ScratchReal =
    Kokkos::View<real*, ExecSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

namespace detail {

/// Below this many elements a kernel is not worth waking the host threads.
inline constexpr std::int64_t host_threads_min_elements = std::int64_t(1) << 16;

/// Whether a host kernel of `elements` elements goes to the host GEMM's
/// threads (more than one, the tiled path: the pool distzo owns).
inline bool use_host_threads(std::int64_t elements) {
  return gemm_threads() > 1 && gemm_path() == GemmPath::tiled &&
         elements >= host_threads_min_elements;
}

/// Indices [t * chunk, (t + 1) * chunk) of n, task t of host_for_each.
template <class Index>
struct HostChunks {
  const Index* f;
  std::int64_t n, chunk;
  static void task(const void* context, std::int64_t t) {
    const HostChunks& h = *static_cast<const HostChunks*>(context);
    const std::int64_t end = std::min(h.n, t * h.chunk + h.chunk);
    for (std::int64_t i = t * h.chunk; i < end; ++i) (*h.f)(i);
  }
};

/// f(i) for every i < n on the host GEMM's threads, in contiguous chunks
/// (host_parallel_tasks), after the work queued on `space`: host backends only.
template <class Index>
void host_for_each(const char* label, const ExecSpace& space, std::int64_t n, const Index& f) {
  fence(space, "distzo::kernels: inputs ready for the host threads");
  Kokkos::Profiling::pushRegion(label);
  const std::int64_t tasks = std::min<std::int64_t>(n, 4 * gemm_threads());
  const HostChunks<Index> chunks{&f, n, (n + tasks - 1) / tasks};
  host_parallel_tasks(tasks, &HostChunks<Index>::task, &chunks);
  Kokkos::Profiling::popRegion();
}

}  // namespace detail

/// f(i) for every i < n, each index independent of the others: a RangePolicy
/// on `space`, or on the host backends with more than one host GEMM thread,
/// contiguous chunks of the range on those threads (Serial Kokkos has one).
/// Every index is computed the same way, so the bits do not depend on the
/// threads. `elements` (>= n) is the work the indices stand for, e.g. the
/// elements of a kernel whose index is a block of them.
template <class Index>
void for_each_index(const char* label, const ExecSpace& space, std::int64_t n,
                    std::int64_t elements, const Index& f) {
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    if (n > 1 && detail::use_host_threads(elements))
      return detail::host_for_each(label, space, n, f);
  }
  Kokkos::parallel_for(label, RangePolicy64(space, 0, n), f);
}

/// f(row, i) for every row < rows and i < width: a team per row, its
/// threads over i (contiguous columns of a row-major matrix: a vectorised
/// loop on the host, coalesced accesses on a GPU). On the host backends, with
/// more than one host GEMM thread (kernels/host_gemm.hpp), chunks of rows go
/// to those threads instead (Serial Kokkos has one): every element is
/// computed the same way, so the bits do not depend on the threads.
template <class Element>
void for_each_in_rows(const char* label, const ExecSpace& space, std::size_t rows,
                      std::int64_t width, const Element& f) {
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    const auto n = static_cast<std::int64_t>(rows);
    if (detail::use_host_threads(n * width)) {
      const auto row = [&f, width](std::int64_t r) {
        for (std::int64_t i = 0; i < width; ++i) f(r, i);
      };
      return detail::host_for_each(label, space, n, row);
    }
  }
  Kokkos::parallel_for(
      label, TeamPolicy(space, static_cast<int>(rows), Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamMember& member) {
        const std::int64_t row = member.league_rank();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, width),
                             [&](const std::int64_t i) { f(row, i); });
      });
}

/// Kernels and their callers fence through the core helper.
using distzo::fence;

}  // namespace distzo::kernels
