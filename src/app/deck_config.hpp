#pragma once
// The deck's values as the layers' own configurations: io reads decks and
// knows nothing of runtime or zo, which know nothing of decks; the app maps.

#include <cstdint>
#include <string>

#include "core/block_choice.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "runtime/placement.hpp"
#include "runtime/watchdog.hpp"
#include "zo/trainer.hpp"

namespace distzo::app {

/// placement.{mode, resident_blocks, prefetch, slots, share_host_master,
/// perturbed_weights} and precision.*; `auto` shares the host master when the
/// node has more than one rank of the run. Throws distzo::Error naming the
/// deck line when placement.slots is too few for prefetch, gemm_inputs
/// storage has an fp32 θ, or the node-shared master cannot hold what the
/// deck asks (runtime::PlacementConfig::shared_master_problem).
runtime::PlacementConfig placement_config(const io::Deck& deck, int ranks_on_node = 1);

/// "placement.resident_blocks, prefetch and slots apply to mode offload:
/// ignored" when the deck sets any of them with mode resident, else "".
std::string ignored_placement_keys(const io::Deck& deck);

/// optim.perturbed_blocks of a model of `blocks` decoder blocks: K of them
/// each step, or every block. Throws distzo::Error naming the deck line
/// unless K < `blocks` (K = `blocks` is every block: the key left out).
BlockChoice block_choice(const io::Deck& deck, int blocks);

/// optim.*, eval.interval, checkpoint.interval and parallel.check_interval;
/// `evaluate`: the run has an eval set; `z`: the run's (Inputs::state.z:
/// the deck's seed and distribution, a resume's recipe).
zo::TrainerConfig trainer_config(const io::Deck& deck, bool evaluate, const ZSpec& z);

/// Where the trainer continues from: a checkpoint's training state (a fresh
/// run's is empty), with the last optim.history rows of its seed log for
/// `momentum`'s updates.
zo::TrainerState trainer_state(const io::TrainingState& saved, const zo::MomentumSpec& momentum);

/// The reverse, into the training state a checkpoint records: the step, the
/// non-finite streak and the pending update of `state`.
void record_trainer_state(const zo::TrainerState& state, io::TrainingState& saved);

/// parallel.watchdog, logging to output.dir/run.log. While rank 0's node
/// writes a checkpoint the other ranks wait in a barrier without progress:
/// `auto` allows for the `parameters` of θ written at 100 MB/s.
runtime::WatchdogConfig watchdog_config(const io::Deck& deck, std::int64_t parameters);

}  // namespace distzo::app
