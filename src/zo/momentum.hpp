#pragma once
// The pending update of step t from the seed log's rows: plain SGD, or a
// momentum rebuilt from the last h rows (optim.momentum β, optim.history h;
// docs/perturbation.md, "Momentum from the seed log"). The one home of the
// rule: the trainer, a resume and `distzo replay` all call pending_update,
// so they apply the same terms in the same order, bit for bit.
//
//   θ ← θ − lr_t · ( Σ_{j=0}^{m−1} c_j · Σ_i ĝ_{t−j,i} z_{t−j,i} / q  + wd·θ ),
//   m = min(h, t + 1),   c_j = (1 − β) β^j / (1 − β^m)   (Σ_j c_j = 1)
//
// ĝ_s is the step-s row of the seed log (q scalars, whatever the estimator
// made them); a skipped step's row is zeros and counts as a row. No z and
// nothing d-sized is kept: a row is q scalars, the z are regenerated.

#include <cstdint>
#include <deque>
#include <vector>

#include "core/step_state.hpp"

namespace distzo::zo {

/// optim.momentum and optim.history.
struct MomentumSpec {
  double beta = 0;  // β in [0, 1); 0 = plain SGD, bit for bit
  int history = 1;  // h >= 1: how many log rows an update uses (1 when β = 0)

  bool plain() const { return beta == 0; }
  /// c_0 .. c_{m−1} for an update over m rows (1 <= m <= h), in double:
  /// (1 − β) β^j / (1 − β^m), the powers by repeated multiplication.
  /// m = 1 gives c_0 = 1 exactly for every β.
  std::vector<double> coefficients(int m) const;
  /// z streams an update regenerates: h × q terms (the kernel's limit is
  /// kernels::kMaxQueries).
  int terms(int queries) const { return history * queries; }
};

/// The seed log's rows an update may use: the last h, oldest first. Each
/// row is a step's q scalars ĝ, or empty for a skipped (non-finite) step,
/// whose row counts as zeros.
class GradientHistory {
 public:
  struct Row {
    std::int64_t step = 0;
    std::vector<double> g;  // q scalars; empty: the step was skipped
  };

  explicit GradientHistory(int capacity = 1);

  /// Appends the row of `step`, the step after the newest held (or any step
  /// when none is), dropping the oldest beyond the capacity.
  void push(std::int64_t step, std::vector<double> g);
  const std::deque<Row>& rows() const { return rows_; }
  int capacity() const { return capacity_; }

 private:
  int capacity_;
  std::deque<Row> rows_;  // consecutive steps, oldest first
};

/// The pending update of `step` (t, 0-based), which must be the newest row
/// of `history`, with that step's lr and weight decay: one term per query of
/// each of the last m = min(h, t + 1) rows, newest first (j = 0, 1, ...),
/// queries in order; a skipped row adds no term (its ĝ is zeros). The
/// history must hold those m rows. With β = 0 the terms are exactly
/// PendingUpdate::after's.
PendingUpdate pending_update(const MomentumSpec& spec, const GradientHistory& history,
                             std::int64_t step, double lr, double weight_decay, int queries);

}  // namespace distzo::zo
