#pragma once
// The deck's values as the layers' own configurations: io reads decks and
// knows nothing of runtime or zo, which know nothing of decks; the app maps.

#include "io/deck.hpp"
#include "runtime/placement.hpp"
#include "zo/lr_schedule.hpp"

namespace distzo::app {

zo::ScheduleKind schedule_kind(io::Schedule schedule);

/// placement.{mode, resident_blocks, prefetch}; the test switches stay off.
runtime::PlacementConfig placement_config(const io::Deck& deck);

}  // namespace distzo::app
