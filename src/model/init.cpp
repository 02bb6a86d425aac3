#include "model/init.hpp"

#include "core/perturbation.hpp"

#include <limits>

namespace distzo::model {

void init_random(const ExecSpace& space, const ParameterRegistry& registry, TensorTable& tensors,
                 std::uint64_t seed, double std) {
  const PerturbationStream stream = PerturbationStream::make(
      seed, std::numeric_limits<std::uint64_t>::max(), 0, Distribution::gaussian);
  for (const auto& p : registry.parameters()) {
    const Vec t = tensors.at(p.id);
    switch (p.role) {
      case ParameterRole::attn_norm_weight:
      case ParameterRole::ffn_norm_weight:
      case ParameterRole::final_norm_weight:
        Kokkos::deep_copy(space, t, real(1));
        break;
      default:
        if (p.shape.size() == 1) {  // biases
          Kokkos::deep_copy(space, t, real(0));
        } else {
          fill_perturbation(space, t, stream, p.id, 0);
          const real scale = static_cast<real>(std);
          Kokkos::parallel_for(
              "distzo::init_random::scale",
              Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                  space, 0, static_cast<std::int64_t>(t.extent(0))),
              KOKKOS_LAMBDA(const std::int64_t i) { t(i) *= scale; });
        }
    }
  }
}

}  // namespace distzo::model
