#include "app/run.hpp"

#include "app/blas_threads.hpp"
#include "app/deck_config.hpp"
#include "app/run_directory.hpp"
#include "app/step_diagnostics.hpp"
#include "app/stop_signal.hpp"
#include "app/evaluation.hpp"
#include "app/format.hpp"
#include "app/plan.hpp"
#include "app/resume.hpp"
#include "app/run_outputs.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "io/checkpoint.hpp"
#include "io/dataset.hpp"
#include "io/deck.hpp"
#include "io/model_file.hpp"
#include "runtime/parameter_store.hpp"
#include "runtime/mesh.hpp"
#include "runtime/mpi_communicator.hpp"
#include "runtime/watchdog.hpp"
#include "zo/trainer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <cstdio>
#include <memory>
#include <sys/stat.h>

namespace distzo::app {

using runtime::broadcast_string;
using runtime::collectively;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

RunOptions parse_run_options(const std::vector<std::string>& args) {
  RunOptions o;
  for (const auto& a : args) {
    const std::string corrupt = "--debug-corrupt-rank=";
    if (a.compare(0, corrupt.size(), corrupt) == 0) {
      o.debug_corrupt_rank = std::stoi(a.substr(corrupt.size()));
    } else if (a == "--debug-poison-slots") {
      o.debug_poison_slots = true;
    } else if (!a.empty() && a[0] == '-') {
      DISTZO_FAIL("run: unknown option '" << a << "'");
    } else {
      DISTZO_REQUIRE(o.deck_path.empty(), "run: one deck expected, got '" << o.deck_path << "' and '"
                                                                          << a << "'");
      o.deck_path = a;
    }
  }
  DISTZO_REQUIRE(!o.deck_path.empty(), "run: missing DECK.yaml (usage: distzo run DECK.yaml)");
  return o;
}

namespace {

/// Everything a run reads, validated before anything is written.
struct Inputs {
  io::Deck deck;
  std::string resume;  // checkpoint to continue from, or empty
  std::vector<std::string> notes;  // for run.log (rank 0): a checkpoint passed over, ...
  std::unique_ptr<io::ModelReader> model;  // the model file or the checkpoint resumed
  io::TrainingState state;
  io::Dataset train;
  std::unique_ptr<io::Dataset> eval;
};

/// The resume continues the run of its checkpoint (app/resume.hpp), or throws.
void check_resume(Inputs& in, const runtime::Communicator& world) {
  const io::Deck& deck = in.deck;
  const io::Deck saved = io::parse_deck(in.state.deck_yaml, in.resume + " (its deck)");
  ResumeDigests now;
  // The base model: rank 0 reads the deck's model once and digests it.
  if (!in.state.base_model_digest.empty() && world.rank() == 0) {
    const io::ModelReader base(deck.model.path);
    now.model = base.info().config == in.model->info().config ? base.digest() : "another architecture";
  }
  now.model = broadcast_string(world, now.model);
  if (!in.state.train_digest.empty()) now.train = io::dataset_digest(in.train);
  const ResumeChanges changes =
      resume_changes(saved, in.state, deck, deck.checkpoint.allow_changes, now);
  for (const std::string& change : changes.allowed)
    in.notes.push_back("resumed with " + change + " (checkpoint.allow_changes)");
  std::string list;
  for (const std::string& r : changes.refused) list += "\n  " + r;
  DISTZO_INPUT_REQUIRE(changes.refused.empty(),
                       deck.origin.source << ": resuming " << in.resume
                                          << " with changes that alter the run it continues:" << list
                                          << "\nSet them back, or list the keys changed on purpose "
                                             "in checkpoint.allow_changes");
}

Inputs load_inputs(const RunOptions& options, const runtime::Communicator& world) {
  Inputs in;
  in.deck = io::load_deck(options.deck_path);
  const io::Deck& deck = in.deck;
  io::check_mesh(deck, world.size());
  const auto& opt = deck.optim;
  {
    // Rank 0 chooses (and reads back) the checkpoint; its failure must not
    // leave the others waiting in the broadcast.
    std::string choice;
    if (world.rank() == 0) {
      try {
        choice = "=" + choose_resume(deck, in.notes);
      } catch (const Error& e) {
        choice = "!" + std::string(e.what());
      }
    }
    choice = broadcast_string(world, choice);
    DISTZO_INPUT_REQUIRE(choice[0] == '=', choice.substr(1));
    in.resume = choice.substr(1);
  }
  in.model = std::make_unique<io::ModelReader>(in.resume.empty() ? deck.model.path : in.resume);
  in.state.seed = opt.seed;
  in.state.queries = opt.queries;
  in.state.distribution = opt.distribution;
  in.state.z_recipe = opt.z_recipe;
  if (!in.resume.empty()) {
    in.state = io::read_training_state(in.resume);
    // The recipe of z is the checkpoint's: a run in progress is never
    // stranded by a new default. Only an explicit, different choice is an error.
    DISTZO_INPUT_REQUIRE(!deck.origin.written("optim.z_recipe") || opt.z_recipe == in.state.z_recipe,
                         deck.origin.where("optim.z_recipe")
                             << "the checkpoint " << in.resume << " was written with z recipe "
                             << in.state.z_recipe << ", the deck asks for " << opt.z_recipe
                             << "; a run continues with the z it started with (leave the key out "
                                "to resume, or start a new run for recipe "
                             << opt.z_recipe << ")");
    // The deck as run: deck.resolved.yaml and the checkpoints record it.
    in.deck.optim.z_recipe = in.state.z_recipe;
    DISTZO_INPUT_REQUIRE(in.state.step <= opt.steps,
                         deck.origin.where("optim.steps")
                             << "the checkpoint " << in.resume << " is at step " << in.state.step
                             << ", beyond optim.steps = " << opt.steps
                             << ": there is nothing to continue (raise optim.steps)");
  }
  const model::ModelConfig& config = in.model->info().config;
  const std::int64_t vocab = config.vocab_size;
  in.train = io::load_dataset(deck.data.train, vocab);
  if (!deck.data.eval.empty())
    in.eval = std::make_unique<io::Dataset>(io::load_dataset(deck.data.eval, vocab));
  for (const io::Dataset* d : {static_cast<const io::Dataset*>(&in.train), static_cast<const io::Dataset*>(in.eval.get())}) {
    if (!d) continue;
    DISTZO_REQUIRE(d->seq_len <= config.max_position_embeddings,
                   "dataset sequences of " << d->seq_len << " tokens exceed the model's "
                                           << config.max_position_embeddings
                                           << " positions");
    DISTZO_REQUIRE(d->task == in.train.task && d->candidates == in.train.candidates &&
                       d->seq_len == in.train.seq_len,
                   "data.eval must have the task, candidates and sequence length of data.train");
  }
  if (in.resume.empty())
    in.state.train_digest = io::dataset_digest(in.train);
  else
    check_resume(in, world);
  return in;
}

/// The micro-batches a run fills, train and (with an eval set) eval.
struct Batches {
  Batches(const Inputs& in, int micro_batch)
      : train(in.train, micro_batch),
        eval(in.eval ? std::make_unique<io::BatchBuilder>(*in.eval, micro_batch) : nullptr) {}
  io::BatchBuilder train;
  std::unique_ptr<io::BatchBuilder> eval;
};

/// The run's side of the trainer: batches from the dataset, rows of
/// metrics.csv and eval.csv, progress lines, checkpoints with the seed log.
class RunHooks final : public zo::TrainerHooks {
 public:
  RunHooks(Inputs& in, zo::BlockExecutor& executor, Batches& batches, const runtime::Mesh& mesh,
           RunOutputs& out, runtime::Watchdog& watchdog)
      : in_(in),
        model_(in.model->info()),
        deck_(in.deck),
        executor_(executor),
        batches_(batches),
        mesh_(mesh),
        out_(out),
        watchdog_(watchdog),
        order_(in.train.num_examples, deck_.data.shuffle_seed),
        first_step_(in.state.step),
        zero_g_(deck_.optim.eps),
        checkpoints_(deck_.output.dir, deck_.checkpoint.keep,
                     CheckpointWriters::choose(mesh, executor.store())) {}

  const model::Batch& batch(std::int64_t step) override {
    const int D = mesh_.layout().data_size, B = deck_.data.micro_batch;
    return batches_.train.fill(ExecSpace(),
                               order_.micro_batch(step, mesh_.coordinates().data_rank, D, B));
  }

  void step_done(const zo::StepReport& r) override {
    const zo::StepEstimate& est = r.estimate;
    const int q = deck_.optim.queries;
    in_.state.seed_log.push_back({r.step - 1, r.lr, est.loss, r.skipped ? std::vector<double>() : est.g});
    if (r.skipped) out_.print(describe_skipped_step(r.step, r.nonfinite_streak));
    if (const std::string warning = zero_g_.step(r); !warning.empty()) out_.print(warning);
    StepRow row;
    row.step = r.step;
    row.loss = est.loss;
    for (int i = 0; i < q; ++i) {
      row.loss_plus += est.loss_plus[i] / q;
      row.loss_minus += est.loss_minus[i] / q;
      row.g += est.g[i] / q;
    }
    row.lr = r.lr;
    row.tokens = r.tokens;
    row.step_seconds = r.seconds;
    row.skipped = r.skipped;
    out_.step(row);
    last_step_moved_ = r.moved;

    if (r.step == first_step_ + 1)  // the clock of the ETA starts with the first step
      train_start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(r.seconds));
    const std::int64_t steps = deck_.optim.steps;
    if (r.step % deck_.output.log_interval == 0 || r.step == steps) {
      const double per_step =
          seconds_since(train_start_) / static_cast<double>(r.step - first_step_);
      out_.print(describe_progress(row, steps, per_step * static_cast<double>(steps - r.step)));
    }
  }

  void evaluate(std::int64_t step, const char* when) override {
    const EvalSummary s = app::evaluate(executor_, *batches_.eval, *in_.eval,
                                        deck_.eval.max_examples, deck_.data.micro_batch,
                                        mesh_.world(), [this] { watchdog_.alive(); });
    const EvalRow row{step, s.loss, s.accuracy, s.examples};
    out_.eval(row);
    out_.print(describe_eval(row, when));
    if (step == 0) before_ = s;
    after_ = s;
  }

  bool stop_requested() override { return stop_signal_received(); }

  void progress(const char* what, std::int64_t step, bool end_of_step) override {
    if (end_of_step)
      watchdog_.step_finished(what, step);
    else
      watchdog_.phase(what, step);
  }

  void checkpoint_skipped(std::int64_t step, int streak) override {
    out_.print(describe_checkpoint_skipped(step, streak));
  }

  void checkpoint(const zo::TrainerState& state) override {
    io::TrainingState& saved = in_.state;
    record_trainer_state(state, saved);
    saved.deck_yaml = io::resolved_yaml(deck_);
    saved.parameter_digest = executor_.parameter_digest();
    const std::string path =
        checkpoints_.write(model_, executor_.store(), saved, [this] { watchdog_.alive(); });
    if (mesh_.world().rank() == 0)
      out_.print(describe_checkpoint(path, checkpoints_.writers().parallel_size()));
    mesh_.world().barrier();
  }

  const runtime::TransferBytes& last_step_moved() const { return last_step_moved_; }
  /// Steps whose every g was exactly 0 (an update that did nothing).
  std::int64_t zero_g_steps() const { return zero_g_.count(); }
  const EvalSummary& before() const { return before_; }
  const EvalSummary& after() const { return after_; }

 private:
  Inputs& in_;
  const io::ModelInfo model_;
  const io::Deck& deck_;
  zo::BlockExecutor& executor_;
  Batches& batches_;
  const runtime::Mesh& mesh_;
  RunOutputs& out_;
  runtime::Watchdog& watchdog_;
  io::DataOrder order_;
  std::int64_t first_step_;
  Clock::time_point train_start_ = Clock::now();
  EvalSummary before_, after_;
  runtime::TransferBytes last_step_moved_;
  ZeroGradientSteps zero_g_;
  RunCheckpoints checkpoints_;
};

/// What a run needs, for the message when it cannot allocate it.
std::string memory_needed(const io::Deck& deck, const io::ModelInfo& model,
                          const io::Dataset& train) {
  const double theta = 4.0 * static_cast<double>(model.registry.total_elements());
  std::string out = "θ alone is " + exact_bytes(theta) + " (" +
                    std::to_string(model.registry.total_elements()) + " float32 parameters)";
  try {
    const MemoryPlan p = plan_memory(plan_inputs(deck, model.config, train));
    out += "; the run needs about " + exact_bytes(static_cast<double>(p.device_total())) +
           " of device memory per rank (weights " + exact_bytes(static_cast<double>(p.weights)) +
           ", scratch " + exact_bytes(static_cast<double>(p.scratch)) + ", activations " +
           exact_bytes(static_cast<double>(p.activations)) + ")";
    if (p.host_master > 0)
      out += " and " + exact_bytes(static_cast<double>(p.host_master)) +
             " of host memory for the offloaded blocks";
  } catch (const Error&) {
    // The planner refuses what the run accepted: say what is known.
  }
  return out;
}

}  // namespace

void run(const RunOptions& options, const runtime::Communicator& world) {
  const Clock::time_point started = Clock::now();
  install_stop_handlers();
  // Kokkos Tools sees every allocation of the run from here on.
  struct Accounting {
    Accounting() { MemoryAccounting::start(); }
    ~Accounting() { MemoryAccounting::stop(); }
  } accounting;
  Inputs inputs;
  collectively(world, [&] { inputs = load_inputs(options, world); });
  if (!inputs.resume.empty() && inputs.state.step == inputs.deck.optim.steps) {
    // A finished run started again (a requeued job that had completed).
    if (world.rank() == 0)
      std::cout << "distzo run " << options.deck_path << ": the checkpoint " << inputs.resume
                << " is already at optim.steps = " << inputs.deck.optim.steps
                << ": nothing to do\n";
    return;
  }
  if (const std::string warning = eps_warning(inputs.deck.optim.eps); !warning.empty())
    inputs.notes.push_back(warning);
  const io::Deck& deck = inputs.deck;
  const auto& opt = deck.optim;
  const std::string& resume = inputs.resume;
  const io::ModelInfo& model = inputs.model->info();
  const io::Dataset& train = inputs.train;

  const int P = deck.parallel.perturbation, D = deck.parallel.data;
  const runtime::Mesh mesh(world, runtime::MeshLayout{P, D});
  const std::string blas_threads = set_blas_threads(mesh.node().size());
  const int micro_batch = deck.data.micro_batch;
  // Everything the run allocates comes before anything is written: a run
  // that does not fit stops with nothing left behind.
  // Destroyed in reverse order, the same on every rank (freeing node-shared
  // memory is collective): the executor, the store, the exchange.
  std::unique_ptr<runtime::SliceExchange> exchange;
  std::unique_ptr<runtime::ParameterStore> store_owner;
  std::unique_ptr<zo::BlockExecutor> executor_owner;
  std::unique_ptr<Batches> batches;
  collectively(world, [&] {
    try {
      runtime::PlacementConfig placement = placement_config(deck, mesh.node().size());
      placement.poison_released_slots = options.debug_poison_slots;
      zo::NodeSlicing slicing;
      if (placement.share_host_master) {
        try {
          exchange = runtime::make_slice_exchange(exchange_kind(deck.placement.exchange), mesh.node());
        } catch (const Error& e) {
          throw Error(deck.origin.where("placement.exchange") + e.what());
        }
        slicing.exchange = exchange.get();
        std::vector<int> node_ranks;  // the perturbation rank of each rank of the node
        for (double p : mesh.node().allgather(mesh.coordinates().perturbation_rank))
          node_ranks.push_back(static_cast<int>(p));
        slicing.evaluations = zo::node_evaluations(opt.queries, P, node_ranks);
      }
      store_owner = std::make_unique<runtime::ParameterStore>(model.registry, placement, &mesh.node());
      if (store_owner->sliced())  // each rank of the node reads its own slices of the file
        store_owner->fill_own_slices(
            [&](std::uint32_t id, std::uint64_t first, std::size_t count, real* dst) {
              inputs.model->read_range(id, first, count, dst);
            });
      else
        store_owner->fill([&](std::uint32_t id, real* dst) { inputs.model->read(id, dst); });
      executor_owner = std::make_unique<zo::BlockExecutor>(
          model.config, *store_owner,
          zo::EvaluationPlan::make(opt.queries, P, mesh.coordinates().perturbation_rank),
          train.task, micro_batch, static_cast<int>(train.seq_len),
          static_cast<int>(train.num_candidates()), std::move(slicing));
      batches = std::make_unique<Batches>(inputs, micro_batch);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      // Kokkos reports a failed allocation as std::bad_alloc (4.x) or
      // std::runtime_error (3.4); nothing else here throws anything else.
      const std::string what = e.what();
      throw Error("cannot allocate the memory this run needs: " +
                  memory_needed(deck, model, train) + " (the allocation that failed: " +
                  what.substr(0, what.find("  (The allocation")) + "). Lower data.micro_batch, "
                  "or offload blocks with placement.mode: offload; `distzo plan " +
                  options.deck_path + "` shows the breakdown");
    }
  });
  runtime::ParameterStore& store = *store_owner;
  zo::BlockExecutor& executor = *executor_owner;

  const bool root = world.rank() == 0;
  // The run's identity: a resumed run keeps its checkpoint's, a fresh one
  // (or one resumed from a checkpoint without it) gets rank 0's new id.
  inputs.state.run_id =
      broadcast_string(world, inputs.state.run_id.empty() ? new_run_id() : inputs.state.run_id);
  if (resume.empty()) inputs.state.base_model_digest = executor.parameter_digest();
  std::unique_ptr<RunDirectory> directory;  // rank 0: output.dir, locked
  collectively(world, [&] {
    if (!root) return;
    directory = std::make_unique<RunDirectory>(deck.output.dir, inputs.notes);
    directory->claim(inputs.state.run_id);
    std::ofstream(deck.output.dir + "/deck.resolved.yaml") << io::resolved_yaml(deck);
  });
  RunOutputs out(deck.output.dir, root, resume.empty() ? -1 : inputs.state.step);
  {
    out.print(describe_run(options.deck_path, deck, model.registry.total_elements(), world.size(),
                           train, resume));
    out.print("run id " + inputs.state.run_id +
              (resume.empty() ? " (new)" : " (continued from its checkpoint)"));
    for (const std::string& note : inputs.notes) out.print(note);
    out.print(describe_placement(store, deck, exchange.get()));
    if (!blas_threads.empty()) out.print(blas_threads);
  }

  const zo::TrainerConfig config =
      trainer_config(deck, options.debug_corrupt_rank, inputs.eval != nullptr, inputs.state.z_recipe);
  zo::TrainerState state = trainer_state(inputs.state, config);
  const std::int64_t first_step = state.step;
  runtime::Watchdog watchdog(world, watchdog_config(deck, model.registry.total_elements()));
  RunHooks hooks(inputs, executor, *batches, mesh, out, watchdog);
  zo::TrainSummary summary;
  try {
    summary = zo::Trainer(executor, mesh, config, hooks).run(state);
  } catch (const CollectiveError& e) {
    watchdog.close();  // every rank is here: the board can be freed (MPI_Finalize follows)
    // run.log keeps why the run ended; main says it on stderr.
    const bool stopped = dynamic_cast<const StopRequested*>(&e) != nullptr;
    if (e.report()) out.log(std::string(stopped ? "" : "error: ") + e.what());
    throw;
  } catch (const Error& e) {
    out.log(std::string("error: ") + e.what());  // this rank's own (rank 0 writes run.log)
    throw;
  }

  out.print(describe_done(opt.steps - first_step, seconds_since(started), summary.skipped,
                          hooks.zero_g_steps(), executor.parameter_digest()));
  out.print(describe_memory(MemoryAccounting::usage(), store, executor.shared_exchange_bytes(),
                            hooks.last_step_moved()));
  // Host memory of the node, shared pages counted once (what a node's
  // memory limit sees): with a shared master it holds one θ whatever P x D.
  double pss = static_cast<double>(proportional_set_size());
  mesh.node().allreduce_sum(&pss, 1);
  out.print(describe_node_memory(mesh.node().size(), pss, store.sliced()));
  if (inputs.eval && hooks.before().accuracy >= 0 && hooks.after().accuracy >= 0 && first_step == 0)
    out.print(describe_accuracy(hooks.before().accuracy, hooks.after().accuracy,
                                hooks.after().examples));
}

}  // namespace distzo::app
