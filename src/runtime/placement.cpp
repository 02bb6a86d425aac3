#include "runtime/placement.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace distzo::runtime {

const char* to_string(PlacementMode mode) {
  switch (mode) {
    case PlacementMode::resident: return "resident";
    case PlacementMode::offload: return "offload";
  }
  return "?";
}

PlacementMode placement_mode(const std::string& name, const std::string& what) {
  for (PlacementMode mode : {PlacementMode::resident, PlacementMode::offload})
    if (name == to_string(mode)) return mode;
  DISTZO_INPUT_FAIL(what << " must be resident or offload, got '" << name << "'");
}

int PlacementConfig::device_blocks(int num_blocks) const {
  if (mode == PlacementMode::resident) return num_blocks;
  return std::min(std::max(resident_blocks, 0), num_blocks);
}

int PlacementConfig::stream_slots(int num_blocks) const {
  return std::min(prefetch + 2, streamed_blocks(num_blocks));
}

}  // namespace distzo::runtime
