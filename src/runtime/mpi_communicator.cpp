#include "runtime/mpi_communicator.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "core/error.hpp"
#include "core/file_system.hpp"
#include "core/output_drain.hpp"

namespace distzo::runtime {

namespace {
void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  DISTZO_FAIL("MPI error in " << what << ": "
                              << std::string(text, static_cast<std::size_t>(length)));
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

/// Rank 0 exposes one int64 per rank; every rank writes its own with
/// MPI_Raccumulate(MPI_REPLACE) (atomic per element, unlike MPI_Put) under a
/// lock_all epoch held for the board's life. A post never waits for the
/// target: the update is issued now and completes whenever the two ranks'
/// MPI progress meets, at the latest in the step's next collective. So a
/// rank blocked in a collective has delivered every count it posted, and a
/// rank stopped before posting shows an older count.
class MpiProgressBoard final : public ProgressBoard {
 public:
  MpiProgressBoard(MPI_Comm comm, int rank, int size) : rank_(rank), size_(size) {
    const MPI_Aint bytes = rank == 0 ? static_cast<MPI_Aint>(size) * 8 : 0;
    check_mpi(MPI_Win_allocate(bytes, 8, MPI_INFO_NULL, comm, &counts_, &window_),
              "MPI_Win_allocate (progress board)");
    if (rank == 0) std::fill(counts_, counts_ + size, std::int64_t{0});
    // Reading the window's memory directly (no MPI call) sees remote
    // updates only where the public and private copies are one.
    int* model = nullptr;
    int found = 0;
    MPI_Win_get_attr(window_, MPI_WIN_MODEL, &model, &found);
    readable_ = rank == 0 && found != 0 && *model == MPI_WIN_UNIFIED;
    check_mpi(MPI_Barrier(comm), "MPI_Barrier (progress board zeroed)");
    check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, window_), "MPI_Win_lock_all (progress board)");
  }
  ~MpiProgressBoard() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (Post& p : in_flight_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    MPI_Win_unlock_all(window_);
    MPI_Win_free(&window_);
  }
  MpiProgressBoard(const MpiProgressBoard&) = delete;
  MpiProgressBoard& operator=(const MpiProgressBoard&) = delete;

  void post(std::int64_t count) override {
    // Retire the posts that went out (their buffers must live until then).
    while (!in_flight_.empty()) {
      int done = 0;
      MPI_Test(&in_flight_.front().request, &done, MPI_STATUS_IGNORE);
      if (done == 0) break;
      in_flight_.pop_front();
    }
    in_flight_.push_back({count, MPI_REQUEST_NULL});  // deque: earlier elements stay put
    Post& p = in_flight_.back();
    check_mpi(MPI_Raccumulate(&p.count, 1, MPI_INT64_T, 0, rank_, 1, MPI_INT64_T, MPI_REPLACE,
                              window_, &p.request),
              "MPI_Raccumulate (progress board)");
  }

  std::vector<std::int64_t> counts() const override {
    if (!readable_) return {};
    std::vector<std::int64_t> out(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) out[r] = __atomic_load_n(counts_ + r, __ATOMIC_RELAXED);
    return out;
  }

 private:
  struct Post {
    std::int64_t count;
    MPI_Request request;
  };
  int rank_, size_;
  MPI_Win window_ = MPI_WIN_NULL;
  std::int64_t* counts_ = nullptr;  // rank 0: size_ counts; elsewhere unused
  bool readable_ = false;
  std::deque<Post> in_flight_;
};

}  // namespace

std::unique_ptr<ProgressBoard> MpiCommunicator::progress_board() const {
  return std::make_unique<MpiProgressBoard>(comm_, rank_, size_);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned,
                                 std::shared_ptr<std::function<void()>> hook)
    : comm_(comm),
      owned_(owned),
      hook_(hook ? std::move(hook) : std::make_shared<std::function<void()>>()) {
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(&comm_);
}

void MpiCommunicator::allgather(const double* send, int count, double* recv) const {
  announce();
  check_mpi(MPI_Allgather(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, comm_),
            "MPI_Allgather(double)");
}

void MpiCommunicator::allgather(const std::uint64_t* send, int count, std::uint64_t* recv) const {
  announce();
  check_mpi(MPI_Allgather(send, count, MPI_UINT64_T, recv, count, MPI_UINT64_T, comm_),
            "MPI_Allgather(uint64)");
}

void MpiCommunicator::allreduce_sum(double* values, int count) const {
  announce();
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_),
            "MPI_Allreduce(sum)");
}

void MpiCommunicator::allreduce_sum(std::uint64_t* values, int count) const {
  announce();
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_UINT64_T, MPI_SUM, comm_),
            "MPI_Allreduce(sum, uint64)");
}

bool MpiCommunicator::all_true(bool value) const {
  announce();
  int local = value ? 1 : 0, global = 0;
  check_mpi(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_LAND, comm_), "MPI_Allreduce(land)");
  return global != 0;
}

void MpiCommunicator::barrier() const {
  announce();
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

void MpiCommunicator::on_collective(std::function<void()> hook) const { *hook_ = std::move(hook); }

void MpiCommunicator::abort(int status) const {
  std::fflush(stdout);
  std::fflush(stderr);
  // MPI_Abort ends this process through exit(), whose handlers may wait
  // forever on a library thread that is stuck (OpenBLAS's joins its threads;
  // a stuck one may be why the watchdog fired). Alone, there is no one to
  // tell: end now. Otherwise MPI_Abort has the launcher end every rank, and
  // SIGALRM ends this one should exit() not return.
  int world_size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_size == 1) std::_Exit(status);
  constexpr unsigned kAbortGraceSeconds = 10;
  std::signal(SIGALRM, SIG_DFL);
  alarm(kAbortGraceSeconds);
  // The launcher ends the job's output with the job: what this rank said
  // (why it aborts) must have left its pipe first (core/output_drain.hpp).
  flush_output_to_launcher();
  MPI_Abort(comm_, status);
  std::_Exit(status);  // MPI_Abort does not return; should it, end this rank at least
}

void MpiCommunicator::announce() const {
  if (*hook_) (*hook_)();
}

void MpiCommunicator::broadcast(void* data, std::size_t bytes, int root) const {
  announce();
  char* p = static_cast<char*>(data);
  for (std::size_t done = 0; done < bytes; done += kMaxCount) {
    const std::size_t n = std::min(kMaxCount, bytes - done);
    check_mpi(MPI_Bcast(p + done, static_cast<int>(n), MPI_BYTE, root, comm_), "MPI_Bcast");
  }
}

void MpiCommunicator::allgather_in_place(float* data, std::size_t count) const {
  announce();
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
                       "Placement II needs " << bytes
                                             << " more bytes of node-shared memory (θ's master "
                                                "or the slice exchange buffers) but "
                                                "/dev/shm has "
                                             << static_cast<std::uint64_t>(free)
                                             << " free: enlarge it (containers: --shm-size) or set "
                                                "placement.share_host_master: false");
  return std::make_shared<SharedWindow>(comm_, rank_, bytes);
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) const {
  MPI_Comm out;
  check_mpi(MPI_Comm_split(comm_, color, key, &out), "MPI_Comm_split");
  return std::make_unique<MpiCommunicator>(out, true, hook_);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::unwatched() const {
  return std::make_unique<MpiCommunicator>(comm_, false);
}

std::unique_ptr<Communicator> MpiCommunicator::split_node() const {
  MPI_Comm out;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &out),
            "MPI_Comm_split_type(shared)");
  return std::make_unique<MpiCommunicator>(out, true, hook_);
}

}  // namespace distzo::runtime
