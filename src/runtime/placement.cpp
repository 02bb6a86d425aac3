#include "runtime/placement.hpp"

#include <algorithm>

namespace distzo::runtime {

const char* to_string(PlacementMode mode) {
  switch (mode) {
    case PlacementMode::resident: return "resident";
    case PlacementMode::offload: return "offload";
  }
  return "?";
}

int PlacementConfig::device_blocks(int num_blocks) const {
  if (mode == PlacementMode::resident) return num_blocks;
  return std::min(std::max(resident_blocks, 0), num_blocks);
}

int PlacementConfig::stream_slots(int num_blocks) const {
  return std::min(prefetch + 2, streamed_blocks(num_blocks));
}

}  // namespace distzo::runtime
