#pragma once
// Goodness-of-fit statistics of a sample that should be N(0, 1), with the
// bounds a correct generator meets: shared by tests/test_perturbation.cpp
// (10^6 samples) and perf/bench_z_statistics.cpp (10^8).
//
// Each bound is a 1e-6-level rejection region (or 6 standard errors), so a
// correct generator fails a fixed-seed check with odds of about 1e-6, while a
// wrong variance, a skewed tail or a correlated pair of halves fails surely.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace distzo_test {

/// The standard normal CDF.
inline double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

struct NormalCheck {
  std::string name;
  double value;  // the statistic
  double bound;  // it must be below this
  bool ok() const { return value < bound; }
};

/// mean, variance, 4th moment and lag-1 correlation against 0, 1, 3 and 0
/// (|deviation| below 6 standard errors); the largest |z| below `max_abs`;
/// chi-square on 100 equiprobable bins (bin = floor(100 Phi(z)), 99 degrees of
/// freedom) below 180.79 = chi2_99(1 - 1e-6) (regularised upper incomplete
/// gamma, computed with mpmath); Kolmogorov–Smirnov sqrt(n) sup|F_n - Phi|
/// below 2.6934 = sqrt(-ln(1e-6 / 2) / 2), Kolmogorov's upper 1e-6 point.
/// Sorts `z` (the KS statistic needs the order statistics).
template <class Real>
std::vector<NormalCheck> normal_checks(std::vector<Real>& z, double max_abs) {
  const double n = static_cast<double>(z.size());
  double sum = 0, sum2 = 0, sum4 = 0, lag1 = 0, largest = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    const double x = z[i];
    sum += x;
    sum2 += x * x;
    sum4 += x * x * x * x;
    if (i + 1 < z.size()) lag1 += x * static_cast<double>(z[i + 1]);
    largest = std::isfinite(x) ? std::max(largest, std::fabs(x)) : HUGE_VAL;
  }
  const double mean = sum / n;
  const double variance = sum2 / n - mean * mean;
  std::vector<double> counts(100, 0.0);
  for (const Real x : z) counts[std::min(99, static_cast<int>(normal_cdf(x) * 100))] += 1.0;
  double chi2 = 0;
  for (const double c : counts) chi2 += (c - n / 100) * (c - n / 100) / (n / 100);
  std::sort(z.begin(), z.end());
  double d_max = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    const double f = normal_cdf(z[i]);
    d_max = std::max({d_max, std::fabs(f - static_cast<double>(i) / n),
                      std::fabs(static_cast<double>(i + 1) / n - f)});
  }
  // Standard errors under N(0,1): mean 1/sqrt(n), sample variance sqrt(2/n),
  // mean of x^4 sqrt((105 - 9)/n), mean of x_i x_{i+1} 1/sqrt(n) (adjacent
  // elements include the two halves of a Box–Muller pair).
  return {{"|mean|", std::fabs(mean), 6 / std::sqrt(n)},
          {"|variance - 1|", std::fabs(variance - 1), 6 * std::sqrt(2 / n)},
          {"|4th moment - 3|", std::fabs(sum4 / n - 3), 6 * std::sqrt(96 / n)},
          {"|lag-1 correlation|", std::fabs(lag1 / (n - 1)), 6 / std::sqrt(n - 1)},
          {"largest |z|", largest, max_abs + 1e-6},
          {"chi-square, 99 df", chi2, 180.79},
          {"Kolmogorov-Smirnov sqrt(n) D_n", std::sqrt(n) * d_max, 2.6934}};
}

}  // namespace distzo_test
