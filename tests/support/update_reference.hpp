#pragma once
// θ after a run of prescribed seed-log rows, twice: by distzo's engine (each
// step's pending update built by zo::pending_update and applied fused into the
// next step, or flushed at once) and by a naive reference in double that keeps
// every direction as a d-sized vector built from materialised z. The momentum
// and block-sparse tests compare the two (test_momentum, test_block_sparse).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "tiny_model.hpp"
#include "zo/engine.hpp"
#include "zo/momentum.hpp"

namespace distzo::test_support {

/// ĝ of step s (q scalars), or empty for a skipped step.
using RowOf = std::function<std::vector<double>(std::int64_t step, int q)>;

/// A run's update rule: its z (seed, blocks a step), momentum, q, lr, decay.
struct UpdateRun {
  ZSpec z;
  zo::MomentumSpec momentum;
  int queries = 1;
  int steps = 1;
  double lr = 0, weight_decay = 0;
  RowOf row_of;
};

/// θ of a TinyModel of `config` after `run`'s steps by distzo's engine on a
/// causal-LM batch of `lengths`, updates fused into the next step (`fused`)
/// or flushed right away; then a final flush.
inline std::vector<std::vector<float>> engine_theta(const model::ModelConfig& config,
                                                    const UpdateRun& run, bool fused) {
  const std::vector<int> lengths = {7, 5, 3};
  const int b = 3, t = 7;
  TinyModel m(config);
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(run.queries, 1, 0),
                model::BatchShape{model::Task::causal_lm, b, t, 0});
  const model::Batch batch = make_batch(model::Task::causal_lm, b, t, lengths);
  zo::GradientHistory history(run.momentum.history);
  PendingUpdate pending;
  for (int s = 0; s < run.steps; ++s) {
    if (fused) ex.run_step(batch, StepPerturbation{run.z, s, 1e-3}, pending);
    const std::vector<double> g = run.row_of(s, run.queries);
    history.push(s, g);
    if (!g.empty())
      pending = zo::pending_update(run.momentum, history, s, run.lr, run.weight_decay, run.queries);
    if (!fused) ex.flush(run.z, pending);
  }
  ex.flush(run.z, pending);
  return m.host_theta();
}

/// The same in double from `start`: per step the direction d_s = Σ_i ĝ_{s,i}
/// z_{s,i} / q, with z_{s,i} = 0 on the blocks step s did not perturb (and
/// d = 0 for a skipped step); the momentum M_t = Σ_j c_j d_{t−j} over the
/// last min(h, t + 1) rows; θ ← θ − lr (M_t + wd θ) after every step that was
/// not skipped, on each parameter that some non-skipped row's step perturbed
/// (a parameter no term reaches is left alone, weight decay included).
/// `untouched`: counts the (step, parameter) updates left out that way.
inline std::vector<std::vector<double>> naive_theta(const model::ParameterRegistry& registry,
                                                    const std::vector<std::vector<float>>& start,
                                                    const UpdateRun& run,
                                                    int* untouched = nullptr) {
  std::vector<std::vector<double>> theta(start.size());
  for (std::size_t id = 0; id < start.size(); ++id)
    theta[id].assign(start[id].begin(), start[id].end());
  std::vector<std::vector<std::vector<double>>> directions;  // [step][param][element]
  std::vector<bool> skipped;
  const zo::MomentumSpec& spec = run.momentum;
  for (int t = 0; t < run.steps; ++t) {
    const std::vector<double> g = run.row_of(t, run.queries);
    std::vector<std::vector<double>> d(start.size());
    for (const auto& info : registry.parameters()) {
      d[info.id].assign(start[info.id].size(), 0.0);
      if (!run.z.perturbs(t, info.block)) continue;
      for (int i = 0; i < static_cast<int>(g.size()); ++i) {
        const PerturbationStream z = run.z.stream(t, i);
        for (std::size_t e = 0; e < d[info.id].size(); ++e)
          d[info.id][e] += g[static_cast<std::size_t>(i)] * double(z.z(info.id, e)) / run.queries;
      }
    }
    directions.push_back(std::move(d));
    skipped.push_back(g.empty());
    if (g.empty()) continue;  // a skipped step applies no update
    const int rows = std::min(spec.history, t + 1);
    double norm = 0;
    for (int j = 0; j < rows; ++j) norm += (1 - spec.beta) * std::pow(spec.beta, j);
    for (const auto& info : registry.parameters()) {
      bool reached = false;
      for (int j = 0; j < rows; ++j)
        reached = reached ||
                  (!skipped[static_cast<std::size_t>(t - j)] && run.z.perturbs(t - j, info.block));
      if (!reached) {
        if (untouched) ++*untouched;
        continue;
      }
      const double decay = info.weight_decay ? run.weight_decay : 0.0;
      for (std::size_t e = 0; e < theta[info.id].size(); ++e) {
        double buffer = 0;
        for (int j = 0; j < rows; ++j)
          buffer += (1 - spec.beta) * std::pow(spec.beta, j) / norm *
                    directions[static_cast<std::size_t>(t - j)][info.id][e];
        theta[info.id][e] -= run.lr * (buffer + decay * theta[info.id][e]);
      }
    }
  }
  return theta;
}

/// The largest |a − b| over every element.
template <class A, class B>
double max_difference(const std::vector<std::vector<A>>& a, const std::vector<std::vector<B>>& b) {
  double worst = 0;
  for (std::size_t id = 0; id < a.size(); ++id)
    for (std::size_t e = 0; e < a[id].size(); ++e)
      worst = std::max(worst, std::fabs(double(a[id][e]) - double(b[id][e])));
  return worst;
}

}  // namespace distzo::test_support
