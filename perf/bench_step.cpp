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
#include "core/memory.hpp"
#include "core/perturbation.hpp"
#include "core/step_state.hpp"
#include "io/hf_config.hpp"
#include "io/model_file.hpp"
#include "kernel_profile.hpp"
#include "model/init.hpp"
#include "runtime/communicator.hpp"
#include "runtime/mesh.hpp"
#include "runtime/mpi_communicator.hpp"
#include "runtime/parameter_store.hpp"
#include "runtime/slice_exchange.hpp"
#include "zo/engine.hpp"
#include "zo/estimator.hpp"
#include "zo/evaluation_plan.hpp"

namespace {

using namespace distzo;
using perf::Clock;
using perf::fmt;
using perf::seconds_since;
using perf::Stats;

const char* const kUsage =
    "usage: bench_step MODEL.h5|CONFIG.json [--batch B] [--seq T] [--reps N] [--queries q]\n"
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
    "            --weight-decay 0 --distribution gaussian --seed 1 --placement resident\n"
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

int run(int argc, char** argv) {
  const app::Options args = perf::parse_args(
      "bench_step", argc, argv, {"batch",        "seq",      "reps",       "queries",
                                 "warmup",       "eps",      "lr",         "weight-decay",
                                 "distribution", "seed",     "placement",  "resident-blocks",
                                 "prefetch",     "mesh",     "share",      "exchange",
                                 "storage",      "rounding", "gemm-paths", "perturbed-weights",
                                 "gemm-inputs"},
      {"profile"}, kUsage);
  DISTZO_INPUT_REQUIRE(args.positional().size() == 1, "one MODEL.h5 or CONFIG.json expected\n\n"
                                                          << kUsage);
  const std::string path = args.positional()[0];
  const int B = static_cast<int>(args.integer("--batch", 8));
  const int T = static_cast<int>(args.integer("--seq", 128));
  const int reps = static_cast<int>(args.integer("--reps", 3));
  const int q = static_cast<int>(args.integer("--queries", 1));
  // At least one untimed step, so the first timed step has a pending update.
  const int warmup = std::max(1, static_cast<int>(args.integer("--warmup", 1)));
  const double eps = args.number("--eps", 1e-3);
  const double lr = args.number("--lr", 1e-6);
  const double wd = args.number("--weight-decay", 0.0);
  const Distribution dist = parse_distribution(args.text("--distribution", "gaussian"));
  const auto seed = static_cast<std::uint64_t>(args.integer("--seed", 1));
  DISTZO_INPUT_REQUIRE(B > 0 && T > 0 && reps > 0 && q >= 1,
                       "--batch, --seq, --reps and --queries must be > 0\n\n"
                           << kUsage);

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
  runtime::PlacementConfig placement;
  placement.mode = runtime::placement_mode(args.text("--placement", "resident"), "--placement");
  const std::string mode = to_string(placement.mode);
  placement.resident_blocks = static_cast<int>(args.integer("--resident-blocks", 0));
  placement.prefetch = static_cast<int>(args.integer("--prefetch", 1));
  placement.storage = parse_storage_dtype(args.text("--storage", "fp32"));
  placement.rounding = parse_rounding(args.text("--rounding", "stochastic"));
  const std::string perturbed = args.text("--perturbed-weights", "together");
  placement.perturb_one_at_a_time =
      runtime::perturbs_one_at_a_time(perturbed, "--perturbed-weights");
  const std::string gemm_inputs = args.text("--gemm-inputs", "fp32");
  DISTZO_INPUT_REQUIRE(gemm_inputs == "fp32" || gemm_inputs == "storage",
                       "--gemm-inputs must be fp32 or storage, got '" << gemm_inputs << "'");
  placement.two_byte_gemm_inputs = gemm_inputs == "storage";
  DISTZO_INPUT_REQUIRE(!placement.two_byte_gemm_inputs || placement.storage != StorageDtype::fp32,
                       "--gemm-inputs storage needs --storage bf16 or fp16");
  const std::string share = args.text("--share", "auto");
  DISTZO_INPUT_REQUIRE(share == "auto" || share == "true" || share == "false",
                       "--share must be auto, true or false, got '" << share << "'");
  placement.share_host_master = share == "true" || (share == "auto" && mesh.node().size() > 1 &&
                                                    !placement.two_byte_gemm_inputs);
  const std::string exchange_name = args.text("--exchange", "auto");
  DISTZO_INPUT_REQUIRE(
      exchange_name == "auto" || exchange_name == "shared_memory" || exchange_name == "mpi",
      "--exchange must be auto, shared_memory or mpi, got '" << exchange_name << "'");
  const runtime::ExchangeKind exchange = exchange_name == "mpi" ? runtime::ExchangeKind::mpi
                                         : exchange_name == "shared_memory"
                                             ? runtime::ExchangeKind::shared_memory
                                             : runtime::ExchangeKind::automatic;
  io::ModelInfo m;
  std::unique_ptr<runtime::ParameterStore> owned;
  const bool random = path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (random) {
    m.config = io::read_hf_config(path);
    m.registry = model::ParameterRegistry::for_model(m.config);
    owned = std::make_unique<runtime::ParameterStore>(m.registry, placement, &mesh.node());
    owned->fill([&](std::uint32_t id, real* dst) {
      model::random_parameter(m.registry[id], seed, 0.02, dst);
    });
  } else {
    const io::ModelReader reader(path);
    m = reader.info();
    owned = std::make_unique<runtime::ParameterStore>(m.registry, placement, &mesh.node());
    owned->fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
  }
  runtime::ParameterStore& store = *owned;
  // The peak of the run: the store (already placed), the engine, the batch.
  MemoryAccounting::start();
  const std::uint64_t store_bytes = store.device_bytes();
  const model::ModelConfig& c = m.config;
  ExecSpace space;
  // Each replica its own micro-batch (the same for D = 1 as on one rank).
  const model::Batch batch = perf::causal_lm_batch(
      B, T, c.vocab_size, seed + static_cast<std::uint64_t>(mesh.coordinates().data_rank));
  zo::Engine engine(
      c, store,
      zo::EvaluationPlan::make(q, layout.perturbation_size, mesh.coordinates().perturbation_rank),
      model::BatchShape{model::Task::causal_lm, B, T, 0}, zo::NodeExchange{&mesh.node(), exchange},
      space);
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
  out << "workload       : batch " << B << " x seq " << T << ", q = " << q << " (" << 2 * q
      << " forward passes per step), eps " << eps << ", lr " << lr << ", wd " << wd << ", z "
      << to_string(dist) << "; " << warmup << " warm-up + " << reps << " timed steps\n";

  double first_loss = 0, last_loss = 0, last_g = 0;
  runtime::TransferBytes step_moved;  // θ's traffic in the last step
  bool all_finite = true;
  // One training step: run_step (applying the pending update on the way),
  // the estimate, and the update it leaves pending for the next step.
  const ZSpec z{seed, dist, kDefaultZRecipe};
  auto step = [&](int s) {
    const StepPerturbation p{z, s, eps};
    const auto t0 = Clock::now();
    const runtime::TransferBytes before = engine.streamer().total_bytes();
    const zo::LossTable local = engine.run_step(batch, p, pending);
    step_moved = {engine.streamer().total_bytes().to_device - before.to_device,
                  engine.streamer().total_bytes().to_host - before.to_host};
    const zo::StepEstimate est = zo::combine_losses(comm, local, eps);
    pending = PendingUpdate::after(p, est.g, lr, wd);
    const double t = seconds_since(t0);
    if (s == 0) first_loss = est.loss;
    last_loss = est.loss;
    last_g = est.g.empty() ? 0 : est.g[0];
    all_finite = all_finite && est.finite;
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
  const double flush_s = seconds_since(t_flush);

  const runtime::TransferBytes moved = step_moved;
  const MemoryUsage memory = MemoryAccounting::usage();
  MemoryAccounting::stop();
  const double tokens = static_cast<double>(B) * T;
  const Stats sps = Stats::of(perf::rates(1.0, seconds));
  const Stats tps = Stats::of(perf::rates(tokens, seconds));
  const Stats t_s = Stats::of(seconds);
  out << "zo step        : " << fmt(sps.median, 5) << " steps/s (median; min " << fmt(sps.min, 5)
      << ", max " << fmt(sps.max, 5) << "), " << fmt(t_s.median, 5) << " s per step\n"
      << "  tokens/s       : " << fmt(tps.median, 5) << " (B*T per step; min " << fmt(tps.min, 5)
      << ", max " << fmt(tps.max, 5) << "); forward tokens/s " << fmt(tps.median * 2 * q, 5) << "\n"
      << "  flush          : " << fmt(flush_s * 1e3, 4)
      << " ms (one apply_update pass over all parameters)\n"
      << "  check          : loss step 0 = " << fmt(first_loss, 8)
      << ", last = " << fmt(last_loss, 8) << ", last g = " << fmt(last_g, 5)
      << (all_finite ? "" : "  (NON-FINITE loss or g!)") << "\n"
      << "  placement      : " << mode << ", " << store.device_blocks() << " of "
      << store.num_blocks() << " blocks resident; a step moves " << fmt(moved.to_device * 1e-9, 4)
      << " GB up, " << fmt(moved.to_host * 1e-9, 4) << " GB back\n"
      << "  device peak    : " << fmt((memory.device_peak + store_bytes) * 1e-9, 4)
      << " GB (θ's resident arenas, then Kokkos Tools; weights "
      << fmt((memory.peak_of(MemoryRole::weights) + store_bytes) * 1e-9, 4) << ", scratch "
      << fmt(memory.peak_of(MemoryRole::scratch) * 1e-9, 4) << ", activations "
      << fmt(memory.peak_of(MemoryRole::activations) * 1e-9, 4) << ")\n"
      << "  storage        : θ in " << to_string(placement.storage) << " ("
      << fmt(static_cast<double>(store.device_bytes() + store.host_bytes()) * 1e-9, 4) << " GB)"
      << (placement.storage == StorageDtype::fp32
              ? std::string()
              : std::string(", updates stored with ") + to_string(placement.rounding) + " rounding")
      << "; this rank's host memory (PSS) at the end: "
      << fmt(static_cast<double>(proportional_set_size()) * 1e-9, 4) << " GB\n";

  const std::vector<std::pair<std::string, std::string>> fields = {
      {"model", path},
      {"batch", std::to_string(B)},
      {"seq", std::to_string(T)},
      {"queries", std::to_string(q)},
      {"parameters", std::to_string(m.registry.total_elements())},
      {"distribution", to_string(dist)},
      {"storage", to_string(placement.storage)},
      {"perturbed_weights", perturbed},
      {"gemm_inputs", gemm_inputs},
      {"s_per_step", fmt(t_s.median, 6)},
      {"tokens_per_s_median", fmt(tps.median, 6)},
      {"tokens_per_s_min", fmt(tps.min, 6)},
      {"tokens_per_s_max", fmt(tps.max, 6)},
      {"flush_ms", fmt(flush_s * 1e3, 5)},
      {"loss_first", fmt(first_loss, 8)},
      {"finite", all_finite ? "yes" : "no"},
      {"placement", mode},
      {"resident_blocks", std::to_string(store.device_blocks())},
      {"bytes_up_per_step", std::to_string(moved.to_device)},
      {"device_peak_bytes", std::to_string(memory.device_peak + store_bytes)},
      {"blas_threads", perf::blas_threads()},
      {"gemm", perf::gemm_setting()}};
  if (root) perf::print_result("step", "steps_per_s", sps, fields);
  if (args.flag("--profile")) {
    for (int r = 0; r < world->size(); ++r) {  // one rank's table after the other
      if (r == world->rank())
        perf::KernelProfile::report(
            "step", profiled_wall,
            "one step with a pending update" +
                (world->size() > 1 ? ", rank " + std::to_string(r) : std::string()));
      std::cout.flush();
      world->barrier();
    }
  }
  return all_finite ? 0 : 1;
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
