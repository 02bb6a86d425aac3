#pragma once
// The slice exchange (Placement II): the S ranks of a node each materialise
// one slice of a group's perturbed weights, then exchange slices so that
// every rank holds the whole group for the evaluations it runs (DistZO2's
// NVLink all-gather). A buffer is an arena of S equal slices (arena_layout.hpp);
// rank s writes slice s, all_gather makes every slice readable on every rank.
//
//   shared_memory  host backends: the buffers live in node-shared memory, so
//                  the all-gather is a node barrier and nothing is copied;
//   mpi            an in-place MPI all-gather (through host staging when the
//                  execution space's memory is not host memory);
//   nccl           ncclAllGather on the compute instance's stream, one call
//                  per buffer inside one NCCL group (DISTZO_ENABLE_NCCL).
//
// Every operation is collective over the node's ranks, in the same order on
// every rank.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/placement_kinds.hpp"
#include "core/types.hpp"
#include "runtime/communicator.hpp"

namespace distzo::runtime {

using distzo::ExchangeKind;

class SliceExchange {
 public:
  explicit SliceExchange(const Communicator& node) : node_(node) {}
  virtual ~SliceExchange() = default;
  SliceExchange(const SliceExchange&) = delete;
  SliceExchange& operator=(const SliceExchange&) = delete;

  virtual ExchangeKind kind() const = 0;
  int slices() const { return node_.size(); }
  int slice() const { return node_.rank(); }
  const Communicator& node() const { return node_; }

  /// Collective: a zeroed buffer of `elements` (a multiple of slices()).
  virtual Vec allocate(const std::string& label, std::size_t elements) = 0;
  /// Collective, after each rank enqueued the writes of its slice of every
  /// buffer on `space`: every buffer is whole on every rank for work
  /// enqueued on `space` afterwards.
  virtual void all_gather(const ExecSpace& space, const std::vector<Vec>& buffers) = 0;
  /// Collective: every rank's work enqueued on `space` so far is done (θ's
  /// slices written before, read after).
  void barrier(const ExecSpace& space);

 protected:
  const Communicator& node_;
};

/// Why this build cannot do an exchange of `kind`, or "" when it can
/// (`automatic` always can).
std::string exchange_unavailable(ExchangeKind kind);

/// The exchange of `kind` over the ranks of one node; `automatic` picks
/// shared_memory on host backends, nccl on GPUs when built with NCCL,
/// else mpi. Throws distzo::Error for a kind this build cannot do.
std::unique_ptr<SliceExchange> make_slice_exchange(ExchangeKind kind, const Communicator& node);

}  // namespace distzo::runtime
