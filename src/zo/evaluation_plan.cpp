#include "zo/evaluation_plan.hpp"

#include "core/error.hpp"

namespace distzo::zo {

EstimatorSpec EstimatorSpec::make(EstimatorKind kind, int queries) {
  DISTZO_REQUIRE(queries >= 1, "a ZO step needs at least one direction, got " << queries);
  DISTZO_REQUIRE(kind != EstimatorKind::one_sided || queries >= 2,
                 "a one_sided step divides by the spread of its N losses: N = 1 has none (N >= 2)");
  return {kind, queries};
}

int EstimatorSpec::evaluations() const { return static_cast<int>(step_evaluations(kind, queries)); }

Evaluation EstimatorSpec::at(int index) const {
  DISTZO_REQUIRE(index >= 0 && index < evaluations(),
                 "evaluation " << index << " outside a step of " << evaluations());
  if (kind == EstimatorKind::spsa) return {index, index / 2, index % 2 == 0 ? +1 : -1};
  return index == 0 ? Evaluation{0, 0, 0} : Evaluation{index, index - 1, +1};
}

int EstimatorSpec::index_of(int query, int sign) const {
  if (query < 0 || query >= queries) return -1;
  if (kind == EstimatorKind::spsa) return sign == 0 ? -1 : 2 * query + (sign < 0 ? 1 : 0);
  if (sign == 0) return query == 0 ? 0 : -1;
  return sign > 0 ? 1 + query : -1;
}

EvaluationPlan EvaluationPlan::make(const EstimatorSpec& estimator, int group_size,
                                    int group_rank) {
  const int evaluations = estimator.evaluations();
  DISTZO_REQUIRE(group_size >= 1 && evaluations % group_size == 0,
                 "perturbation parallelism P=" << group_size << " must divide the " << evaluations
                                               << " forward evaluations of a "
                                               << to_string(estimator.kind) << " step ("
                                               << estimator.queries << " directions)");
  DISTZO_REQUIRE(group_rank >= 0 && group_rank < group_size,
                 "rank " << group_rank << " outside a perturbation group of " << group_size);
  EvaluationPlan plan;
  plan.estimator = estimator;
  plan.group_size = group_size;
  plan.group_rank = group_rank;
  const int per_rank = evaluations / group_size;
  for (int e = group_rank * per_rank; e < (group_rank + 1) * per_rank; ++e)
    plan.owned.push_back(estimator.at(e));
  return plan;
}

std::vector<Evaluation> node_evaluations(const EstimatorSpec& estimator, int group_size,
                                         const std::vector<int>& node_group_ranks) {
  std::vector<bool> run(static_cast<std::size_t>(estimator.evaluations()), false);
  for (int p : node_group_ranks)
    for (const Evaluation& e : EvaluationPlan::make(estimator, group_size, p).owned)
      run[static_cast<std::size_t>(e.index)] = true;
  std::vector<Evaluation> out;
  for (int e = 0; e < estimator.evaluations(); ++e)
    if (run[static_cast<std::size_t>(e)]) out.push_back(estimator.at(e));
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
