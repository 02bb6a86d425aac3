#pragma once
// Communicator over an MPI communicator. Owns it (MPI_Comm_free on
// destruction) unless it wraps MPI_COMM_WORLD.

#include "runtime/communicator.hpp"

#include <mpi.h>

namespace distzo::runtime {

class MpiCommunicator final : public Communicator {
 public:
  /// Wraps MPI_COMM_WORLD (not owned).
  static std::unique_ptr<MpiCommunicator> world();
  /// Takes ownership of `comm`.
  explicit MpiCommunicator(MPI_Comm comm, bool owned);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allgather(const double* send, int count, double* recv) const override;
  void allgather(const std::uint64_t* send, int count, std::uint64_t* recv) const override;
  void allreduce_sum(double* values, int count) const override;
  bool all_true(bool value) const override;
  void barrier() const override;
  void broadcast(void* data, std::size_t bytes, int root) const override;
  void allgather_in_place(float* data, std::size_t count) const override;
  /// MPI_Win_allocate_shared: rank 0 allocates everything, the others map it.
  std::shared_ptr<SharedMemory> allocate_shared(std::size_t bytes) const override;
  std::unique_ptr<Communicator> split(int color, int key) const override;

  /// Ranks sharing this node's memory (MPI_COMM_TYPE_SHARED).
  std::unique_ptr<Communicator> split_node() const override;
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace distzo::runtime
