#include "runtime/mpi_communicator.hpp"

#include "core/error.hpp"
#include "core/file_system.hpp"

#include <algorithm>
#include <climits>
#include <cstring>


namespace distzo::runtime {

namespace {
void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  DISTZO_FAIL("MPI error in " << what << ": " << std::string(text, static_cast<std::size_t>(length)));
}
/// MPI counts are int: larger messages go in pieces of at most this many.
constexpr std::size_t kMaxCount = std::size_t{1} << 30;

/// A shared-memory window; MPI_Win_free (collective) on destruction.
class SharedWindow final : public SharedMemory {
 public:
  SharedWindow(MPI_Comm comm, int rank, std::size_t bytes) : bytes_(bytes) {
    // Rank 0 holds the whole allocation (contiguous, one first-touch owner);
    // the others allocate nothing and map rank 0's.
    const MPI_Aint mine = rank == 0 ? static_cast<MPI_Aint>(bytes == 0 ? 1 : bytes) : 0;
    void* base = nullptr;
    check_mpi(MPI_Win_allocate_shared(mine, 1, MPI_INFO_NULL, comm, &base, &window_),
              "MPI_Win_allocate_shared");
    MPI_Aint size = 0;
    int unit = 0;
    check_mpi(MPI_Win_shared_query(window_, 0, &size, &unit, &data_), "MPI_Win_shared_query");
    if (rank == 0) std::memset(data_, 0, bytes);
    check_mpi(MPI_Barrier(comm), "MPI_Barrier (shared memory zeroed)");
  }
  ~SharedWindow() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Win_free(&window_);
  }
  SharedWindow(const SharedWindow&) = delete;
  SharedWindow& operator=(const SharedWindow&) = delete;
  void* data() const override { return data_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  MPI_Win window_ = MPI_WIN_NULL;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(&comm_);
}

void MpiCommunicator::allgather(const double* send, int count, double* recv) const {
  check_mpi(MPI_Allgather(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, comm_),
            "MPI_Allgather(double)");
}

void MpiCommunicator::allgather(const std::uint64_t* send, int count, std::uint64_t* recv) const {
  check_mpi(MPI_Allgather(send, count, MPI_UINT64_T, recv, count, MPI_UINT64_T, comm_),
            "MPI_Allgather(uint64)");
}

void MpiCommunicator::allreduce_sum(double* values, int count) const {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_),
            "MPI_Allreduce(sum)");
}

bool MpiCommunicator::all_true(bool value) const {
  int local = value ? 1 : 0, global = 0;
  check_mpi(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_LAND, comm_), "MPI_Allreduce(land)");
  return global != 0;
}

void MpiCommunicator::barrier() const { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

void MpiCommunicator::broadcast(void* data, std::size_t bytes, int root) const {
  char* p = static_cast<char*>(data);
  for (std::size_t done = 0; done < bytes; done += kMaxCount) {
    const std::size_t n = std::min(kMaxCount, bytes - done);
    check_mpi(MPI_Bcast(p + done, static_cast<int>(n), MPI_BYTE, root, comm_), "MPI_Bcast");
  }
}

void MpiCommunicator::allgather_in_place(float* data, std::size_t count) const {
  DISTZO_REQUIRE(count <= static_cast<std::size_t>(INT_MAX),
                 "allgather of " << count << " floats per rank: more than MPI's int count");
  check_mpi(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, static_cast<int>(count),
                          MPI_FLOAT, comm_),
            "MPI_Allgather(in place, float)");
}

std::shared_ptr<SharedMemory> MpiCommunicator::allocate_shared(std::size_t bytes) const {
  // MPI_Win_allocate_shared fails (or worse) on a communicator spanning nodes.
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type(shared)");
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  DISTZO_REQUIRE(all_true(node_size == size_),
                 "shared memory asked of " << size_ << " ranks that are not all on one node");
  // MPI backs shared windows with /dev/shm; a full one (containers default to
  // 64 MiB) would end in SIGBUS at first touch instead of an error.
  double free = rank_ == 0 ? free_bytes("/dev/shm") : -1;  // negative: unknown
  broadcast(&free, sizeof(free), 0);
  DISTZO_INPUT_REQUIRE(free < 0 || free >= static_cast<double>(bytes),
                 "Placement II needs " << bytes << " more bytes of node-shared memory (θ's master "
                     "or the slice exchange buffers) but "
                     "/dev/shm has " << static_cast<std::uint64_t>(free)
                     << " free: enlarge it (containers: --shm-size) or set "
                        "placement.share_host_master: false");
  return std::make_shared<SharedWindow>(comm_, rank_, bytes);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) const {
  MPI_Comm out;
  check_mpi(MPI_Comm_split(comm_, color, key, &out), "MPI_Comm_split");
  return std::make_unique<MpiCommunicator>(out, true);
}

std::unique_ptr<Communicator> MpiCommunicator::split_node() const {
  MPI_Comm out;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &out),
            "MPI_Comm_split_type(shared)");
  return std::make_unique<MpiCommunicator>(out, true);
}

}  // namespace distzo::runtime
