#pragma once
// The step loop of a run, as policy over the engine (torchtitan's
// train loop, llm.c's main): get the micro-batch → one ZO step → combine the
// scalars → schedule the update → evaluate / checkpoint / check replicas when
// due. What the run writes and where (files, progress lines) is the hooks'
// business; what happens when is the trainer's:
//
//   - every step's row of scalars joins the history (a non-finite one as
//     zeros); a finite step becomes the pending update, built from the
//     history by zo/momentum.hpp (plain SGD: its own row) and applied lazily,
//     fused with the next step's perturbation; a non-finite one is skipped, and
//     max_nonfinite in a row stop every rank together (the count carries
//     over a resume); no checkpoint is written while the latest steps are
//     non-finite, and a run that ends in such a streak ends with an error;
//   - θ is flushed before every evaluation and checkpoint, log-only ones
//     included (their recorded digest is of θ after their step);
//   - every check_interval steps the replicas compare parameter digests
//     (DESIGN.md invariant 3) and stop, naming the ranks, if they differ;
//     with a shared master each rank also checks that no other rank wrote
//     into its slice since it wrote it;
//   - after every step the ranks agree whether any was asked to stop (a
//     signal): then all checkpoint θ after that same step and throw
//     StopRequested (main exits with kExitStopped, which a job script
//     requeues on, or after an interrupt with kExitInterrupted);
//   - at the end: flush, a last digest check, the final evaluation and
//     checkpoint.

#include <cstdint>
#include <string>

#include "core/step_state.hpp"
#include "model/batch.hpp"
#include "runtime/heartbeat.hpp"
#include "runtime/mesh.hpp"
#include "zo/engine.hpp"
#include "zo/estimator.hpp"
#include "zo/lr_schedule.hpp"
#include "zo/momentum.hpp"

namespace distzo::zo {

struct TrainerConfig {
  std::int64_t steps = 0;  // the run ends after this many steps
  LrSchedule schedule;
  double eps = 1e-3;
  double weight_decay = 0;
  int queries = 1;
  MomentumSpec momentum;                 // optim.momentum, optim.history
  ZSpec z;                               // the run's z: every step's, and the pending update's
  int max_nonfinite = 5;                 // consecutive non-finite steps that stop the run
  std::int64_t eval_interval = 0;        // 0: before training and at the end only
  std::int64_t checkpoint_interval = 0;  // 0: at the end only
  // Log-only checkpoints (the training state without θ) every this many
  // steps, where no full one is due; 0: none.
  std::int64_t log_checkpoint_interval = 0;
  std::int64_t check_interval = 0;  // replica digest checks; 0: never
  bool evaluate = false;            // is there an evaluation set
};

/// What continues across a checkpoint.
struct TrainerState {
  std::int64_t step = 0;  // steps completed
  PendingUpdate pending;
  int nonfinite_streak = 0;  // consecutive non-finite steps up to `step`
  // The seed log's last rows, up to `step` (capacity: optim.history); a
  // resume rebuilds it from its checkpoint's log.
  GradientHistory history;
};

/// One finished step, as the hooks see it.
struct StepReport {
  std::int64_t step = 0;  // steps completed, counting this one (1-based)
  StepEstimate estimate;
  double lr = 0;
  std::int64_t tokens = 0;       // non-padding tokens of the global batch
  double seconds = 0;            // wall time of the step
  bool skipped = false;          // non-finite: no update
  int nonfinite_streak = 0;      // consecutive skipped steps, this one included
  runtime::TransferBytes moved;  // θ moved between host master and device slots
};

/// Where the trainer's effects go. Called on every rank.
class TrainerHooks {
 public:
  virtual ~TrainerHooks() = default;
  /// This replica's micro-batch of `step` (0-based), in device memory.
  virtual const model::Batch& batch(std::int64_t step) = 0;
  virtual void step_done(const StepReport& report) = 0;
  /// Evaluate θ (flushed); `when` is "start", "" or "end".
  virtual void evaluate(std::int64_t step, const char* when) = 0;
  /// Write a checkpoint of θ (flushed) after `state.step` steps.
  virtual void checkpoint(const TrainerState& state) = 0;
  /// Write a log-only checkpoint after `state.step` steps: the training
  /// state and the digest of θ (flushed), without θ.
  virtual void log_checkpoint(const TrainerState& /*state*/) {}
  /// A checkpoint due after `step` steps was not written: the last
  /// `streak` steps were non-finite, and the previous checkpoint stays the
  /// newest good one.
  virtual void checkpoint_skipped(std::int64_t step, int streak) = 0;
  /// The replicas are about to compare θ after `step` steps (each rank has
  /// recorded its own slices of a shared master): where a fault test
  /// corrupts θ to show that the check stops the run.
  virtual void before_replica_check(std::int64_t /*step*/) {}
  /// Whether this rank was asked to stop (a signal), and why; the answer
  /// travels with the step's gathered losses, so all ranks stop after the
  /// same step.
  virtual StopReason stop_requested() { return StopReason::none; }
};

struct TrainSummary {
  std::int64_t steps_run = 0;  // in this process (a resumed run counts from its checkpoint)
  std::int64_t skipped = 0;
};

class Trainer {
 public:
  /// Beats `heartbeat` at every progress point ("the start of step" 12),
  /// the same on every rank.
  Trainer(Engine& engine, const runtime::Mesh& mesh, const TrainerConfig& config,
          TrainerHooks& hooks, runtime::Heartbeat& heartbeat);

  /// Runs from `state` (fresh: step 0, nothing pending) to config.steps.
  /// Collective; throws CollectiveError on every rank together for a
  /// non-finite streak or diverged replicas.
  TrainSummary run(TrainerState& state);

 private:
  void check_replicas(std::int64_t step);
  /// Flushes θ and checkpoints it after state.step steps, unless the latest
  /// `streak` steps were non-finite: then the hooks hear that the checkpoint
  /// was skipped (the previous one stays the newest good one). `phase` and
  /// `phase_step` name the progress point. Returns whether it was written.
  bool maybe_checkpoint(TrainerState& state, int streak, const char* phase,
                        std::int64_t phase_step);
  /// After step `done`: the full checkpoint when one is due, else the
  /// log-only one when due; neither during a non-finite streak (a full
  /// one says so, a log-only one is left out quietly).
  void checkpoints_due(TrainerState& state, int streak, std::int64_t done);

  Engine& engine_;
  const runtime::Mesh& mesh_;
  TrainerConfig config_;
  TrainerHooks& hooks_;
  runtime::Heartbeat& heartbeat_;
};

}  // namespace distzo::zo
