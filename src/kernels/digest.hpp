#pragma once
// The element sum of the parameter digest (core/digest.hpp, docs/formats.md):
//
//   S = Σ_k element_term(first_element + k, stored_word(x(k))) mod 2^64
//
// over the elements of x (float32 values, or the 16-bit words of a bf16 /
// fp16 tensor: core/digest.hpp), which hold elements [first_element, first_element +
// x.extent(0)) of one tensor in row-major order. Computed where the tensor
// lives, with no copy of it: in execution-space memory on an execution-space
// instance, in host memory (offloaded blocks, tensors read from a file) on
// the host execution space. S is an integer sum, so both give the same bits,
// and the sums of the slices of a tensor add up (mod 2^64) to the tensor's S.

#include <cstdint>

#include "core/storage_dtype.hpp"
#include "core/stored_view.hpp"
#include "core/types.hpp"

namespace distzo::kernels {

/// Where tensor_element_sum writes S: a rank-0 View in host memory that the
/// execution space writes directly (pinned under CUDA), e.g.
/// Kokkos::subview(sums, k) of a View of per-tensor sums. No device buffer,
/// no copy: fence the instance, then read.
using ElementSum = Kokkos::View<std::uint64_t, Kokkos::LayoutRight, PinnedSpace>;

/// S of x (in execution-space memory, any storage dtype: over the elements
/// as stored, no decode) into `sum`. Enqueued on `space`, no fence: reduce
/// every tensor, then fence once.
void tensor_element_sum(const ExecSpace& space, const StoredVec& x, std::uint64_t first_element,
                        const ElementSum& sum);

/// S of `count` elements `x` in host memory (pinned memory qualifies: the
/// host execution space reads it like any host memory), reduced on `space`;
/// returns when it is known.
std::uint64_t host_tensor_element_sum(const Kokkos::DefaultHostExecutionSpace& space,
                                      StoredElements x, std::size_t count,
                                      std::uint64_t first_element = 0);

}  // namespace distzo::kernels
