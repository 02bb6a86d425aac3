#pragma once
// Which forward evaluations a ZO step needs, and which of them this rank
// runs. Pure data: a function of (estimator, P, rank).
//
// An estimator's step draws `queries` directions z_0 .. z_{q-1} and runs
// a fixed list of evaluations, each at w = θ + sign·ε·z_query:
//   spsa       e = 2·query + (sign < 0): (0,+) (0,−) (1,+) (1,−) …  2q
//   one_sided  e = 0: the unperturbed θ (sign 0); e = 1 + i: (i,+)   N + 1
// The P ranks of a perturbation group split them into P contiguous, equal
// ranges. With spsa and P <= q every rank evaluates whole queries (both
// signs, one materialisation pass for w+ and w−); with one_sided the
// unperturbed evaluation shares its pass with direction 0's.

#include <vector>

#include "core/estimator_kind.hpp"

namespace distzo::zo {

struct Evaluation {
  int index;  // the position in the step's gathered loss table
  int query;  // the direction z_query, 0 .. q-1 (0 for the unperturbed one)
  int sign;   // +1 or -1: w = θ ± εz; 0: w = θ
};

/// The estimator of a run as the evaluations its steps need.
struct EstimatorSpec {
  EstimatorKind kind = EstimatorKind::spsa;
  int queries = 1;  // directions per step: q (spsa), N (one_sided)

  /// Throws distzo::Error unless 1 <= queries (the kernel's limit is the deck's business).
  static EstimatorSpec make(EstimatorKind kind, int queries);

  /// Forward evaluations per step: 2q (spsa), N + 1 (one_sided).
  int evaluations() const;
  /// The evaluation at position e of a step.
  Evaluation at(int index) const;
  /// The position of (query, sign) in a step; -1 when the step has none.
  int index_of(int query, int sign) const;

  bool operator==(const EstimatorSpec& o) const { return kind == o.kind && queries == o.queries; }
};

/// The position of (query, sign) in `evaluations`, or -1 when absent.
int find_evaluation(const std::vector<Evaluation>& evaluations, int query, int sign);

/// The queries of `evaluations` (sorted by index), each once, increasing.
std::vector<int> queries_of(const std::vector<Evaluation>& evaluations);

struct EvaluationPlan {
  EstimatorSpec estimator;        // what a step evaluates
  int group_size = 1;             // P
  int group_rank = 0;             // this rank's position in its perturbation group
  std::vector<Evaluation> owned;  // in increasing index order

  /// Throws distzo::Error unless P divides the step's evaluations and 0 <= rank < P.
  static EvaluationPlan make(const EstimatorSpec& estimator, int group_size, int group_rank);
  /// An SPSA step of `queries` queries.
  static EvaluationPlan make(int queries, int group_size, int group_rank) {
    return make(EstimatorSpec::make(EstimatorKind::spsa, queries), group_size, group_rank);
  }

  int queries() const { return estimator.queries; }
  int total_evaluations() const { return estimator.evaluations(); }
  int evaluations_per_rank() const { return total_evaluations() / group_size; }
  /// The rank of the group that owns evaluation e.
  int owner_of(int evaluation) const { return evaluation / evaluations_per_rank(); }
};

/// The evaluations that some rank of a node runs, in increasing index order,
/// given the perturbation ranks of the node's ranks (Placement II: the
/// node's slices materialise w of exactly these).
std::vector<Evaluation> node_evaluations(const EstimatorSpec& estimator, int group_size,
                                         const std::vector<int>& node_group_ranks);

}  // namespace distzo::zo
