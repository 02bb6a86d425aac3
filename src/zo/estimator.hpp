#pragma once
// A step's estimate from scalars (DESIGN.md invariant 4). Each rank
// contributes, for every evaluation e of the step, (loss sum, count) — zeros
// for the ones it did not run. The contributions are all-gathered and every
// rank adds them in rank order in double precision, so every rank derives
// the identical g, and each loss is the token-weighted mean over the global
// batch. The estimator (zo/evaluation_plan.hpp) turns the losses into g, one
// coefficient per direction; the update is θ ← θ − lr·(Σ_q g_q z_q / q + wd·θ)
// whatever the estimator (zo/update_terms.hpp), so a pending update and a
// seed log hold the same scalars for every estimator:
//   spsa       g_q = (L(θ+εz_q) − L(θ−εz_q)) / 2ε                  (MeZO)
//   one_sided  g_i = (L(θ+εz_i) − L(θ)) / σ,  σ the population standard
//              deviation of the N losses L(θ+εz_i)                  (FZOO)

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "runtime/communicator.hpp"
#include "zo/evaluation_plan.hpp"

namespace distzo::zo {

/// The loss of one evaluation on one rank's part of the global batch.
struct LossSum {
  double sum = 0;    // summed over the rank's tokens (or examples)
  double count = 0;  // tokens (or examples) it was summed over

  bool operator==(const LossSum& o) const { return sum == o.sum && count == o.count; }
};

/// This rank's (loss sum, count) of every evaluation of a step, zero for the
/// evaluations that other ranks run.
class LossTable {
 public:
  explicit LossTable(const EstimatorSpec& estimator)
      : estimator_(estimator), sums_(static_cast<std::size_t>(estimator.evaluations())) {}
  /// An SPSA step of `queries` queries.
  explicit LossTable(int queries) : LossTable(EstimatorSpec::make(EstimatorKind::spsa, queries)) {}
  const EstimatorSpec& estimator() const { return estimator_; }
  int queries() const { return estimator_.queries; }
  LossSum& at(int query, int sign) { return sums_.at(slot(query, sign)); }
  const LossSum& at(int query, int sign) const { return sums_.at(slot(query, sign)); }
  LossSum& at(const Evaluation& e) { return sums_.at(static_cast<std::size_t>(e.index)); }
  const LossSum& at(const Evaluation& e) const {
    return sums_.at(static_cast<std::size_t>(e.index));
  }
  /// sum / count of (query, sign): its mean loss on this rank's batch.
  double mean(int query, int sign) const { return at(query, sign).sum / at(query, sign).count; }
  bool operator==(const LossTable& o) const {
    return estimator_ == o.estimator_ && sums_ == o.sums_;
  }

 private:
  std::size_t slot(int query, int sign) const {
    const int e = estimator_.index_of(query, sign);
    DISTZO_REQUIRE(e >= 0, "a " << to_string(estimator_.kind) << " step has no evaluation (query "
                                << query << ", sign " << sign << ")");
    return static_cast<std::size_t>(e);
  }
  EstimatorSpec estimator_;
  std::vector<LossSum> sums_;  // by evaluation index
};

struct StepEstimate {
  std::vector<double> loss_plus;   // per query: L(θ + εz_q)
  std::vector<double> loss_minus;  // per query: L(θ − εz_q); empty for one_sided
  std::vector<double> g;           // per query: its coefficient (above)
  double spread = 0;               // one_sided: σ of the N losses L(θ + εz_i); spsa: 0
  double loss = 0;                 // spsa: mean over queries of (L+ + L−)/2; one_sided: L(θ)
  double count = 0;                // tokens (or examples) in the global batch
  bool finite = true;              // every loss and g is finite
  /// A one-sided step whose losses are finite but whose N perturbed losses
  /// are all equal: σ = 0, g undefined (ε too small for the weights'
  /// resolution, or a loss that ignores them).
  bool flat() const {
    if (!loss_minus.empty() || loss_plus.empty() || spread != 0 || !std::isfinite(loss))
      return false;
    for (double l : loss_plus)
      if (!std::isfinite(l)) return false;
    return true;
  }
  StopReason stop = StopReason::none;  // the strongest any rank was asked (a signal)
};

/// Every rank's `local` table added up in rank order, and the estimate of
/// the step from it, by `local`'s estimator. `stop`: why this rank was asked to stop, if it was;
/// the reason travels with the losses, so every rank learns in the same gather whether any was, and
/// the strongest reason. Collective over `comm`.
StepEstimate combine_losses(const runtime::Communicator& comm, const LossTable& local, double eps,
                            StopReason stop = StopReason::none);

}  // namespace distzo::zo
