#include "zo/estimator.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace distzo::zo {

namespace {

/// g of an SPSA step from its per-evaluation mean losses.
void spsa_estimate(const EstimatorSpec& spec, const std::vector<double>& mean, double eps,
                   StepEstimate& est) {
  const int queries = spec.queries;
  for (int q = 0; q < queries; ++q) {
    const double plus = mean[spec.index_of(q, +1)], minus = mean[spec.index_of(q, -1)];
    est.loss_plus.push_back(plus);
    est.loss_minus.push_back(minus);
    est.g.push_back((plus - minus) / (2.0 * eps));
    est.loss += 0.5 * (plus + minus) / queries;
    est.finite =
        est.finite && std::isfinite(plus) && std::isfinite(minus) && std::isfinite(est.g.back());
  }
}

/// g of a one-sided step: (L_i − L_0) / σ, σ the population standard
/// deviation of the N perturbed losses (FZOO, Dang et al. 2025, Alg. 1; its
/// code's torch.std(unbiased=False)). σ = 0 — every direction gave the same
/// loss — makes g non-finite and the step is skipped like any other.
void one_sided_estimate(const EstimatorSpec& spec, const std::vector<double>& mean,
                        StepEstimate& est) {
  const int n = spec.queries;
  const double base = mean[spec.index_of(0, 0)];
  double average = 0;
  for (int i = 0; i < n; ++i) {
    est.loss_plus.push_back(mean[spec.index_of(i, +1)]);
    average += est.loss_plus.back() / n;
  }
  double variance = 0;
  for (double l : est.loss_plus) variance += (l - average) * (l - average) / n;
  est.spread = std::sqrt(variance);
  est.loss = base;
  est.finite = std::isfinite(base);
  for (double l : est.loss_plus) {
    est.g.push_back((l - base) / est.spread);
    est.finite = est.finite && std::isfinite(l) && std::isfinite(est.g.back());
  }
}

}  // namespace

StepEstimate combine_losses(const runtime::Communicator& comm, const LossTable& local, double eps,
                            StopReason stop) {
  const EstimatorSpec& spec = local.estimator();
  const int evaluations = spec.evaluations();
  // Each rank sends (sum, count) per evaluation and its stop reason.
  std::vector<double> mine;
  for (int e = 0; e < evaluations; ++e) {
    const LossSum& s = local.at(spec.at(e));
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
  if (spec.kind == EstimatorKind::spsa)
    spsa_estimate(spec, mean, eps, est);
  else
    one_sided_estimate(spec, mean, est);
  return est;
}

}  // namespace distzo::zo
