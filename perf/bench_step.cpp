// bench_step: ZO steps/s and tokens/s of the engine on one rank,
// causal-LM loss on the fixed token pattern (every position with a successor
// is a target), with the lazy update in the loop: every timed step starts
// with the previous step's pending update active, so it pays for applying it
// (fused with this step's perturbation), as a training run does. The baseline
// is tools/mezo_reference.py --bench (PyTorch MeZO) on the same file and batch.
//
//   bench_step MODEL.h5 | CONFIG.json [--batch 8] [--seq 128] [--reps 3] [--queries 1]
//              [--warmup 1] [--eps 1e-3] [--lr 1e-6] [--weight-decay 0]
//              [--distribution gaussian|rademacher] [--seed 1] [--profile]
//              [--placement resident|offload] [--resident-blocks K] [--prefetch N]
//              [--mesh PxD] [--share auto|true|false] [--exchange auto|shared_memory|mpi]
//
// Under mpiexec with --mesh PxD (P*D ranks) the step runs on the 2D mesh as
// in `distzo run`: each replica its own micro-batch of B (seed + d), and with
// a shared master (--share; auto = more than one rank on the node) the
// sliced update and perturbation of Placement II. Rank 0 prints the
// results; with --profile every rank prints its own kernel table, so the
// time each rank spends in update_and_perturb can be read off.
//
// A Hugging Face config.json instead of a model file gives random weights
// (model::init_random, std 0.02): shapes too large to write to disk first.
// With --placement offload θ lives in host memory and streams as in a run
// (docs/placement.md); the bytes moved per step and the device peak (Kokkos
// Tools) are printed.
//
// tokens/s counts B*T tokens per step (the batch a step trains on), not the
// 2q forward passes over it; forward-tokens/s = tokens/s * 2q. --profile runs
// one more step (pending update active) with time per kernel label.

#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "core/estimator_kind.hpp"
#include "core/memory.hpp"
#include "core/perturbation.hpp"
#include "core/step_state.hpp"
#include "io/hf_config.hpp"
#include "io/model_file.hpp"
#include "kernel_profile.hpp"
#include "kernels/perturb_update.hpp"
#include "model/init.hpp"
#include "runtime/communicator.hpp"
#include "runtime/mesh.hpp"
#include "runtime/mpi_communicator.hpp"
#include "runtime/parameter_store.hpp"
#include "runtime/slice_exchange.hpp"
#include "zo/engine.hpp"
#include "zo/estimator.hpp"
#include "zo/evaluation_plan.hpp"
#include "zo/momentum.hpp"

namespace {

using namespace distzo;
using perf::Clock;
using perf::fmt;
using perf::seconds_since;
using perf::Stats;

const char* const kUsage =
    "usage: bench_step MODEL.h5|CONFIG.json [--batch B] [--seq T] [--reps N] [--queries q]\n"
    "                  [--estimator spsa|one_sided] [--momentum B --history H] "
    "[--perturbed-blocks K]\n"
    "                  [--warmup W] [--eps E] [--lr LR] [--weight-decay WD]\n"
    "                  [--distribution gaussian|rademacher] [--seed S] [--profile]\n"
    "                  [--placement resident|offload] [--resident-blocks K] [--prefetch N]\n"
    "                  [--mesh PxD] [--share auto|true|false] [--exchange auto|shared_memory|mpi]\n"
    "                  [--storage fp32|bf16|fp16] [--rounding stochastic|nearest] [--gemm-paths "
    "N]\n"
    "                  [--perturbed-weights together|one_at_a_time] [--gemm-inputs fp32|storage]\n"
    "  ZO steps/s of Engine::run_step (causal LM, pending update applied every step);\n"
    "  --gemm-paths N: then N pairs of steps, one per host GEMM path (library, tiled);\n"
    "  defaults: --batch 8 --seq 128 --reps 3 --queries 1 --warmup 1 --eps 1e-3 --lr 1e-6\n"
    "            --estimator spsa --momentum 0 --history 1 (a momentum over H steps\n"
    "            starts after H − 1 rows of 1e-3: every update has H rows)\n"
    "            --weight-decay 0 --distribution gaussian --seed 1\n"
    "            --placement resident\n"
    "            --resident-blocks 0 --prefetch 1 --mesh 1x1 --share auto --exchange auto\n"
    "            --storage fp32 --rounding stochastic --perturbed-weights together\n"
    "            --gemm-inputs fp32;\n"
    "            a config.json gives random weights; --mesh PxD runs under mpiexec -n P*D\n";

/// "PxD" of --mesh.
runtime::MeshLayout parse_mesh(const std::string& text) {
  const auto factor = [](const std::string& digits) {
    const bool ok = !digits.empty() && digits.size() < 6 &&
                    digits.find_first_not_of("0123456789") == std::string::npos;
    return ok ? std::stoi(digits) : 0;
  };
  const std::size_t x = text.find('x');
  const int p = x == std::string::npos ? 0 : factor(text.substr(0, x));
  const int d = x == std::string::npos ? 0 : factor(text.substr(x + 1));
  DISTZO_INPUT_REQUIRE(p >= 1 && d >= 1,
                       "--mesh expects PxD with P, D >= 1 (e.g. 2x1), got '" << text << "'");
  return {p, d};
}

/// The steps the options ask for.
struct StepSettings {
  int batch = 8, seq = 128, reps = 3, queries = 1;
  EstimatorKind estimator = EstimatorKind::spsa;
  zo::MomentumSpec momentum;  // optim.momentum, optim.history
  int perturbed_blocks = 0;   // optim.perturbed_blocks: K blocks a step, 0 = every block
  int warmup = 1;  // untimed steps first, at least one: every timed step has an update pending
  double eps = 1e-3, lr = 1e-6, weight_decay = 0;
  Distribution distribution = Distribution::gaussian;
  std::uint64_t seed = 1;
};

StepSettings settings_from_args(const app::Options& args) {
  StepSettings s;
  s.batch = static_cast<int>(args.integer("--batch", s.batch));
  s.seq = static_cast<int>(args.integer("--seq", s.seq));
  s.reps = static_cast<int>(args.integer("--reps", s.reps));
  s.queries = static_cast<int>(args.integer("--queries", s.queries));
  const std::string estimator = args.text("--estimator", "spsa");
  DISTZO_INPUT_REQUIRE(estimator == "spsa" || estimator == "one_sided",
                       "--estimator must be spsa or one_sided, got '" << estimator << "'");
  s.estimator = estimator == "spsa" ? EstimatorKind::spsa : EstimatorKind::one_sided;
  s.momentum.beta = args.number("--momentum", 0);
  s.momentum.history = static_cast<int>(args.integer("--history", 1));
  DISTZO_INPUT_REQUIRE(s.momentum.beta >= 0 && s.momentum.beta < 1 && s.momentum.history >= 1 &&
                           (s.momentum.beta == 0) == (s.momentum.history == 1) &&
                           s.momentum.terms(s.queries) <= kernels::kMaxQueries,
                       "--momentum B in [0, 1) with --history H: H = 1 for B = 0, H >= 2 "
                       "otherwise, H x q <= "
                           << kernels::kMaxQueries);
  s.perturbed_blocks = static_cast<int>(args.integer("--perturbed-blocks", 0));
  s.warmup = std::max(1, static_cast<int>(args.integer("--warmup", s.warmup)));
  s.eps = args.number("--eps", s.eps);
  s.lr = args.number("--lr", s.lr);
  s.weight_decay = args.number("--weight-decay", s.weight_decay);
  s.distribution = parse_distribution(args.text("--distribution", "gaussian"));
  s.seed = static_cast<std::uint64_t>(args.integer("--seed", 1));
  DISTZO_INPUT_REQUIRE(s.batch > 0 && s.seq > 0 && s.reps > 0 && s.queries >= 1,
                       "--batch, --seq, --reps and --queries must be > 0\n\n"
                           << kUsage);
  return s;
}

/// The placement the options ask for, on a node of `ranks_on_node` ranks of
/// the run, with the option values the result line names.
struct PlacementChoice {
  runtime::PlacementConfig config;
  runtime::ExchangeKind exchange = runtime::ExchangeKind::automatic;
  std::string perturbed_weights;  // --perturbed-weights
  std::string gemm_inputs;        // --gemm-inputs
};

PlacementChoice placement_from_args(const app::Options& args, int ranks_on_node) {
  PlacementChoice choice;
  runtime::PlacementConfig& placement = choice.config;
  placement.mode = runtime::placement_mode(args.text("--placement", "resident"), "--placement");
  placement.resident_blocks = static_cast<int>(args.integer("--resident-blocks", 0));
  placement.prefetch = static_cast<int>(args.integer("--prefetch", 1));
  placement.storage = parse_storage_dtype(args.text("--storage", "fp32"));
  placement.rounding = parse_rounding(args.text("--rounding", "stochastic"));
  choice.perturbed_weights = args.text("--perturbed-weights", "together");
  placement.perturb_one_at_a_time =
      runtime::perturbs_one_at_a_time(choice.perturbed_weights, "--perturbed-weights");
  const std::string& gemm_inputs = choice.gemm_inputs = args.text("--gemm-inputs", "fp32");
  DISTZO_INPUT_REQUIRE(gemm_inputs == "fp32" || gemm_inputs == "storage",
                       "--gemm-inputs must be fp32 or storage, got '" << gemm_inputs << "'");
  placement.two_byte_gemm_inputs = gemm_inputs == "storage";
  DISTZO_INPUT_REQUIRE(!placement.two_byte_gemm_inputs || placement.storage != StorageDtype::fp32,
                       "--gemm-inputs storage needs --storage bf16 or fp16");
  const std::string share = args.text("--share", "auto");
  DISTZO_INPUT_REQUIRE(share == "auto" || share == "true" || share == "false",
                       "--share must be auto, true or false, got '" << share << "'");
  placement.share_host_master =
      share == "true" || (share == "auto" && ranks_on_node > 1 && !placement.two_byte_gemm_inputs);
  const std::string exchange = args.text("--exchange", "auto");
  DISTZO_INPUT_REQUIRE(exchange == "auto" || exchange == "shared_memory" || exchange == "mpi",
                       "--exchange must be auto, shared_memory or mpi, got '" << exchange << "'");
  choice.exchange = exchange == "mpi"             ? runtime::ExchangeKind::mpi
                    : exchange == "shared_memory" ? runtime::ExchangeKind::shared_memory
                                                  : runtime::ExchangeKind::automatic;
  return choice;
}

/// θ in a store placed as `placement` over the ranks of `node`: the model
/// file at `path`, or (`random`) random weights (std 0.02, `seed`) of the
/// config.json at `path`. `m` receives the model's config and registry.
std::unique_ptr<runtime::ParameterStore> load_store(const std::string& path, bool random,
                                                    std::uint64_t seed,
                                                    const runtime::PlacementConfig& placement,
                                                    const runtime::Communicator& node,
                                                    io::ModelInfo& m) {
  std::unique_ptr<runtime::ParameterStore> store;
  if (random) {
    m.config = io::read_hf_config(path);
    m.registry = model::ParameterRegistry::for_model(m.config);
    store = std::make_unique<runtime::ParameterStore>(m.registry, placement, &node);
    store->fill([&](std::uint32_t id, real* dst) {
      model::random_parameter(m.registry[id], seed, 0.02, dst);
    });
  } else {
    const io::ModelReader reader(path);
    m = reader.info();
    store = std::make_unique<runtime::ParameterStore>(m.registry, placement, &node);
    store->fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
  }
  return store;
}

/// What the timed steps measured.
struct Measured {
  Stats steps_per_s, tokens_per_s, seconds;  // of the timed steps
  double flush_s = 0;                        // the final flush
  double first_loss = 0, last_loss = 0, last_g = 0;
  bool all_finite = true;
  runtime::TransferBytes moved;   // θ's traffic in the last step
  MemoryUsage memory;             // Kokkos Tools, from after the store was placed
  std::uint64_t store_bytes = 0;  // θ's resident arenas, placed before that
};

/// The summary rank 0 prints (q queries per step).
void print_summary(std::ostream& out, const Measured& r, int q,
                   const runtime::ParameterStore& store,
                   const runtime::PlacementConfig& placement) {
  const MemoryUsage& memory = r.memory;
  out << "zo step        : " << fmt(r.steps_per_s.median, 5) << " steps/s (median; min "
      << fmt(r.steps_per_s.min, 5) << ", max " << fmt(r.steps_per_s.max, 5) << "), "
      << fmt(r.seconds.median, 5) << " s per step\n"
      << "  tokens/s       : " << fmt(r.tokens_per_s.median, 5) << " (B*T per step; min "
      << fmt(r.tokens_per_s.min, 5) << ", max " << fmt(r.tokens_per_s.max, 5)
      << "); forward tokens/s " << fmt(r.tokens_per_s.median * 2 * q, 5) << "\n"
      << "  flush          : " << fmt(r.flush_s * 1e3, 4)
      << " ms (one apply_update pass over all parameters)\n"
      << "  check          : loss step 0 = " << fmt(r.first_loss, 8)
      << ", last = " << fmt(r.last_loss, 8) << ", last g = " << fmt(r.last_g, 5)
      << (r.all_finite ? "" : "  (NON-FINITE loss or g!)") << "\n"
      << "  placement      : " << to_string(placement.mode) << ", " << store.device_blocks()
      << " of " << store.num_blocks() << " blocks resident; a step moves "
      << fmt(r.moved.to_device * 1e-9, 4) << " GB up, " << fmt(r.moved.to_host * 1e-9, 4)
      << " GB back\n"
      << "  device peak    : " << fmt((memory.device_peak + r.store_bytes) * 1e-9, 4)
      << " GB (θ's resident arenas, then Kokkos Tools; weights "
      << fmt((memory.peak_of(MemoryRole::weights) + r.store_bytes) * 1e-9, 4) << ", scratch "
      << fmt(memory.peak_of(MemoryRole::scratch) * 1e-9, 4) << ", activations "
      << fmt(memory.peak_of(MemoryRole::activations) * 1e-9, 4) << ")\n"
      << "  storage        : θ in " << to_string(placement.storage) << " ("
      << fmt(static_cast<double>(store.device_bytes() + store.host_bytes()) * 1e-9, 4) << " GB)"
      << (placement.storage == StorageDtype::fp32
              ? std::string()
              : std::string(", updates stored with ") + to_string(placement.rounding) + " rounding")
      << "; this rank's host memory (PSS) at the end: "
      << fmt(static_cast<double>(proportional_set_size()) * 1e-9, 4) << " GB\n";
}

/// The machine-readable result line (perf::print_result) of the run.
void print_result_line(const std::string& path, const StepSettings& settings,
                       const model::ParameterRegistry& registry, const PlacementChoice& choice,
                       const runtime::ParameterStore& store, const Measured& r) {
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"model", path},
      {"batch", std::to_string(settings.batch)},
      {"seq", std::to_string(settings.seq)},
      {"queries", std::to_string(settings.queries)},
      {"estimator", to_string(settings.estimator)},
      {"momentum", fmt(settings.momentum.beta, 4)},
      {"history", std::to_string(settings.momentum.history)},
      {"perturbed_blocks", std::to_string(settings.perturbed_blocks)},
      {"evaluations", std::to_string(step_evaluations(settings.estimator, settings.queries))},
      {"parameters", std::to_string(registry.total_elements())},
      {"distribution", to_string(settings.distribution)},
      {"storage", to_string(choice.config.storage)},
      {"perturbed_weights", choice.perturbed_weights},
      {"gemm_inputs", choice.gemm_inputs},
      {"s_per_step", fmt(r.seconds.median, 6)},
      {"tokens_per_s_median", fmt(r.tokens_per_s.median, 6)},
      {"tokens_per_s_min", fmt(r.tokens_per_s.min, 6)},
      {"tokens_per_s_max", fmt(r.tokens_per_s.max, 6)},
      {"flush_ms", fmt(r.flush_s * 1e3, 5)},
      {"loss_first", fmt(r.first_loss, 8)},
      {"finite", r.all_finite ? "yes" : "no"},
      {"placement", to_string(choice.config.mode)},
      {"resident_blocks", std::to_string(store.device_blocks())},
      {"bytes_up_per_step", std::to_string(r.moved.to_device)},
      {"device_peak_bytes", std::to_string(r.memory.device_peak + r.store_bytes)},
      {"blas_threads", perf::blas_threads()},
      {"gemm", perf::gemm_setting()}};
  perf::print_result("step", "steps_per_s", r.steps_per_s, fields);
}

/// Every rank's kernel table of the profiled step (`wall` seconds), one
/// rank after the other.
void print_profiles(const runtime::Communicator& world, double wall) {
  for (int rank = 0; rank < world.size(); ++rank) {
    if (rank == world.rank())
      perf::KernelProfile::report(
          "step", wall,
          "one step with a pending update" +
              (world.size() > 1 ? ", rank " + std::to_string(rank) : std::string()));
    std::cout.flush();
    world.barrier();
  }
}

int run(int argc, char** argv) {
  const app::Options args = perf::parse_args(
      "bench_step", argc, argv, {"batch",        "seq",      "reps",       "queries",
                                 "estimator",    "momentum", "history",    "perturbed-blocks",
                                 "warmup",       "eps",      "lr",         "weight-decay",
                                 "distribution", "seed",     "placement",  "resident-blocks",
                                 "prefetch",     "mesh",     "share",      "exchange",
                                 "storage",      "rounding", "gemm-paths", "perturbed-weights",
                                 "gemm-inputs"},
      {"profile"}, kUsage);
  DISTZO_INPUT_REQUIRE(args.positional().size() == 1, "one MODEL.h5 or CONFIG.json expected\n\n"
                                                          << kUsage);
  const std::string path = args.positional()[0];
  const StepSettings settings = settings_from_args(args);
  const int B = settings.batch, T = settings.seq, q = settings.queries;
  const int reps = settings.reps, warmup = settings.warmup;
  const double eps = settings.eps, lr = settings.lr, wd = settings.weight_decay;
  const auto world = runtime::MpiCommunicator::world();
  const runtime::MeshLayout layout = parse_mesh(args.text("--mesh", "1x1"));
  DISTZO_INPUT_REQUIRE(layout.world_size() == world->size(),
                       "--mesh " << layout.perturbation_size << "x" << layout.data_size << " needs "
                                 << layout.world_size() << " MPI ranks, got " << world->size());
  const runtime::Mesh mesh(*world, layout);
  const bool root = world->rank() == 0;
  std::ostream& out = root ? std::cout : perf::null_stream();
  perf::gemm_threads_for_ranks(mesh.node().size());
  if (root) perf::print_machine("step");
  const auto t_load = Clock::now();
  const PlacementChoice choice = placement_from_args(args, mesh.node().size());
  const runtime::PlacementConfig& placement = choice.config;
  const std::string mode = to_string(placement.mode);
  io::ModelInfo m;
  const bool random = path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  const std::unique_ptr<runtime::ParameterStore> owned =
      load_store(path, random, settings.seed, placement, mesh.node(), m);
  runtime::ParameterStore& store = *owned;
  // The peak of the run: the store (already placed), the engine, the batch.
  MemoryAccounting::start();
  Measured r;
  r.store_bytes = store.device_bytes();
  const model::ModelConfig& c = m.config;
  ExecSpace space;
  // Each replica its own micro-batch (the same for D = 1 as on one rank).
  const model::Batch batch = perf::causal_lm_batch(
      B, T, c.vocab_size, settings.seed + static_cast<std::uint64_t>(mesh.coordinates().data_rank));
  zo::Engine engine(
      c, store,
      zo::EvaluationPlan::make(zo::EstimatorSpec::make(settings.estimator, q),
                               layout.perturbation_size, mesh.coordinates().perturbation_rank),
      model::BatchShape{model::Task::causal_lm, B, T, 0},
      zo::NodeExchange{&mesh.node(), choice.exchange}, space);
  out << "model          : " << path << " (L=" << c.num_hidden_layers << " C=" << c.hidden_size
      << " V=" << c.vocab_size << ", " << m.registry.total_elements() << " parameters"
      << (random ? ", random" : "") << "), placement " << mode << " K=" << store.device_blocks()
      << "/" << store.num_blocks() << ", loaded in " << fmt(seconds_since(t_load), 3) << " s\n"
      << "mesh           : P=" << layout.perturbation_size << " x D=" << layout.data_size
      << (store.sliced() ? ", shared master sliced over the node's " : ", every rank its own θ (")
      << (store.sliced() ? std::to_string(mesh.node().size()) + " ranks, exchange " +
                               to_string(engine.weights().exchange()->kind())
                         : std::string("replicated)"))
      << "\n";

  const runtime::Communicator& comm = mesh.world();
  PendingUpdate pending;
  // With a momentum over h steps the first step is step h − 1, after h − 1
  // rows of 1e-3 (their z are regenerated like any row's), so every update,
  // the first included, has h rows: the cost a long run pays every step.
  zo::GradientHistory history(settings.momentum.history);
  const int first = settings.momentum.history - 1;
  for (int t = 0; t < first; ++t) history.push(t, std::vector<double>(q, 1e-3));
  out << "workload       : batch " << B << " x seq " << T << ", " << to_string(settings.estimator)
      << " q = " << q << ", momentum " << settings.momentum.beta
      << " over h = " << settings.momentum.history << ", perturbing "
      << (settings.perturbed_blocks ? std::to_string(settings.perturbed_blocks)
                                    : std::string("every"))
      << " block(s) a step (" << step_evaluations(settings.estimator, q)
      << " forward passes per step), eps " << eps << ", lr " << lr << ", wd " << wd << ", z "
      << to_string(settings.distribution) << "; " << warmup << " warm-up + " << reps
      << " timed steps\n";

  // One training step: run_step (applying the pending update on the way),
  // the estimate, and the update it leaves pending for the next step.
  DISTZO_INPUT_REQUIRE(
      settings.perturbed_blocks >= 0 && settings.perturbed_blocks < std::max(store.num_blocks(), 1),
      "--perturbed-blocks " << settings.perturbed_blocks << ": 0 to " << store.num_blocks() - 1);
  const ZSpec z{settings.seed, settings.distribution, kDefaultZRecipe,
                BlockChoice{settings.perturbed_blocks, store.num_blocks()}};
  auto step = [&](int s) {
    const StepPerturbation p{z, first + s, eps};
    const auto t0 = Clock::now();
    const runtime::TransferBytes before = engine.streamer().total_bytes();
    const zo::LossTable local = engine.run_step(batch, p, pending);
    r.moved = {engine.streamer().total_bytes().to_device - before.to_device,
               engine.streamer().total_bytes().to_host - before.to_host};
    const zo::StepEstimate est = zo::combine_losses(comm, local, eps);
    // As the trainer builds it (plain SGD: PendingUpdate::after's terms).
    history.push(first + s, est.g);
    pending = zo::pending_update(settings.momentum, history, first + s, lr, wd, q);
    const double t = seconds_since(t0);
    if (s == 0) r.first_loss = est.loss;
    r.last_loss = est.loss;
    r.last_g = est.g.empty() ? 0 : est.g[0];
    r.all_finite = r.all_finite && est.finite;
    return t;
  };
  std::vector<double> seconds;
  for (int s = 0; s < warmup + reps; ++s) {
    const bool timed = s >= warmup;
    DISTZO_REQUIRE(!timed || pending.active, "internal: a timed step without a pending update");
    const double t = step(s);
    if (timed) seconds.push_back(t);
  }
  double profiled_wall = 0;
  if (args.flag("--profile")) {
    perf::KernelProfile::start();
    profiled_wall = step(warmup + reps);
    perf::KernelProfile::stop();
  }
  if (const int pairs = static_cast<int>(args.integer("--gemm-paths", 0)); pairs > 0) {
    int next = warmup + reps + (args.flag("--profile") ? 1 : 0);
    perf::compare_gemm_paths(
        "step", pairs, [&] { return step(next++); }, out, root);
  }
  const auto t_flush = Clock::now();
  engine.flush(z, pending);
  space.fence();
  r.flush_s = seconds_since(t_flush);
  r.memory = MemoryAccounting::usage();
  MemoryAccounting::stop();
  const double tokens = static_cast<double>(B) * T;
  r.steps_per_s = Stats::of(perf::rates(1.0, seconds));
  r.tokens_per_s = Stats::of(perf::rates(tokens, seconds));
  r.seconds = Stats::of(seconds);
  print_summary(out, r, q, store, placement);

  if (root) print_result_line(path, settings, m.registry, choice, store, r);
  if (args.flag("--profile")) print_profiles(*world, profiled_wall);
  return r.all_finite ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  { status = distzo::perf::run_main("bench_step", kUsage, argc, argv, run); }
  // A failure on one rank must not leave the others waiting in a collective.
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (status != 0 && size > 1) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
  return status;
}
