#include "zo/trainer.hpp"

#include <chrono>
#include <sstream>

#include "core/error.hpp"

namespace distzo::zo {

Trainer::Trainer(Engine& engine, const runtime::Mesh& mesh, const TrainerConfig& config,
                 TrainerHooks& hooks, runtime::Heartbeat& heartbeat)
    : engine_(engine), mesh_(mesh), config_(config), hooks_(hooks), heartbeat_(heartbeat) {}

namespace {

/// Every rank's value, in rank order.
std::vector<std::uint64_t> gathered(const runtime::Communicator& world, std::uint64_t mine) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world.size()));
  world.allgather(&mine, 1, all.data());
  return all;
}

/// "1, 3": the ranks whose value differs from `expected`.
std::string ranks_differing(const std::vector<std::uint64_t>& all, std::uint64_t expected) {
  std::string ranks;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r] != expected) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return ranks;
}

/// What to change after skipped steps, the last of which was `last`: a flat
/// one-sided step (σ = 0) wants a larger ε, a non-finite loss a smaller lr or ε.
std::string nonfinite_advice(const TrainerConfig& c, const StepEstimate& last) {
  std::ostringstream os;
  if (last.flat())
    os << "the one-sided losses L(θ + εz_i) of a step were all equal, so their spread σ is 0 and "
          "g undefined; optim.eps = "
       << c.eps
       << " is too small to move the loss at float32's resolution of the weights: raise it (FZOO "
          "and MeZO use 1e-3)";
  else
    os << "lower optim.lr or optim.eps, or check the data";
  return os.str();
}

/// Why a streak of optim.max_nonfinite skipped steps, the last `report`'s,
/// stops the run, and what to change.
std::string nonfinite_stop(const TrainerConfig& c, const StepReport& report) {
  std::ostringstream os;
  os << c.max_nonfinite << " consecutive steps "
     << (report.estimate.flat() ? "could not be estimated" : "had a non-finite loss")
     << " (last: step " << report.step << "); " << nonfinite_advice(c, report.estimate)
     << ". Stopping (optim.max_nonfinite).";
  return os.str();
}

}  // namespace

bool Trainer::maybe_checkpoint(TrainerState& state, int streak, const char* phase,
                               std::int64_t phase_step) {
  if (streak > 0) {
    hooks_.checkpoint_skipped(state.step, streak);
    return false;
  }
  engine_.flush(config_.z, state.pending);
  heartbeat_.phase(phase, phase_step);
  hooks_.checkpoint(state);
  return true;
}

void Trainer::checkpoints_due(TrainerState& state, int streak, std::int64_t done) {
  const TrainerConfig& c = config_;
  if (c.checkpoint_interval > 0 && done % c.checkpoint_interval == 0) {
    maybe_checkpoint(state, streak, "the checkpoint after step", done);
    return;
  }
  if (c.log_checkpoint_interval <= 0 || done % c.log_checkpoint_interval != 0 || streak > 0) return;
  // The same flush as before a full checkpoint: the digest recorded is of θ
  // after step `done`, and the next step's update starts from nothing pending.
  engine_.flush(c.z, state.pending);
  heartbeat_.phase("the log-only checkpoint after step", done);
  hooks_.log_checkpoint(state);
}

void Trainer::check_replicas(std::int64_t step) {
  hooks_.before_replica_check(step);
  const runtime::Communicator& world = mesh_.world();
  // A shared master: no other rank may have written into this rank's slice.
  const std::string overwritten =
      ranks_differing(gathered(world, engine_.own_slices_intact() ? 1 : 0), 1);
  if (!overwritten.empty()) {
    std::ostringstream os;
    os << "shared θ master corrupted after step " << step << ": the slice of rank(s) "
       << overwritten
       << " changed after its owner wrote it, so another rank of the node wrote outside its own "
          "slice (placement.share_host_master). This points at a bug in the sliced update or "
          "at corrupted memory. Stopping before the damage spreads.";
    throw CollectiveError(os.str(), world.rank() == 0);
  }

  // θ is compared as it stands: a pending update is pending on every rank
  // alike, so no flush is needed.
  const std::vector<std::uint64_t> digests =
      gathered(world, std::stoull(engine_.parameter_digest(), nullptr, 16));
  const std::string diverged = ranks_differing(digests, digests[0]);  // against rank 0's
  if (diverged.empty()) return;
  std::ostringstream os;
  os << "replicas diverged after step " << step << ": the parameter digest of rank(s) " << diverged
     << " differs from rank 0's. Every rank must apply the same update to the same θ; this "
        "points at a non-deterministic kernel or corrupted memory. Stopping before the "
        "replicas drift further.";
  // Every rank saw the same gathered digests: stop together, report once.
  throw CollectiveError(os.str(), world.rank() == 0);
}

TrainSummary Trainer::run(TrainerState& state) {
  using Clock = std::chrono::steady_clock;
  const TrainerConfig& c = config_;
  PendingUpdate& pending = state.pending;
  const std::int64_t first_step = state.step;
  TrainSummary summary;

  if (c.evaluate && first_step == 0) {
    engine_.flush(c.z, pending);
    heartbeat_.phase("the evaluation before training");
    hooks_.evaluate(0, "start");
  }

  DISTZO_REQUIRE(state.history.capacity() == c.momentum.history,
                 "trainer: a history of " << state.history.capacity() << " rows for optim.history "
                                          << c.momentum.history);
  int streak = state.nonfinite_streak;
  StepEstimate last;  // the last step's, for the advice if the run ends in a skipped streak
  for (std::int64_t step = first_step; step < c.steps; ++step) {
    const Clock::time_point t0 = Clock::now();
    heartbeat_.phase("the start of step", step + 1);
    const model::Batch& batch = hooks_.batch(step);
    const StepPerturbation perturbation{c.z, step, c.eps};
    const runtime::TransferBytes before = engine_.streamer().total_bytes();
    const LossTable local = engine_.run_step(batch, perturbation, pending);
    const runtime::TransferBytes after = engine_.streamer().total_bytes();
    heartbeat_.step_finished("the end of the forward passes of step", step + 1);
    // Tokens of the global batch: one micro-batch per replica of the data group.
    double tokens = static_cast<double>(batch.num_tokens);
    mesh_.data_group().allreduce_sum(&tokens, 1);

    StepReport report;
    report.estimate = combine_losses(mesh_.world(), local, c.eps, hooks_.stop_requested());
    report.step = step + 1;
    report.lr = c.schedule.at(step);
    report.tokens = static_cast<std::int64_t>(tokens);
    report.moved = {after.to_device - before.to_device, after.to_host - before.to_host};
    // g is identical on every rank, so every rank takes the same branch.
    state.history.push(step, report.estimate.finite ? report.estimate.g : std::vector<double>());
    if (report.estimate.finite) {
      streak = 0;
      pending =
          pending_update(c.momentum, state.history, step, report.lr, c.weight_decay, c.queries);
    } else {
      ++streak;
      ++summary.skipped;
      report.skipped = true;
    }
    report.nonfinite_streak = streak;
    state.nonfinite_streak = streak;
    state.step = step + 1;
    ++summary.steps_run;
    report.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    hooks_.step_done(report);
    last = report.estimate;
    if (streak >= c.max_nonfinite)
      throw CollectiveError(nonfinite_stop(c, report), mesh_.world().rank() == 0);

    const std::int64_t done = step + 1;
    // Any rank asked to stop (its flag came with the step's losses): all stop
    // here, with θ checkpointed (unless the latest steps were non-finite:
    // then the last good checkpoint stays).
    if (const StopReason reason = report.estimate.stop; reason != StopReason::none) {
      std::ostringstream os;
      os << (reason == StopReason::interrupt ? "stopped by an interrupt (SIGINT)"
                                             : "stopped by a signal")
         << " after step " << done
         << (maybe_checkpoint(state, streak, "the checkpoint after step", done)
                 ? ", checkpointed; resume (checkpoint.resume: latest) to continue"
                 : "; no checkpoint of it (the last steps were non-finite)");
      throw StopRequested(os.str(), mesh_.world().rank() == 0, reason);
    }
    if (c.check_interval > 0 && done % c.check_interval == 0) {
      engine_.record_own_slices();
      check_replicas(done);
    }
    if (done == c.steps) break;
    if (c.evaluate && c.eval_interval > 0 && done % c.eval_interval == 0) {
      engine_.flush(c.z, pending);
      heartbeat_.phase("the evaluation after step", done);
      hooks_.evaluate(done, "");
    }
    checkpoints_due(state, streak, done);
  }

  // The end: every pending update applied, then the final checks and outputs.
  engine_.flush(c.z, pending);
  engine_.record_own_slices();
  if (mesh_.world().size() > 1) check_replicas(c.steps);
  // optim.steps: 0 only evaluates: once, and θ, unchanged, is not written.
  if (c.evaluate && c.steps > first_step) {
    heartbeat_.phase("the final evaluation");
    hooks_.evaluate(c.steps, "end");
  }
  // A run that made no step has nothing new to write.
  const bool due = streak > 0 || state.step > first_step;
  if (due && !maybe_checkpoint(state, streak, "the final checkpoint", -1)) {
    std::ostringstream os;
    os << "the run ended with " << streak << " non-finite step" << (streak == 1 ? "" : "s")
       << " in a row: no final checkpoint was written (the newest checkpoint is the last good "
          "one); "
       << nonfinite_advice(c, last);
    throw CollectiveError(os.str(), mesh_.world().rank() == 0);
  }
  return summary;
}

}  // namespace distzo::zo
