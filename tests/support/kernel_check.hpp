#pragma once
// Shared by the tests/test_kernels_*.cpp files, which check every kernel in
// src/kernels against a plain host loop written there, in double precision,
// from the definition (not from the kernel's code).
//
// Inputs are random with fixed seeds. Comparisons are
//   |got - ref| <= atol + rtol * |ref|
// with the tolerance derived next to each test from the precision the kernel
// computes in; on failure the max abs / rel error and the worst element are
// printed. Element-wise kernels that do one float operation per element
// (gathers, relu, adds) are compared bit for bit against the same float
// operation.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace distzo::test_support {

/// Unit roundoff of float (2^-24): the relative error of one rounding.
constexpr double kFloatU = 5.9604644775390625e-08;

// ---------------------------------------------------------------- helpers

/// Row-major double reference tensor.
struct Ref {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<double> data;
  Ref(std::size_t r, std::size_t c) : rows(r), cols(c), data(r * c, 0.0) {}
  double& operator()(std::size_t r, std::size_t c) { return data[r * cols + c]; }
  double operator()(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

inline HostMat random_host(std::size_t rows, std::size_t cols, std::uint32_t seed, double lo = -1.0,
                           double hi = 1.0) {
  HostMat h("test::random", rows, cols);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) h(r, c) = static_cast<real>(dist(gen));
  return h;
}

inline HostVec random_host_vec(std::size_t n, std::uint32_t seed, double lo = -1.0,
                               double hi = 1.0) {
  HostVec h("test::random_vec", n);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::size_t i = 0; i < n; ++i) h(i) = static_cast<real>(dist(gen));
  return h;
}

/// A copy of `from` in a new view of type `To` (device from host, or back):
/// never an alias, even where host and device memory are one, so a kernel
/// writing the copy leaves the original alone.
template <class To, class From>
To copy_as(const From& from, const std::string& label) {
  To to(label, from.layout());
  Kokkos::deep_copy(to, from);
  return to;
}

inline Mat to_device(const HostMat& h) { return copy_as<Mat>(h, "test::device_mat"); }
inline Vec to_device(const HostVec& h) { return copy_as<Vec>(h, "test::device_vec"); }
inline IntMat to_device(const HostIntMat& h) { return copy_as<IntMat>(h, "test::device_intmat"); }
inline IntVec to_device(const HostIntVec& h) { return copy_as<IntVec>(h, "test::device_intvec"); }
/// 16-bit words (bf16 / fp16) to and from the device.
inline HalfVec to_device(const std::vector<std::uint16_t>& words) {
  HalfVec v("test::device_words", words.size());
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < words.size(); ++i) h(i) = words[i];
  Kokkos::deep_copy(v, h);
  return v;
}
inline std::vector<std::uint16_t> words_of(const HalfVec& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<std::uint16_t>(h.data(), h.data() + h.extent(0));
}
inline HostMat to_host(const Mat& d) { return copy_as<HostMat>(d, "test::host_mat"); }
inline HostIntMat to_host(const IntMat& d) { return copy_as<HostIntMat>(d, "test::host_intmat"); }
inline HostIntVec to_host(const IntVec& d) { return copy_as<HostIntVec>(d, "test::host_intvec"); }

inline std::uint32_t float_bits(real x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

inline HostIntMat int_mat(const std::vector<std::vector<int>>& rows) {
  HostIntMat h("test::int_mat", rows.size(), rows.empty() ? 0 : rows[0].size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < rows[r].size(); ++c) h(r, c) = rows[r][c];
  return h;
}
inline HostIntVec int_vec(const std::vector<int>& v) {
  HostIntVec h("test::int_vec", v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  return h;
}

/// |got - ref| <= atol + rtol * |ref| everywhere; reports max abs / rel error.
inline ::testing::AssertionResult all_close(const HostMat& got, const Ref& ref, double atol,
                                            double rtol) {
  if (got.extent(0) != ref.rows || got.extent(1) != ref.cols)
    return ::testing::AssertionFailure()
           << "shape (" << got.extent(0) << ", " << got.extent(1) << ") != reference (" << ref.rows
           << ", " << ref.cols << ")";
  double max_abs = 0.0, max_rel = 0.0;
  std::size_t bad = 0, worst_r = 0, worst_c = 0;
  double worst_excess = -1.0;
  for (std::size_t r = 0; r < ref.rows; ++r) {
    for (std::size_t c = 0; c < ref.cols; ++c) {
      const double g = got(r, c);
      const double e = ref(r, c);
      const double abs_err = std::fabs(g - e);
      const double rel_err = abs_err / std::max(std::fabs(e), 1e-30);
      const double allowed = atol + rtol * std::fabs(e);
      max_abs = std::max(max_abs, abs_err);
      if (std::fabs(e) > atol) max_rel = std::max(max_rel, rel_err);
      if (!(abs_err <= allowed)) {  // also catches NaN
        ++bad;
        if (std::isnan(abs_err) || abs_err - allowed > worst_excess) {
          worst_excess =
              std::isnan(abs_err) ? std::numeric_limits<double>::infinity() : abs_err - allowed;
          worst_r = r;
          worst_c = c;
        }
      }
    }
  }
  std::ostringstream os;
  os << "max abs err " << max_abs << ", max rel err " << max_rel << " (atol " << atol << ", rtol "
     << rtol << ")";
  if (bad == 0) return ::testing::AssertionSuccess() << os.str();
  return ::testing::AssertionFailure()
         << bad << " of " << ref.rows * ref.cols << " elements out of tolerance; " << os.str()
         << "; worst at (" << worst_r << ", " << worst_c << "): got " << got(worst_r, worst_c)
         << ", expected " << ref(worst_r, worst_c);
}

inline ::testing::AssertionResult bit_equal(const HostMat& a, const HostMat& b) {
  if (a.extent(0) != b.extent(0) || a.extent(1) != b.extent(1))
    return ::testing::AssertionFailure() << "shapes differ";
  for (std::size_t r = 0; r < a.extent(0); ++r)
    for (std::size_t c = 0; c < a.extent(1); ++c)
      if (std::memcmp(&a(r, c), &b(r, c), sizeof(real)) != 0)
        return ::testing::AssertionFailure() << "first difference at (" << r << ", " << c
                                             << "): " << a(r, c) << " vs " << b(r, c);
  return ::testing::AssertionSuccess();
}

// ------------------------------------------------------------- references

/// Worst-case error bound of a float dot product of length n, any summation
/// order (Higham, Accuracy and Stability, eq. 3.5): gamma_n * sum |a_i b_i|,
/// gamma_n = n u / (1 - n u); 1.01 * n u is safe for n u < 0.01.
inline double dot_bound(std::size_t n, double abs_sum) { return 1.01 * n * kFloatU * abs_sum; }

/// log(sum_j exp(z_j)) of a row, in double with the max subtracted.
inline double logsumexp(const std::vector<double>& z) {
  const double mx = *std::max_element(z.begin(), z.end());
  double s = 0.0;
  for (const double v : z) s += std::exp(v - mx);
  return mx + std::log(s);
}

inline ExecSpace space() { return ExecSpace(); }

}  // namespace distzo::test_support
