#pragma once
// Faults that a test or `distzo run --debug-*` installs through the
// runtime's seams, to show that a guard catches them (as RocksDB's
// FaultInjectionTestEnv wraps the production Env): the streamer and the
// store carry no switch for them, and a run that installs none has no fault
// path at all.

namespace distzo::runtime {

class BlockStreamer;
class ParameterStore;

/// Fills every slot `streamer` releases from now on with NaN, on its
/// write-back instance (BlockStreamer::on_release), so that a read after
/// release shows up as a non-finite loss.
void poison_released_slots(BlockStreamer& streamer);

/// Overwrites one element of θ that the replica check must catch changed:
/// with a sliced store, the first element of the next rank's slice of the
/// first sliced group (a stray write into a node-shared master); else θ's
/// first element (a corrupted replica). Only that element's bits are
/// written, through the store's own views of θ: the node's other ranks may
/// be writing the rest of a shared arena.
void corrupt_one_element(ParameterStore& store);

}  // namespace distzo::runtime
