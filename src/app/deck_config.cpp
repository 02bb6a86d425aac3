#include "app/deck_config.hpp"

#include "core/error.hpp"

namespace distzo::app {

zo::ScheduleKind schedule_kind(io::Schedule schedule) {
  switch (schedule) {
    case io::Schedule::constant: return zo::ScheduleKind::constant;
    case io::Schedule::linear: return zo::ScheduleKind::linear;
    case io::Schedule::cosine: return zo::ScheduleKind::cosine;
  }
  DISTZO_FAIL("unknown schedule " << static_cast<int>(schedule));
}

runtime::PlacementConfig placement_config(const io::Deck& deck) {
  runtime::PlacementConfig p;
  p.mode = deck.placement.mode == io::Placement::offload ? runtime::PlacementMode::offload
                                                         : runtime::PlacementMode::resident;
  p.resident_blocks = deck.placement.resident_blocks;
  p.prefetch = deck.placement.prefetch;
  return p;
}

}  // namespace distzo::app
