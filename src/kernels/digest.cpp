#include "kernels/digest.hpp"

#include <type_traits>

#include "core/digest.hpp"
#include "core/error.hpp"
#include "core/fp.hpp"

namespace distzo::kernels {

namespace detail {

/// One reduction for both memory spaces. On a host space each work item
/// sums a run of elements in a plain loop that the compiler vectorises
/// (64-bit multiplies on SIMD lanes, a lane-wise sum; integer addition, so
/// vectorising changes no bit); on a device one element per thread.
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t bits_of(float x) { return fp::to_bits(x); }
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t bits_of(std::uint16_t w) { return w; }

/// `tag`: the format tag of 2-byte words (digest::format_tag), 0 for floats.
template <class ExecutionSpace, class Tensor, class Result>
void element_sum(const char* label, const ExecutionSpace& space, const Tensor& x,
                 std::uint64_t first_element, std::uint64_t tag, Result&& result) {
  constexpr std::int64_t kPerItem =
      std::is_same<typename ExecutionSpace::memory_space, Kokkos::HostSpace>::value ? 1024 : 1;
  const std::int64_t n = static_cast<std::int64_t>(x.extent(0));
  const std::int64_t items = (n + kPerItem - 1) / kPerItem;
  const Tensor t = x;
  const std::uint64_t first = first_element;
  Kokkos::parallel_reduce(
      label, Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space, 0, items),
      KOKKOS_LAMBDA(const std::int64_t item, std::uint64_t& sum) {
        const std::int64_t begin = item * kPerItem;
        const std::int64_t end = begin + kPerItem < n ? begin + kPerItem : n;
        std::uint64_t part = 0;
        for (std::int64_t e = begin; e < end; ++e)
          part += digest::element_term(first + static_cast<std::uint64_t>(e), tag | bits_of(t(e)));
        sum += part;
      },
      result);
}

}  // namespace detail

void tensor_element_sum(const ExecSpace& space, const StoredVec& x, std::uint64_t first_element,
                        const ElementSum& sum) {
  with_elements(x, [&](const auto& words) {
    detail::element_sum("distzo::tensor_element_sum", space, words, first_element,
                        digest::format_tag(x.dtype()), sum);
  });
}

std::uint64_t host_tensor_element_sum(const Kokkos::DefaultHostExecutionSpace& space,
                                      StoredElements x, std::size_t count,
                                      std::uint64_t first_element) {
  std::uint64_t sum = 0;
  with_elements(x, count, [&](const auto& words) {
    detail::element_sum("distzo::host_tensor_element_sum", space, words, first_element,
                        digest::format_tag(x.dtype), sum);
  });
  return sum;
}

}  // namespace distzo::kernels
