#include "runtime/faults.hpp"

#include "runtime/block_streamer.hpp"

namespace distzo::runtime {

void poison_released_slots(BlockStreamer& streamer) {
  streamer.on_release([](const ExecSpace& writeback, const StoredVec& slot) {
    // All bits set is a NaN in every storage format (an all-ones exponent
    // with a nonzero mantissa), so the bytes are filled whatever θ's dtype.
    Kokkos::deep_copy(writeback, slot.raw(), static_cast<unsigned char>(0xFF));
  });
}

}  // namespace distzo::runtime
