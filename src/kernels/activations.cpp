#include "kernels/activations.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

void relu(const ExecSpace& space, const Mat& x) {
  const Mat xx = x;
  const std::int64_t cols = static_cast<std::int64_t>(x.extent(1));
  const std::int64_t n = static_cast<std::int64_t>(x.extent(0)) * cols;
  if (n == 0) return;
  Kokkos::parallel_for(
      "distzo::relu", RangePolicy64(space, 0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        real& v = xx(i / cols, i % cols);
        // "v < 0" rather than "v > 0 ? v : 0" so that NaN propagates.
        if (v < real(0)) v = real(0);
      });
}

void add_inplace(const ExecSpace& space, const Mat& x, const ConstMat& y) {
  DISTZO_REQUIRE(x.extent(0) == y.extent(0) && x.extent(1) == y.extent(1),
                 "distzo::kernels::add_inplace: x is (" << x.extent(0) << ", " << x.extent(1)
                                                        << "), y is (" << y.extent(0) << ", "
                                                        << y.extent(1) << ")");
  const Mat xx = x;
  const ConstMat yy = y;
  const std::int64_t cols = static_cast<std::int64_t>(x.extent(1));
  const std::int64_t n = static_cast<std::int64_t>(x.extent(0)) * cols;
  if (n == 0) return;
  Kokkos::parallel_for(
      "distzo::add_inplace", RangePolicy64(space, 0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        const std::int64_t r = i / cols;
        const std::int64_t c = i % cols;
        xx(r, c) += yy(r, c);
      });
}

}  // namespace distzo::kernels
