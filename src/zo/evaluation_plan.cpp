#include "zo/evaluation_plan.hpp"

#include "core/error.hpp"

namespace distzo::zo {

EvaluationPlan EvaluationPlan::make(int queries, int group_size, int group_rank) {
  DISTZO_REQUIRE(queries >= 1, "a ZO step needs at least one query, got " << queries);
  DISTZO_REQUIRE(group_size >= 1 && (2 * queries) % group_size == 0,
                 "perturbation parallelism P=" << group_size
                                               << " must divide the 2q=" << 2 * queries
                                               << " forward evaluations of a step (q=" << queries
                                               << " queries, two signs each)");
  DISTZO_REQUIRE(group_rank >= 0 && group_rank < group_size,
                 "rank " << group_rank << " outside a perturbation group of " << group_size);
  EvaluationPlan plan;
  plan.queries = queries;
  plan.group_size = group_size;
  plan.group_rank = group_rank;
  const int per_rank = 2 * queries / group_size;
  for (int e = group_rank * per_rank; e < (group_rank + 1) * per_rank; ++e)
    plan.owned.push_back(Evaluation::at(e));
  return plan;
}

std::vector<Evaluation> node_evaluations(int queries, int group_size,
                                         const std::vector<int>& node_group_ranks) {
  std::vector<bool> run(static_cast<std::size_t>(2 * queries), false);
  for (int p : node_group_ranks)
    for (const Evaluation& e : EvaluationPlan::make(queries, group_size, p).owned)
      run[static_cast<std::size_t>(e.index)] = true;
  std::vector<Evaluation> out;
  for (int e = 0; e < 2 * queries; ++e)
    if (run[static_cast<std::size_t>(e)]) out.push_back(Evaluation::at(e));
  return out;
}

int find_evaluation(const std::vector<Evaluation>& evaluations, int query, int sign) {
  for (std::size_t i = 0; i < evaluations.size(); ++i)
    if (evaluations[i].query == query && evaluations[i].sign == sign) return static_cast<int>(i);
  return -1;
}

std::vector<int> queries_of(const std::vector<Evaluation>& evaluations) {
  std::vector<int> queries;
  for (const Evaluation& e : evaluations)
    if (queries.empty() || queries.back() != e.query) queries.push_back(e.query);
  return queries;
}

}  // namespace distzo::zo
