#pragma once
// Which forward evaluations of a ZO step this rank runs. A step with q queries
// has 2q evaluations, indexed e = 2*query + (sign < 0). The P ranks of a
// perturbation group split them into P contiguous, equal ranges, so with
// P <= q every rank evaluates whole queries (both signs, one materialisation
// pass for w+ and w-). Pure data: a function of (q, P, rank).

#include <vector>

namespace distzo::zo {

struct Evaluation {
  int index;  // e = 2*query + (sign < 0 ? 1 : 0): the position in the gathered loss table
  int query;  // 0 .. q-1
  int sign;   // +1 or -1

  /// The evaluation at position e of a step.
  static Evaluation at(int index) { return {index, index / 2, index % 2 == 0 ? +1 : -1}; }
  /// The position of (query, sign) in a step.
  static int index_of(int query, int sign) { return 2 * query + (sign < 0 ? 1 : 0); }
};

/// The position of (query, sign) in `evaluations`, or -1 when absent.
int find_evaluation(const std::vector<Evaluation>& evaluations, int query, int sign);

/// The queries of `evaluations` (sorted by index), each once, increasing.
std::vector<int> queries_of(const std::vector<Evaluation>& evaluations);

struct EvaluationPlan {
  int queries = 1;                // q
  int group_size = 1;             // P
  int group_rank = 0;             // this rank's position in its perturbation group
  std::vector<Evaluation> owned;  // in increasing index order

  /// Throws distzo::Error unless P divides 2q and 0 <= rank < P.
  static EvaluationPlan make(int queries, int group_size, int group_rank);

  int total_evaluations() const { return 2 * queries; }
  int evaluations_per_rank() const { return total_evaluations() / group_size; }
  /// The rank of the group that owns evaluation e.
  int owner_of(int evaluation) const { return evaluation / evaluations_per_rank(); }
};

/// The evaluations that some rank of a node runs, in increasing index order,
/// given the perturbation ranks of the node's ranks (Placement II: the
/// node's slices materialise w± of exactly these).
std::vector<Evaluation> node_evaluations(int queries, int group_size,
                                         const std::vector<int>& node_group_ranks);

}  // namespace distzo::zo
