// Momentum rebuilt from the seed log (zo/momentum.hpp): the coefficients,
// β = 0 as plain SGD term for term, and the engine's fused and flushed
// updates against a naive d-sized momentum in double built from
// materialised z vectors.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "support/tiny_model.hpp"
#include "zo/engine.hpp"
#include "zo/momentum.hpp"
#include "zo/update_terms.hpp"

namespace {

using namespace distzo;
using distzo::test_support::make_batch;
using distzo::test_support::tiny_config;
using distzo::test_support::TinyModel;

constexpr int B = 3, T = 7;
const std::vector<int> kLengths = {7, 5, 3};
const ZSpec kZ{2024, Distribution::gaussian, kDefaultZRecipe};

TEST(Momentum, CoefficientsAreATruncatedEmaSummingToOne) {
  const zo::MomentumSpec spec{0.9, 4};
  for (int m = 1; m <= 4; ++m) {
    const std::vector<double> c = spec.coefficients(m);
    ASSERT_EQ(c.size(), static_cast<std::size_t>(m));
    double sum = 0;
    for (int j = 0; j < m; ++j) {
      sum += c[static_cast<std::size_t>(j)];
      // c_j = (1 − β) β^j / (1 − β^m)
      EXPECT_NEAR(c[static_cast<std::size_t>(j)], 0.1 * std::pow(0.9, j) / (1 - std::pow(0.9, m)),
                  1e-15);
      if (j > 0) {
        EXPECT_LT(c[static_cast<std::size_t>(j)], c[static_cast<std::size_t>(j) - 1]);
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-15) << m << " rows";
  }
  // One row is the step's own, whatever β: c_0 = 1 exactly (plain SGD's bits).
  for (double beta : {0.0, 0.3, 0.9, 0.999}) {
    const zo::MomentumSpec any{beta, 3};
    EXPECT_EQ(any.coefficients(1)[0], 1.0) << beta;
  }
  EXPECT_THROW(spec.coefficients(5), Error);
}

TEST(Momentum, BetaZeroIsPlainSgdTermForTerm) {
  zo::GradientHistory history(1);
  const std::vector<double> g = {0.25, -1.5, 3.0};
  for (std::int64_t s = 0; s < 4; ++s) history.push(s, {g[0] * s, g[1], g[2] + s});
  const PendingUpdate u = zo::pending_update(zo::MomentumSpec{}, history, 3, 1e-3, 0.01, 3);
  const PendingUpdate want = PendingUpdate::after({kZ, 3, 1e-3}, {0.75, -1.5, 6.0}, 1e-3, 0.01);
  EXPECT_TRUE(u.active);
  EXPECT_EQ(u.step, want.step);
  EXPECT_EQ(u.lr, want.lr);
  EXPECT_EQ(u.weight_decay, want.weight_decay);
  EXPECT_EQ(u.queries, want.queries);
  EXPECT_EQ(u.terms, want.terms);
  EXPECT_EQ(u.own_row(), (std::vector<double>{0.75, -1.5, 6.0}));
}

TEST(Momentum, TermsSpanTheLastRowsNewestFirstAndASkippedRowAddsNone) {
  const zo::MomentumSpec spec{0.5, 3};
  zo::GradientHistory history(3);
  history.push(0, {1.0, 2.0});
  history.push(1, {});  // skipped: zeros, but it counts as a row
  history.push(2, {4.0, 8.0});
  const PendingUpdate u = zo::pending_update(spec, history, 2, 0.1, 0, 2);
  const std::vector<double> c = spec.coefficients(3);  // m = 3: the skipped row counts
  ASSERT_EQ(u.terms.size(), 4u);
  EXPECT_EQ(u.terms[0], (UpdateTerm{2, 0, c[0] * 4.0}));
  EXPECT_EQ(u.terms[1], (UpdateTerm{2, 1, c[0] * 8.0}));
  EXPECT_EQ(u.terms[2], (UpdateTerm{0, 0, c[2] * 1.0}));
  EXPECT_EQ(u.terms[3], (UpdateTerm{0, 1, c[2] * 2.0}));
  EXPECT_TRUE(u.own_row().empty()) << "a momentum update is not one row";
  // m = min(h, t + 1): step 1 of a run uses two rows.
  zo::GradientHistory early(3);
  early.push(0, {1.0});
  early.push(1, {2.0});
  EXPECT_EQ(zo::pending_update(spec, early, 1, 0.1, 0, 1).terms.size(), 2u);
  // A history that lacks a row the update needs is a bug, said as such.
  zo::GradientHistory short_history(1);
  short_history.push(5, {1.0});
  EXPECT_THROW(zo::pending_update(spec, short_history, 5, 0.1, 0, 1), Error);
  // More z terms than the fused kernel takes.
  zo::GradientHistory long_history(17);
  for (std::int64_t s = 0; s < 17; ++s) long_history.push(s, {1.0, 1.0});
  const PendingUpdate wide = zo::pending_update({0.9, 17}, long_history, 16, 0.1, 0, 2);
  EXPECT_EQ(wide.terms.size(), 34u);
  TinyModel m(tiny_config());
  EXPECT_THROW(zo::update_terms(kZ, wide, m.registry[0], Rounding::nearest), Error);
}

/// The prescribed row ĝ of step s (q scalars), or empty for a skipped step:
/// fixed numbers, so the naive reference knows them.
std::vector<double> row_of(std::int64_t s, int q) {
  if (s == 3) return {};
  std::vector<double> g;
  for (int i = 0; i < q; ++i) g.push_back(0.7 * std::cos(1.3 * s + 0.9 * i) + 0.1 * (i - 1));
  return g;
}

/// θ after `steps` updates by distzo: each step's pending update built by
/// zo::pending_update and applied fused into the next step's perturbation
/// (`fused`) or by a flush right away, then a final flush.
std::vector<std::vector<float>> distzo_theta(const zo::MomentumSpec& spec, int q, int steps,
                                             double lr, double wd, bool fused) {
  TinyModel m(tiny_config());
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(q, 1, 0),
                model::BatchShape{model::Task::causal_lm, B, T, 0});
  const model::Batch batch = make_batch(model::Task::causal_lm, B, T, kLengths);
  zo::GradientHistory history(spec.history);
  PendingUpdate pending;
  for (int s = 0; s < steps; ++s) {
    const StepPerturbation p{kZ, s, 1e-3};
    if (fused) ex.run_step(batch, p, pending);
    const std::vector<double> g = row_of(s, q);
    history.push(s, g);
    if (!g.empty()) pending = zo::pending_update(spec, history, s, lr, wd, q);
    if (!fused) ex.flush(kZ, pending);
  }
  ex.flush(kZ, pending);
  return m.host_theta();
}

TEST(Momentum, EngineUpdateMatchesANaiveMomentumBufferInDouble) {
  const zo::MomentumSpec spec{0.8, 3};
  const int q = 2, steps = 7;
  const double lr = 0.05, wd = 0.1;
  TinyModel m(tiny_config());
  const std::vector<std::vector<float>> start = m.host_theta();

  // The reference: per step, the direction d_s = Σ_i ĝ_{s,i} z_{s,i} / q as a
  // d-sized vector in double from materialised z; the momentum buffer
  // M_t = Σ_j c_j d_{t−j} (d of a skipped step = 0); θ ← θ − lr (M_t + wd θ).
  std::vector<std::vector<double>> theta(start.size());
  for (std::size_t id = 0; id < start.size(); ++id)
    theta[id].assign(start[id].begin(), start[id].end());
  std::vector<std::vector<std::vector<double>>> directions;  // [step][param][element]
  for (int t = 0; t < steps; ++t) {
    const std::vector<double> g = row_of(t, q);
    std::vector<std::vector<double>> d(start.size());
    for (const auto& info : m.registry.parameters()) {
      d[info.id].assign(start[info.id].size(), 0.0);
      for (int i = 0; i < static_cast<int>(g.size()); ++i) {
        const PerturbationStream z = kZ.stream(t, i);
        for (std::size_t e = 0; e < d[info.id].size(); ++e)
          d[info.id][e] += g[static_cast<std::size_t>(i)] * double(z.z(info.id, e)) / q;
      }
    }
    directions.push_back(std::move(d));
    if (g.empty()) continue;  // a skipped step applies no update
    const int rows = std::min(spec.history, t + 1);
    double norm = 0;
    for (int j = 0; j < rows; ++j) norm += (1 - spec.beta) * std::pow(spec.beta, j);
    for (const auto& info : m.registry.parameters()) {
      const double decay = info.weight_decay ? wd : 0.0;
      for (std::size_t e = 0; e < theta[info.id].size(); ++e) {
        double buffer = 0;
        for (int j = 0; j < rows; ++j)
          buffer += (1 - spec.beta) * std::pow(spec.beta, j) / norm *
                    directions[static_cast<std::size_t>(t - j)][info.id][e];
        theta[info.id][e] -= lr * (buffer + decay * theta[info.id][e]);
      }
    }
  }

  // distzo works in float32: each update rounds θ (|θ| <= ~1, ulp 6e-8) and
  // the h·q products of a_k·z (|a_k z| <= ~0.2), so 6 updates stay within
  // 2e-6 of the double reference; a coefficient off by one row's weight
  // moves θ by lr · Δc · ĝ · z ~ 1e-3.
  const std::vector<std::vector<float>> fused = distzo_theta(spec, q, steps, lr, wd, true);
  const std::vector<std::vector<float>> flushed = distzo_theta(spec, q, steps, lr, wd, false);
  double max_err = 0, max_move = 0;
  for (const auto& info : m.registry.parameters())
    for (std::size_t e = 0; e < theta[info.id].size(); ++e) {
      max_err = std::max(max_err, std::fabs(fused[info.id][e] - theta[info.id][e]));
      max_move = std::max(max_move, std::fabs(theta[info.id][e] - start[info.id][e]));
      ASSERT_EQ(fused[info.id][e], flushed[info.id][e])
          << "fused and flushed updates differ at parameter " << info.id << ", element " << e;
    }
  EXPECT_LT(max_err, 2e-6) << "largest |θ_distzo − θ_naive| over " << steps << " steps";
  EXPECT_GT(max_move, 1e-2) << "a degenerate test: the updates barely move θ";

  // Plain SGD from the same rows differs by far more than the tolerance.
  const std::vector<std::vector<float>> sgd =
      distzo_theta(zo::MomentumSpec{}, q, steps, lr, wd, true);
  double sgd_gap = 0;
  for (const auto& info : m.registry.parameters())
    for (std::size_t e = 0; e < theta[info.id].size(); ++e)
      sgd_gap = std::max(sgd_gap, std::fabs(sgd[info.id][e] - theta[info.id][e]));
  EXPECT_GT(sgd_gap, 100 * 2e-6) << "momentum and plain SGD are indistinguishable here";
}

}  // namespace
