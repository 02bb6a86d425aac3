#include "app/run_hooks.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "app/deck_config.hpp"
#include "app/stop_signal.hpp"
#include "runtime/faults.hpp"

namespace distzo::app {

RunHooks::RunHooks(Inputs& in, zo::Engine& engine, Batches& batches, const runtime::Mesh& mesh,
                   RunOutputs& out, runtime::Heartbeat& heartbeat, const RunFaults& faults)
    : in_(in),
      model_(in.model->info()),
      deck_(in.deck),
      engine_(engine),
      batches_(batches),
      mesh_(mesh),
      out_(out),
      heartbeat_(heartbeat),
      faults_(faults),
      order_(in.train.num_examples, deck_.data.shuffle_seed),
      first_step_(in.state.step),
      zero_g_(deck_.optim.eps),
      checkpoints_(deck_.output.dir, deck_.checkpoint.keep,
                   CheckpointWriters::choose(mesh, engine.store())) {}

const model::Batch& RunHooks::batch(std::int64_t step) {
  const int D = mesh_.layout().data_size, B = deck_.data.micro_batch;
  // Every replica runs at the width of the whole global batch, so that the
  // shapes of a step, hence its rounding, do not depend on D: one rank with
  // the global batch as its micro-batch runs at the same width.
  const int width = batches_.train.width_of(order_.micro_batch(step, 0, 1, B * D));
  return batches_.train.fill(ExecSpace(),
                             order_.micro_batch(step, mesh_.coordinates().data_rank, D, B), width);
}

namespace {
/// RunFaults::hang_after_step: an exit handler that never returns,
/// then no progress, ever.
[[noreturn]] void hang_forever() {
  std::atexit([] {
    for (;;) pause();
  });
  for (;;) pause();
}
}  // namespace

void RunHooks::step_done(const zo::StepReport& r) {
  const zo::StepEstimate& est = r.estimate;
  const int q = deck_.optim.queries;
  in_.state.seed_log.push_back(
      {r.step - 1, r.lr, est.loss, r.skipped ? std::vector<double>() : est.g});
  if (r.skipped) out_.print(describe_skipped_step(r.step, r.nonfinite_streak, est.flat()));
  if (const std::string warning = zero_g_.step(r); !warning.empty()) out_.print(warning);
  StepRow row;
  row.step = r.step;
  row.loss = est.loss;
  if (!est.loss_minus.empty()) row.loss_minus = 0.0;
  for (int i = 0; i < q; ++i) {
    row.loss_plus += est.loss_plus[i] / q;
    if (row.loss_minus) *row.loss_minus += est.loss_minus[i] / q;
    row.g += est.g[i] / q;
  }
  row.lr = r.lr;
  row.tokens = r.tokens;
  row.step_seconds = r.seconds;
  row.skipped = r.skipped;
  out_.step(row);
  last_step_moved_ = r.moved;

  if (r.step == faults_.hang_after_step) hang_forever();
  if (r.step == first_step_ + 1)  // the clock of the ETA starts with the first step
    train_start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(r.seconds));
  const std::int64_t steps = deck_.optim.steps;
  if (r.step % deck_.output.log_interval == 0 || r.step == steps) {
    const double per_step = std::chrono::duration<double>(Clock::now() - train_start_).count() /
                            static_cast<double>(r.step - first_step_);
    out_.print(describe_progress(row, steps, per_step * static_cast<double>(steps - r.step)));
  }
}

void RunHooks::evaluate(std::int64_t step, const char* when) {
  EvalProgress at;
  ProgressMeter meter = out_.meter([&](const ProgressPoint& p) {
    return describe_eval_progress(step, when, p, at.batches_done, at.batches);
  });
  const EvalSummary s = app::evaluate(
      engine_, *batches_.eval, *in_.eval, deck_.eval.max_examples, deck_.data.micro_batch,
      mesh_.world(), [&](const EvalProgress& now) {
        heartbeat_.alive();
        at = now;
        meter.update(static_cast<double>(now.examples_done), static_cast<double>(now.examples));
      });
  const EvalRow row{step, s.loss, s.accuracy, s.examples};
  out_.eval(row);
  out_.print(describe_eval(row, when));
  if (step == 0) before_ = s;
  after_ = s;
}

StopReason RunHooks::stop_requested() { return stop_signal_received(); }

void RunHooks::before_replica_check(std::int64_t) {
  if (faults_.corrupt_theta_rank == mesh_.world().rank())
    runtime::corrupt_one_element(engine_.store());
}

void RunHooks::checkpoint_skipped(std::int64_t step, int streak) {
  out_.print(describe_checkpoint_skipped(step, streak));
}

void RunHooks::checkpoint(const zo::TrainerState& state) {
  io::TrainingState& saved = in_.state;
  record_trainer_state(state, saved);
  saved.deck_yaml = io::resolved_yaml(deck_);
  saved.parameter_digest = engine_.parameter_digest();
  const runtime::ParameterStore& store = engine_.store();
  // Bytes of θ as the checkpoint holds it (the storage's), through the piece
  // about to be written: on a node writing in parallel, rank 0's position.
  const TensorBytes bytes(model_.registry,
                          [&](std::uint32_t) { return bytes_per_element(store.storage()); });
  ProgressMeter meter = out_.meter([&](const ProgressPoint& p) {
    return describe_byte_progress("writing checkpoint " + checkpoints_.path(saved.step), p);
  });
  const RunCheckpoints::Written written =
      checkpoints_.write(model_, store, saved, [&](std::uint32_t id, std::uint64_t first) {
        heartbeat_.alive();
        meter.update(bytes.through(id, first), bytes.total());
        if (const int ms = faults_.slow_checkpoint_ms; ms > 0)
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      });
  meter.update(bytes.total(), bytes.total());
  if (mesh_.world().rank() == 0) {
    if (!written.kept_aside.empty())
      out_.print("output.dir: the checkpoint of step " + std::to_string(saved.step) +
                 " of the directory's previous run is kept as " + written.kept_aside);
    out_.print(describe_checkpoint(written.path, checkpoints_.writers().parallel_size()));
  }
  mesh_.world().barrier();
}

void RunHooks::log_checkpoint(const zo::TrainerState& state) {
  io::TrainingState& saved = in_.state;
  record_trainer_state(state, saved);
  saved.deck_yaml = io::resolved_yaml(deck_);
  saved.parameter_digest = engine_.parameter_digest();
  if (mesh_.world().rank() != 0) return;
  const RunCheckpoints::Written written = checkpoints_.write_log(saved);
  if (!written.kept_aside.empty())
    out_.print("output.dir: the log-only checkpoint of step " + std::to_string(saved.step) +
               " of the directory's previous run is kept as " + written.kept_aside);
  out_.print("log-only checkpoint " + written.path + " (θ digest " + saved.parameter_digest + ")");
}

}  // namespace distzo::app
