#include "kernels/layernorm.hpp"

#include "core/error.hpp"
#include "core/fp.hpp"
#include "core/math.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

namespace {

/// y and x of one shape, gamma one entry per column, eps > 0.
void check_norm(const char* kernel, const Mat& y, const ConstMat& x, const ConstVec& gamma,
                real eps) {
  DISTZO_REQUIRE(y.extent(0) == x.extent(0) && y.extent(1) == x.extent(1),
                 "distzo::kernels::" << kernel << ": y is (" << y.extent(0) << ", " << y.extent(1)
                                     << "), x is (" << x.extent(0) << ", " << x.extent(1) << ")");
  DISTZO_REQUIRE(gamma.extent(0) == x.extent(1),
                 "distzo::kernels::" << kernel << ": gamma has " << gamma.extent(0)
                                     << " entries, expected " << x.extent(1));
  DISTZO_REQUIRE(eps > real(0),
                 "distzo::kernels::" << kernel << ": eps must be positive, got " << eps);
}

}  // namespace

void layernorm(const ExecSpace& space, const Mat& y, const ConstMat& x, const ConstVec& gamma,
               const ConstVec& beta, real eps) {
  check_norm("layernorm", y, x, gamma, eps);
  DISTZO_REQUIRE(beta.extent(0) == x.extent(1), "distzo::kernels::layernorm: beta has "
                                                    << beta.extent(0) << " entries, expected "
                                                    << x.extent(1));
  const int rows = static_cast<int>(x.extent(0));
  const int cols = static_cast<int>(x.extent(1));
  if (rows == 0 || cols == 0) return;

  const Mat yy = y;
  const ConstMat xx = x;
  const ConstVec g = gamma;
  const ConstVec bt = beta;
  const double eps_d = static_cast<double>(eps);
  // One team per row: two passes (mean, then squared deviations) are more
  // accurate than E[x^2] - E[x]^2, and the row is re-read from cache anyway.
  Kokkos::parallel_for(
      "distzo::layernorm", TeamPolicy(space, rows, Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamMember& member) {
        const int r = member.league_rank();
        double sum = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, cols),
            [&](const int c, double& acc) { acc += static_cast<double>(xx(r, c)); }, sum);
        const double mean = sum / cols;
        double sq = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, cols),
            [&](const int c, double& acc) {
              const double d = static_cast<double>(xx(r, c)) - mean;
              acc += d * d;
            },
            sq);
        const double rstd = 1.0 / math::sqrt(sq / cols + eps_d);
        // Both reductions above have completed on every thread of the team,
        // so overwriting x in place cannot disturb the statistics.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, cols), [&](const int c) {
          const real normed = static_cast<real>((static_cast<double>(xx(r, c)) - mean) * rstd);
          yy(r, c) = normed * g(c) + bt(c);
        });
      });
}

void rmsnorm(const ExecSpace& space, const Mat& y, const ConstMat& x, const ConstVec& gamma,
             real eps, real offset) {
  check_norm("rmsnorm", y, x, gamma, eps);
  const int rows = static_cast<int>(x.extent(0));
  const int cols = static_cast<int>(x.extent(1));
  if (rows == 0 || cols == 0) return;

  const Mat yy = y;
  const ConstMat xx = x;
  const ConstVec g = gamma;
  const double eps_d = static_cast<double>(eps);
  Kokkos::parallel_for(
      "distzo::rmsnorm", TeamPolicy(space, rows, Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamMember& member) {
        const int r = member.league_rank();
        double sq = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, cols),
            [&](const int c, double& acc) {
              const double v = static_cast<double>(xx(r, c));
              acc += v * v;
            },
            sq);
        const double rms_inv = 1.0 / math::sqrt(sq / cols + eps_d);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, cols), [&](const int c) {
          const real normed = static_cast<real>(static_cast<double>(xx(r, c)) * rms_inv);
          yy(r, c) = fp::add(offset, g(c)) * normed;
        });
      });
}

}  // namespace distzo::kernels
