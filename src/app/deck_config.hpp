#pragma once
// The deck's values as the layers' own configurations: io reads decks and
// knows nothing of runtime or zo, which know nothing of decks; the app maps.

#include "io/deck.hpp"
#include "runtime/placement.hpp"
#include "runtime/slice_exchange.hpp"
#include "zo/lr_schedule.hpp"

namespace distzo::app {

zo::ScheduleKind schedule_kind(io::Schedule schedule);

/// placement.{mode, resident_blocks, prefetch, share_host_master}; `auto`
/// shares the host master when the node has more than one rank of the run.
/// The test switches stay off.
runtime::PlacementConfig placement_config(const io::Deck& deck, int ranks_on_node = 1);

runtime::ExchangeKind exchange_kind(io::SliceExchange exchange);

}  // namespace distzo::app
