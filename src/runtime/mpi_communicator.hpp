#pragma once
// Communicator over an MPI communicator. Owns it (MPI_Comm_free on
// destruction) unless it wraps MPI_COMM_WORLD.

#include <mpi.h>

#include "runtime/communicator.hpp"

namespace distzo::runtime {

class MpiCommunicator final : public Communicator {
 public:
  /// Wraps MPI_COMM_WORLD (not owned).
  static std::unique_ptr<MpiCommunicator> world();
  /// Takes ownership of `comm` if `owned`. `hook`: the collective hook
  /// shared with the communicator this one was split from (none: its own).
  MpiCommunicator(MPI_Comm comm, bool owned, std::shared_ptr<std::function<void()>> hook = nullptr);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allgather(const double* send, int count, double* recv) const override;
  void allgather(const std::uint64_t* send, int count, std::uint64_t* recv) const override;
  void allreduce_sum(double* values, int count) const override;
  void allreduce_sum(std::uint64_t* values, int count) const override;
  bool all_true(bool value) const override;
  void barrier() const override;
  void broadcast(void* data, std::size_t bytes, int root) const override;
  void allgather_in_place(float* data, std::size_t count) const override;
  /// MPI_Win_allocate_shared: rank 0 allocates everything, the others map it.
  std::shared_ptr<SharedMemory> allocate_shared(std::size_t bytes) const override;
  /// An RMA window on rank 0, one int64 per rank, written with
  /// MPI_Raccumulate(MPI_REPLACE) under a lock_all epoch held for its life.
  std::unique_ptr<ProgressBoard> progress_board() const override;
  void on_collective(std::function<void()> hook) const override;
  [[noreturn]] void abort(int status) const override;
  std::unique_ptr<Communicator> split(int color, int key) const override;

  /// Ranks sharing this node's memory (MPI_COMM_TYPE_SHARED).
  std::unique_ptr<Communicator> split_node() const override;

  /// The same ranks over the same MPI communicator (not owned: it must not
  /// outlive this one), with a collective hook of its own that nobody sets:
  /// for the collectives of only some ranks of a watched world (a checkpoint
  /// that rank 0's node writes), which a watchdog counting every rank's
  /// collectives in one sequence must not count.
  std::unique_ptr<MpiCommunicator> unwatched() const;
  /// The MPI communicator, for what only MPI itself can take: parallel HDF5's
  /// MPI-IO driver (H5Pset_fapl_mpio). Collectives go through the methods above.
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
  // One slot shared by this communicator and every one split from it.
  std::shared_ptr<std::function<void()>> hook_;
  void announce() const;
};

}  // namespace distzo::runtime
