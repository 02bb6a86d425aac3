#include "runtime/communicator.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.hpp"

namespace distzo::runtime {

std::string broadcast_string(const Communicator& comm, std::string text, int root) {
  std::uint64_t length = text.size();
  comm.broadcast(&length, sizeof(length), root);
  text.resize(length);
  comm.broadcast(text.data(), length, root);
  return text;
}

void collectively(const Communicator& comm, const std::function<void()>& work) {
  std::string problem;
  try {
    work();
  } catch (const Error& e) {
    problem = e.what();
  }
  const std::vector<double> ok = comm.allgather(problem.empty() ? 1.0 : 0.0);
  const bool all_ok = std::all_of(ok.begin(), ok.end(), [](double v) { return v == 1.0; });
  if (all_ok) return;
  if (problem.empty()) throw CollectiveError("another rank could not start the run", false);
  throw CollectiveError(problem, comm.rank() == 0 || ok[0] == 1.0);
}

void SerialCommunicator::allgather(const double* send, int count, double* recv) const {
  std::copy(send, send + count, recv);
}

void SerialCommunicator::allgather(const std::uint64_t* send, int count,
                                   std::uint64_t* recv) const {
  std::copy(send, send + count, recv);
}

namespace {

/// One process: plain memory, aligned like a page.
class PrivateMemory final : public SharedMemory {
 public:
  explicit PrivateMemory(std::size_t bytes) : bytes_(bytes) {
    constexpr std::size_t kPage = 4096;
    const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
    data_ = rounded == 0 ? nullptr : std::aligned_alloc(kPage, rounded);
    if (rounded != 0 && data_ == nullptr) throw std::bad_alloc();
    if (data_ != nullptr) std::memset(data_, 0, rounded);
  }
  ~PrivateMemory() override { std::free(data_); }
  PrivateMemory(const PrivateMemory&) = delete;
  PrivateMemory& operator=(const PrivateMemory&) = delete;
  void* data() const override { return data_; }
  std::size_t bytes() const override { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// One rank: its own count. Atomic because a watchdog thread reads it.
class LocalProgressBoard final : public ProgressBoard {
 public:
  void post(std::int64_t count) override { count_.store(count, std::memory_order_relaxed); }
  std::vector<std::int64_t> counts() const override {
    return {count_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<std::int64_t> count_{0};
};

}  // namespace

void SerialCommunicator::abort(int status) const {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(status);
}

std::unique_ptr<ProgressBoard> SerialCommunicator::progress_board() const {
  return std::make_unique<LocalProgressBoard>();
}

std::shared_ptr<SharedMemory> SerialCommunicator::allocate_shared(std::size_t bytes) const {
  return std::make_shared<PrivateMemory>(bytes);
}

std::unique_ptr<Communicator> SerialCommunicator::split(int, int) const {
  return std::make_unique<SerialCommunicator>();
}

std::unique_ptr<Communicator> SerialCommunicator::split_node() const {
  return std::make_unique<SerialCommunicator>();
}

}  // namespace distzo::runtime
