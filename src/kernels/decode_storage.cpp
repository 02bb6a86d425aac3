#include "kernels/decode_storage.hpp"

#include <utility>

#include "core/error.hpp"

namespace distzo::kernels {

Vec as_float32(const ExecSpace& space, const StoredVec& x, const Vec& scratch) {
  if (!decodes_to_scratch(x.dtype())) return x.as<real>();
  DISTZO_REQUIRE(scratch.extent(0) >= x.extent(),
                 "as_float32: " << x.extent() << " " << to_string(x.dtype()) << " words into "
                                << scratch.extent(0) << " floats");
  const HalfVec w = x.as<std::uint16_t>();
  const Vec out = Kokkos::subview(scratch, std::make_pair(std::size_t{0}, x.extent()));
  const StorageDtype dtype = x.dtype();
  Kokkos::parallel_for(
      "distzo::decode_storage", Kokkos::RangePolicy<ExecSpace>(space, 0, x.extent()),
      KOKKOS_LAMBDA(const std::size_t i) { out(i) = storage::load(w(i), dtype); });
  return out;
}

}  // namespace distzo::kernels
