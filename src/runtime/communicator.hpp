#pragma once
// The communicator seam: everything distzo exchanges between ranks goes
// through this interface, so the engine runs unchanged on one process
// (SerialCommunicator) or under MPI (MpiCommunicator), and tests can drive
// the parallel logic in one process.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace distzo::runtime {

/// Memory that every rank of a communicator maps (one node's ranks): the
/// same bytes at a possibly different address in each process. Freed when
/// the last owner lets go; freeing is collective, so every rank destroys
/// its handles in the same order.
class SharedMemory {
 public:
  virtual ~SharedMemory() = default;
  virtual void* data() const = 0;
  virtual std::size_t bytes() const = 0;
};

/// Where every rank's progress can be read on rank 0 without a collective,
/// so that a watchdog there can name the ranks that stopped reporting while
/// the live ones wait for them inside a collective (which cannot say who is
/// missing). Rank r posts a count at each progress point; the points are
/// the same sequence on every rank. Destroyed collectively (a rank that
/// fails alone must leak it: it would wait for the others forever).
class ProgressBoard {
 public:
  virtual ~ProgressBoard() = default;
  /// This rank reached progress point `count` (counts only grow). Does not
  /// wait for rank 0: a rank that is busy must not slow the others down.
  virtual void post(std::int64_t count) = 0;
  /// Rank 0: every rank's last count that reached it (a live rank's posts
  /// arrive while it waits in a collective); empty on other ranks or where
  /// it cannot be read. Reads memory only, never calls MPI, so a watchdog
  /// thread may call it while the rank's own thread is blocked in MPI.
  virtual std::vector<std::int64_t> counts() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// recv[r*count + i] = send[i] of rank r, for every rank r, in rank order.
  virtual void allgather(const double* send, int count, double* recv) const = 0;
  /// Same, for 64-bit unsigned values (digests).
  virtual void allgather(const std::uint64_t* send, int count, std::uint64_t* recv) const = 0;
  /// Sum over ranks, element-wise, in place.
  virtual void allreduce_sum(double* values, int count) const = 0;
  /// Same, for 64-bit unsigned values, modulo 2^64 (checksums).
  virtual void allreduce_sum(std::uint64_t* values, int count) const = 0;
  /// Logical AND over ranks (a collective decision, e.g. "every rank is fine").
  virtual bool all_true(bool value) const = 0;
  virtual void barrier() const = 0;
  /// `bytes` bytes at `data` of rank `root` to every rank.
  virtual void broadcast(void* data, std::size_t bytes, int root) const = 0;
  /// In place: rank r's `count` floats at data + r*count reach every rank.
  virtual void allgather_in_place(float* data, std::size_t count) const = 0;
  /// Collective: `bytes` of zeroed memory that every rank of this
  /// communicator maps. Only the ranks of one node can share memory: throws
  /// distzo::Error on a communicator that spans nodes.
  virtual std::shared_ptr<SharedMemory> allocate_shared(std::size_t bytes) const = 0;

  /// Collective: a progress board of this communicator's ranks.
  virtual std::unique_ptr<ProgressBoard> progress_board() const = 0;
  /// Ends every rank of the job with exit status `status` and does not
  /// return. A watchdog thread calls it while the rank's own thread is
  /// blocked in MPI: MPI_Abort there is a message to the process manager and
  /// an exit (MPICH, Open MPI), and the launcher then reports `status`.
  [[noreturn]] virtual void abort(int status) const = 0;
  /// Calls `hook` as each collective of this communicator, or of any
  /// communicator split from it (before or after this call), begins: a
  /// watchdog counts the arrivals. An empty function removes it.
  virtual void on_collective(std::function<void()> hook) const = 0;

  /// Ranks with the same color form a new communicator, ordered by key.
  virtual std::unique_ptr<Communicator> split(int color, int key) const = 0;
  /// The ranks that share this rank's node (memory domain).
  virtual std::unique_ptr<Communicator> split_node() const = 0;

  /// Convenience: one double per rank.
  std::vector<double> allgather(double value) const {
    std::vector<double> out(static_cast<std::size_t>(size()));
    allgather(&value, 1, out.data());
    return out;
  }
};

/// `text` of rank `root` on every rank (collective).
std::string broadcast_string(const Communicator& comm, std::string text, int root = 0);

/// Runs `work` on every rank of `comm`; the ranks then agree, so that either
/// all go on or all stop with a CollectiveError (printed by rank 0, or by the
/// failing ranks when rank 0 itself was fine, e.g. a file missing on one
/// node). Only distzo::Error counts as a failure; anything else propagates
/// from the rank that threw it.
void collectively(const Communicator& comm, const std::function<void()>& work);

/// One rank; every collective is the identity.
class SerialCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allgather(const double* send, int count, double* recv) const override;
  void allgather(const std::uint64_t* send, int count, std::uint64_t* recv) const override;
  void allreduce_sum(double*, int) const override {}
  void allreduce_sum(std::uint64_t*, int) const override {}
  bool all_true(bool value) const override { return value; }
  void barrier() const override {}
  void broadcast(void*, std::size_t, int) const override {}
  void allgather_in_place(float*, std::size_t) const override {}
  std::shared_ptr<SharedMemory> allocate_shared(std::size_t bytes) const override;
  std::unique_ptr<ProgressBoard> progress_board() const override;
  [[noreturn]] void abort(int status) const override;
  /// Nothing to watch: a collective of one rank never waits.
  void on_collective(std::function<void()>) const override {}
  std::unique_ptr<Communicator> split(int color, int key) const override;
  std::unique_ptr<Communicator> split_node() const override;
};

}  // namespace distzo::runtime
