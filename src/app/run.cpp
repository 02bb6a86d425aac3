#include "app/run.hpp"

#include "app/evaluation.hpp"
#include "app/run_outputs.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/dataset.hpp"
#include "io/deck.hpp"
#include "io/model_file.hpp"
#include "model/parameter_digest.hpp"
#include "runtime/mesh.hpp"
#include "zo/block_executor.hpp"
#include "zo/estimator.hpp"
#include "zo/lr_schedule.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <memory>
#include <sys/stat.h>

namespace distzo::app {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

void make_directories(const std::string& path) {
  std::string partial;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!partial.empty()) {
        struct stat st;
        if (stat(partial.c_str(), &st) != 0)
          DISTZO_REQUIRE(mkdir(partial.c_str(), 0755) == 0 || errno == EEXIST,
                         "cannot create directory '" << partial << "'");
      }
    }
    if (i < path.size()) partial += path[i];
  }
}

/// Divergence guard (DESIGN.md invariant 3): every rank's parameter digest
/// must equal rank 0's. θ is compared as it stands (pending updates are
/// pending on every rank alike), so no flush is needed.
void check_replicas(const model::ParameterRegistry& registry, const model::TensorTable& theta,
                    const runtime::Communicator& world, std::int64_t step) {
  const std::uint64_t mine = std::stoull(model::parameter_digest(registry, theta), nullptr, 16);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world.size()));
  world.allgather(&mine, 1, all.data());
  std::string diverged;
  for (int r = 1; r < world.size(); ++r)
    if (all[r] != all[0]) diverged += (diverged.empty() ? "" : ", ") + std::to_string(r);
  if (!diverged.empty()) {
    std::ostringstream os;
    os << "replicas diverged after step " << step << ": the parameter digest of rank(s) "
                     << diverged << " differs from rank 0's. Every rank must apply the same "
                                    "update to the same θ; this points at a non-deterministic "
                                    "kernel or corrupted memory. Stopping before the replicas "
                                    "drift further.";
    // Every rank saw the same gathered digests: stop together, report once.
    throw CollectiveError(os.str(), world.rank() == 0);
  }
}

}  // namespace

RunOptions parse_run_options(const std::vector<std::string>& args) {
  RunOptions o;
  for (const auto& a : args) {
    const std::string corrupt = "--debug-corrupt-rank=";
    if (a.compare(0, corrupt.size(), corrupt) == 0) {
      o.debug_corrupt_rank = std::stoi(a.substr(corrupt.size()));
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
  io::LoadedModel model;
  io::TrainingState state;
  io::Dataset train;
  std::unique_ptr<io::Dataset> eval;
};

Inputs load_inputs(const RunOptions& options, int world_size) {
  Inputs in;
  in.deck = io::load_deck(options.deck_path);
  const io::Deck& deck = in.deck;
  io::check_mesh(deck, world_size);
  const auto& opt = deck.optim;
  DISTZO_REQUIRE(opt.queries <= kernels::kMaxQueries,
                 deck.origin.where("optim.queries") << "at most " << kernels::kMaxQueries
                                                    << " queries per step, found " << opt.queries);
  in.resume = io::resume_checkpoint_path(deck);
  in.model = io::load_model(in.resume.empty() ? deck.model.path : in.resume);
  in.state.seed = opt.seed;
  in.state.queries = opt.queries;
  in.state.distribution = opt.distribution;
  if (!in.resume.empty()) {
    in.state = io::read_training_state(in.resume);
    const io::TrainingState& s = in.state;
    DISTZO_REQUIRE(s.seed == opt.seed && s.queries == opt.queries &&
                       s.distribution == opt.distribution,
                   "checkpoint " << in.resume << " was written with optim.seed=" << s.seed
                                 << ", queries=" << s.queries << ", distribution="
                                 << to_string(s.distribution)
                                 << "; the deck says seed=" << opt.seed << ", queries="
                                 << opt.queries << ", distribution=" << to_string(opt.distribution)
                                 << ". Resuming with other perturbations would not continue the run.");
  }
  const std::int64_t vocab = in.model.config.vocab_size;
  in.train = io::load_dataset(deck.data.train, vocab);
  if (!deck.data.eval.empty())
    in.eval = std::make_unique<io::Dataset>(io::load_dataset(deck.data.eval, vocab));
  for (const io::Dataset* d : {static_cast<const io::Dataset*>(&in.train), static_cast<const io::Dataset*>(in.eval.get())}) {
    if (!d) continue;
    DISTZO_REQUIRE(d->seq_len <= in.model.config.max_position_embeddings,
                   "dataset sequences of " << d->seq_len << " tokens exceed the model's "
                                           << in.model.config.max_position_embeddings
                                           << " positions");
    DISTZO_REQUIRE(d->task == in.train.task && d->candidates == in.train.candidates &&
                       d->seq_len == in.train.seq_len,
                   "data.eval must have the task, candidates and sequence length of data.train");
  }
  return in;
}

/// Every rank loads and validates; they then agree, so that either all go on
/// or all stop with a CollectiveError (printed by rank 0, or by the failing
/// ranks when rank 0 itself was fine, e.g. a file missing on one node).
Inputs load_inputs_collectively(const RunOptions& options, const runtime::Communicator& world) {
  Inputs in;
  std::string problem;
  try {
    in = load_inputs(options, world.size());
  } catch (const Error& e) {
    problem = e.what();
  }
  const std::vector<double> ok = world.allgather(problem.empty() ? 1.0 : 0.0);
  const bool all_ok = std::all_of(ok.begin(), ok.end(), [](double v) { return v == 1.0; });
  if (all_ok) return in;
  if (problem.empty()) throw CollectiveError("another rank could not start the run", false);
  throw CollectiveError(problem, world.rank() == 0 || ok[0] == 1.0);
}

}  // namespace

void run(const RunOptions& options, const runtime::Communicator& world) {
  const Clock::time_point started = Clock::now();
  Inputs inputs = load_inputs_collectively(options, world);
  const io::Deck& deck = inputs.deck;
  const auto& opt = deck.optim;
  const std::string& resume = inputs.resume;
  io::LoadedModel& model = inputs.model;
  io::TrainingState& state = inputs.state;
  const io::Dataset& train = inputs.train;
  const std::unique_ptr<io::Dataset>& eval_data = inputs.eval;

  // ---- Outputs. -------------------------------------------------------------
  const bool root = world.rank() == 0;
  if (root) {
    make_directories(deck.output.dir);
    std::ofstream(deck.output.dir + "/deck.resolved.yaml") << io::resolved_yaml(deck);
  }
  world.barrier();
  RunOutputs out(deck.output.dir, root, resume.empty() ? -1 : state.step);

  const int P = deck.parallel.perturbation, D = deck.parallel.data;
  const runtime::Mesh mesh_comms(world, runtime::MeshLayout{P, D});
  const runtime::MeshCoordinates mesh = mesh_comms.coordinates();
  const int micro_batch = deck.data.micro_batch;
  const int K = static_cast<int>(train.num_candidates());
  zo::BlockExecutor executor(model.config, model.registry, model.tensors,
                             zo::EvaluationPlan::make(opt.queries, P, mesh.perturbation_rank),
                             train.task, micro_batch, static_cast<int>(train.seq_len), K);
  io::BatchBuilder train_batches(train, micro_batch);
  std::unique_ptr<io::BatchBuilder> eval_batches;
  if (eval_data) eval_batches = std::make_unique<io::BatchBuilder>(*eval_data, micro_batch);
  io::DataOrder order(train.num_examples, deck.data.shuffle_seed);
  const zo::LrSchedule schedule{zo::parse_schedule(io::to_string(opt.schedule)), opt.lr,
                                opt.warmup_steps, opt.steps};
  zo::PendingUpdate& pending = state.pending;
  const ExecSpace space;

  {
    char line[512];
    std::snprintf(line, sizeof(line),
                  "distzo run %s: %lld parameters, %d ranks (P=%d x D=%d), global batch %d x %lld "
                  "tokens, %s, q=%d, eps=%g, lr=%g (%s)%s",
                  options.deck_path.c_str(), static_cast<long long>(model.registry.total_elements()),
                  world.size(), P, D, micro_batch * D, static_cast<long long>(train.seq_len),
                  io::to_string(train.task), opt.queries, opt.eps, opt.lr,
                  io::to_string(opt.schedule),
                  resume.empty() ? "" : (", resuming from " + resume).c_str());
    out.print(line);
  }

  auto run_eval = [&](std::int64_t step, const char* when) -> EvalSummary {
    executor.flush(space, pending);
    const EvalSummary s =
        evaluate(executor, *eval_batches, *eval_data, deck.eval.max_examples, micro_batch, world);
    out.eval({step, s.loss, s.accuracy, s.examples});
    char line[256];
    if (s.accuracy >= 0)
      std::snprintf(line, sizeof(line), "eval %-6s step %lld: loss %.4f, accuracy %.4f (%lld examples)",
                    when, static_cast<long long>(step), s.loss, s.accuracy,
                    static_cast<long long>(s.examples));
    else
      std::snprintf(line, sizeof(line), "eval %-6s step %lld: loss %.4f (%lld examples)", when,
                    static_cast<long long>(step), s.loss, static_cast<long long>(s.examples));
    out.print(line);
    return s;
  };
  auto write_checkpoint = [&](std::int64_t step) {
    executor.flush(space, pending);
    state.step = step;
    state.deck_yaml = io::resolved_yaml(deck);
    if (root) {
      const std::string path = deck.output.dir + "/" + io::checkpoint_name(step);
      io::write_checkpoint(path, model, state);
      auto existing = io::list_checkpoints(deck.output.dir);
      for (std::size_t i = 0; i + static_cast<std::size_t>(deck.checkpoint.keep) < existing.size(); ++i)
        std::remove(existing[i].second.c_str());
      out.print("checkpoint " + path);
    }
    world.barrier();
  };

  const std::int64_t first_step = state.step;
  EvalSummary before;
  if (eval_data && first_step == 0) before = run_eval(0, "start");

  // ---- Training. ------------------------------------------------------------
  int consecutive_nonfinite = 0;
  std::int64_t skipped_total = 0;
  const Clock::time_point train_start = Clock::now();
  for (std::int64_t step = first_step; step < opt.steps; ++step) {
    const Clock::time_point t0 = Clock::now();
    const model::Batch& batch =
        train_batches.fill(space, order.micro_batch(step, mesh.data_rank, D, micro_batch));
    zo::StepPerturbation perturbation;
    perturbation.seed = opt.seed;
    perturbation.step = step;
    perturbation.eps = opt.eps;
    perturbation.distribution = opt.distribution;
    std::vector<double> local = executor.run_step(space, batch, perturbation, pending);
    // Tokens of the global batch: one micro-batch per replica of the data group.
    double tokens[1] = {static_cast<double>(batch.num_tokens)};
    mesh_comms.data_group().allreduce_sum(tokens, 1);
    const zo::StepEstimate est = zo::combine_losses(world, local, opt.queries, opt.eps);
    const double lr = schedule.at(step);

    io::SeedLogEntry log_entry{step, lr, est.loss, {}};
    if (est.finite) {
      consecutive_nonfinite = 0;
      pending.active = true;
      pending.seed = opt.seed;
      pending.step = step;
      pending.distribution = opt.distribution;
      pending.lr = lr;
      pending.weight_decay = opt.weight_decay;
      pending.g = est.g;
      log_entry.g = est.g;
    } else {
      ++consecutive_nonfinite;
      ++skipped_total;
      out.print("step " + std::to_string(step + 1) + ": non-finite loss, update skipped (" +
                std::to_string(consecutive_nonfinite) + " in a row)");
    }
    state.seed_log.push_back(log_entry);

    StepRow row;
    row.step = step + 1;
    row.loss = est.loss;
    for (int q = 0; q < opt.queries; ++q) {
      row.loss_plus += est.loss_plus[q] / opt.queries;
      row.loss_minus += est.loss_minus[q] / opt.queries;
      row.g += est.g[q] / opt.queries;
    }
    row.lr = lr;
    row.tokens = static_cast<std::int64_t>(tokens[0]);
    row.step_seconds = seconds_since(t0);
    row.skipped = !est.finite;
    out.step(row);
    // g is identical on every rank, so every rank stops here together.
    if (consecutive_nonfinite >= opt.max_nonfinite) {
      std::ostringstream os;
      os << opt.max_nonfinite << " consecutive steps had a non-finite loss (last: step " << step + 1
         << "); lower optim.lr or optim.eps, or check the data. Stopping (optim.max_nonfinite).";
      throw CollectiveError(os.str(), root);
    }

    const std::int64_t done = step + 1;
    if (done % deck.output.log_interval == 0 || done == opt.steps) {
      const double elapsed = seconds_since(train_start);
      const double per_step = elapsed / static_cast<double>(done - first_step);
      char line[256];
      std::snprintf(line, sizeof(line),
                    "step %lld/%lld  loss %.4f  g %+.3e  lr %.2e  %.0f tok/s  ETA %s",
                    static_cast<long long>(done), static_cast<long long>(opt.steps), est.loss,
                    row.g, lr, row.tokens / row.step_seconds,
                    format_duration(per_step * static_cast<double>(opt.steps - done)).c_str());
      out.print(line);
    }
    if (deck.parallel.check_interval > 0 && done % deck.parallel.check_interval == 0) {
      if (options.debug_corrupt_rank == world.rank()) {
        Kokkos::deep_copy(Kokkos::subview(model.tensors[0], std::make_pair(0, 1)), real(12345));
      }
      check_replicas(model.registry, model.tensors, world, done);
    }
    if (eval_data && deck.eval.interval > 0 && done % deck.eval.interval == 0 && done != opt.steps)
      run_eval(done, "");
    if (deck.checkpoint.interval > 0 && done % deck.checkpoint.interval == 0 && done != opt.steps)
      write_checkpoint(done);
  }

  // ---- The end: every pending update applied, final eval and checkpoint. ----
  executor.flush(space, pending);
  if (world.size() > 1) check_replicas(model.registry, model.tensors, world, opt.steps);
  EvalSummary after;
  if (eval_data) after = run_eval(opt.steps, "end");
  if (opt.steps > first_step || resume.empty()) write_checkpoint(opt.steps);
  char line[512];
  std::snprintf(line, sizeof(line), "done: %lld steps in %s (%lld skipped), digest %s",
                static_cast<long long>(opt.steps - first_step),
                format_duration(seconds_since(started)).c_str(),
                static_cast<long long>(skipped_total),
                model::parameter_digest(model.registry, model.tensors).c_str());
  out.print(line);
  if (eval_data && before.accuracy >= 0 && after.accuracy >= 0 && first_step == 0) {
    std::snprintf(line, sizeof(line), "accuracy: %.4f before, %.4f after fine-tuning (%lld held-out examples)",
                  before.accuracy, after.accuracy, static_cast<long long>(after.examples));
    out.print(line);
  }
}

}  // namespace distzo::app
