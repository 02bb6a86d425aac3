#pragma once
// The NCCL slice exchange (DistZO2's NVLink all-gather), built only with
// -DDISTZO_ENABLE_NCCL=ON on a CUDA build; elsewhere asking for it is an
// error that says how to get it.

#include <memory>

#include "runtime/slice_exchange.hpp"

namespace distzo::runtime {

/// Whether this build has the NCCL exchange.
bool nccl_available();

/// One NCCL communicator over the node's ranks (one GPU each), set up from
/// `node`: rank 0's unique id is broadcast over it.
std::unique_ptr<SliceExchange> make_nccl_exchange(const Communicator& node);

}  // namespace distzo::runtime
