#include "model/parameter_digest.hpp"

#include "core/digest.hpp"

namespace distzo::model {

std::string parameter_digest(const ParameterRegistry& registry, const TensorTable& tensors) {
  Digest digest;
  for (const auto& p : registry.parameters()) {
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tensors.at(p.id));
    digest.add_tensor(p.name, p.shape, host.data(), host.extent(0));
  }
  return digest.hex();
}

}  // namespace distzo::model
