#include "zo/momentum.hpp"

#include <string>
#include <utility>

#include "core/error.hpp"

namespace distzo::zo {

std::vector<double> MomentumSpec::coefficients(int m) const {
  DISTZO_REQUIRE(m >= 1 && m <= history,
                 "momentum over " << m << " rows, with optim.history " << history);
  DISTZO_REQUIRE(beta >= 0 && beta < 1, "momentum β = " << beta << ", outside [0, 1)");
  std::vector<double> c(static_cast<std::size_t>(m));
  double power = 1;  // β^j
  for (int j = 0; j < m; ++j) {
    c[static_cast<std::size_t>(j)] = (1 - beta) * power;
    power *= beta;
  }
  // power = β^m: normalise so the weights sum to 1 (a truncated EMA).
  // m = 1: (1 − β) / (1 − β) = 1 exactly.
  const double norm = 1 - power;
  for (double& cj : c) cj /= norm;
  return c;
}

GradientHistory::GradientHistory(int capacity) : capacity_(capacity) {
  DISTZO_REQUIRE(capacity >= 1, "a gradient history of " << capacity << " rows");
}

void GradientHistory::push(std::int64_t step, std::vector<double> g) {
  DISTZO_REQUIRE(rows_.empty() || step == rows_.back().step + 1,
                 "gradient history: row of step " << step << " after step " << rows_.back().step);
  rows_.push_back({step, std::move(g)});
  while (rows_.size() > static_cast<std::size_t>(capacity_)) rows_.pop_front();
}

PendingUpdate pending_update(const MomentumSpec& spec, const GradientHistory& history,
                             std::int64_t step, double lr, double weight_decay, int queries) {
  const std::int64_t m64 = step + 1 < spec.history ? step + 1 : spec.history;
  const int m = static_cast<int>(m64);
  const std::deque<GradientHistory::Row>& rows = history.rows();
  DISTZO_REQUIRE(
      !rows.empty() && rows.back().step == step && static_cast<std::int64_t>(rows.size()) >= m64,
      "the update of step " << step << " needs the seed log's rows of steps " << step - m64 + 1
                            << " .. " << step << "; the history holds " << rows.size() << " row(s)"
                            << (rows.empty() ? std::string()
                                             : " up to step " + std::to_string(rows.back().step)));
  DISTZO_REQUIRE(!rows.back().g.empty(),
                 "step " << step << " was skipped (non-finite): it leaves no update");
  const std::vector<double> c = spec.coefficients(m);
  PendingUpdate u;
  u.active = true;
  u.step = step;
  u.lr = lr;
  u.weight_decay = weight_decay;
  u.queries = queries;
  for (int j = 0; j < m; ++j) {
    const GradientHistory::Row& row = rows[rows.size() - 1 - static_cast<std::size_t>(j)];
    if (row.g.empty()) continue;  // a skipped step: ĝ = 0, no z to regenerate
    DISTZO_REQUIRE(static_cast<int>(row.g.size()) == queries,
                   "the seed log's row of step " << row.step << " holds " << row.g.size()
                                                 << " scalars, not the run's " << queries);
    for (int i = 0; i < queries; ++i)
      u.terms.push_back(
          {row.step, i, c[static_cast<std::size_t>(j)] * row.g[static_cast<std::size_t>(i)]});
  }
  return u;
}

}  // namespace distzo::zo
