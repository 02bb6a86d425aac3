#pragma once
// The 2D mesh of DistZO2: P ranks of a perturbation group split the 2q
// forward evaluations of a step; D data-parallel replicas each take their own
// micro-batch. Perturbation is the inner axis, so a group's ranks are
// neighbours (and, with block placement by SLURM, on one node):
//
//   world rank r  <->  (data rank d, perturbation rank p),  r = d*P + p
//
//   D=2, P=2:   world 0 1 | 2 3      perturbation groups {0,1} {2,3}
//                 p   0 1 | 0 1      data groups         {0,2} {1,3}
//                 d   0 0 | 1 1
//
// MeshLayout is plain data (testable in one process); Mesh owns the
// communicators split from the world.

#include <memory>

#include "runtime/communicator.hpp"

namespace distzo::runtime {

struct MeshCoordinates {
  int perturbation_rank = 0;  // p in [0, P)
  int data_rank = 0;          // d in [0, D)
};

struct MeshLayout {
  int perturbation_size = 1;  // P
  int data_size = 1;          // D

  int world_size() const { return perturbation_size * data_size; }
  MeshCoordinates coordinates(int world_rank) const;
  int world_rank(MeshCoordinates c) const {
    return c.data_rank * perturbation_size + c.perturbation_rank;
  }
};

class Mesh {
 public:
  /// Splits `world` (which must have layout.world_size() ranks) into the
  /// perturbation group, the data group and the node-local communicator.
  Mesh(const Communicator& world, const MeshLayout& layout);

  const MeshLayout& layout() const { return layout_; }
  const MeshCoordinates& coordinates() const { return coordinates_; }
  const Communicator& world() const { return world_; }
  /// The P ranks that share this rank's micro-batch (same data rank).
  const Communicator& perturbation_group() const { return *perturbation_group_; }
  /// The D ranks that evaluate the same (query, sign)s (same perturbation rank).
  const Communicator& data_group() const { return *data_group_; }
  /// The ranks on this node (for the sliced transfers).
  const Communicator& node() const { return *node_; }

 private:
  const Communicator& world_;
  MeshLayout layout_;
  MeshCoordinates coordinates_;
  std::unique_ptr<Communicator> perturbation_group_, data_group_, node_;
};

}  // namespace distzo::runtime
