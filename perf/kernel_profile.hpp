#pragma once
// A tiny in-process Kokkos Tools client: time per kernel label and per
// profiling region, for one profiled repetition after the timed ones
// (benchmarks' --profile). No tool library needed: the callbacks are set
// through Kokkos::Tools::Experimental (Kokkos >= 3.3).
//
// What it sees: every labelled parallel_for / reduce / scan ("distzo::..."),
// deep copies, and regions. Kokkos Kernels wraps gemm in a region whose name
// says which path ran: "KokkosBlas::gemm[TPL_BLAS,float]" is the optimised
// BLAS, "KokkosBlas::gemm[ETI]"/"[noETI]" the native fallback (whose own
// kernels then also appear, nested, so regions and kernels may overlap there).
// On the Serial backend kernels are synchronous, so begin-to-end is the
// kernel's run time; on an asynchronous backend it is only the launch cost.

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"

namespace distzo::perf {

class KernelProfile {
 public:
  struct Entry {
    std::string label;
    double seconds = 0;
    long calls = 0;
  };

  /// Installs the callbacks and clears the table.
  static void start() {
    state() = State{};
    namespace E = Kokkos::Tools::Experimental;
    E::set_begin_parallel_for_callback(&begin_kernel);
    E::set_end_parallel_for_callback(&end_kernel);
    E::set_begin_parallel_reduce_callback(&begin_kernel);
    E::set_end_parallel_reduce_callback(&end_kernel);
    E::set_begin_parallel_scan_callback(&begin_kernel);
    E::set_end_parallel_scan_callback(&end_kernel);
    E::set_push_region_callback(&push_region);
    E::set_pop_region_callback(&pop_region);
    E::set_begin_deep_copy_callback(&begin_deep_copy);
    E::set_end_deep_copy_callback(&end_deep_copy);
  }

  /// Removes the callbacks; the table stays readable.
  static void stop() {
    namespace E = Kokkos::Tools::Experimental;
    E::set_begin_parallel_for_callback(nullptr);
    E::set_end_parallel_for_callback(nullptr);
    E::set_begin_parallel_reduce_callback(nullptr);
    E::set_end_parallel_reduce_callback(nullptr);
    E::set_begin_parallel_scan_callback(nullptr);
    E::set_end_parallel_scan_callback(nullptr);
    E::set_push_region_callback(nullptr);
    E::set_pop_region_callback(nullptr);
    E::set_begin_deep_copy_callback(nullptr);
    E::set_end_deep_copy_callback(nullptr);
  }

  /// Entries by total time, largest first.
  static std::vector<Entry> entries() {
    std::vector<Entry> out;
    for (const auto& kv : state().table)
      out.push_back({kv.first, kv.second.first, kv.second.second});
    std::sort(out.begin(), out.end(),
              [](const Entry& a, const Entry& b) { return a.seconds > b.seconds; });
    return out;
  }

  /// A table against `wall_seconds` (the profiled repetition's wall time),
  /// and one RESULT line per entry (metric "profile").
  static void report(const std::string& bench, double wall_seconds, const std::string& what) {
    const std::vector<Entry> e = entries();
    double attributed = 0;
    for (const auto& x : e) attributed += x.seconds;
    std::cout << "profile        : " << what << ", " << fmt(wall_seconds * 1e3, 5)
              << " ms wall (kernels and regions by label; Serial = run time)\n";
    for (const auto& x : e) {
      std::cout << "    " << std::left << std::setw(44) << x.label << std::right << std::setw(11)
                << fmt(x.seconds * 1e3, 5) << " ms " << std::setw(6)
                << fmt(100.0 * x.seconds / wall_seconds, 3) << " %  " << x.calls << " calls\n";
      print_result(bench, "profile", Stats{x.seconds * 1e3, x.seconds * 1e3, x.seconds * 1e3, 1},
                   {{"label", x.label},
                    {"calls", std::to_string(x.calls)},
                    {"share", fmt(x.seconds / wall_seconds, 4)},
                    {"what", what}});
    }
    std::cout << "    " << std::left << std::setw(44) << "(not in any kernel or region)"
              << std::right << std::setw(11) << fmt((wall_seconds - attributed) * 1e3, 5)
              << " ms\n";
  }

 private:
  struct State {
    std::map<std::string, std::pair<double, long>> table;  // label -> (seconds, calls)
    std::map<std::uint64_t, std::pair<std::string, Clock::time_point>> open;
    std::vector<std::pair<std::string, Clock::time_point>> regions;
    Clock::time_point copy_start;
    std::uint64_t next_id = 1;
  };

  static State& state() {
    static State s;
    return s;
  }

  static void add(const std::string& label, Clock::time_point start) {
    auto& e = state().table[label];
    e.first += seconds_since(start);
    e.second += 1;
  }

  static void begin_kernel(const char* name, std::uint32_t, std::uint64_t* id) {
    State& s = state();
    *id = s.next_id++;
    s.open[*id] = {name ? name : "(unnamed)", Clock::now()};
  }

  static void end_kernel(std::uint64_t id) {
    State& s = state();
    const auto it = s.open.find(id);
    if (it == s.open.end()) return;
    add(it->second.first, it->second.second);
    s.open.erase(it);
  }

  static void push_region(const char* name) {
    state().regions.emplace_back(std::string("[region] ") + (name ? name : ""), Clock::now());
  }

  static void pop_region() {
    State& s = state();
    if (s.regions.empty()) return;
    add(s.regions.back().first, s.regions.back().second);
    s.regions.pop_back();
  }

  static void begin_deep_copy(Kokkos_Profiling_SpaceHandle, const char*, const void*,
                              Kokkos_Profiling_SpaceHandle, const char*, const void*,
                              std::uint64_t) {
    state().copy_start = Clock::now();
  }

  static void end_deep_copy() { add("Kokkos::deep_copy", state().copy_start); }
};

}  // namespace distzo::perf
