#include "app/deck_config.hpp"

#include <algorithm>

#include "app/seed_log_replay.hpp"
#include "core/error.hpp"

namespace distzo::app {

runtime::PlacementConfig placement_config(const io::Deck& deck, int ranks_on_node) {
  runtime::PlacementConfig p;
  p.mode = deck.placement.mode;
  p.resident_blocks = deck.placement.resident_blocks;
  p.prefetch = deck.placement.prefetch;
  p.slots = deck.placement.slots;
  const std::string slots = p.slots_problem();
  if (!slots.empty()) throw Error(deck.origin.where("placement.slots") + slots);
  p.two_byte_gemm_inputs = deck.precision.gemm_inputs == io::GemmInputs::storage;
  if (p.two_byte_gemm_inputs && deck.precision.storage == StorageDtype::fp32)
    throw Error(deck.origin.where("precision.gemm_inputs") +
                "`storage` multiplies 2-byte words of θ's storage dtype, but θ is stored in fp32 "
                "here; set precision.storage to bf16 or fp16, or gemm_inputs to fp32");
  switch (deck.placement.share_host_master) {
    // A node-shared master exchanges float32 w± slices: with 2-byte GEMM
    // inputs auto gives every rank its own θ.
    case io::ShareHostMaster::automatic:
      p.share_host_master = ranks_on_node > 1 && !p.two_byte_gemm_inputs;
      break;
    case io::ShareHostMaster::on:
      p.share_host_master = true;
      break;
    case io::ShareHostMaster::off:
      p.share_host_master = false;
      break;
  }
  p.perturb_one_at_a_time =
      deck.placement.perturbed_weights == io::PerturbedWeightsSchedule::one_at_a_time;
  const runtime::PlacementProblem shared = p.shared_master_problem();
  if (!shared.key.empty()) throw Error(deck.origin.where(shared.key) + shared.why);
  p.storage = deck.precision.storage;
  p.rounding = deck.precision.rounding;
  return p;
}

std::string ignored_placement_keys(const io::Deck& deck) {
  const bool set = deck.origin.written("placement.resident_blocks") ||
                   deck.origin.written("placement.prefetch") ||
                   deck.origin.written("placement.slots");
  if (deck.placement.mode != PlacementMode::resident || !set) return "";
  return "placement.resident_blocks, prefetch and slots apply to mode offload: ignored";
}

BlockChoice block_choice(const io::Deck& deck, int blocks) {
  const int k = deck.optim.perturbed_blocks;
  DISTZO_INPUT_REQUIRE(k < blocks || k == 0,
                       deck.origin.where("optim.perturbed_blocks")
                           << k << " blocks a step, but the model has " << blocks
                           << " decoder blocks: choose fewer, or leave the key out (0) to "
                              "perturb every block every step");
  return BlockChoice{k, blocks};
}

zo::TrainerConfig trainer_config(const io::Deck& deck, bool evaluate, const ZSpec& z) {
  const auto& opt = deck.optim;
  zo::TrainerConfig c;
  c.steps = opt.steps;
  c.schedule = {opt.schedule, opt.lr, opt.warmup_steps, opt.steps};
  c.eps = opt.eps;
  c.weight_decay = opt.weight_decay;
  c.queries = opt.queries;
  c.momentum = {opt.momentum, opt.history};
  c.z = z;
  c.max_nonfinite = opt.max_nonfinite;
  c.eval_interval = deck.eval.interval;
  c.checkpoint_interval = deck.checkpoint.interval;
  c.log_checkpoint_interval = deck.checkpoint.log_interval;
  c.check_interval = deck.parallel.check_interval;
  c.evaluate = evaluate;
  return c;
}

zo::TrainerState trainer_state(const io::TrainingState& saved, const zo::MomentumSpec& momentum) {
  zo::TrainerState s;
  s.step = saved.step;
  s.nonfinite_streak = saved.nonfinite_streak;
  // The rows the next updates use: the log's last h (a skipped step's is empty).
  s.history =
      history_before(saved.seed_log, static_cast<std::int64_t>(saved.seed_log.size()), momentum);
  // A pending update (files distzo writes have none) is its step's: rebuilt
  // from the rows as the trainer would have built it.
  if (saved.pending.active)
    s.pending = zo::pending_update(momentum, s.history, saved.pending.step, saved.pending.lr,
                                   saved.pending.weight_decay, saved.queries);
  return s;
}

void record_trainer_state(const zo::TrainerState& state, io::TrainingState& saved) {
  saved.step = state.step;
  saved.nonfinite_streak = state.nonfinite_streak;
  saved.pending = state.pending;
}

runtime::WatchdogConfig watchdog_config(const io::Deck& deck, std::int64_t parameters) {
  runtime::WatchdogConfig c;
  c.log_path = deck.output.dir + "/run.log";
  c.enabled = deck.parallel.watchdog != io::kWatchdogOff;
  c.seconds = deck.parallel.watchdog > 0 ? deck.parallel.watchdog : 0;
  c.min_seconds = std::max(c.min_seconds, 4.0 * static_cast<double>(parameters) / 100e6);
  return c;
}

}  // namespace distzo::app
