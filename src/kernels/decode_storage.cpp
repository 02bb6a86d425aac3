#include "kernels/decode_storage.hpp"

#include "core/error.hpp"

namespace distzo::kernels {

void decode_storage(const ExecSpace& space, const HalfVec& words, StorageDtype dtype, const Vec& out) {
  DISTZO_REQUIRE(dtype != StorageDtype::fp32, "decode_storage: fp32 θ is read in place, not decoded");
  DISTZO_REQUIRE(out.extent(0) >= words.extent(0),
                 "decode_storage: " << words.extent(0) << " words into " << out.extent(0)
                                    << " floats");
  const HalfVec w = words;
  const Vec o = out;
  Kokkos::parallel_for(
      "distzo::decode_storage", Kokkos::RangePolicy<ExecSpace>(space, 0, words.extent(0)),
      KOKKOS_LAMBDA(const std::size_t i) { o(i) = storage::load(w(i), dtype); });
}

}  // namespace distzo::kernels
