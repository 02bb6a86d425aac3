#pragma once
// Shared by the perf/ benchmarks: wall-clock statistics, a machine banner,
// command-line parsing, the fixed token pattern, and one machine-readable
// result line per measurement.
//
// Every benchmark runs warm-up repetitions first, then `reps` timed ones, and
// reports the MEDIAN and the min/max over the timed repetitions of a rate
// (tokens/s, GB/s, ...). Rates are computed per repetition, so the median rate
// is the rate of the median repetition.
//
// Result lines look like
//   RESULT {"bench":"forward","metric":"tokens_per_s","median":...,"min":...,"max":...,...}
// one JSON object per line after the literal "RESULT "; perf/run_benchmarks.sh
// collects them into perf/RESULTS.md. Everything else on stdout is for people.

#include <sched.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "app/blas_threads.hpp"
#include "app/options.hpp"
#include "core/error.hpp"
#include "core/types.hpp"
#include "kernels/host_gemm.hpp"
#include "model/batch.hpp"

// OpenBLAS reports its own thread count and build (core type, MAX_THREADS).
// Weak, so the benchmarks still link against another BLAS (then: "unknown").
extern "C" int openblas_get_num_threads(void) __attribute__((weak));
extern "C" char* openblas_get_config(void) __attribute__((weak));

namespace distzo::perf {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Median, min and max of a sample (the median of an even count is the mean
/// of the two middle values).
struct Stats {
  double median = 0, min = 0, max = 0;
  int n = 0;

  static Stats of(std::vector<double> v) {
    Stats s;
    s.n = static_cast<int>(v.size());
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.min = v.front();
    s.max = v.back();
    const std::size_t m = v.size() / 2;
    s.median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
    return s;
  }
};

/// Rates value/time_i for every repetition time_i.
inline std::vector<double> rates(double value, const std::vector<double>& seconds) {
  std::vector<double> out;
  for (double t : seconds) out.push_back(t > 0 ? value / t : 0.0);
  return out;
}

inline std::string fmt(double x, int precision = 4) {
  std::ostringstream os;
  os << std::setprecision(precision) << x;
  return os.str();
}

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

/// One RESULT line: the stats of `metric` plus free-form string fields.
inline void print_result(const std::string& bench, const std::string& metric, const Stats& s,
                         const std::vector<std::pair<std::string, std::string>>& fields = {}) {
  std::ostringstream os;
  os << std::setprecision(9) << "RESULT {\"bench\":\"" << json_escape(bench) << "\",\"metric\":\""
     << json_escape(metric) << "\",\"median\":" << s.median << ",\"min\":" << s.min
     << ",\"max\":" << s.max << ",\"reps\":" << s.n;
  for (const auto& kv : fields)
    os << ",\"" << json_escape(kv.first) << "\":\"" << json_escape(kv.second) << "\"";
  os << "}";
  std::cout << os.str() << std::endl;
}

// ---------------------------------------------------------------------------
// machine banner

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "unknown";
}

inline int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  return CPU_COUNT(&set);
}

inline std::string env_or(const char* name, const char* fallback = "(unset)") {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string(fallback);
}

inline std::string blas_threads() {
  return openblas_get_num_threads ? std::to_string(openblas_get_num_threads()) : "unknown";
}

/// The host GEMM: path and threads, e.g. "tiled x2" (set by gemm_threads_for_ranks).
inline std::string gemm_setting() {
  return std::string(kernels::gemm_path() == kernels::GemmPath::tiled ? "tiled" : "library") +
         " x" + std::to_string(kernels::gemm_threads());
}

/// The GEMM's threads as `distzo run` sets them (app::choose_blas_threads:
/// OPENBLAS_NUM_THREADS, DISTZO_GEMM), started; call on every rank before
/// print_machine.
inline std::string gemm_threads_for_ranks(int ranks_on_node) {
  return app::start_blas_threads(app::choose_blas_threads(ranks_on_node));
}

/// --gemm-paths N: N pairs of repetitions, one on each host GEMM path at the
/// same thread count (DISTZO_GEMM=library, the single BLAS call on the BLAS's
/// threads; tiled, the default), the order swapped every pair, after one
/// untimed repetition on each. Pairs seconds apart see the same machine, so
/// the median of the per-pair ratios tiled / library is the comparison least
/// disturbed by other work (perf/bench_gemm.sh). `rep()` runs one repetition
/// and returns its seconds. Prints both paths' median and min and one RESULT
/// line, metric "gemm_paths" (the ratios). Only rank 0 prints (`out`).
template <class Rep>
inline void compare_gemm_paths(const std::string& bench, int pairs, Rep&& rep, std::ostream& out,
                               bool root) {
  const int threads = kernels::gemm_threads();
  const kernels::GemmPath was = kernels::gemm_path();
  const kernels::GemmPath paths[2] = {kernels::GemmPath::library, kernels::GemmPath::tiled};
  for (const kernels::GemmPath p : paths) {
    kernels::set_gemm_threads(threads, p);
    rep();
  }
  std::vector<double> seconds[2], ratios;
  for (int i = 0; i < pairs; ++i) {
    double pair[2] = {0, 0};
    for (int j = 0; j < 2; ++j) {
      const int p = i % 2 == 0 ? j : 1 - j;
      kernels::set_gemm_threads(threads, paths[p]);
      pair[p] = rep();
    }
    seconds[0].push_back(pair[0]);
    seconds[1].push_back(pair[1]);
    ratios.push_back(pair[1] / pair[0]);
  }
  kernels::set_gemm_threads(threads, was);
  const Stats lib = Stats::of(seconds[0]), tiled = Stats::of(seconds[1]);
  const Stats ratio = Stats::of(ratios);
  out << "gemm paths     : " << pairs << " pairs at " << threads << " thread(s): library "
      << fmt(lib.median, 5) << " s (min " << fmt(lib.min, 5) << "), tiled " << fmt(tiled.median, 5)
      << " s (min " << fmt(tiled.min, 5) << "); tiled / library per pair: median "
      << fmt(ratio.median, 4) << " (" << fmt(ratio.min, 4) << "-" << fmt(ratio.max, 4) << ")\n";
  std::string all;
  for (const double r : ratios) all += (all.empty() ? "" : " ") + fmt(r, 4);
  if (root)
    print_result(bench, "gemm_paths", ratio,
                 {{"threads", std::to_string(threads)},
                  {"library_median_s", fmt(lib.median, 6)},
                  {"library_min_s", fmt(lib.min, 6)},
                  {"tiled_median_s", fmt(tiled.median, 6)},
                  {"tiled_min_s", fmt(tiled.min, 6)},
                  {"ratios", all}});
}

inline std::string blas_config() {
  if (!openblas_get_config) return "none linked into this binary (or not OpenBLAS)";
  std::string s = openblas_get_config();
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

/// Machine, threads and backend, printed before any measurement.
inline void print_machine(const std::string& bench) {
  std::cout << "== distzo " << bench << " ==\n"
            << "cpu            : " << cpu_model() << "\n"
            << "logical cpus   : " << std::thread::hardware_concurrency() << " online, "
            << affinity_cpus() << " in this process's affinity mask\n"
            << "kokkos         : " << ExecSpace::name() << " backend, concurrency "
            << ExecSpace::concurrency() << " (Kokkos " << KOKKOS_VERSION << ")\n"
            << "blas           : " << blas_config() << "; threads " << blas_threads() << "\n"
            << "gemm           : " << gemm_setting() << ": " << kernels::gemm_numerics() << "\n"
            << "env            : OPENBLAS_NUM_THREADS=" << env_or("OPENBLAS_NUM_THREADS")
            << " OMP_NUM_THREADS=" << env_or("OMP_NUM_THREADS") << "\n";
  std::cout << "RESULT {\"bench\":\"" << json_escape(bench)
            << "\",\"metric\":\"machine\",\"cpu\":\"" << json_escape(cpu_model())
            << "\",\"cpus\":\"" << std::thread::hardware_concurrency() << "\",\"affinity\":\""
            << affinity_cpus() << "\",\"kokkos\":\"" << ExecSpace::name() << " x"
            << ExecSpace::concurrency() << "\",\"blas\":\"" << json_escape(blas_config())
            << "\",\"blas_threads\":\"" << blas_threads() << "\",\"gemm\":\"" << gemm_setting()
            << "\"}" << std::endl;
}

// ---------------------------------------------------------------------------
// command line

/// `prog [positional...] [--key value | --flag]...`, parsed by the CLI's own
/// parser (app::Options): `valued` and `flags` are named without their "--";
/// every option must be declared (an undeclared one is an error that repeats
/// the usage). run_main answers --help and -h before this.
inline app::Options parse_args(const char* name, int argc, char** argv,
                               const std::vector<std::string>& valued,
                               const std::vector<std::string>& flags, const char* usage) {
  std::vector<std::string> with_dashes, flags_with_dashes;
  for (const std::string& key : valued) with_dashes.push_back("--" + key);
  for (const std::string& key : flags) flags_with_dashes.push_back("--" + key);
  return app::Options(name, std::vector<std::string>(argv + 1, argv + argc), with_dashes,
                      flags_with_dashes, usage);
}

// ---------------------------------------------------------------------------
// inputs

/// The fixed "random" token pattern shared with tools/torch_forward_bench.py
/// and tools/mezo_reference.py (fixed_tokens there), so every benchmark runs
/// on the same ids: a 64-bit LCG (Knuth's MMIX constants), token = (x >> 33) % V,
/// row-major over (B, T).
inline std::vector<int> fixed_tokens(int batch, int seq_len, std::int64_t vocab,
                                     std::uint64_t seed) {
  std::vector<int> out(static_cast<std::size_t>(batch) * seq_len);
  std::uint64_t x = seed;
  for (auto& t : out) {
    x = 6364136223846793005ULL * x + 1442695040888963407ULL;
    t = static_cast<int>((x >> 33) % static_cast<std::uint64_t>(vocab));
  }
  return out;
}

/// A causal-LM batch of fixed_tokens without padding: every position is a real
/// token and every position with a successor is a target (B*(T-1) targets,
/// exactly what Hugging Face computes with labels = input_ids).
inline model::Batch causal_lm_batch(int batch, int seq_len, std::int64_t vocab,
                                    std::uint64_t seed) {
  const std::vector<int> ids = fixed_tokens(batch, seq_len, vocab, seed);
  model::Batch b;
  b.task = model::Task::causal_lm;
  b.tokens = IntMat("distzo::perf::tokens", batch, seq_len);
  b.mask = IntMat("distzo::perf::mask", batch, seq_len);
  b.targets = IntVec("distzo::perf::targets", static_cast<std::size_t>(batch) * seq_len);
  auto tok = Kokkos::create_mirror_view(b.tokens);
  auto mask = Kokkos::create_mirror_view(b.mask);
  auto tgt = Kokkos::create_mirror_view(b.targets);
  for (int r = 0; r < batch; ++r)
    for (int t = 0; t < seq_len; ++t) {
      const std::size_t i = static_cast<std::size_t>(r) * seq_len + t;
      tok(r, t) = ids[i];
      mask(r, t) = 1;
      tgt(i) = t + 1 < seq_len ? ids[i + 1] : -100;
    }
  Kokkos::deep_copy(b.tokens, tok);
  Kokkos::deep_copy(b.mask, mask);
  Kokkos::deep_copy(b.targets, tgt);
  b.micro_batch = batch;
  b.seq_len = seq_len;
  b.num_examples = batch;
  b.num_tokens = static_cast<std::int64_t>(batch) * seq_len;
  b.num_targets = static_cast<std::int64_t>(batch) * (seq_len - 1);
  return b;
}

// ---------------------------------------------------------------------------
// main

/// A benchmark's main(): Kokkos for the program's lifetime, and any error
/// printed as "NAME: error: ..." with exit status 2.
/// A stream that discards what is written to it (ranks other than 0).
inline std::ostream& null_stream() {
  struct NullBuffer : std::streambuf {
    int overflow(int c) override { return c; }
  };
  static NullBuffer buffer;
  static std::ostream stream(&buffer);
  return stream;
}

inline int run_main(const char* name, const char* usage, int argc, char** argv,
                    int (*body)(int, char**)) {
  // --help before Kokkos starts, which would print its own options first.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << usage;
      return 0;
    }
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    // app::Options' messages name the program already.
    const std::string what = e.what(), own = std::string(name) + ": ";
    std::cerr << name << ": error: " << (what.rfind(own, 0) == 0 ? what.substr(own.size()) : what)
              << "\n";
    return 2;
  }
}

}  // namespace distzo::perf
