#include "runtime/mpi_communicator.hpp"

#include "core/error.hpp"

namespace distzo::runtime {

namespace {
void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  DISTZO_FAIL("MPI error in " << what << ": " << std::string(text, static_cast<std::size_t>(length)));
}
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
