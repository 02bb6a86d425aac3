// The mesh's communicators under MPI (run by ctest with mpiexec -n 4 as a
// 2 x 2 mesh): group sizes and ranks follow the layout, and an all-gather in
// each group sees exactly the expected world ranks in order.

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "runtime/mesh.hpp"
#include "runtime/mpi_communicator.hpp"

namespace {

using namespace distzo;

TEST(MeshMpi, GroupsFollowTheLayout) {
  const auto world = runtime::MpiCommunicator::world();
  ASSERT_EQ(world->size(), 4) << "run with mpiexec -n 4";
  const runtime::MeshLayout layout{2, 2};
  const runtime::Mesh mesh(*world, layout);
  const runtime::MeshCoordinates c = mesh.coordinates();
  EXPECT_EQ(c.perturbation_rank, world->rank() % 2);
  EXPECT_EQ(c.data_rank, world->rank() / 2);

  // Perturbation group: the P ranks with this data rank, ordered by p.
  EXPECT_EQ(mesh.perturbation_group().size(), 2);
  EXPECT_EQ(mesh.perturbation_group().rank(), c.perturbation_rank);
  std::vector<double> members(2);
  const double me = world->rank();
  mesh.perturbation_group().allgather(&me, 1, members.data());
  for (int p = 0; p < 2; ++p) EXPECT_EQ(members[p], layout.world_rank({p, c.data_rank}));

  // Data group: the D ranks with this perturbation rank, ordered by d.
  EXPECT_EQ(mesh.data_group().size(), 2);
  EXPECT_EQ(mesh.data_group().rank(), c.data_rank);
  mesh.data_group().allgather(&me, 1, members.data());
  for (int d = 0; d < 2; ++d) EXPECT_EQ(members[d], layout.world_rank({c.perturbation_rank, d}));

  // Node-local: every rank of this single-node test job.
  EXPECT_EQ(mesh.node().size(), 4);
  double sum = 1.0;
  mesh.node().allreduce_sum(&sum, 1);
  EXPECT_EQ(sum, 4.0);
  EXPECT_TRUE(world->all_true(true));
  EXPECT_FALSE(world->all_true(world->rank() != 3));
}

/// The checksum all-reduce: element-wise sums modulo 2^64, and an unwatched
/// communicator's collectives are not seen by the hook of the one it came from.
TEST(MeshMpi, Uint64SumsWrapAndUnwatchedCollectivesAreNotCounted) {
  const auto world = runtime::MpiCommunicator::world();
  ASSERT_EQ(world->size(), 4) << "run with mpiexec -n 4";
  int counted = 0;
  world->on_collective([&] { ++counted; });
  std::uint64_t sums[2] = {static_cast<std::uint64_t>(world->rank()) + 1, std::uint64_t{1} << 63};
  world->allreduce_sum(sums, 2);
  EXPECT_EQ(sums[0], 1u + 2u + 3u + 4u);
  EXPECT_EQ(sums[1], 0u) << "4 * 2^63 modulo 2^64";
  EXPECT_EQ(counted, 1);
  const auto quiet = world->unwatched();
  EXPECT_EQ(quiet->rank(), world->rank());
  EXPECT_EQ(quiet->size(), 4);
  EXPECT_EQ(runtime::broadcast_string(*quiet, world->rank() == 0 ? "rank 0's" : ""), "rank 0's");
  EXPECT_TRUE(quiet->all_true(true));
  quiet->barrier();
  EXPECT_EQ(counted, 1) << "none of the unwatched collectives reached the hook";
  world->on_collective({});
}

TEST(MeshMpi, MismatchedLayoutIsRejected) {
  const auto world = runtime::MpiCommunicator::world();
  EXPECT_THROW(runtime::Mesh(*world, runtime::MeshLayout{2, 1}), Error);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Only rank 0 prints; every rank's result decides the exit status.
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0, any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
