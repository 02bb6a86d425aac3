// The mesh layout as plain data: coordinates are a bijection between world
// ranks and (data rank, perturbation rank), perturbation the inner axis.

#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "core/error.hpp"
#include "runtime/mesh.hpp"

namespace {

using namespace distzo;

TEST(MeshLayout, PerturbationIsTheInnerAxis) {
  const runtime::MeshLayout layout{2, 3};  // P = 2, D = 3
  EXPECT_EQ(layout.world_size(), 6);
  std::set<std::pair<int, int>> seen;
  for (int r = 0; r < 6; ++r) {
    const runtime::MeshCoordinates c = layout.coordinates(r);
    EXPECT_EQ(c.perturbation_rank, r % 2);
    EXPECT_EQ(c.data_rank, r / 2);
    EXPECT_EQ(layout.world_rank(c), r);
    seen.insert({c.data_rank, c.perturbation_rank});
  }
  EXPECT_EQ(seen.size(), 6u);
}

TEST(MeshLayout, RejectsRanksOutsideTheMesh) {
  const runtime::MeshLayout layout{2, 2};
  EXPECT_THROW(layout.coordinates(4), Error);
  EXPECT_THROW(layout.coordinates(-1), Error);
  EXPECT_THROW((runtime::MeshLayout{0, 1}.coordinates(0)), Error);
}

TEST(Mesh, SerialWorldIsAOneByOneMesh) {
  const runtime::SerialCommunicator world;
  const runtime::Mesh mesh(world, runtime::MeshLayout{1, 1});
  EXPECT_EQ(mesh.perturbation_group().size(), 1);
  EXPECT_EQ(mesh.data_group().size(), 1);
  EXPECT_EQ(mesh.node().size(), 1);
  EXPECT_THROW(runtime::Mesh(world, runtime::MeshLayout{2, 1}), Error);
  std::uint64_t sums[2] = {3, 5};
  world.allreduce_sum(sums, 2);  // one rank: the sums are its values
  EXPECT_EQ(sums[0], 3u);
  EXPECT_EQ(sums[1], 5u);
}

}  // namespace
