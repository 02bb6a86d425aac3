#include "model/init.hpp"

#include <limits>

#include "core/fence.hpp"
#include "core/memory.hpp"
#include "core/perturbation.hpp"

namespace distzo::model {

void init_random_tensor(const ExecSpace& space, const ParameterInfo& p, const Vec& t,
                        std::uint64_t seed, double std) {
  // Recipe v1: random models keep the values they had before recipe v2.
  const PerturbationStream stream = PerturbationStream::make(
      seed, std::numeric_limits<std::uint64_t>::max(), 0, Distribution::gaussian, ZRecipe::v1);
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

void random_parameter(const ParameterInfo& p, std::uint64_t seed, double std, real* host_dst) {
  const ExecSpace space;
  const Vec t(memory_label(MemoryRole::scratch, "init." + p.name),
              static_cast<std::size_t>(p.numel()));
  init_random_tensor(space, p, t, seed, std);
  const Kokkos::View<real*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dst(
      host_dst, t.extent(0));
  Kokkos::deep_copy(space, dst, t);
  fence(space, "distzo: random parameter copied to the host");
}

}  // namespace distzo::model
