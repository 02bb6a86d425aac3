// Every kernel in src/kernels against a plain host loop written here, in
// double precision, from the definition (not from the kernel's code).
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

#include "core/error.hpp"
#include "core/types.hpp"
#include "kernels/kernels.hpp"

namespace {

using namespace distzo;
namespace k = distzo::kernels;

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

HostMat random_host(std::size_t rows, std::size_t cols, std::uint32_t seed, double lo = -1.0,
                    double hi = 1.0) {
  HostMat h("test::random", rows, cols);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) h(r, c) = static_cast<real>(dist(gen));
  return h;
}

HostVec random_host_vec(std::size_t n, std::uint32_t seed, double lo = -1.0, double hi = 1.0) {
  HostVec h("test::random_vec", n);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::size_t i = 0; i < n; ++i) h(i) = static_cast<real>(dist(gen));
  return h;
}

Mat to_device(const HostMat& h) {
  Mat d("test::device_mat", h.extent(0), h.extent(1));
  Kokkos::deep_copy(d, h);
  return d;
}
Vec to_device(const HostVec& h) {
  Vec d("test::device_vec", h.extent(0));
  Kokkos::deep_copy(d, h);
  return d;
}
IntMat to_device(const HostIntMat& h) {
  IntMat d("test::device_intmat", h.extent(0), h.extent(1));
  Kokkos::deep_copy(d, h);
  return d;
}
IntVec to_device(const HostIntVec& h) {
  IntVec d("test::device_intvec", h.extent(0));
  Kokkos::deep_copy(d, h);
  return d;
}
HostMat to_host(const Mat& d) {
  HostMat h("test::host_mat", d.extent(0), d.extent(1));
  Kokkos::deep_copy(h, d);
  return h;
}
HostIntMat to_host(const IntMat& d) {
  HostIntMat h("test::host_intmat", d.extent(0), d.extent(1));
  Kokkos::deep_copy(h, d);
  return h;
}
HostIntVec to_host(const IntVec& d) {
  HostIntVec h("test::host_intvec", d.extent(0));
  Kokkos::deep_copy(h, d);
  return h;
}

std::uint32_t float_bits(real x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

HostIntMat int_mat(const std::vector<std::vector<int>>& rows) {
  HostIntMat h("test::int_mat", rows.size(), rows.empty() ? 0 : rows[0].size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < rows[r].size(); ++c) h(r, c) = rows[r][c];
  return h;
}
HostIntVec int_vec(const std::vector<int>& v) {
  HostIntVec h("test::int_vec", v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  return h;
}

/// |got - ref| <= atol + rtol * |ref| everywhere; reports max abs / rel error.
::testing::AssertionResult all_close(const HostMat& got, const Ref& ref, double atol, double rtol) {
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

::testing::AssertionResult bit_equal(const HostMat& a, const HostMat& b) {
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

/// op(A) element (i, l) of a row-major host matrix.
double op_at(const HostMat& a, bool trans, std::size_t i, std::size_t l) {
  return trans ? a(l, i) : a(i, l);
}

/// Worst-case error bound of a float dot product of length n, any summation
/// order (Higham, Accuracy and Stability, eq. 3.5): gamma_n * sum |a_i b_i|,
/// gamma_n = n u / (1 - n u); 1.01 * n u is safe for n u < 0.01.
double dot_bound(std::size_t n, double abs_sum) { return 1.01 * n * kFloatU * abs_sum; }

/// log(sum_j exp(z_j)) of a row, in double with the max subtracted.
double logsumexp(const std::vector<double>& z) {
  const double mx = *std::max_element(z.begin(), z.end());
  double s = 0.0;
  for (const double v : z) s += std::exp(v - mx);
  return mx + std::log(s);
}

ExecSpace space() { return ExecSpace(); }

// ------------------------------------------------------------------ gemm

struct GemmCase {
  const char* ta;
  const char* tb;
};

TEST(KernelsGemm, AllTransposesMatchNaiveLoop) {
  // Non-square, sizes coprime to every tile / vector width.
  const std::size_t m = 13, n = 29, kdim = 37;
  const real alpha = 0.75f, beta = -1.25f;
  for (const GemmCase gc :
       {GemmCase{"N", "N"}, GemmCase{"N", "T"}, GemmCase{"T", "N"}, GemmCase{"T", "T"}}) {
    SCOPED_TRACE(std::string("transA=") + gc.ta + " transB=" + gc.tb);
    const bool ta = gc.ta[0] == 'T', tb = gc.tb[0] == 'T';
    const HostMat a = random_host(ta ? kdim : m, ta ? m : kdim, 11);
    const HostMat b = random_host(tb ? n : kdim, tb ? kdim : n, 12);
    const HostMat c0 = random_host(m, n, 13);
    Mat c = to_device(c0);
    k::gemm(space(), gc.ta, gc.tb, alpha, to_device(a), to_device(b), beta, c);

    Ref ref(m, n);
    double bound = 0.0;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double s = 0.0, abs_sum = 0.0;
        for (std::size_t l = 0; l < kdim; ++l) {
          const double p = op_at(a, ta, i, l) * op_at(b, tb, l, j);
          s += p;
          abs_sum += std::fabs(p);
        }
        ref(i, j) = alpha * s + beta * c0(i, j);
        // Dot product of length k, then scaling by alpha and the beta*C
        // update: k + 3 roundings on |alpha| sum|ab| + |beta c|.
        bound = std::max(
            bound, dot_bound(kdim + 3, std::fabs(alpha) * abs_sum + std::fabs(beta * c0(i, j))));
      }
    EXPECT_TRUE(all_close(to_host(c), ref, bound, 0.0));
  }
}

TEST(KernelsGemm, BetaZeroIgnoresNaNAndEmptyInnerDimension) {
  const std::size_t m = 5, n = 7, kdim = 9;
  const HostMat a = random_host(m, kdim, 21);
  const HostMat b = random_host(n, kdim, 22);
  HostMat c0("c0", m, n);
  Kokkos::deep_copy(c0, std::numeric_limits<real>::quiet_NaN());
  Mat c = to_device(c0);
  k::gemm(space(), "N", "T", 1.0f, to_device(a), to_device(b), 0.0f, c);
  const HostMat got = to_host(c);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) EXPECT_FALSE(std::isnan(got(i, j)));

  // Inner dimension 0: C = beta * C (and 0 for beta = 0, whatever C held).
  Mat a0("a0", m, 0), b0("b0", 0, n);
  Mat c1 = to_device(c0);
  k::gemm(space(), "N", "N", 1.0f, a0, b0, 0.0f, c1);
  const HostMat z = to_host(c1);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) EXPECT_EQ(z(i, j), 0.0f);
  const HostMat c2h = random_host(m, n, 23);
  Mat c2 = to_device(c2h);
  k::gemm(space(), "N", "N", 1.0f, a0, b0, 2.0f, c2);
  const HostMat twice = to_host(c2);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) EXPECT_EQ(twice(i, j), 2.0f * c2h(i, j));
}

TEST(KernelsGemm, ShapeMismatchThrows) {
  Mat a("a", 3, 4), b("b", 5, 4), c("c", 3, 5);
  EXPECT_THROW(k::gemm(space(), "N", "N", 1.0f, a, b, 0.0f, c), Error);  // 4 != 5
  EXPECT_THROW(k::gemm(space(), "X", "T", 1.0f, a, b, 0.0f, c), Error);
  EXPECT_NO_THROW(k::gemm(space(), "N", "T", 1.0f, a, b, 0.0f, c));
}

// ---------------------------------------------------------------- linear

Ref linear_ref(const HostMat& x, const HostMat& w, const HostVec* b, double* bound) {
  const std::size_t rows = x.extent(0), in = x.extent(1), out = w.extent(0);
  Ref y(rows, out);
  *bound = 0.0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < out; ++o) {
      double s = 0.0, abs_sum = 0.0;
      for (std::size_t i = 0; i < in; ++i) {
        s += double(x(r, i)) * double(w(o, i));
        abs_sum += std::fabs(double(x(r, i)) * double(w(o, i)));
      }
      if (b != nullptr) {
        s += (*b)(o);
        abs_sum += std::fabs((*b)(o));
      }
      y(r, o) = s;
      // The bias add is one more rounding: a dot product of length in + 1.
      *bound = std::max(*bound, dot_bound(in + 1, abs_sum));
    }
  return y;
}

TEST(KernelsLinear, MatchesNaiveLoopWithAndWithoutBias) {
  // N = 37 rows, in = 77, out = 53: non-square, nothing a multiple of 4.
  const HostMat x = random_host(37, 77, 1);
  const HostMat w = random_host(53, 77, 2);
  const HostVec b = random_host_vec(53, 3);
  Mat y("y", 37, 53);

  // Tolerance: the worst-case float dot-product bound for each shape (any
  // BLAS blocking or FMA use stays inside it), with no extra rtol.
  double bound = 0.0;
  const Ref with_bias = linear_ref(x, w, &b, &bound);
  k::linear(space(), y, to_device(x), to_device(w), to_device(b));
  EXPECT_TRUE(all_close(to_host(y), with_bias, bound, 0.0));

  const Ref no_bias = linear_ref(x, w, nullptr, &bound);
  k::linear(space(), y, to_device(x), to_device(w), ConstVec());
  EXPECT_TRUE(all_close(to_host(y), no_bias, bound, 0.0));
}

TEST(KernelsLinear, SingleRowAndSingleOutput) {
  // gemm degenerates to gemv shapes here (N = 1, out = 1).
  const HostMat x = random_host(1, 19, 4);
  const HostMat w = random_host(1, 19, 5);
  const HostVec b = random_host_vec(1, 6);
  Mat y("y", 1, 1);
  k::linear(space(), y, to_device(x), to_device(w), to_device(b));
  double bound = 0.0;
  const Ref ref = linear_ref(x, w, &b, &bound);
  EXPECT_TRUE(all_close(to_host(y), ref, bound, 0.0));
}

TEST(KernelsLinear, ShapeErrorsThrow) {
  Mat y("y", 4, 6), x("x", 4, 5), w("w", 6, 5), w_bad("w_bad", 5, 6);
  Vec b_bad("b_bad", 5);
  EXPECT_THROW(k::linear(space(), y, x, w_bad, ConstVec()), Error);
  EXPECT_THROW(k::linear(space(), y, x, w, b_bad), Error);
  Mat y_bad("y_bad", 4, 5);
  EXPECT_THROW(k::linear(space(), y_bad, x, w, ConstVec()), Error);
}

// ------------------------------------------------------------- layernorm

Ref layernorm_ref(const HostMat& x, const HostVec& g, const HostVec& b, double eps) {
  const std::size_t rows = x.extent(0), cols = x.extent(1);
  Ref y(rows, cols);
  for (std::size_t r = 0; r < rows; ++r) {
    double mean = 0.0;
    for (std::size_t c = 0; c < cols; ++c) mean += x(r, c);
    mean /= cols;
    double var = 0.0;
    for (std::size_t c = 0; c < cols; ++c) var += (x(r, c) - mean) * (x(r, c) - mean);
    var /= cols;  // biased, as torch.nn.LayerNorm
    for (std::size_t c = 0; c < cols; ++c)
      y(r, c) = (x(r, c) - mean) / std::sqrt(var + eps) * g(c) + b(c);
  }
  return y;
}

// Tolerance: statistics are exact to double rounding; the output then takes
// three float roundings (normalised value, product with gamma, sum with
// beta). With |normalised| <= sqrt(C) < 12, |gamma| <= 1.5, |beta| <= 0.5 each
// rounding is <= u * 18.5, so 4e-6 absolute (3 * 18.5 u = 3.3e-6) plus a
// relative u * 4 covers it.
constexpr double kLayerNormAtol = 4e-6;
constexpr double kLayerNormRtol = 4 * kFloatU;

TEST(KernelsLayerNorm, MatchesTorchDefinition) {
  // C = 131 (prime), offset inputs so the mean matters.
  const HostMat x = random_host(23, 131, 31, -2.0, 3.0);
  const HostVec g = random_host_vec(131, 32, 0.5, 1.5);
  const HostVec b = random_host_vec(131, 33, -0.5, 0.5);
  Mat y("y", 23, 131);
  k::layernorm(space(), y, to_device(x), to_device(g), to_device(b), 1e-5f);
  EXPECT_TRUE(all_close(to_host(y), layernorm_ref(x, g, b, 1e-5), kLayerNormAtol, kLayerNormRtol));
}

TEST(KernelsLayerNorm, InPlaceAndConstantRows) {
  HostMat x = random_host(9, 64, 34, -1.0, 1.0);
  // A constant row: variance 0, output = beta (eps keeps it finite).
  for (std::size_t c = 0; c < 64; ++c) x(4, c) = 2.5f;
  const HostVec g = random_host_vec(64, 35, 0.5, 1.5);
  const HostVec b = random_host_vec(64, 36, -0.5, 0.5);
  Mat xy = to_device(x);
  k::layernorm(space(), xy, xy, to_device(g), to_device(b), 1e-5f);  // in place
  const HostMat got = to_host(xy);
  EXPECT_TRUE(all_close(got, layernorm_ref(x, g, b, 1e-5), kLayerNormAtol, kLayerNormRtol));
  for (std::size_t c = 0; c < 64; ++c) EXPECT_EQ(got(4, c), b(c));
}

// ------------------------------------------------------- element-wise ops

TEST(KernelsActivations, BiasReluAndBiasResidualAreTheUnfusedPassesBitForBit) {
  HostMat x = random_host(17, 33, 41);
  x(0, 0) = std::numeric_limits<real>::quiet_NaN();
  x(0, 1) = -0.0f;
  const HostMat y = random_host(17, 33, 42);
  const HostVec b = random_host_vec(33, 43);

  for (const bool with_bias : {true, false}) {
    const ConstVec bias = with_bias ? ConstVec(to_device(b)) : ConstVec();
    const auto bias_at = [&](std::size_t j) { return with_bias ? b(j) : 0.0f; };

    Mat d = to_device(x);
    k::bias_relu(space(), d, bias);
    const HostMat r = to_host(d);
    EXPECT_TRUE(std::isnan(r(0, 0)));  // as torch.relu
    for (std::size_t i = 0; i < 17; ++i)
      for (std::size_t j = 0; j < 33; ++j)
        if (!(i == 0 && j == 0)) {
          const real t = with_bias ? x(i, j) + b(j) : x(i, j);
          EXPECT_EQ(float_bits(r(i, j)), float_bits(t < 0.0f ? 0.0f : t)) << i << ", " << j;
        }

    Mat e = to_device(x);
    k::add_bias_residual(space(), e, to_device(y), bias);
    const HostMat s = to_host(e);
    for (std::size_t i = 0; i < 17; ++i)
      for (std::size_t j = 0; j < 33; ++j)
        if (!(i == 0 && j == 0)) {
          const real t = with_bias ? y(i, j) + bias_at(j) : y(i, j);
          EXPECT_EQ(float_bits(s(i, j)), float_bits(x(i, j) + t)) << i << ", " << j;
        }
  }
  Mat e = to_device(x);
  EXPECT_THROW(k::add_bias_residual(space(), e, Mat("bad", 17, 32), ConstVec()), Error);
  EXPECT_THROW(k::bias_relu(space(), e, Vec("bad", 32)), Error);
}

// ------------------------------------------------------------ embeddings

TEST(KernelsEmbedding, GatherIsExactRowCopy) {
  const std::size_t batch = 3, seq = 7, vocab = 50, dim = 21;
  const HostMat table = random_host(vocab, dim, 51);
  HostIntMat tokens("tokens", batch, seq);
  std::mt19937 gen(52);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t) tokens(b, t) = static_cast<int>(gen() % vocab);
  tokens(0, 0) = 0;
  tokens(2, 6) = static_cast<int>(vocab - 1);  // both ends of the table
  Mat out("out", batch * seq, dim);
  k::embedding_gather(space(), out, to_device(tokens), to_device(table));
  const HostMat got = to_host(out);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t)
      for (std::size_t d = 0; d < dim; ++d)
        ASSERT_EQ(got(b * seq + t, d), table(tokens(b, t), d)) << "b=" << b << " t=" << t;
  EXPECT_THROW(k::embedding_gather(space(), Mat("bad", batch * seq, dim + 1), to_device(tokens),
                                   to_device(table)),
               Error);
}

TEST(KernelsEmbedding, OptPositionsLeftAndRightPadding) {
  const HostIntMat mask = int_mat({
      {1, 1, 1, 1, 1, 1},  // no padding
      {0, 0, 0, 1, 1, 1},  // left padding
      {1, 1, 1, 1, 0, 0},  // right padding
      {0, 0, 0, 0, 0, 0},  // all padding
      {0, 1, 1, 0, 1, 0},  // holes: the formula still holds
  });
  // Hugging Face: (cumsum(mask, 1) * mask - 1), written out by hand.
  const std::vector<std::vector<int>> expected = {
      {0, 1, 2, 3, 4, 5},       {-1, -1, -1, 0, 1, 2}, {0, 1, 2, 3, -1, -1},
      {-1, -1, -1, -1, -1, -1}, {-1, 0, 1, -1, 2, -1},
  };
  IntMat pos("pos", 5, 6);
  k::positions_from_mask(space(), pos, to_device(mask));
  const HostIntMat got = to_host(pos);
  for (std::size_t b = 0; b < 5; ++b)
    for (std::size_t t = 0; t < 6; ++t)
      EXPECT_EQ(got(b, t), expected[b][t]) << "b=" << b << " t=" << t;
}

TEST(KernelsEmbedding, AddPositionalUsesOffsetRows) {
  const std::size_t batch = 2, seq = 5, dim = 11, max_pos = 8;
  const HostIntMat mask = int_mat({{0, 0, 1, 1, 1}, {1, 1, 1, 1, 0}});
  IntMat pos("pos", batch, seq);
  k::positions_from_mask(space(), pos, to_device(mask));
  const HostIntMat p = to_host(pos);
  const HostMat table = random_host(max_pos + 2, dim, 61);
  const HostMat x = random_host(batch * seq, dim, 62);
  Mat d = to_device(x);
  k::add_positional(space(), d, pos, to_device(table));  // offset 2, as OPT
  const HostMat got = to_host(d);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t)
      for (std::size_t c = 0; c < dim; ++c)
        ASSERT_EQ(got(b * seq + t, c), x(b * seq + t, c) + table(p(b, t) + 2, c))
            << "b=" << b << " t=" << t;
  // Padding (pos -1) reads table row 1, the first real token row 2.
  EXPECT_EQ(got(0, 0), x(0, 0) + table(1, 0));
  EXPECT_EQ(got(2, 0), x(2, 0) + table(2, 0));
}

TEST(KernelsEmbedding, GatherRows) {
  const HostMat x = random_host(10, 13, 71);
  const HostIntVec rows = int_vec({9, 0, 4, 4});
  Mat out("out", 4, 13);
  k::gather_rows(space(), out, to_device(x), to_device(rows));
  const HostMat got = to_host(out);
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 13; ++c) EXPECT_EQ(got(r, c), x(rows(r), c));
}

TEST(KernelsEmbedding, MarkRowsIsTheSetOfTokensAndExtras) {
  const HostIntMat tokens = int_mat({{3, 3, 7, 1}, {0, 7, 1, 1}});
  const HostIntVec extra = int_vec({11, 3});
  IntVec used("used", 12);
  Kokkos::deep_copy(used, 5);  // stale contents must be cleared
  k::mark_rows(space(), used, to_device(tokens), to_device(extra));
  const HostIntVec got = to_host(used);
  const std::vector<int> expected = {1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};  // {0, 1, 3, 7, 11}
  for (std::size_t r = 0; r < expected.size(); ++r) EXPECT_EQ(got(r), expected[r]) << "row " << r;
}

// ------------------------------------------------------------- attention

/// Causal + key-padding attention from the definition, in double. Queries
/// with no visible key give zeros (the kernel's documented convention).
Ref attention_ref(const HostMat& q, const HostMat& kk, const HostMat& v, const HostIntMat& mask,
                  int heads, double scale) {
  const std::size_t batch = mask.extent(0), seq = mask.extent(1), channels = q.extent(1);
  const std::size_t hd = channels / heads;
  Ref out(batch * seq, channels);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < std::size_t(heads); ++h)
      for (std::size_t i = 0; i < seq; ++i) {
        std::vector<double> scores;
        std::vector<std::size_t> keys;
        for (std::size_t j = 0; j <= i; ++j) {
          if (mask(b, j) == 0) continue;
          double s = 0.0;
          for (std::size_t d = 0; d < hd; ++d)
            s += double(q(b * seq + i, h * hd + d)) * double(kk(b * seq + j, h * hd + d));
          scores.push_back(scale * s);
          keys.push_back(j);
        }
        if (keys.empty()) continue;  // stays 0
        const double lse = logsumexp(scores);
        for (std::size_t d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (std::size_t n = 0; n < keys.size(); ++n)
            acc += std::exp(scores[n] - lse) * double(v(b * seq + keys[n], h * hd + d));
          out(b * seq + i, h * hd + d) = acc;
        }
      }
  return out;
}

/// The two attention implementations on interleaved (B*T, C) q, k, v: the
/// reference kernel, or split_heads -> attention_heads -> merge_heads.
enum class AttentionPath { reference, heads };
const AttentionPath kAttentionPaths[] = {AttentionPath::reference, AttentionPath::heads};
const char* name(AttentionPath p) { return p == AttentionPath::reference ? "reference" : "heads"; }

HostMat run_attention(AttentionPath path, const HostMat& q, const HostMat& kk, const HostMat& v,
                      const HostIntMat& mask, int heads, real scale) {
  const std::size_t rows = q.extent(0), channels = q.extent(1);
  const int seq = static_cast<int>(mask.extent(1));
  Mat out("out", rows, channels);
  Kokkos::deep_copy(out, 123.0f);  // every element must be overwritten
  if (path == AttentionPath::reference) {
    k::attention(space(), out, to_device(q), to_device(kk), to_device(v), to_device(mask), heads,
                 scale);
    return to_host(out);
  }
  const std::size_t hd = channels / heads;
  Mat qh("qh", rows * heads, hd), kh("kh", rows * heads, hd), vh("vh", rows * heads, hd);
  Mat oh("oh", rows * heads, hd), scores("scores", seq, seq);
  Kokkos::deep_copy(oh, 321.0f);
  Kokkos::deep_copy(scores, std::numeric_limits<real>::quiet_NaN());  // stale scratch is harmless
  k::split_heads(space(), qh, to_device(q), ConstVec(), heads, seq);
  k::split_heads(space(), kh, to_device(kk), ConstVec(), heads, seq);
  k::split_heads(space(), vh, to_device(v), ConstVec(), heads, seq);
  k::attention_heads(space(), oh, qh, kh, vh, to_device(mask), heads, heads, scale, scores);
  k::merge_heads(space(), out, oh, heads, seq);
  return to_host(out);
}

TEST(KernelsAttention, SplitAndMergeHeadsAreExactReorderings) {
  const int heads = 3, seq = 5;
  const std::size_t batch = 2, hd = 4, channels = heads * hd;
  const HostMat x = random_host(batch * seq, channels, 71);
  const HostVec b = random_host_vec(channels, 72);
  Mat hm("hm", batch * seq * heads, hd), back("back", batch * seq, channels);
  k::split_heads(space(), hm, to_device(x), to_device(b), heads, seq);
  const HostMat got = to_host(hm);
  for (std::size_t bb = 0; bb < batch; ++bb)
    for (std::size_t h = 0; h < std::size_t(heads); ++h)
      for (std::size_t t = 0; t < std::size_t(seq); ++t)
        for (std::size_t d = 0; d < hd; ++d)
          EXPECT_EQ(float_bits(got((bb * heads + h) * seq + t, d)),
                    float_bits(x(bb * seq + t, h * hd + d) + b(h * hd + d)));
  k::split_heads(space(), hm, to_device(x), ConstVec(), heads, seq);
  k::merge_heads(space(), back, hm, heads, seq);
  const HostMat round_trip = to_host(back);
  for (std::size_t r = 0; r < batch * seq; ++r)
    for (std::size_t c = 0; c < channels; ++c) EXPECT_EQ(float_bits(round_trip(r, c)), float_bits(x(r, c)));
  EXPECT_THROW(k::split_heads(space(), hm, to_device(x), ConstVec(), 5, seq), Error);  // 5 ∤ 12
  EXPECT_THROW(k::split_heads(space(), hm, to_device(x), ConstVec(), heads, 3), Error);  // 3 ∤ 10
  EXPECT_THROW(k::merge_heads(space(), back, Mat("small", 6, hd), heads, seq), Error);
}

TEST(KernelsAttention, CausalWithLeftRightPaddingAndEmptyRows) {
  const int heads = 3;
  const std::size_t seq = 13, hd = 16, channels = heads * hd;
  const HostIntMat mask = int_mat({
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // no padding
      {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // left: queries 0..3 see no key
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},  // right padding
      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},  // all padding: zeros everywhere
      {1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 1},  // holes: generic masking rule
  });
  const std::size_t batch = mask.extent(0);
  const HostMat q = random_host(batch * seq, channels, 81);
  const HostMat kk = random_host(batch * seq, channels, 82);
  const HostMat v = random_host(batch * seq, channels, 83);
  const real scale = 1.0f / std::sqrt(real(hd));

  const Ref ref = attention_ref(q, kk, v, mask, heads, scale);
  // Tolerance, from |q|, |k|, |v| <= 1. Each score is a float dot product of
  // length hd, scaled: error <= gamma_{hd+1} * scale * hd (in any summation
  // order). It enters exp() as an absolute error, i.e. a relative error of
  // each probability; the max-subtracted normalisation doubles it (numerator
  // and denominator). The weighted sum of |v| <= 1 over <= T keys adds
  // gamma_{T+1}, the division one more u.
  const double score_err = dot_bound(hd + 1, scale * hd);
  const double atol = 2.0 * score_err + dot_bound(seq + 2, 1.0) + 4 * kFloatU;

  for (const AttentionPath path : kAttentionPaths) {
    SCOPED_TRACE(name(path));
    const HostMat got = run_attention(path, q, kk, v, mask, heads, scale);
    EXPECT_TRUE(all_close(got, ref, atol, 0.0));
    // Fully masked query rows are exactly zero, not NaN.
    for (std::size_t c = 0; c < channels; ++c) {
      EXPECT_EQ(got(1 * seq + 0, c), 0.0f);
      EXPECT_EQ(got(1 * seq + 3, c), 0.0f);
      EXPECT_EQ(got(3 * seq + 7, c), 0.0f);
    }
    // The first real token of a left-padded row attends only to itself.
    for (std::size_t c = 0; c < channels; ++c) EXPECT_EQ(got(1 * seq + 4, c), v(1 * seq + 4, c));
  }
}

TEST(KernelsAttention, LargeScoresStayFinite) {
  // Scores around +-200: a softmax without max subtraction overflows float.
  const int heads = 2;
  const std::size_t seq = 9, hd = 8, channels = heads * hd;
  HostIntMat mask("mask", 1, seq);
  Kokkos::deep_copy(mask, 1);
  const HostMat q = random_host(seq, channels, 91, 4.0, 5.0);
  const HostMat kk = random_host(seq, channels, 92, 4.0, 6.0);
  const HostMat v = random_host(seq, channels, 93);
  const real scale = 1.0f;
  // Scores up to 8 * 5 * 6 = 240: the score error bound scales with them.
  const double score_err = dot_bound(hd + 1, 240.0);
  const double atol = 2.0 * score_err + dot_bound(seq + 2, 1.0) + 4 * kFloatU;
  for (const AttentionPath path : kAttentionPaths) {
    SCOPED_TRACE(name(path));
    EXPECT_TRUE(all_close(run_attention(path, q, kk, v, mask, heads, scale),
                          attention_ref(q, kk, v, mask, heads, scale), atol, 0.0));
  }
}

TEST(KernelsAttention, ShapeErrorsThrow) {
  Mat q("q", 6, 8);
  IntMat mask("mask", 2, 3);
  EXPECT_THROW(k::attention(space(), q, q, q, q, mask, 3, 1.0f), Error);  // 3 does not divide 8
  IntMat mask_bad("mask_bad", 2, 4);
  EXPECT_THROW(k::attention(space(), q, q, q, q, mask_bad, 2, 1.0f), Error);
  // Head-major (B*H*T, hd) = (12, 4) for B = 2, T = 3, H = 2.
  Mat h("h", 12, 4), o("o", 12, 4), scores("scores", 3, 3);
  EXPECT_NO_THROW(k::attention_heads(space(), o, h, h, h, mask, 2, 2, 1.0f, scores));
  EXPECT_THROW(k::attention_heads(space(), o, h, h, h, mask, 3, 3, 1.0f, scores), Error);
  EXPECT_THROW(k::attention_heads(space(), o, h, h, h, mask, 2, 2, 1.0f, Mat("s", 3, 4)), Error);
  EXPECT_THROW(k::attention_heads(space(), Mat("o", 12, 3), h, h, h, mask, 2, 2, 1.0f, scores), Error);
}

// ---------------------------------------------------------------- losses

TEST(KernelsLosses, CausalLmLossWithIgnoreIndexAndHugeLogits) {
  const std::size_t rows = 11, vocab = 1001;
  HostMat logits = random_host(rows, vocab, 101, -4.0, 4.0);
  // Row 2 shifted by +1000: exp() overflows without max subtraction, even in double.
  for (std::size_t c = 0; c < vocab; ++c) logits(2, c) += 1000.0f;
  const HostIntVec targets =
      int_vec({5, k::kIgnoreIndex, 1000, 0, 17, k::kIgnoreIndex, 999, 3, 500, 42, 7});

  double ref_sum = 0.0;
  double ref_count = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    if (targets(r) == k::kIgnoreIndex) continue;
    std::vector<double> z(vocab);
    for (std::size_t c = 0; c < vocab; ++c) z[c] = logits(r, c);
    ref_sum += logsumexp(z) - z[targets(r)];
    ref_count += 1.0;
  }

  k::LossSums sums = k::make_loss_sums();
  k::causal_lm_loss(space(), sums, to_device(logits), to_device(targets));
  const k::LossValue got = k::read_loss(space(), sums);
  EXPECT_EQ(got.count, ref_count);
  // Everything is double after reading the float logits, so the only
  // difference is the summation order: a few double ulps of terms <= ~1e3.
  EXPECT_NEAR(got.sum, ref_sum, 1e-9 * std::fabs(ref_sum))
      << "max rel err " << std::fabs(got.sum - ref_sum) / std::fabs(ref_sum);
  EXPECT_NEAR(got.mean(), ref_sum / ref_count, 1e-9 * std::fabs(ref_sum / ref_count));

  // The sums are overwritten, not accumulated, by a second call.
  k::causal_lm_loss(space(), sums, to_device(logits), to_device(targets));
  EXPECT_EQ(k::read_loss(space(), sums).sum, got.sum);
}

TEST(KernelsLosses, AllIgnoredAndEmpty) {
  k::LossSums sums = k::make_loss_sums();
  const HostMat logits = random_host(3, 7, 111);
  k::causal_lm_loss(space(), sums, to_device(logits),
                    to_device(int_vec({k::kIgnoreIndex, k::kIgnoreIndex, k::kIgnoreIndex})));
  k::LossValue v = k::read_loss(space(), sums);
  EXPECT_EQ(v.sum, 0.0);
  EXPECT_EQ(v.count, 0.0);
  EXPECT_EQ(v.mean(), 0.0);
  k::causal_lm_loss(space(), sums, Mat("none", 0, 7), IntVec("none", 0));
  v = k::read_loss(space(), sums);
  EXPECT_EQ(v.count, 0.0);
  EXPECT_THROW(k::causal_lm_loss(space(), k::LossSums("short", 1), to_device(logits),
                                 to_device(int_vec({0, 1, 2}))),
               Error);
  EXPECT_THROW(k::causal_lm_loss(space(), sums, to_device(logits), to_device(int_vec({0, 1}))),
               Error);
}

TEST(KernelsLosses, CandidateLogitsAreHeadColumns) {
  const std::size_t rows = 6, dim = 97, vocab = 40;
  const HostMat hidden = random_host(rows, dim, 121);
  const HostMat table = random_host(vocab, dim, 122);
  const HostIntVec cand = int_vec({7, 0, 39, 7, 12});  // repeats allowed
  Mat out("out", rows, cand.extent(0));
  k::candidate_logits(space(), out, to_device(hidden), to_device(table), to_device(cand));
  Ref ref(rows, cand.extent(0));
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cand.extent(0); ++c)
      for (std::size_t d = 0; d < dim; ++d)
        ref(r, c) += double(hidden(r, d)) * double(table(cand(c), d));
  // Accumulated in double, then rounded once to float: half an ulp, u |ref|,
  // plus the double summation error (~1e-14 here) as atol.
  EXPECT_TRUE(all_close(to_host(out), ref, 1e-12, kFloatU));
}

TEST(KernelsLosses, ClassificationLossTiesAndIgnore) {
  const std::size_t rows = 7, n_cand = 4;
  HostMat z = random_host(rows, n_cand, 131, -3.0, 3.0);
  // Ties: row 1 has its max at 1 and 3 -> 1; row 4 is constant -> 0.
  z(1, 0) = 0.5f;
  z(1, 1) = 2.0f;
  z(1, 2) = -1.0f;
  z(1, 3) = 2.0f;
  for (std::size_t c = 0; c < n_cand; ++c) z(4, c) = 1.25f;
  // Row 5 is huge: needs the max subtraction.
  for (std::size_t c = 0; c < n_cand; ++c) z(5, c) += 2000.0f;
  const HostIntVec gold = int_vec({0, 3, k::kIgnoreIndex, 2, 1, 3, 0});

  double ref_sum = 0.0, ref_count = 0.0;
  std::vector<int> ref_pred(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> row(n_cand);
    for (std::size_t c = 0; c < n_cand; ++c) row[c] = z(r, c);
    // std::max_element returns the first maximum: lowest index on ties.
    ref_pred[r] = static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
    if (gold(r) == k::kIgnoreIndex) continue;
    ref_sum += logsumexp(row) - row[gold(r)];
    ref_count += 1.0;
  }
  EXPECT_EQ(ref_pred[1], 1);
  EXPECT_EQ(ref_pred[4], 0);

  k::LossSums sums = k::make_loss_sums();
  IntVec pred("pred", rows);
  k::classification_loss(space(), sums, pred, to_device(z), to_device(gold));
  const k::LossValue got = k::read_loss(space(), sums);
  const HostIntVec p = to_host(pred);
  for (std::size_t r = 0; r < rows; ++r) EXPECT_EQ(p(r), ref_pred[r]) << "row " << r;
  EXPECT_EQ(got.count, ref_count);
  // Double throughout; only the order of a handful of additions differs.
  EXPECT_NEAR(got.sum, ref_sum, 1e-12 * std::fabs(ref_sum));
}

// ----------------------------------------------------------- determinism

TEST(KernelsDeterminism, RepeatedRunsAreBitIdentical) {
  // The same forward slice twice must give identical bits (replicas must stay
  // identical, DESIGN.md invariant 3). Trivial on Serial, meaningful on
  // threaded and GPU backends.
  const std::size_t batch = 2, seq = 10, channels = 24, vocab = 33;
  const int heads = 4;
  const HostIntMat mask = int_mat({{0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 0, 0, 0}});
  const Mat x = to_device(random_host(batch * seq, channels, 141));
  const Mat wq = to_device(random_host(channels, channels, 142));
  const Mat head = to_device(random_host(vocab, channels, 143));
  const Vec g = to_device(random_host_vec(channels, 144, 0.5, 1.5));
  const Vec b = to_device(random_host_vec(channels, 145));
  const IntMat dmask = to_device(mask);
  std::vector<int> tg(batch * seq);
  for (std::size_t i = 0; i < tg.size(); ++i) tg[i] = static_cast<int>((7 * i) % vocab);
  tg[3] = k::kIgnoreIndex;
  const IntVec targets = to_device(int_vec(tg));

  auto run = [&](HostMat& logits_out, k::LossValue& loss_out) {
    Mat n("n", batch * seq, channels), q("q", batch * seq, channels);
    Mat a("a", batch * seq, channels), logits("logits", batch * seq, vocab);
    k::layernorm(space(), n, x, g, b);
    k::linear(space(), q, n, wq, b);
    k::attention(space(), a, q, q, q, dmask, heads, 0.5f);
    k::add_bias_residual(space(), a, x, ConstVec());
    k::linear(space(), logits, a, head, ConstVec());
    k::LossSums sums = k::make_loss_sums();
    k::causal_lm_loss(space(), sums, logits, targets);
    loss_out = k::read_loss(space(), sums);
    logits_out = to_host(logits);
  };
  HostMat l1, l2;
  k::LossValue v1, v2;
  run(l1, v1);
  run(l2, v2);
  EXPECT_TRUE(bit_equal(l1, l2));
  EXPECT_EQ(std::memcmp(&v1.sum, &v2.sum, sizeof(double)), 0) << v1.sum << " vs " << v2.sum;
  EXPECT_EQ(v1.count, v2.count);
}

// ------------------------------------------------------- Llama's kernels

Ref rmsnorm_ref(const HostMat& x, const HostVec& g, double eps) {
  const std::size_t rows = x.extent(0), cols = x.extent(1);
  Ref y(rows, cols);
  for (std::size_t r = 0; r < rows; ++r) {
    double sq = 0.0;
    for (std::size_t c = 0; c < cols; ++c) sq += double(x(r, c)) * double(x(r, c));
    const double inv = 1.0 / std::sqrt(sq / cols + eps);
    for (std::size_t c = 0; c < cols; ++c) y(r, c) = double(x(r, c)) * inv * g(c);
  }
  return y;
}

TEST(KernelsRmsNorm, MatchesLlamaDefinitionInPlaceAndOnZeroRows) {
  // C = 131 (prime), offset inputs: RMSNorm must not subtract the mean.
  HostMat x = random_host(23, 131, 151, -2.0, 3.0);
  for (std::size_t c = 0; c < 131; ++c) x(5, c) = 0.0f;  // a zero row: eps keeps it finite
  const HostVec g = random_host_vec(131, 152, 0.5, 1.5);
  // Two float roundings after exact statistics: the normalised value
  // (|.| <= sqrt(C) < 12) and its product with gamma (<= 1.5): <= 2 * 18 u.
  const double atol = 2 * 18 * kFloatU, rtol = 2 * kFloatU;
  Mat y("y", 23, 131);
  k::rmsnorm(space(), y, to_device(x), to_device(g), 1e-6f);
  const HostMat got = to_host(y);
  EXPECT_TRUE(all_close(got, rmsnorm_ref(x, g, 1e-6), atol, rtol));
  for (std::size_t c = 0; c < 131; ++c) EXPECT_EQ(got(5, c), 0.0f);
  Mat xy = to_device(x);
  k::rmsnorm(space(), xy, xy, to_device(g), 1e-6f);  // in place
  EXPECT_TRUE(bit_equal(to_host(xy), got));
  EXPECT_THROW(k::rmsnorm(space(), y, to_device(x), Vec("g", 130), 1e-6f), Error);
  EXPECT_THROW(k::rmsnorm(space(), y, to_device(x), to_device(g), 0.0f), Error);
}

TEST(KernelsSwiGlu, SiluMulMatchesDefinitionWithAndWithoutBiases) {
  const HostMat gate = random_host(17, 37, 161, -8.0, 8.0);
  const HostMat up = random_host(17, 37, 162);
  const HostVec bg = random_host_vec(37, 163), bu = random_host_vec(37, 164);
  for (const bool with_bias : {false, true}) {
    SCOPED_TRACE(with_bias ? "biases" : "no biases");
    Mat g = to_device(gate);
    k::silu_mul(space(), g, to_device(up), with_bias ? ConstVec(to_device(bg)) : ConstVec(),
                with_bias ? ConstVec(to_device(bu)) : ConstVec());
    Ref want(17, 37);
    for (std::size_t r = 0; r < 17; ++r)
      for (std::size_t c = 0; c < 37; ++c) {
        // The float sums first, as the projections' biases are added in float.
        const double t = with_bias ? double(gate(r, c) + bg(c)) : double(gate(r, c));
        const double u = with_bias ? double(up(r, c) + bu(c)) : double(up(r, c));
        want(r, c) = t / (1.0 + std::exp(-t)) * u;
      }
    // exp to a few ulp, then an add, a division and a product: 8 u relative.
    EXPECT_TRUE(all_close(to_host(g), want, 1e-30, 8 * kFloatU));
  }
  Mat g = to_device(gate);
  EXPECT_THROW(k::silu_mul(space(), g, Mat("up", 17, 36), ConstVec(), ConstVec()), Error);
  EXPECT_THROW(k::silu_mul(space(), g, to_device(up), Vec("b", 3), ConstVec()), Error);
}

TEST(KernelsRotary, MatchesRotateHalfDefinitionAtMaskPositions) {
  const int heads = 3;
  const std::size_t seq = 11, hd = 10, half = hd / 2;
  const HostIntMat mask = int_mat({{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                                   {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
                                   {1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0}});
  const std::size_t batch = mask.extent(0);
  IntMat pos("pos", batch, seq);
  k::positions_from_mask(space(), pos, to_device(mask));
  const HostIntMat p = to_host(pos);
  const HostMat x = random_host(batch * heads * seq, hd, 171);
  for (const double theta : {10000.0, 500000.0}) {
    SCOPED_TRACE(theta);
    Mat xr = to_device(x), cos("cos", batch * seq, half), sin("sin", batch * seq, half);
    k::rotary_tables(space(), cos, sin, pos, theta);
    k::rotary_embedding(space(), xr, cos, sin, heads, static_cast<int>(seq));
    const HostMat got = to_host(xr);
    Ref want(x.extent(0), hd);
    for (std::size_t row = 0; row < x.extent(0); ++row) {
      const std::size_t t = row % seq, b = row / seq / heads;
      for (std::size_t i = 0; i < half; ++i) {
        const double inv_freq = 1.0 / std::pow(theta, double(2 * i) / double(hd));
        const double angle = p(b, t) * inv_freq;
        want(row, i) = x(row, i) * std::cos(angle) - x(row, i + half) * std::sin(angle);
        want(row, i + half) = x(row, i + half) * std::cos(angle) + x(row, i) * std::sin(angle);
      }
      if (p(b, t) == 0) {  // position 0 is the identity, bit for bit
        for (std::size_t d = 0; d < hd; ++d) EXPECT_EQ(got(row, d), x(row, d)) << row;
      }
    }
    // The frequency and the angle are float as in transformers: the angle's
    // relative error is a few u, at most |angle| <= 10 rad here, so
    // ~10 * 3u of phase, times |x| <= 1, plus the rotation's own roundings.
    EXPECT_TRUE(all_close(got, want, 10 * 3 * kFloatU * 2 + 8 * kFloatU, 0.0));
  }
  Mat cos("cos", batch * seq, half), sin("sin", batch * seq, half);
  k::rotary_tables(space(), cos, sin, pos, 10000.0);
  Mat bad("bad", batch * heads * seq, 9);
  EXPECT_THROW(k::rotary_embedding(space(), bad, cos, sin, heads, static_cast<int>(seq)), Error);
  Mat xr = to_device(x);
  EXPECT_THROW(k::rotary_embedding(space(), xr, cos, sin, heads + 1, static_cast<int>(seq)), Error);
  EXPECT_THROW(k::rotary_tables(space(), cos, Mat("s", batch * seq, half + 1), pos, 10000.0), Error);
  EXPECT_THROW(k::rotary_tables(space(), cos, sin, pos, 1.0), Error);
}

TEST(KernelsAttention, GroupedQueryHeadsReadTheirSharedKeyValueHead) {
  // 6 query heads over 2 key/value heads: query head h reads kv head h / 3,
  // which the reference sees as k and v with each kv head repeated
  // (transformers' repeat_kv).
  const int heads = 6, kv_heads = 2;
  const std::size_t seq = 9, hd = 8, group = heads / kv_heads;
  const HostIntMat mask = int_mat({{1, 1, 1, 1, 1, 1, 1, 1, 1},
                                   {0, 0, 1, 1, 1, 1, 1, 1, 1},
                                   {1, 1, 1, 1, 1, 0, 0, 0, 0}});
  const std::size_t batch = mask.extent(0), rows = batch * seq;
  const HostMat q = random_host(rows, heads * hd, 181);
  const HostMat kk = random_host(rows, kv_heads * hd, 182);
  const HostMat v = random_host(rows, kv_heads * hd, 183);
  HostMat k_rep("k_rep", rows, heads * hd), v_rep("v_rep", rows, heads * hd);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t h = 0; h < std::size_t(heads); ++h)
      for (std::size_t d = 0; d < hd; ++d) {
        k_rep(r, h * hd + d) = kk(r, (h / group) * hd + d);
        v_rep(r, h * hd + d) = v(r, (h / group) * hd + d);
      }
  const real scale = 1.0f / std::sqrt(real(hd));
  const Ref ref = attention_ref(q, k_rep, v_rep, mask, heads, scale);

  Mat qh("qh", rows * heads, hd), kh("kh", rows * kv_heads, hd), vh("vh", rows * kv_heads, hd);
  Mat oh("oh", rows * heads, hd), scores("scores", seq, seq), out("out", rows, heads * hd);
  k::split_heads(space(), qh, to_device(q), ConstVec(), heads, static_cast<int>(seq));
  k::split_heads(space(), kh, to_device(kk), ConstVec(), kv_heads, static_cast<int>(seq));
  k::split_heads(space(), vh, to_device(v), ConstVec(), kv_heads, static_cast<int>(seq));
  k::attention_heads(space(), oh, qh, kh, vh, to_device(mask), heads, kv_heads, scale, scores);
  k::merge_heads(space(), out, oh, heads, static_cast<int>(seq));
  const double atol = 2.0 * dot_bound(hd + 1, scale * hd) + dot_bound(seq + 2, 1.0) + 4 * kFloatU;
  EXPECT_TRUE(all_close(to_host(out), ref, atol, 0.0));
  // The same as plain multi-head attention on the repeated k and v, bit for bit.
  Mat kh_rep("kh_rep", rows * heads, hd), vh_rep("vh_rep", rows * heads, hd);
  Mat oh_rep("oh_rep", rows * heads, hd);
  k::split_heads(space(), kh_rep, to_device(k_rep), ConstVec(), heads, static_cast<int>(seq));
  k::split_heads(space(), vh_rep, to_device(v_rep), ConstVec(), heads, static_cast<int>(seq));
  k::attention_heads(space(), oh_rep, qh, kh_rep, vh_rep, to_device(mask), heads, heads, scale,
                     scores);
  EXPECT_TRUE(bit_equal(to_host(oh), to_host(oh_rep)));
  EXPECT_THROW(k::attention_heads(space(), oh, qh, kh, vh, to_device(mask), heads, 4, scale,
                                  scores),
               Error);  // 4 does not divide 6
}

}  // namespace
