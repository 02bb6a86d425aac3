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
#include "support/update_reference.hpp"
#include "zo/engine.hpp"
#include "zo/momentum.hpp"
#include "zo/update_terms.hpp"

namespace {

using namespace distzo;
using distzo::test_support::tiny_config;
using distzo::test_support::TinyModel;

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

TEST(Momentum, EngineUpdateMatchesANaiveMomentumBufferInDouble) {
  // The reference (support/update_reference.hpp): per step the direction
  // d_s = Σ_i ĝ_{s,i} z_{s,i} / q as a d-sized vector in double from
  // materialised z; M_t = Σ_j c_j d_{t−j} (d of a skipped step = 0);
  // θ ← θ − lr (M_t + wd θ).
  const test_support::UpdateRun run{kZ, zo::MomentumSpec{0.8, 3}, 2, 7, 0.05, 0.1, row_of};
  TinyModel m(tiny_config());
  const std::vector<std::vector<float>> start = m.host_theta();
  const std::vector<std::vector<double>> theta = test_support::naive_theta(m.registry, start, run);

  // distzo works in float32: each update rounds θ (|θ| <= ~1, ulp 6e-8) and
  // the h·q products of a_k·z (|a_k z| <= ~0.2), so 6 updates stay within
  // 2e-6 of the double reference; a coefficient off by one row's weight
  // moves θ by lr · Δc · ĝ · z ~ 1e-3.
  const std::vector<std::vector<float>> fused = test_support::engine_theta(m.config, run, true);
  const std::vector<std::vector<float>> flushed = test_support::engine_theta(m.config, run, false);
  ASSERT_EQ(test_support::max_difference(fused, flushed), 0.0)
      << "fused and flushed updates differ";
  EXPECT_LT(test_support::max_difference(fused, theta), 2e-6)
      << "largest |θ_distzo − θ_naive| over " << run.steps << " steps";
  EXPECT_GT(test_support::max_difference(theta, start), 1e-2)
      << "a degenerate test: the updates barely move θ";

  // Plain SGD from the same rows differs by far more than the tolerance.
  test_support::UpdateRun sgd = run;
  sgd.momentum = zo::MomentumSpec{};
  EXPECT_GT(test_support::max_difference(test_support::engine_theta(m.config, sgd, true), theta),
            100 * 2e-6)
      << "momentum and plain SGD are indistinguishable here";
}

}  // namespace
