#pragma once
// Policy aliases and small helpers shared by the kernels in this folder.
//
// Every kernel takes the execution-space instance it runs on as its first
// argument and builds all of its policies on that instance, so that work
// queued by one caller on one stream stays ordered on that stream.

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "core/fence.hpp"
#include "core/types.hpp"

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

/// f(row, i) for every row < rows and i < width: a team per row, its
/// threads over i (contiguous columns of a row-major matrix: a vectorised
/// loop on the host, coalesced accesses on a GPU).
template <class Element>
void for_each_in_rows(const char* label, const ExecSpace& space, std::size_t rows,
                      std::int64_t width, const Element& f) {
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
