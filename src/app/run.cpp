// `distzo run` as a composition root (torchtitan's train.py): it reads the
// inputs, builds the mesh, the placement and the engine, hands the trainer
// its hooks, and reports. What each piece does lives with it: the inputs
// (run_inputs), the output directory and its checkpoints (run_directory),
// the run log (run_outputs), the trainer's hooks (run_hooks), the deck's
// mapping onto the layers (deck_config).

#include "app/run.hpp"

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>

#include "app/blas_threads.hpp"
#include "app/deck_config.hpp"
#include "app/format.hpp"
#include "app/log_checkpoints.hpp"
#include "app/memory_limit.hpp"
#include "app/plan.hpp"
#include "app/progress.hpp"
#include "app/run_directory.hpp"
#include "app/run_hooks.hpp"
#include "app/run_inputs.hpp"
#include "app/run_outputs.hpp"
#include "app/stop_signal.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/process_limits.hpp"
#include "runtime/faults.hpp"
#include "runtime/mesh.hpp"
#include "runtime/parameter_store.hpp"
#include "runtime/slice_exchange.hpp"
#include "runtime/watchdog.hpp"
#include "zo/trainer.hpp"

namespace distzo::app {

using runtime::broadcast_string;
using runtime::collectively;

namespace {
const char* const kUsage =
    "usage: distzo run DECK.yaml\n"
    "  fine-tune as the deck says (docs/decks.md; every key: distzo help deck).\n"
    "  Under MPI: mpiexec -n P*D distzo run DECK.yaml (parallel.perturbation P\n"
    "  times parallel.data D ranks). distzo plan DECK.yaml predicts its memory\n"
    "  first.";
}  // namespace

const char* run_usage() { return kUsage; }

RunOptions parse_run_options(const std::vector<std::string>& args) {
  RunOptions o;
  for (const auto& a : args) {
    const std::string corrupt = "--debug-corrupt-rank=", hang = "--debug-hang-after-step=",
                      slow = "--debug-slow-checkpoint-ms=";
    if (a.compare(0, corrupt.size(), corrupt) == 0) {
      o.faults.corrupt_theta_rank = std::stoi(a.substr(corrupt.size()));
    } else if (a == "--debug-poison-slots") {
      o.faults.poison_released_slots = true;
    } else if (a.compare(0, hang.size(), hang) == 0) {
      o.faults.hang_after_step = std::stoll(a.substr(hang.size()));
    } else if (a.compare(0, slow.size(), slow) == 0) {
      o.faults.slow_checkpoint_ms = std::stoi(a.substr(slow.size()));
    } else if (!a.empty() && a[0] == '-') {
      DISTZO_INPUT_FAIL("run: unknown option '" << a << "'\n" << kUsage);
    } else {
      DISTZO_INPUT_REQUIRE(o.deck_path.empty(), "run: one deck expected, got '"
                                                    << o.deck_path << "' and '" << a << "'\n"
                                                    << kUsage);
      o.deck_path = a;
    }
  }
  DISTZO_INPUT_REQUIRE(!o.deck_path.empty(), "run: missing DECK.yaml\n" << kUsage);
  return o;
}

namespace {

using Clock = std::chrono::steady_clock;

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

/// Loads θ from `file` (the model, or the checkpoint resumed) into `store`:
/// each rank its own slices of a sliced store. Rank 0's progress lines (a
/// large model: bytes read of the file's, the rate, the ETA) go to `held`.
void load_theta(runtime::ParameterStore& store, const io::ModelReader& file, HeldLines& held,
                double interval) {
  const TensorBytes bytes(file.info().registry,
                          [&](std::uint32_t id) { return bytes_per_element(file.dtype(id)); });
  ProgressMeter meter([&](const std::string& line) { held.print(line); },
                      [&](const ProgressPoint& p) {
                        return describe_byte_progress("loading θ from " + file.path(), p);
                      },
                      interval);
  if (store.sliced())  // each rank of the node reads its own slices of the file
    store.fill_own_slices([&](std::uint32_t id, std::uint64_t first, std::size_t count, real* dst) {
      meter.update(bytes.through(id, first), bytes.total());
      file.read_range(id, first, count, dst);
    });
  else
    store.fill([&](std::uint32_t id, real* dst) {
      meter.update(bytes.through(id, 0), bytes.total());
      file.read(id, dst);
    });
  meter.update(bytes.total(), bytes.total());
}

/// Collective: a log-only checkpoint resumed brings θ, loaded from its
/// source, to the log's step (app/log_checkpoints.hpp); run.log says how.
void rebuild_theta(zo::Engine& engine, Inputs& inputs, const runtime::Communicator& world,
                   HeldLines& held, double progress_seconds) {
  if (!inputs.choice.log_only()) return;
  collectively(world, [&] {
    inputs.notes.push_back(rebuild_at_log_step(
        engine, inputs.choice, inputs.state, inputs.log_z, inputs.log_momentum,
        inputs.log_weight_decay, [&](const std::string& line) { held.print(line); },
        progress_seconds));
  });
}

/// The first lines of run.log: the run, its id, the notes of loading it and
/// claiming output.dir, where θ lives and how it is stored, the BLAS threads.
void print_header(RunOutputs& out, const std::string& deck_path, const Inputs& inputs, int ranks,
                  const std::string& placement, const std::string& storage,
                  const std::string& blas_threads) {
  const std::string& resume = inputs.resume;
  out.print(describe_run(deck_path, inputs.deck, inputs.model->info().registry.total_elements(),
                         ranks, inputs.train, inputs.state.z.blocks, resume));
  out.print("run id " + inputs.state.run_id +
            (resume.empty() ? " (new)" : " (continued from its checkpoint)"));
  for (const std::string& note : inputs.notes) out.print(note);
  out.print(placement);
  out.print(storage);
  if (!blas_threads.empty()) out.print(blas_threads);
}

/// The trainer's run from `state`; run.log keeps why it ended early (main
/// says it on stderr).
zo::TrainSummary run_trainer(zo::Engine& engine, const runtime::Mesh& mesh,
                             const zo::TrainerConfig& config, RunHooks& hooks,
                             zo::TrainerState& state, runtime::Watchdog& watchdog,
                             RunOutputs& out) {
  try {
    return zo::Trainer(engine, mesh, config, hooks, watchdog).run(state);
  } catch (const CollectiveError& e) {
    watchdog.close();  // every rank is here: the board can be freed (MPI_Finalize follows)
    const bool stopped = dynamic_cast<const StopRequested*>(&e) != nullptr;
    if (e.report()) out.log(std::string(stopped ? "" : "error: ") + e.what());
    throw;
  } catch (const Error& e) {
    out.log(std::string("error: ") + e.what());  // this rank's own (rank 0 writes run.log)
    throw;
  }
}

/// Collective: the digest of the base model as `file` holds it: θ's own
/// when θ holds every tensor in the file's dtype (loaded word for word), else
/// the file's (θ holds them converted), so that a resume compares it with
/// the deck's model file either way.
std::string base_model_digest(const io::ModelReader& file, const zo::Engine& engine,
                              const runtime::Communicator& world) {
  return file.all_in(engine.store().storage())
             ? engine.parameter_digest()
             : broadcast_string(world, world.rank() == 0 ? file.digest() : "");
}

/// Collective: rank 0 locks output.dir (the returned object holds the lock),
/// claims it for the run and writes the resolved deck; null on other ranks.
std::unique_ptr<RunDirectory> claim_directory(const runtime::Communicator& world, Inputs& inputs) {
  std::unique_ptr<RunDirectory> directory;
  collectively(world, [&] {
    if (world.rank() != 0) return;
    const io::Deck& deck = inputs.deck;
    directory = std::make_unique<RunDirectory>(deck.output.dir, inputs.notes);
    directory->claim(inputs.state.run_id, inputs.notes);
    std::ofstream(deck.output.dir + "/deck.resolved.yaml") << io::resolved_yaml(deck);
  });
  return directory;
}

/// Collective: the last lines of run.log, after `steps` steps since
/// `started`; `accuracy`: the run evaluated before training too.
void print_summary(RunOutputs& out, const RunHooks& hooks, const zo::TrainSummary& summary,
                   std::int64_t steps, Clock::time_point started, const zo::Engine& engine,
                   const runtime::Mesh& mesh, bool accuracy) {
  const runtime::ParameterStore& store = engine.store();
  out.print(describe_done(steps, std::chrono::duration<double>(Clock::now() - started).count(),
                          summary.skipped, hooks.zero_g_steps(), engine.parameter_digest()));
  out.print(describe_memory(MemoryAccounting::usage(), store,
                            engine.weights().shared_exchange_bytes(), hooks.last_step_moved()));
  // Host memory of every node, shared pages counted once (what a node's
  // memory limit sees): with a shared master a node holds one θ whatever P x D.
  out.print(describe_node_memory(
      gather_node_memory(mesh, static_cast<double>(proportional_set_size())), store.sliced()));
  if (accuracy && steps == 0 && hooks.before().accuracy >= 0)
    out.print(describe_evaluation_only(hooks.before().accuracy, hooks.before().examples));
  else if (accuracy && hooks.before().accuracy >= 0 && hooks.after().accuracy >= 0)
    out.print(
        describe_accuracy(hooks.before().accuracy, hooks.after().accuracy, hooks.after().examples));
}

}  // namespace

void run(const RunOptions& options, const runtime::Communicator& world) {
  const Clock::time_point started = Clock::now();
  install_stop_handlers(world.rank() == 0);
  // Kokkos Tools sees every allocation of the run from here on.
  struct Accounting {
    Accounting() { MemoryAccounting::start(); }
    ~Accounting() { MemoryAccounting::stop(); }
  } accounting;
  Inputs inputs;
  double progress_seconds = kProgressInterval;
  collectively(world, [&] {
    if (const std::string shortfall = reading_shortfall(
            "the model and the datasets",
            "the run needs more (`distzo plan " + options.deck_path + "` predicts it)");
        !shortfall.empty())
      throw Error(shortfall);
    inputs = load_inputs(options.deck_path, world);
    progress_seconds = progress_interval();
  });
  if (!inputs.resume.empty() && inputs.state.step == inputs.deck.optim.steps) {
    // A finished run started again (a requeued job that had completed).
    if (world.rank() == 0)
      std::cout << "distzo run " << options.deck_path << ": the checkpoint " << inputs.resume
                << " is already at optim.steps = " << inputs.deck.optim.steps
                << ": nothing to do\n";
    return;
  }
  const io::Deck& deck = inputs.deck;
  const auto& opt = deck.optim;
  const std::string& resume = inputs.resume;
  const io::ModelInfo& model = inputs.model->info();
  const io::Dataset& train = inputs.train;

  const int P = deck.parallel.perturbation, D = deck.parallel.data;
  const runtime::Mesh mesh(world, runtime::MeshLayout{P, D});
  const BlasThreads gemm = choose_blas_threads(mesh.node().size());
  const int micro_batch = deck.data.micro_batch;
  // Everything the run allocates comes before anything is written: a run
  // that does not fit stops with nothing left behind.
  // Destroyed in reverse order, the same on every rank (freeing node-shared
  // memory is collective): the engine (and the slice exchange it owns), the store.
  std::unique_ptr<runtime::ParameterStore> store_owner;
  std::unique_ptr<zo::Engine> engine_owner;
  std::unique_ptr<Batches> batches;
  std::string blas_threads;           // run.log's lines on them
  HeldLines held(world.rank() == 0);  // until run.log opens
  const runtime::WatchdogConfig watchdog_settings =
      watchdog_config(deck, model.registry.total_elements());
  collectively(world, [&] {
    if (address_space_limit()) {  // else nothing to check (and no plan to compute)
      const std::string shortfall =
          address_space_shortfall(plan_memory(plan_inputs(deck, model.config, train)), gemm.threads,
                                  watchdog_settings.enabled, options.deck_path);
      if (!shortfall.empty()) throw Error(shortfall);
    }
    blas_threads = start_blas_threads(gemm);
    try {
      runtime::PlacementConfig placement = placement_config(deck, mesh.node().size());
      const ExchangeKind exchange = deck.placement.exchange;
      if (placement.share_host_master && !runtime::exchange_unavailable(exchange).empty())
        throw Error(deck.origin.where("placement.exchange") +
                    runtime::exchange_unavailable(exchange));
      store_owner =
          std::make_unique<runtime::ParameterStore>(model.registry, placement, &mesh.node());
      load_theta(*store_owner, *inputs.model, held, progress_seconds);
      engine_owner = std::make_unique<zo::Engine>(
          model.config, *store_owner,
          zo::EvaluationPlan::make(zo::EstimatorSpec::make(opt.estimator, opt.queries), P,
                                   mesh.coordinates().perturbation_rank),
          train.batch_shape(micro_batch), zo::NodeExchange{&mesh.node(), exchange});
      batches = std::make_unique<Batches>(inputs, micro_batch);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      // Kokkos reports a failed allocation as std::bad_alloc (4.x) or
      // std::runtime_error (3.4); nothing else here throws anything else.
      const std::string what = e.what();
      throw Error(
          "cannot allocate the memory this run needs: " + memory_needed(deck, model, train) +
          " (the allocation that failed: " + what.substr(0, what.find("  (The allocation")) +
          "). Lower data.micro_batch, "
          "or offload blocks with placement.mode: offload; `distzo plan " +
          options.deck_path + "` shows the breakdown");
    }
  });
  runtime::ParameterStore& store = *store_owner;
  zo::Engine& engine = *engine_owner;
  if (options.faults.poison_released_slots) runtime::poison_released_slots(engine.streamer());
  rebuild_theta(engine, inputs, world, held, progress_seconds);

  const bool root = world.rank() == 0;
  // The run's identity: a resumed run keeps its checkpoint's, a fresh one
  // (or one resumed from a checkpoint without it) gets rank 0's new id.
  inputs.state.run_id =
      broadcast_string(world, inputs.state.run_id.empty() ? new_run_id() : inputs.state.run_id);
  if (resume.empty())
    inputs.state.base_model_digest = base_model_digest(*inputs.model, engine, world);
  const std::unique_ptr<RunDirectory> directory = claim_directory(world, inputs);
  RunOutputs out(deck.output.dir, root, resume.empty() ? -1 : inputs.state.step, progress_seconds);
  out.log_held(held);  // loading θ, when it took long enough to print
  print_header(out, options.deck_path, inputs, world.size(),
               describe_placement(store, deck, engine.weights().exchange()),
               describe_storage(store.placement()), blas_threads);

  const zo::TrainerConfig config = trainer_config(deck, inputs.eval != nullptr, inputs.state.z);
  zo::TrainerState state = trainer_state(inputs.state, config.momentum);
  const std::int64_t first_step = state.step;
  runtime::Watchdog watchdog(world, watchdog_settings);
  RunHooks hooks(inputs, engine, *batches, mesh, out, watchdog, options.faults);
  const zo::TrainSummary summary = run_trainer(engine, mesh, config, hooks, state, watchdog, out);

  print_summary(out, hooks, summary, opt.steps - first_step, started, engine, mesh,
                inputs.eval != nullptr && first_step == 0);
}

}  // namespace distzo::app
