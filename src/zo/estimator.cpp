#include "zo/estimator.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace distzo::zo {

StepEstimate combine_losses(const runtime::Communicator& comm, const LossTable& local, double eps,
                            StopReason stop) {
  const int queries = local.queries();
  const int evaluations = 2 * queries;
  // Each rank sends (sum, count) per evaluation and its stop reason.
  std::vector<double> mine;
  for (int e = 0; e < evaluations; ++e) {
    const LossSum& s = local.at(Evaluation::at(e));
    mine.push_back(s.sum);
    mine.push_back(s.count);
  }
  mine.push_back(static_cast<int>(stop));
  const std::size_t width = mine.size();
  std::vector<double> all(static_cast<std::size_t>(comm.size()) * width);
  comm.allgather(mine.data(), static_cast<int>(width), all.data());

  StepEstimate est;
  std::vector<double> mean(static_cast<std::size_t>(evaluations));
  std::vector<double> count(static_cast<std::size_t>(evaluations));
  for (int r = 0; r < comm.size(); ++r) {
    const auto reason = static_cast<StopReason>(static_cast<int>(all[r * width + width - 1]));
    est.stop = std::max(est.stop, reason);
  }
  for (int e = 0; e < evaluations; ++e) {
    double sum = 0, n = 0;
    for (int r = 0; r < comm.size(); ++r) {  // fixed rank order: identical on every rank
      sum += all[static_cast<std::size_t>(r) * width + 2 * e];
      n += all[static_cast<std::size_t>(r) * width + 2 * e + 1];
    }
    DISTZO_REQUIRE(n > 0, "evaluation " << e << " of the step counted no tokens on any rank");
    mean[e] = sum / n;
    count[e] = n;
  }

  est.count = count[0];
  for (int q = 0; q < queries; ++q) {
    const double plus = mean[Evaluation::index_of(q, +1)],
                 minus = mean[Evaluation::index_of(q, -1)];
    est.loss_plus.push_back(plus);
    est.loss_minus.push_back(minus);
    est.g.push_back((plus - minus) / (2.0 * eps));
    est.loss += 0.5 * (plus + minus) / queries;
    est.finite =
        est.finite && std::isfinite(plus) && std::isfinite(minus) && std::isfinite(est.g.back());
  }
  return est;
}

}  // namespace distzo::zo
