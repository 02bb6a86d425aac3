#include "runtime/slice_exchange.hpp"

#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/memory.hpp"
#include "runtime/nccl_exchange.hpp"

namespace distzo::runtime {

namespace {

void require_slices(const Vec& buffer, int slices) {
  DISTZO_REQUIRE(buffer.extent(0) % static_cast<std::size_t>(slices) == 0,
                 "slice exchange: a buffer of " << buffer.extent(0) << " elements is not " << slices
                                                << " equal slices");
}

class SharedMemoryExchange final : public SliceExchange {
 public:
  using SliceExchange::SliceExchange;
  ExchangeKind kind() const override { return ExchangeKind::shared_memory; }

  Vec allocate(const std::string&, std::size_t elements) override {
    memory_.push_back(node_.allocate_shared(elements * sizeof(real)));
    return Vec(static_cast<real*>(memory_.back()->data()), elements);
  }

  void all_gather(const ExecSpace& space, const std::vector<Vec>& buffers) override {
    for (const Vec& b : buffers) require_slices(b, slices());
    barrier(space);  // every slice written; the same bytes on every rank
  }

 private:
  std::vector<std::shared_ptr<SharedMemory>> memory_;  // kept mapped while the buffers live
};

class MpiExchange final : public SliceExchange {
 public:
  using SliceExchange::SliceExchange;
  ExchangeKind kind() const override { return ExchangeKind::mpi; }

  Vec allocate(const std::string& label, std::size_t elements) override {
    return Vec(memory_label(MemoryRole::scratch, label), elements);
  }

  void all_gather(const ExecSpace& space, const std::vector<Vec>& buffers) override {
    fence(space, "distzo: slices written, before the MPI all-gather");
    for (const Vec& b : buffers) {
      require_slices(b, slices());
      const std::size_t per = b.extent(0) / static_cast<std::size_t>(slices());
      if constexpr (kHostAccessibleMemory) {
        node_.allgather_in_place(b.data(), per);
      } else {
        if (staging_.extent(0) < b.extent(0))
          staging_ =
              HostVec(memory_label(MemoryRole::host_master, "exchange_staging"), b.extent(0));
        const HostVec stage =
            Kokkos::subview(staging_, std::make_pair(std::size_t{0}, b.extent(0)));
        Kokkos::deep_copy(space, stage, b);
        fence(space, "distzo: slice staged for the MPI all-gather");
        node_.allgather_in_place(stage.data(), per);
        Kokkos::deep_copy(space, b, stage);
      }
    }
  }

 private:
  HostVec staging_;
};

}  // namespace

void SliceExchange::barrier(const ExecSpace& space) {
  fence(space, "distzo: this rank's slice work done, before the node barrier");
  node_.barrier();
}

std::string exchange_unavailable(ExchangeKind kind) {
  if (kind == ExchangeKind::shared_memory && !kHostAccessibleMemory)
    return "shared_memory needs a host backend; this build computes on a GPU (use nccl or mpi)";
  if (kind == ExchangeKind::nccl && !nccl_available())
    return "nccl needs a CUDA build configured with -DDISTZO_ENABLE_NCCL=ON (and NCCL found); this "
           "build has none: use mpi, or auto";
  return "";
}

std::unique_ptr<SliceExchange> make_slice_exchange(ExchangeKind kind, const Communicator& node) {
  if (kind == ExchangeKind::automatic)
    kind = kHostAccessibleMemory ? ExchangeKind::shared_memory
                                 : (nccl_available() ? ExchangeKind::nccl : ExchangeKind::mpi);
  const std::string unavailable = exchange_unavailable(kind);
  DISTZO_INPUT_REQUIRE(unavailable.empty(), unavailable);
  switch (kind) {
    case ExchangeKind::shared_memory:
      return std::make_unique<SharedMemoryExchange>(node);
    case ExchangeKind::mpi:
      return std::make_unique<MpiExchange>(node);
    case ExchangeKind::nccl:
      return make_nccl_exchange(node);
    case ExchangeKind::automatic:
      break;
  }
  DISTZO_FAIL("unknown exchange kind " << static_cast<int>(kind));
}

}  // namespace distzo::runtime
