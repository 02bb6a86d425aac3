#include "runtime/nccl_exchange.hpp"

#include "core/error.hpp"

#if defined(DISTZO_HAVE_NCCL) && defined(KOKKOS_ENABLE_CUDA)
#include <nccl.h>

#include "core/fence.hpp"
#include "core/memory.hpp"
#endif

namespace distzo::runtime {

#if defined(DISTZO_HAVE_NCCL) && defined(KOKKOS_ENABLE_CUDA)

namespace {

void check_nccl(ncclResult_t result, const char* what) {
  DISTZO_REQUIRE(result == ncclSuccess, "NCCL error in "
                                            << what << ": " << ncclGetErrorString(result)
                                            << " (NCCL needs one GPU per rank of a node)");
}

class NcclExchange final : public SliceExchange {
 public:
  explicit NcclExchange(const Communicator& node) : SliceExchange(node) {
    ncclUniqueId id;
    if (node.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    node.broadcast(&id, sizeof(id), 0);
    check_nccl(ncclCommInitRank(&comm_, node.size(), id, node.rank()), "ncclCommInitRank");
  }
  ~NcclExchange() override { ncclCommDestroy(comm_); }

  ExchangeKind kind() const override { return ExchangeKind::nccl; }

  Vec allocate(const std::string& label, std::size_t elements) override {
    return Vec(memory_label(MemoryRole::scratch, label), elements);
  }

  void all_gather(const ExecSpace& space, const std::vector<Vec>& buffers) override {
    // In place: rank s's slice already sits at s*L of its own buffer.
    const cudaStream_t stream = space.cuda_stream();
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (const Vec& b : buffers) {
      const std::size_t per = b.extent(0) / static_cast<std::size_t>(slices());
      DISTZO_REQUIRE(per * static_cast<std::size_t>(slices()) == b.extent(0),
                     "slice exchange: a buffer of " << b.extent(0) << " elements is not "
                                                    << slices() << " equal slices");
      check_nccl(ncclAllGather(b.data() + per * static_cast<std::size_t>(slice()), b.data(), per,
                               ncclFloat, comm_, stream),
                 "ncclAllGather");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

 private:
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool nccl_available() { return true; }

std::unique_ptr<SliceExchange> make_nccl_exchange(const Communicator& node) {
  return std::make_unique<NcclExchange>(node);
}

#else

bool nccl_available() { return false; }

std::unique_ptr<SliceExchange> make_nccl_exchange(const Communicator&) {
  // make_slice_exchange refuses nccl first (exchange_unavailable).
  DISTZO_FAIL("make_nccl_exchange in a build without NCCL");
}

#endif

}  // namespace distzo::runtime
