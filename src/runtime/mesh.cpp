#include "runtime/mesh.hpp"

#include "core/error.hpp"

namespace distzo::runtime {

MeshCoordinates MeshLayout::coordinates(int world_rank) const {
  DISTZO_REQUIRE(
      perturbation_size >= 1 && data_size >= 1,
      "mesh: P and D must be at least 1, got P=" << perturbation_size << ", D=" << data_size);
  DISTZO_REQUIRE(world_rank >= 0 && world_rank < world_size(),
                 "mesh: rank " << world_rank << " outside a " << perturbation_size << " x "
                               << data_size << " mesh");
  return {world_rank % perturbation_size, world_rank / perturbation_size};
}

Mesh::Mesh(const Communicator& world, const MeshLayout& layout) : world_(world), layout_(layout) {
  DISTZO_REQUIRE(world.size() == layout.world_size(),
                 "mesh: P x D = " << layout.perturbation_size << " x " << layout.data_size << " = "
                                  << layout.world_size() << " ranks, but the job has "
                                  << world.size());
  coordinates_ = layout.coordinates(world.rank());
  perturbation_group_ = world.split(coordinates_.data_rank, coordinates_.perturbation_rank);
  data_group_ = world.split(coordinates_.perturbation_rank, coordinates_.data_rank);
  node_ = world.split_node();
}

}  // namespace distzo::runtime
