#pragma once
// SPSA estimate from scalars (DESIGN.md invariant 4). Each rank contributes,
// for every evaluation e of the step, (loss sum, count) — zeros for the ones it
// did not run. The contributions are all-gathered and every rank adds them in
// rank order in double precision, so every rank derives the identical g, and
// the loss is the token-weighted mean over the global batch.

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

/// This rank's (loss sum, count) of every evaluation of a step: 2q entries,
/// zero for the evaluations that other ranks run.
class LossTable {
 public:
  explicit LossTable(int queries)
      : queries_(queries), sums_(2 * static_cast<std::size_t>(queries)) {}
  int queries() const { return queries_; }
  LossSum& at(int query, int sign) { return sums_.at(slot(query, sign)); }
  const LossSum& at(int query, int sign) const { return sums_.at(slot(query, sign)); }
  LossSum& at(const Evaluation& e) { return at(e.query, e.sign); }
  const LossSum& at(const Evaluation& e) const { return at(e.query, e.sign); }
  /// sum / count of (query, sign): its mean loss on this rank's batch.
  double mean(int query, int sign) const { return at(query, sign).sum / at(query, sign).count; }
  bool operator==(const LossTable& o) const { return queries_ == o.queries_ && sums_ == o.sums_; }

 private:
  static std::size_t slot(int query, int sign) {
    return static_cast<std::size_t>(Evaluation::index_of(query, sign));
  }
  int queries_;
  std::vector<LossSum> sums_;  // by Evaluation::index_of
};

struct StepEstimate {
  std::vector<double> loss_plus;       // per query: L(θ + εz_q)
  std::vector<double> loss_minus;      // per query: L(θ − εz_q)
  std::vector<double> g;               // per query: (L+ − L−) / (2ε)
  double loss = 0;                     // mean over queries of (L+ + L−)/2
  double count = 0;                    // tokens (or examples) in the global batch
  bool finite = true;                  // every loss and g is finite
  StopReason stop = StopReason::none;  // the strongest any rank was asked (a signal)
};

/// Every rank's `local` table added up in rank order, and the estimate of
/// the step from it. `stop`: why this rank was asked to stop, if it was; the
/// reason travels with the losses, so every rank learns in the same gather
/// whether any was, and the strongest reason. Collective over `comm`.
StepEstimate combine_losses(const runtime::Communicator& comm, const LossTable& local, double eps,
                            StopReason stop = StopReason::none);

}  // namespace distzo::zo
