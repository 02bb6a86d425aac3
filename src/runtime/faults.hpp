#pragma once
// Faults that a test or `distzo run --debug-*` installs through the
// runtime's seams, to show that a guard catches them (as RocksDB's
// FaultInjectionTestEnv wraps the production Env): the streamer and the
// store carry no switch for them, and a run that installs none has no fault
// path at all.

namespace distzo::runtime {

class BlockStreamer;

/// Fills every slot `streamer` releases from now on with NaN, on its
/// write-back instance (BlockStreamer::on_release), so that a read after
/// release shows up as a non-finite loss.
void poison_released_slots(BlockStreamer& streamer);

}  // namespace distzo::runtime
