// bench_z_statistics: the goodness-of-fit checks of tests/test_perturbation.cpp
// (moments, lag-1 correlation, largest |z|, chi-square, Kolmogorov–Smirnov)
// on 10^8 Gaussian z per recipe instead of 10^6, with the time to generate
// them. A check, not a speed benchmark: it prints each statistic next to its
// bound and exits 1 when one fails.
//
//   bench_z_statistics [--samples N] [--seed S]
//
// Memory: 4 B per sample (float32, sorted in place for the KS statistic):
// 400 MB at the default 10^8.

#include <Kokkos_Core.hpp>
#include <iostream>
#include <vector>

#include "bench_common.hpp"
#include "core/perturbation.hpp"
#include "support/normal_statistics.hpp"

namespace {

using namespace distzo;

const char* const kUsage =
    "usage: bench_z_statistics [--samples N] [--seed S]\n"
    "  normality checks of Gaussian z, recipes 1 and 2, on N samples (default 100000000)\n";

int run(int argc, char** argv) {
  const app::Options args =
      perf::parse_args("bench_z_statistics", argc, argv, {"samples", "seed"}, {}, kUsage);
  DISTZO_INPUT_REQUIRE(args.positional().empty(), "no positional arguments expected\n\n" << kUsage);
  const long long n = args.integer("--samples", 100000000LL);
  const auto seed = static_cast<std::uint64_t>(args.integer("--seed", 31337));
  DISTZO_INPUT_REQUIRE(n > 1, "--samples must be > 1");
  perf::print_machine("z_statistics");

  ExecSpace space;
  Vec z("distzo::perf::z", static_cast<std::size_t>(n));
  const auto host = Kokkos::create_mirror_view(z);
  bool all_ok = true;
  for (const ZRecipe recipe : {ZRecipe::v1, ZRecipe::v2}) {
    const PerturbationStream s =
        PerturbationStream::make(seed, 42, 0, Distribution::gaussian, recipe);
    const auto t0 = perf::Clock::now();
    fill_perturbation(space, z, s, 3, 2);  // off the block grid, as the test
    space.fence();
    const double generate_s = perf::seconds_since(t0);
    Kokkos::deep_copy(host, z);
    std::vector<real> sample(host.data(), host.data() + n);
    const double max_abs = std::sqrt((recipe == ZRecipe::v1 ? 64.0 : 60.0) * std::log(2.0));
    std::cout << "recipe " << to_int(recipe) << ": " << n << " samples generated in "
              << perf::fmt(generate_s, 4) << " s\n";
    perf::print_result(
        "z_statistics", "generate_s", perf::Stats::of({generate_s}),
        {{"recipe", std::to_string(to_int(recipe))}, {"samples", std::to_string(n)}});
    for (const distzo_test::NormalCheck& c : distzo_test::normal_checks(sample, max_abs)) {
      std::cout << "  " << std::left << std::setw(34) << c.name << std::right << std::setw(14)
                << perf::fmt(c.value, 6) << "  < " << std::setw(12) << perf::fmt(c.bound, 6)
                << (c.ok() ? "  ok" : "  FAILED") << "\n";
      perf::print_result("z_statistics", c.name, perf::Stats::of({c.value}),
                         {{"recipe", std::to_string(to_int(recipe))},
                          {"bound", perf::fmt(c.bound, 6)},
                          {"ok", c.ok() ? "yes" : "no"}});
      all_ok = all_ok && c.ok();
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return distzo::perf::run_main("bench_z_statistics", kUsage, argc, argv, run);
}
