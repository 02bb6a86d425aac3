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

runtime::PlacementConfig placement_config(const io::Deck& deck, int ranks_on_node) {
  runtime::PlacementConfig p;
  p.mode = deck.placement.mode == io::Placement::offload ? runtime::PlacementMode::offload
                                                         : runtime::PlacementMode::resident;
  p.resident_blocks = deck.placement.resident_blocks;
  p.prefetch = deck.placement.prefetch;
  switch (deck.placement.share_host_master) {
    case io::ShareHostMaster::automatic: p.share_host_master = ranks_on_node > 1; break;
    case io::ShareHostMaster::on: p.share_host_master = true; break;
    case io::ShareHostMaster::off: p.share_host_master = false; break;
  }
  return p;
}

runtime::ExchangeKind exchange_kind(io::SliceExchange exchange) {
  switch (exchange) {
    case io::SliceExchange::automatic: return runtime::ExchangeKind::automatic;
    case io::SliceExchange::shared_memory: return runtime::ExchangeKind::shared_memory;
    case io::SliceExchange::mpi: return runtime::ExchangeKind::mpi;
    case io::SliceExchange::nccl: return runtime::ExchangeKind::nccl;
  }
  DISTZO_FAIL("unknown slice exchange " << static_cast<int>(exchange));
}

}  // namespace distzo::app
