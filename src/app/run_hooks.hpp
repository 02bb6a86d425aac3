#pragma once
// The run's side of the trainer (zo::TrainerHooks): batches from the
// dataset, rows of metrics.csv and eval.csv, progress lines, checkpoints
// with the seed log.

#include <chrono>
#include <cstdint>

#include "app/evaluation.hpp"
#include "app/run_directory.hpp"
#include "app/run_faults.hpp"
#include "app/run_inputs.hpp"
#include "app/run_outputs.hpp"
#include "app/step_diagnostics.hpp"
#include "io/dataset.hpp"
#include "runtime/heartbeat.hpp"
#include "runtime/mesh.hpp"
#include "zo/trainer.hpp"

namespace distzo::app {

class RunHooks final : public zo::TrainerHooks {
 public:
  /// Collective over the mesh (it settles who writes checkpoints).
  /// `in.state` is the training state a checkpoint records: the hooks keep
  /// its seed log and step. `faults`: those of the run's tests that the
  /// hooks install (a corrupted θ, a hang, slow checkpoints).
  RunHooks(Inputs& in, zo::Engine& engine, Batches& batches, const runtime::Mesh& mesh,
           RunOutputs& out, runtime::Heartbeat& heartbeat, const RunFaults& faults);

  const model::Batch& batch(std::int64_t step) override;
  void step_done(const zo::StepReport& r) override;
  void evaluate(std::int64_t step, const char* when) override;
  StopReason stop_requested() override;
  /// --debug-corrupt-rank=R: rank R corrupts one element of θ
  /// (runtime::corrupt_one_element) before every replica check.
  void before_replica_check(std::int64_t step) override;
  void checkpoint_skipped(std::int64_t step, int streak) override;
  void checkpoint(const zo::TrainerState& state) override;
  /// Rank 0 writes log-STEP.h5 (RunCheckpoints::write_log); every rank
  /// takes part in θ's digest.
  void log_checkpoint(const zo::TrainerState& state) override;

  const runtime::TransferBytes& last_step_moved() const { return last_step_moved_; }
  /// Steps whose every g was exactly 0 (an update that did nothing).
  std::int64_t zero_g_steps() const { return zero_g_.count(); }
  const EvalSummary& before() const { return before_; }
  const EvalSummary& after() const { return after_; }

 private:
  using Clock = std::chrono::steady_clock;

  Inputs& in_;
  const io::ModelInfo model_;
  const io::Deck& deck_;
  zo::Engine& engine_;
  Batches& batches_;
  const runtime::Mesh& mesh_;
  RunOutputs& out_;
  runtime::Heartbeat& heartbeat_;
  RunFaults faults_;
  io::DataOrder order_;
  std::int64_t first_step_;
  Clock::time_point train_start_ = Clock::now();
  EvalSummary before_, after_;
  runtime::TransferBytes last_step_moved_;
  ZeroGradientSteps zero_g_;
  RunCheckpoints checkpoints_;
};

}  // namespace distzo::app
