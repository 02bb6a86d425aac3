#include "runtime/placement.hpp"

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"

namespace distzo::runtime {

PlacementMode placement_mode(const std::string& name, const std::string& what) {
  for (PlacementMode mode : {PlacementMode::resident, PlacementMode::offload})
    if (name == to_string(mode)) return mode;
  DISTZO_INPUT_FAIL(what << " must be resident or offload, got '" << name << "'");
}

bool perturbs_one_at_a_time(const std::string& name, const std::string& what) {
  if (name == "together" || name == "one_at_a_time") return name == "one_at_a_time";
  DISTZO_INPUT_FAIL(what << " must be together or one_at_a_time, got '" << name << "'");
}

int PlacementConfig::device_blocks(int num_blocks) const {
  if (mode == PlacementMode::resident) return num_blocks;
  return std::min(std::max(resident_blocks, 0), num_blocks);
}

int PlacementConfig::stream_slots(int num_blocks) const {
  // In 64 bits: prefetch + 2 of a prefetch near INT_MAX (bench and plan options) must not wrap.
  const std::int64_t ring = slots > 0 ? slots : static_cast<std::int64_t>(prefetch) + 2;
  return static_cast<int>(std::min<std::int64_t>(ring, streamed_blocks(num_blocks)));
}

PlacementProblem PlacementConfig::shared_master_problem() const {
  if (!share_host_master) return {};
  if (perturb_one_at_a_time)
    return {"placement.perturbed_weights",
            "one_at_a_time needs a rank to materialise its own w, but a node-shared θ master "
            "(placement.share_host_master) is sliced between the node's ranks, whose slices of "
            "every evaluation's w are exchanged at once: set placement.share_host_master: false, "
            "or perturbed_weights: together"};
  if (two_byte_gemm_inputs)
    return {"placement.share_host_master",
            "a node-shared master exchanges float32 w± slices and cannot be combined with "
            "precision.gemm_inputs: storage; set share_host_master to false or auto"};
  return {};
}

std::string PlacementConfig::slots_problem() const {
  const std::int64_t fewest = static_cast<std::int64_t>(prefetch) + 1;
  if (slots == 0 || slots >= fewest) return "";
  return "slots = " + std::to_string(slots) + " is too few for prefetch " +
         std::to_string(prefetch) + ": the block in use and " +
         std::string(prefetch == 1 ? "the upload" : "the uploads") +
         " ahead of it need at least prefetch + 1 = " + std::to_string(fewest) +
         " (0 = prefetch + 2, which also keeps a write-back in flight)";
}

}  // namespace distzo::runtime
