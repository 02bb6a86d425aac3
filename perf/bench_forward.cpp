// bench_forward: tokens/s of distzo's OPT forward pass (embed -> blocks ->
// final hidden -> logits over the full vocabulary) at the weights of a distzo
// model file, on the fixed token pattern (no padding). The baseline is
// tools/torch_forward_bench.py on the same file, batch and tokens.
//
//   bench_forward MODEL.h5 [--batch 8] [--seq 128] [--reps 5] [--warmup 1] [--seed 1]
//                 [--profile]
//
// Also prints a GEMM check (one fc1-shaped kernels::linear, GFLOP/s), which
// tells at a glance whether gemm reaches an optimised BLAS, and the mean
// next-token loss at θ, which must match the PyTorch baseline's. --profile
// adds one more forward with time per kernel label (kernel_profile.hpp).

#include <Kokkos_Core.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "io/model_file.hpp"
#include "kernel_profile.hpp"
#include "kernels/linear.hpp"
#include "kernels/losses.hpp"
#include "model/forward.hpp"
#include "model/weights.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/parameter_store.hpp"
#include "zo/model_walk.hpp"

namespace {

using namespace distzo;
using perf::Clock;
using perf::fmt;
using perf::seconds_since;
using perf::Stats;

const char* const kUsage =
    "usage: bench_forward MODEL.h5 [--batch B] [--seq T] [--reps N] [--warmup W] [--seed S]\n"
    "                     [--profile] [--gemm-paths N]\n"
    "  forward tokens/s (embed, blocks, final hidden, logits) on fixed tokens, no padding;\n"
    "  --profile: one more, untimed-for-the-stats forward with time per kernel label;\n"
    "  --gemm-paths N: then N pairs of forwards, one per host GEMM path (library, tiled);\n"
    "  defaults: --batch 8 --seq 128 --reps 5 --warmup 1 --seed 1\n";

/// Multiply-add counted as 2 FLOPs; the dense layers and the LM head only
/// (attention scores and the element-wise kernels are left out).
double dense_flops(const model::ModelConfig& c, double rows) {
  const double C = static_cast<double>(c.hidden_size), F = static_cast<double>(c.ffn_dim);
  const double E = static_cast<double>(c.embedding_dim()), V = static_cast<double>(c.vocab_size);
  const double Q = static_cast<double>(c.q_width()), K = static_cast<double>(c.kv_width());
  const double mlp_matrices = c.architecture == model::Architecture::opt ? 2.0 : 3.0;  // SwiGLU
  double per_layer = 2.0 * rows * (2.0 * C * Q + 2.0 * C * K + mlp_matrices * C * F);
  double flops = per_layer * static_cast<double>(c.num_hidden_layers) + 2.0 * rows * V * E;
  if (c.has_projection()) flops += 2.0 * (2.0 * rows * C * E);
  return flops;
}

int run(int argc, char** argv) {
  const app::Options args = perf::parse_args(
      "bench_forward", argc, argv, {"batch", "seq", "reps", "warmup", "seed", "gemm-paths"},
      {"profile"}, kUsage);
  DISTZO_INPUT_REQUIRE(args.positional().size() == 1, "one MODEL.h5 expected\n\n" << kUsage);
  const std::string path = args.positional()[0];
  const int B = static_cast<int>(args.integer("--batch", 8));
  const int T = static_cast<int>(args.integer("--seq", 128));
  const int reps = static_cast<int>(args.integer("--reps", 5));
  const int warmup = static_cast<int>(args.integer("--warmup", 1));
  const auto seed = static_cast<std::uint64_t>(args.integer("--seed", 1));
  DISTZO_INPUT_REQUIRE(B > 0 && T > 0 && reps > 0 && warmup >= 0,
                       "--batch, --seq and --reps must be > 0");

  perf::gemm_threads_for_ranks(1);
  perf::print_machine("forward");
  const auto t_load = Clock::now();
  const io::ModelReader reader(path);
  const io::ModelInfo& m = reader.info();
  runtime::ParameterStore store(m.registry, runtime::PlacementConfig());
  store.fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
  const model::ModelConfig& c = m.config;
  std::cout << "model          : " << path << " (" << model::describe(c, "; ") << "; "
            << m.registry.total_elements() << " parameters), loaded in "
            << fmt(seconds_since(t_load), 3) << " s\n";

  ExecSpace space;
  const int N = B * T;
  const model::Batch batch = perf::causal_lm_batch(B, T, c.vocab_size, seed);
  model::DecoderForward forward(c, B, T);
  Mat h("distzo::perf::h", N, c.hidden_size);
  Mat logits("distzo::perf::logits", N, c.vocab_size);
  runtime::BlockStreamer streamer(store, space);
  zo::FloatTheta theta(store);

  // Stage times of one forward pass (the walk's ForwardPass); each stage ends
  // with a fence so the split is meaningful on asynchronous backends too.
  struct Split {
    double embed, blocks, final_hidden, logits, total;
  };
  auto forward_once = [&]() {
    Split s{};
    const auto t0 = Clock::now();
    auto t = t0;
    const int L = m.registry.num_blocks();
    auto observe = [&](int stage, const Mat&) {
      space.fence();
      const double dt = seconds_since(t);
      if (stage < 0)
        s.embed = dt;
      else if (stage < L)
        s.blocks += dt;
      else
        s.final_hidden = dt;
      t = Clock::now();
    };
    zo::ForwardPass pass(forward, theta, h, batch.tokens, batch.mask, observe);
    zo::walk(streamer, pass);
    t = Clock::now();
    forward.logits(space, model::make_edge_view(m.registry, pass.edges()), pass.final_hidden(),
                   logits);
    space.fence();
    s.logits = seconds_since(t);
    s.total = seconds_since(t0);
    return s;
  };

  std::cout << "workload       : batch " << B << " x seq " << T << " = " << N
            << " tokens per forward, logits (" << N << ", " << c.vocab_size << "); " << warmup
            << " warm-up + " << reps << " timed repetitions\n";
  for (int i = 0; i < warmup; ++i) forward_once();
  std::vector<double> total, embed, blk, fin, head;
  for (int i = 0; i < reps; ++i) {
    const Split s = forward_once();
    total.push_back(s.total);
    embed.push_back(s.embed);
    blk.push_back(s.blocks);
    fin.push_back(s.final_hidden);
    head.push_back(s.logits);
  }

  // Sanity: the loss at θ on this batch (PyTorch's baseline prints the same).
  kernels::LossSums sums = kernels::make_loss_sums();
  kernels::causal_lm_loss(space, sums, logits, batch.targets);
  const kernels::LossValue loss = kernels::read_loss(space, sums);

  const double flops = dense_flops(c, N);
  const Stats tps = Stats::of(perf::rates(N, total));
  const Stats gflops = Stats::of(perf::rates(flops * 1e-9, total));
  const Stats t_ms = Stats::of(total);
  std::cout << "forward        : " << fmt(tps.median, 5) << " tokens/s (median; min "
            << fmt(tps.min, 5) << ", max " << fmt(tps.max, 5) << "), " << fmt(t_ms.median * 1e3, 5)
            << " ms per forward\n"
            << "  split (median ms): embed " << fmt(Stats::of(embed).median * 1e3, 4) << ", blocks "
            << fmt(Stats::of(blk).median * 1e3, 5) << ", final hidden "
            << fmt(Stats::of(fin).median * 1e3, 4) << ", logits "
            << fmt(Stats::of(head).median * 1e3, 5) << "\n"
            << "  dense FLOPs    : " << fmt(flops * 1e-9, 5) << " GFLOP per forward -> "
            << fmt(gflops.median, 4) << " GFLOP/s\n"
            << "  check          : mean next-token loss at theta = " << fmt(loss.mean(), 8)
            << " over " << loss.count << " targets\n";

  // GEMM check: the MLP's first linear (OPT's fc1, Llama's gate_proj),
  // (N, C) x (F, C)^T -> (N, F).
  double gemm_gflops = 0;
  if (m.registry.num_blocks() > 0) {
    // The store is float32 (PlacementConfig()): its tensors are the floats.
    model::TensorTable floats(m.registry.size());
    for (std::uint32_t id : m.registry.block_ids(0)) floats[id] = store.theta()[id].as<real>();
    const model::WeightView block0 = model::make_block_view(m.registry, floats, 0);
    using R = model::ParameterRole;
    const bool opt = c.architecture == model::Architecture::opt;
    const ConstMat w = block0.mat(opt ? R::fc1_weight : R::gate_weight);
    const ConstVec b = block0.vec(opt ? R::fc1_bias : R::gate_bias);
    Mat y("distzo::perf::gemm_y", N, c.ffn_dim);
    const Mat x = h;  // any (N, C) data
    kernels::linear(space, y, x, w, b);
    space.fence();
    std::vector<double> g;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      kernels::linear(space, y, x, w, b);
      space.fence();
      g.push_back(seconds_since(t0));
    }
    const double f = 2.0 * N * static_cast<double>(c.hidden_size) * static_cast<double>(c.ffn_dim);
    gemm_gflops = Stats::of(perf::rates(f * 1e-9, g)).median;
    std::cout << "  gemm check     : MLP-in linear (" << N << " x " << c.hidden_size << ") . ("
              << c.ffn_dim << " x " << c.hidden_size << ")^T: " << fmt(gemm_gflops, 4)
              << " GFLOP/s (median of 3)\n";
  }

  if (args.flag("--profile")) {
    perf::KernelProfile::start();
    const auto t0 = Clock::now();
    forward_once();
    const double wall = seconds_since(t0);
    perf::KernelProfile::stop();
    perf::KernelProfile::report("forward", wall, "one forward");
  }

  if (const int pairs = static_cast<int>(args.integer("--gemm-paths", 0)); pairs > 0)
    perf::compare_gemm_paths(
        "forward", pairs, [&] { return forward_once().total; }, std::cout, true);

  const std::vector<std::pair<std::string, std::string>> fields = {
      {"model", path},
      {"batch", std::to_string(B)},
      {"seq", std::to_string(T)},
      {"loss", fmt(loss.mean(), 8)},
      {"ms_per_forward", fmt(t_ms.median * 1e3, 6)},
      {"ms_embed", fmt(Stats::of(embed).median * 1e3, 6)},
      {"ms_blocks", fmt(Stats::of(blk).median * 1e3, 6)},
      {"ms_final_hidden", fmt(Stats::of(fin).median * 1e3, 6)},
      {"ms_logits", fmt(Stats::of(head).median * 1e3, 6)},
      {"gflops", fmt(gflops.median, 5)},
      {"gemm_gflops", fmt(gemm_gflops, 5)},
      {"blas_threads", perf::blas_threads()},
      {"gemm", perf::gemm_setting()}};
  perf::print_result("forward", "tokens_per_s", tps, fields);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return distzo::perf::run_main("bench_forward", kUsage, argc, argv, run);
}
