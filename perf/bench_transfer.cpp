// bench_transfer: GB/s of the copies the block streamer makes — pinned host
// memory (runtime's PinnedSpace: CudaHostPinnedSpace under CUDA) to the
// execution space (upload) and back (write-back), each on an instance of its
// own as the streamer runs them, one direction at a time and both at once
// (PCIe is full duplex). Baseline in the same run: a device-to-device
// deep_copy of the same bytes. On a host backend "device" memory is host
// memory: every line is a host memcpy.
//
//   bench_transfer [--mib M] [--reps R] [--warmup W]

#include <Kokkos_Core.hpp>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "core/fence.hpp"
#include "core/stream_event.hpp"

namespace {

using namespace distzo;
using perf::Clock;
using perf::fmt;
using perf::seconds_since;
using perf::Stats;

const char* const kUsage =
    "usage: bench_transfer [--mib M] [--reps R] [--warmup W]\n"
    "  GB/s of pinned host -> device (upload), device -> pinned host (write-back), both at\n"
    "  once, and device -> device, on the streamer's instances; defaults: --mib 1024 --reps 5\n"
    "  --warmup 1 (one OPT-13B float32 block is 1.2 GiB)\n";

int run(int argc, char** argv) {
  const app::Options args =
      perf::parse_args("bench_transfer", argc, argv, {"mib", "reps", "warmup"}, {}, kUsage);
  DISTZO_INPUT_REQUIRE(args.positional().empty(), "no positional arguments expected\n\n" << kUsage);
  const long long mib = args.integer("--mib", 1024);
  const int reps = static_cast<int>(args.integer("--reps", 5));
  const int warmup = static_cast<int>(args.integer("--warmup", 1));
  DISTZO_INPUT_REQUIRE(mib > 0 && reps > 0 && warmup >= 0, "--mib and --reps must be > 0");
  const auto n = static_cast<std::size_t>(mib) * 1024 * 1024 / sizeof(real);
  const double gb = static_cast<double>(n * sizeof(real)) * 1e-9;

  perf::print_machine("transfer");
  const StreamInstances lanes = StreamInstances::make(ExecSpace());
  PinnedVec host_up("distzo::perf::host_up", n), host_down("distzo::perf::host_down", n);
  Vec dev_a("distzo::perf::dev_a", n), dev_b("distzo::perf::dev_b", n);
  Kokkos::deep_copy(host_up, real(1));
  Kokkos::deep_copy(dev_a, real(2));
  Kokkos::fence();
  std::cout << "workload       : " << mib << " MiB per copy (" << fmt(gb, 4) << " GB), " << warmup
            << " warm-up + " << reps << " timed; instances "
            << (lanes.distinct ? "distinct (upload, write-back)" : "all the default one") << "\n";

  auto time = [&](const std::function<void()>& body, const std::function<void()>& wait) {
    std::vector<double> t;
    for (int i = 0; i < warmup + reps; ++i) {
      const auto t0 = Clock::now();
      body();
      wait();
      if (i >= warmup) t.push_back(seconds_since(t0));
    }
    return t;
  };
  const auto up = [&] { Kokkos::deep_copy(lanes.upload, dev_b, host_up); };
  const auto down = [&] { Kokkos::deep_copy(lanes.writeback, host_down, dev_a); };
  const auto wait_up = [&] { fence(lanes.upload, "distzo::perf: upload done"); };
  const auto wait_down = [&] { fence(lanes.writeback, "distzo::perf: write-back done"); };
  const std::vector<double> t_up = time(up, wait_up);
  const std::vector<double> t_down = time(down, wait_down);
  const std::vector<double> t_both = time(
      [&] {
        up();
        down();
      },
      [&] {
        wait_up();
        wait_down();
      });
  const std::vector<double> t_d2d =
      time([&] { Kokkos::deep_copy(lanes.compute, dev_b, dev_a); },
           [&] { fence(lanes.compute, "distzo::perf: device copy done"); });

  const Stats s_up = Stats::of(perf::rates(gb, t_up));
  const Stats s_down = Stats::of(perf::rates(gb, t_down));
  const Stats s_both = Stats::of(perf::rates(2 * gb, t_both));
  const Stats s_d2d = Stats::of(perf::rates(gb, t_d2d));
  auto line = [](const char* what, const Stats& s) {
    std::cout << what << fmt(s.median, 4) << " GB/s (median; min " << fmt(s.min, 4) << ", max "
              << fmt(s.max, 4) << ")\n";
  };
  line("upload  H2D   : ", s_up);
  line("write-back D2H: ", s_down);
  line("both at once  : ", s_both);
  line("device copy   : ", s_d2d);
  const std::vector<std::pair<std::string, std::string>> fields = {{"mib", std::to_string(mib)}};
  perf::print_result("transfer", "h2d_gb_per_s", s_up, fields);
  perf::print_result("transfer", "d2h_gb_per_s", s_down, fields);
  perf::print_result("transfer", "both_gb_per_s", s_both, fields);
  perf::print_result("transfer", "d2d_gb_per_s", s_d2d, fields);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return distzo::perf::run_main("bench_transfer", kUsage, argc, argv, run);
}
