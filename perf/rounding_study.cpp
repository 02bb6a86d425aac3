// rounding_study: what storing θ in 2 bytes does to MeZO's updates, measured
// with the real update kernel (kernels::apply_update, 2-byte overload) on a
// real θ and the projected gradients of a real run.
//
//   rounding_study --model MODEL.h5 --metrics RUN/metrics.csv [--steps N] [--seed S]
//
// θ starts from MODEL.h5; step t applies the update of the run's step t
// (its g and lr from metrics.csv, z of seed S as the run drew it, one query,
// no weight decay) to a float32 master and to bf16 and fp16 masters (round to
// nearest and stochastic rounding), at the run's lr and at 1/10 and 1/100 of
// it. Per configuration it reports:
//
//   unchanged   the fraction of element updates lost, averaged over the
//               steps: elements whose stored value is the same after the step
//               as before it (float32 loses some too, where |update| < half
//               an ulp of θ);
//   kept        how much of the float32 master's total change the 2-byte
//               master made, projected on it: <Δh, Δ32> / <Δ32, Δ32> with
//               Δ = θ_N − θ_0 (1 = all of it, 0 = none);
//   error       ||Δh − Δ32|| / ||Δ32||: how far from the float32 trajectory.
//
// Not a benchmark (no timings): a measurement that perf/RESULTS.md quotes.

#include <Kokkos_Core.hpp>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "core/storage_dtype.hpp"
#include "io/model_file.hpp"
#include "kernels/perturb_update.hpp"
#include "zo/update_terms.hpp"

namespace {

using namespace distzo;
using perf::fmt;

const char* const kUsage =
    "usage: rounding_study --model MODEL.h5 --metrics RUN/metrics.csv [--steps N] [--seed S]\n"
    "  replays a run's updates (g and lr per step from metrics.csv, z of seed S) on θ of\n"
    "  MODEL.h5 in float32, bf16 and fp16 (round to nearest and stochastic rounding) at the\n"
    "  run's lr, lr/10 and lr/100; reports the fraction of element updates lost and how much\n"
    "  of the float32 master's change each 2-byte master kept. Defaults: every step, seed 1\n";

struct StepUpdate {
  std::int64_t step;
  double g, lr;
};

/// (step, g, lr) of every row of a run's metrics.csv.
std::vector<StepUpdate> read_updates(const std::string& path) {
  std::ifstream in(path);
  DISTZO_INPUT_REQUIRE(in.good(), "cannot read the metrics file '" << path << "'");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  {
    std::istringstream is(line);
    std::string name;
    while (std::getline(is, name, ',')) header.push_back(name);
  }
  auto column = [&](const char* name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    DISTZO_INPUT_REQUIRE(false, path << ": no column '" << name << "' in the header '" << line
                                     << "' (a distzo run's metrics.csv expected)");
    return std::size_t(0);
  };
  const std::size_t step_col = column("step"), g_col = column("g"), lr_col = column("lr");
  std::vector<StepUpdate> updates;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::istringstream is(line);
    std::string cell;
    while (std::getline(is, cell, ',')) cells.push_back(cell);
    DISTZO_INPUT_REQUIRE(cells.size() == header.size(),
                         path << ": a row of " << cells.size() << " cells under a header of "
                              << header.size() << ": '" << line << "'");
    updates.push_back(
        {std::stoll(cells[step_col]), std::stod(cells[g_col]), std::stod(cells[lr_col])});
  }
  DISTZO_INPUT_REQUIRE(!updates.empty(), path << ": no steps");
  return updates;
}

/// One master copy of θ, tensor by tensor: float32, or 2-byte words.
struct Master {
  StorageDtype dtype = StorageDtype::fp32;
  Rounding rounding = Rounding::nearest;
  std::vector<StoredVec> theta;  // by id
  double unchanged = 0;          // element updates lost, summed over steps (fraction per step)
};

/// The float value of element i of tensor k (host copies).
std::vector<std::vector<double>> values(const Master& m) {
  std::vector<std::vector<double>> out;
  for (const StoredVec& t : m.theta) {
    std::vector<unsigned char> stored(t.bytes());
    deep_copy_stored(StoredView<Kokkos::HostSpace>(t.dtype(), stored.data(), t.extent()), t);
    std::vector<float> decoded(t.extent());
    StoredElements(t.dtype(), stored.data()).decode_into(t.extent(), decoded.data());
    out.emplace_back(decoded.begin(), decoded.end());
  }
  return out;
}

/// Elements whose stored bits equal `before`'s (two runs of one dtype).
std::uint64_t same_elements(const ExecSpace& space, const StoredVec& a, const StoredVec& b) {
  std::uint64_t n = 0;
  const std::size_t bytes = bytes_per_element(a.dtype());
  const StoredVec::Bytes x = a.raw(), y = b.raw();
  Kokkos::parallel_reduce(
      "distzo::perf::same_elements",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(
          space, 0, static_cast<std::int64_t>(a.extent())),
      KOKKOS_LAMBDA(const std::int64_t i, std::uint64_t& sum) {
        bool same = true;
        for (std::size_t k = 0; k < bytes; ++k) same = same && x(i * bytes + k) == y(i * bytes + k);
        if (same) ++sum;
      },
      n);
  return n;
}

/// θ of the model file in every master the study compares: float32, and
/// bf16 and fp16 each with nearest and stochastic rounding of its updates
/// (the file's values rounded to nearest once).
std::vector<Master> load_masters(const io::ModelReader& reader) {
  std::vector<Master> masters;
  masters.push_back(Master{});
  for (StorageDtype d : {StorageDtype::bf16, StorageDtype::fp16})
    for (Rounding r : {Rounding::nearest, Rounding::stochastic})
      masters.push_back(Master{d, r, {}, 0});
  for (Master& m : masters) {
    for (const auto& p : reader.info().registry.parameters()) {
      const auto n = static_cast<std::size_t>(p.numel());
      Kokkos::View<real*, Kokkos::HostSpace> host("theta_host", n);
      reader.read(p.id, host.data());
      std::vector<unsigned char> stored(n * bytes_per_element(m.dtype));
      storage::encode_nearest(host.data(), n, m.dtype, stored.data());
      m.theta.emplace_back("theta." + p.name, m.dtype, n);
      deep_copy_stored(m.theta.back(), StoredView<Kokkos::HostSpace>(m.dtype, stored.data(), n));
    }
  }
  return masters;
}

int run(int argc, char** argv) {
  const app::Options args = perf::parse_args("rounding_study", argc, argv,
                                             {"model", "metrics", "steps", "seed"}, {}, kUsage);
  DISTZO_INPUT_REQUIRE(args.positional().empty(), "no positional arguments expected\n\n" << kUsage);
  const std::string model_path = args.text("--model", "");
  const std::string metrics_path = args.text("--metrics", "");
  DISTZO_INPUT_REQUIRE(!model_path.empty() && !metrics_path.empty(),
                       "--model and --metrics are required\n\n"
                           << kUsage);
  std::vector<StepUpdate> updates = read_updates(metrics_path);
  const long long steps = args.integer("--steps", static_cast<long long>(updates.size()));
  DISTZO_INPUT_REQUIRE(steps > 0 && steps <= static_cast<long long>(updates.size()),
                       "--steps must be in [1, " << updates.size() << "], got " << steps);
  updates.resize(static_cast<std::size_t>(steps));
  const auto seed = static_cast<std::uint64_t>(args.integer("--seed", 1));

  perf::print_machine("rounding");
  const io::ModelReader reader(model_path);
  const model::ParameterRegistry& registry = reader.info().registry;
  std::uint64_t elements = 0;
  for (const auto& p : registry.parameters()) elements += static_cast<std::uint64_t>(p.numel());
  std::cout << "workload       : " << model_path << " (" << elements << " parameters), "
            << updates.size() << " updates of " << metrics_path << " (g and lr per step), seed "
            << seed << ", 1 query, gaussian z (recipe 2), no weight decay\n";

  ExecSpace space;
  const double scales[] = {1.0, 0.1, 0.01};
  std::cout << "\n"
            << std::left << std::setw(8) << "lr x" << std::setw(8) << "dtype" << std::setw(12)
            << "rounding" << std::right << std::setw(12) << "unchanged" << std::setw(10) << "kept"
            << std::setw(10) << "error\n";
  for (double scale : scales) {
    std::vector<Master> masters = load_masters(reader);
    std::vector<std::vector<std::vector<double>>> start;
    for (const Master& m : masters) start.push_back(values(m));
    for (const StepUpdate& u : updates) {
      StepPerturbation perturbation;
      perturbation.z = ZSpec{seed, Distribution::gaussian, ZRecipe::v2};
      perturbation.step = u.step;
      const PendingUpdate pending = PendingUpdate::after(perturbation, {u.g}, u.lr * scale, 0.0);
      for (Master& m : masters) {
        std::uint64_t same = 0;
        for (const auto& p : registry.parameters()) {
          const kernels::UpdateTerms terms =
              zo::update_terms(perturbation.z, pending, p, m.rounding);
          const StoredVec before("before", m.dtype, m.theta[p.id].extent());
          deep_copy_stored(space, before, m.theta[p.id]);
          kernels::apply_update(space, m.theta[p.id], p.id, 0, terms);
          same += same_elements(space, before, m.theta[p.id]);
        }
        m.unchanged += static_cast<double>(same) / static_cast<double>(elements);
      }
    }
    // Δ of each master against its own start, compared with float32's.
    std::vector<std::vector<std::vector<double>>> delta;
    for (std::size_t i = 0; i < masters.size(); ++i) {
      std::vector<std::vector<double>> now = values(masters[i]);
      for (std::size_t k = 0; k < now.size(); ++k)
        for (std::size_t e = 0; e < now[k].size(); ++e) now[k][e] -= start[i][k][e];
      delta.push_back(std::move(now));
    }
    double ref2 = 0;
    for (const auto& t : delta[0])
      for (double d : t) ref2 += d * d;
    for (std::size_t i = 0; i < masters.size(); ++i) {
      double dot = 0, err2 = 0;
      for (std::size_t k = 0; k < delta[i].size(); ++k)
        for (std::size_t e = 0; e < delta[i][k].size(); ++e) {
          dot += delta[i][k][e] * delta[0][k][e];
          const double diff = delta[i][k][e] - delta[0][k][e];
          err2 += diff * diff;
        }
      const Master& m = masters[i];
      const double unchanged = m.unchanged / static_cast<double>(updates.size());
      const double kept = ref2 > 0 ? dot / ref2 : 0, error = ref2 > 0 ? std::sqrt(err2 / ref2) : 0;
      std::cout << std::left << std::setw(8) << fmt(scale, 3) << std::setw(8) << to_string(m.dtype)
                << std::setw(12) << (m.dtype == StorageDtype::fp32 ? "-" : to_string(m.rounding))
                << std::right << std::setw(12) << fmt(unchanged, 4) << std::setw(10) << fmt(kept, 4)
                << std::setw(10) << fmt(error, 4) << "\n";
      perf::Stats s;
      s.median = s.min = s.max = unchanged;
      s.n = 1;
      perf::print_result("rounding",
                         std::string(to_string(m.dtype)) + "_" +
                             (m.dtype == StorageDtype::fp32 ? "exact" : to_string(m.rounding)) +
                             "_lr_x" + fmt(scale, 3),
                         s,
                         {{"unit", "fraction of element updates lost"},
                          {"kept", fmt(kept, 5)},
                          {"error", fmt(error, 5)},
                          {"steps", std::to_string(updates.size())},
                          {"lr_scale", fmt(scale, 3)}});
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return distzo::perf::run_main("rounding_study", kUsage, argc, argv, run);
}
