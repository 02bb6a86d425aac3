#include "runtime/faults.hpp"

#include <algorithm>
#include <vector>

#include "runtime/block_streamer.hpp"
#include "runtime/parameter_store.hpp"

namespace distzo::runtime {

void poison_released_slots(BlockStreamer& streamer) {
  streamer.on_release([](const ExecSpace& writeback, const StoredVec& slot) {
    // All bits set is a NaN in every storage format (an all-ones exponent
    // with a nonzero mantissa), so the bytes are filled whatever θ's dtype.
    Kokkos::deep_copy(writeback, slot.raw(), static_cast<unsigned char>(0xFF));
  });
}

void corrupt_one_element(ParameterStore& store) {
  const std::vector<model::GroupRef> groups = store.registry().groups();
  const bool sliced = std::any_of(groups.begin(), groups.end(), [&](const model::GroupRef& g) {
    return store.slices(g).slices > 1;
  });
  for (const model::GroupRef& group : groups) {
    const GroupSlices& mine = store.slices(group);
    if (sliced && mine.slices == 1) continue;
    // The next rank's slice; with one slice, this rank's own θ.
    const GroupSlices theirs =
        GroupSlices::of(store.layout(group), mine.slices, (mine.slice + 1) % mine.slices);
    if (theirs.pieces.empty()) continue;  // a slice wholly in the arena's padding
    const SlicePiece& at = theirs.pieces.front();
    const real value = 12345;
    std::vector<unsigned char> word(bytes_per_element(store.storage()));
    storage::encode_nearest(&value, 1, store.storage(), word.data());
    const StoredView<Kokkos::HostSpace> src(store.storage(), word.data(), 1);
    if (group.kind == model::ParameterGroup::block && !store.on_device(group.block))
      deep_copy_stored(store.host_arena(group.block).piece(at.arena_offset, 1), src);
    else
      deep_copy_stored(store.theta()[at.id].piece(at.first_element, 1), src);
    return;
  }
}

}  // namespace distzo::runtime
