#include "kernels/activations.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

void relu(const ExecSpace& space, const Mat& x) {
  DISTZO_REQUIRE(x.span_is_contiguous(), "distzo::kernels::relu: x must be contiguous");
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  if (n == 0) return;
  // Flat over the contiguous span: no 2-D index arithmetic per element.
  real* const v = x.data();
  Kokkos::parallel_for(
      "distzo::relu", RangePolicy64(space, 0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        // "v < 0" rather than "v > 0 ? v : 0" so that NaN propagates.
        if (v[i] < real(0)) v[i] = real(0);
      });
}

void add_inplace(const ExecSpace& space, const Mat& x, const ConstMat& y) {
  DISTZO_REQUIRE(x.extent(0) == y.extent(0) && x.extent(1) == y.extent(1),
                 "distzo::kernels::add_inplace: x is (" << x.extent(0) << ", " << x.extent(1)
                                                        << "), y is (" << y.extent(0) << ", "
                                                        << y.extent(1) << ")");
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  if (n == 0) return;
  DISTZO_REQUIRE(x.span_is_contiguous() && y.span_is_contiguous(),
                 "distzo::kernels::add_inplace: x and y must be contiguous");
  real* const xx = x.data();
  const real* const yy = y.data();
  Kokkos::parallel_for(
      "distzo::add_inplace", RangePolicy64(space, 0, n),
      KOKKOS_LAMBDA(const std::int64_t i) { xx[i] += yy[i]; });
}

}  // namespace distzo::kernels
