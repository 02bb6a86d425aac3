// bench_perturb: memory throughput of the fused perturb/update kernel
// (kernels::update_and_perturb) against Kokkos::deep_copy moving the same
// number of bytes, measured in the same run.
//
//   bench_perturb [--elements N] [--reps R] [--warmup W]
//
// Bytes COUNTED per element (what each line's GB/s divides by; float32):
//   update_and_perturb, pending 1-query update, writes w+ and w-:
//       read θ 4 + write θ 4 + write w+ 4 + write w- 4        = 16 B
//   update_and_perturb, no pending update, writes w+ and w-:
//       read θ 4 + write w+ 4 + write w- 4                     = 12 B
//   apply_update (1 query):            read θ 4 + write θ 4   =  8 B
//   the same with θ stored in bf16 (2-byte words, round to nearest or
//   stochastic rounding): θ moves 2 + 2 B, w± stay float32 = 12 B fused,
//   4 B apply_update
//   deep_copy baseline: a 2N-float copy, read 8 + write 8      = 16 B per θ element
//   same-traffic kernel, no RNG: the fused kernel's exact access pattern
//       (θ read+written, w± written) with z replaced by a constant = 16 B
// The counted bytes are the algorithmic minimum. A CPU's ordinary stores
// first read each destination line (write-allocate), so the hardware moves up
// to 24 B per element for the fused kernel, while glibc's memcpy (what
// deep_copy becomes for contiguous host Views) switches to non-temporal
// stores for large copies and moves only the counted 16 B.
//
// The Gaussian z (recipe 2, the default) costs a binary32 log polynomial, a
// square root and sin/cos polynomials per two elements (core/perturbation.hpp)
// and a pending update regenerates the previous step's z as well, so on a CPU
// the kernel is compute-bound: the Gaussian/Rademacher ratio shows by how
// much. Recipe 1 (double precision with libm) is measured for comparison.
// Threads: the kernels take the host GEMM's (as in `distzo run`), the
// deep_copy baseline and the no-RNG kernel one, so "vs copy" at 2 threads
// compares a 2-thread kernel with a 1-thread copy.

#include <Kokkos_Core.hpp>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "core/perturbation.hpp"
#include "kernels/perturb_update.hpp"

namespace {

using namespace distzo;
using perf::Clock;
using perf::fmt;
using perf::seconds_since;
using perf::Stats;

const char* const kUsage =
    "usage: bench_perturb [--elements N] [--reps R] [--warmup W]\n"
    "  GB/s of kernels::update_and_perturb vs Kokkos::deep_copy of the same bytes;\n"
    "  defaults: --elements 33554432 (2^25) --reps 5 --warmup 1\n";

/// Timed repetitions of `body` (fenced), after `warmup` untimed ones.
std::vector<double> time_reps(const ExecSpace& space, int warmup, int reps,
                              const std::function<void()>& body) {
  for (int i = 0; i < warmup; ++i) body();
  space.fence();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    body();
    space.fence();
    t.push_back(seconds_since(t0));
  }
  return t;
}

int run(int argc, char** argv) {
  const app::Options args =
      perf::parse_args("bench_perturb", argc, argv, {"elements", "reps", "warmup"}, {}, kUsage);
  DISTZO_INPUT_REQUIRE(args.positional().empty(), "no positional arguments expected\n\n" << kUsage);
  const long long n_arg = args.integer("--elements", 1LL << 25);
  const int reps = static_cast<int>(args.integer("--reps", 5));
  const int warmup = static_cast<int>(args.integer("--warmup", 1));
  DISTZO_INPUT_REQUIRE(n_arg > 0 && reps > 0 && warmup >= 0, "--elements and --reps must be > 0");
  const auto n = static_cast<std::size_t>(n_arg);

  // The kernels' threads as `distzo run` sets them (OPENBLAS_NUM_THREADS or
  // the cores): on Serial Kokkos the fused kernel runs on the host GEMM's
  // threads (kernels/common.hpp for_each_index); deep_copy stays on one.
  perf::gemm_threads_for_ranks(1);
  perf::print_machine("perturb");
  ExecSpace space;
  Vec theta("distzo::perf::theta", n), plus("distzo::perf::w_plus", n),
      minus("distzo::perf::w_minus", n);
  Vec src("distzo::perf::copy_src", 2 * n), dst("distzo::perf::copy_dst", 2 * n);
  // Realistic θ (weights of scale 0.02); every buffer touched once so page
  // faults stay out of the timings.
  fill_perturbation(space, theta,
                    PerturbationStream::make(7, 0, 0, Distribution::gaussian, ZRecipe::v2), 0, 0);
  Kokkos::deep_copy(space, plus, real(0));
  Kokkos::deep_copy(space, minus, real(0));
  Kokkos::deep_copy(space, src, real(1));
  Kokkos::deep_copy(space, dst, real(0));
  space.fence();

  const std::uint32_t param_id = 3;
  const real eps = 1e-3f;
  // The pending update of step 41 applied while materialising step 42. The
  // coefficients are tiny so θ stays O(1) over any number of repetitions.
  auto pending = [](Distribution d, ZRecipe r) {
    kernels::UpdateTerms u;
    u.count = 1;
    u.decay = 1e-9f;
    u.stream[0] = PerturbationStream::make(2024, 41, 0, d, r);
    u.coefficient[0] = 1e-9f;
    return u;
  };
  const kernels::UpdateTerms none;
  const PerturbationStream gauss =
      PerturbationStream::make(2024, 42, 0, Distribution::gaussian, ZRecipe::v2);
  const PerturbationStream gauss_v1 =
      PerturbationStream::make(2024, 42, 0, Distribution::gaussian, ZRecipe::v1);
  const PerturbationStream rad =
      PerturbationStream::make(2024, 42, 0, Distribution::rademacher, ZRecipe::v2);

  struct Line {
    std::string name, metric;
    double bytes_per_element;
    std::vector<double> seconds;
  };
  std::vector<Line> lines;
  std::cout << "workload       : " << n << " float32 elements per tensor ("
            << fmt(n * 4.0 / (1 << 20), 5) << " MiB); " << warmup << " warm-up + " << reps
            << " timed repetitions\n";

  lines.push_back({"deep_copy of 2N floats (baseline)", "deep_copy", 16,
                   time_reps(space, warmup, reps, [&] { Kokkos::deep_copy(space, dst, src); })});
  {
    const kernels::UpdateTerms u = pending(Distribution::gaussian, ZRecipe::v2);
    lines.push_back({"update_and_perturb, update + w+ + w-, gaussian", "fused_gaussian", 16,
                     time_reps(space, warmup, reps, [&] {
                       kernels::update_and_perturb(space, theta, param_id, 0, u, gauss, eps, plus,
                                                   minus);
                     })});
  }
  {
    const kernels::UpdateTerms u = pending(Distribution::gaussian, ZRecipe::v1);
    lines.push_back({"update_and_perturb, update + w+ + w-, gaussian v1", "fused_gaussian_v1", 16,
                     time_reps(space, warmup, reps, [&] {
                       kernels::update_and_perturb(space, theta, param_id, 0, u, gauss_v1, eps,
                                                   plus, minus);
                     })});
  }
  {
    const kernels::UpdateTerms u = pending(Distribution::rademacher, ZRecipe::v2);
    lines.push_back({"update_and_perturb, update + w+ + w-, rademacher", "fused_rademacher", 16,
                     time_reps(space, warmup, reps, [&] {
                       kernels::update_and_perturb(space, theta, param_id, 0, u, rad, eps, plus,
                                                   minus);
                     })});
  }
  lines.push_back({"update_and_perturb, no update, w+ + w-, gaussian", "perturb_gaussian", 12,
                   time_reps(space, warmup, reps, [&] {
                     kernels::update_and_perturb(space, theta, param_id, 0, none, gauss, eps, plus,
                                                 minus);
                   })});
  lines.push_back({"update_and_perturb, no update, w+ + w-, rademacher", "perturb_rademacher", 12,
                   time_reps(space, warmup, reps, [&] {
                     kernels::update_and_perturb(space, theta, param_id, 0, none, rad, eps, plus,
                                                 minus);
                   })});
  {
    const kernels::UpdateTerms u = pending(Distribution::gaussian, ZRecipe::v2);
    lines.push_back({"apply_update (flush), gaussian", "apply_update_gaussian", 8,
                     time_reps(space, warmup, reps,
                               [&] { kernels::apply_update(space, theta, param_id, 0, u); })});
  }
  {
    // θ stored in bf16: the same arithmetic, 2-byte reads and writes of θ;
    // stochastic rounding adds one Philox block per 4 elements.
    HalfVec theta16("distzo::perf::theta_bf16", n);
    const Vec t = theta;
    const HalfVec t16 = theta16;
    const StoredVec stored16(StorageDtype::bf16, theta16.data(), n);
    Kokkos::parallel_for(
        "distzo::perf::theta_to_bf16",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
            space, 0, static_cast<std::int64_t>(n)),
        KOKKOS_LAMBDA(const std::int64_t i) {
          t16(i) = static_cast<std::uint16_t>(
              storage::store(t(i), StorageDtype::bf16, Rounding::nearest, 0));
        });
    for (Rounding rounding : {Rounding::nearest, Rounding::stochastic}) {
      kernels::UpdateTerms u = pending(Distribution::gaussian, ZRecipe::v2);
      u.rounding = rounding;
      u.rounding_stream = RoundingStream::make(2024, 41);
      const std::string how = rounding == Rounding::nearest ? "nearest" : "stochastic";
      lines.push_back({"bf16 θ (" + how + "), update + w+ + w-, gaussian",
                       "bf16_" + how + "_fused_gaussian", 12, time_reps(space, warmup, reps, [&] {
                         kernels::update_and_perturb(space, stored16, param_id, 0, u, gauss, eps,
                                                     plus, minus);
                       })});
      lines.push_back({"bf16 θ (" + how + "), apply_update (flush), gaussian",
                       "bf16_" + how + "_apply_update_gaussian", 4,
                       time_reps(space, warmup, reps,
                                 [&] { kernels::apply_update(space, stored16, param_id, 0, u); })});
    }
  }
  {
    // The fused kernel's memory pattern without the generator: the speed the
    // kernel would reach if z were free.
    const Vec t = theta, p = plus, m = minus;
    const real decay = 1e-9f;
    lines.push_back({"same traffic, no RNG (hand-written parallel_for)", "same_traffic_no_rng", 16,
                     time_reps(space, warmup, reps, [&] {
                       Kokkos::parallel_for(
                           "distzo::perf::same_traffic",
                           Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
                               space, 0, static_cast<std::int64_t>(n)),
                           KOKKOS_LAMBDA(const std::int64_t i) {
                             const real v = t(i) - decay * t(i);
                             t(i) = v;
                             p(i) = v + eps;
                             m(i) = v - eps;
                           });
                     })});
  }

  const Stats base = Stats::of(perf::rates(16.0 * n * 1e-9, lines[0].seconds));
  std::cout << "\n"
            << std::left << std::setw(52) << "kernel" << std::right << std::setw(6) << "B/el"
            << std::setw(11) << "GB/s med" << std::setw(20) << "min-max" << std::setw(11) << "Gel/s"
            << std::setw(12) << "vs copy\n";
  double g_fused = 0, r_fused = 0;
  for (const Line& l : lines) {
    const Stats gbs = Stats::of(perf::rates(l.bytes_per_element * n * 1e-9, l.seconds));
    const Stats els = Stats::of(perf::rates(n * 1e-9, l.seconds));
    const double ratio = base.median > 0 ? gbs.median / base.median : 0;
    if (l.metric == "fused_gaussian") g_fused = els.median;
    if (l.metric == "fused_rademacher") r_fused = els.median;
    std::cout << std::left << std::setw(52) << l.name << std::right << std::setw(6)
              << l.bytes_per_element << std::setw(11) << fmt(gbs.median, 4) << std::setw(20)
              << (fmt(gbs.min, 4) + " - " + fmt(gbs.max, 4)) << std::setw(11) << fmt(els.median, 4)
              << std::setw(11) << fmt(ratio, 3) << "\n";
    perf::print_result("perturb", l.metric, gbs,
                       {{"unit", "GB/s"},
                        {"bytes_per_element", fmt(l.bytes_per_element, 3)},
                        {"elements", std::to_string(n)},
                        {"gelem_per_s", fmt(els.median, 5)},
                        {"ms", fmt(Stats::of(l.seconds).median * 1e3, 6)},
                        {"vs_deep_copy", fmt(ratio, 4)},
                        {"description", l.name}});
  }
  std::cout << "\ngaussian vs rademacher (fused update + w+ + w-): " << fmt(g_fused, 4) << " vs "
            << fmt(r_fused, 4) << " Gelem/s, gaussian is "
            << fmt(g_fused > 0 ? r_fused / g_fused : 0, 3) << "x slower\n"
            << "(16 B/el counted: read θ + write θ + write w+ + write w-; with write-allocate "
               "the hardware moves up to 24 B/el)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return distzo::perf::run_main("bench_perturb", kUsage, argc, argv, run);
}
