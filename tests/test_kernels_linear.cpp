// gemm and linear (src/kernels/linear.hpp) against naive loops
// (tests/support/kernel_check.hpp says how kernels are compared).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/fp.hpp"
#include "core/storage_dtype.hpp"
#include "kernels/linear.hpp"
#include "support/kernel_check.hpp"

namespace {

using namespace distzo;
using namespace distzo::test_support;
namespace k = distzo::kernels;

// ------------------------------------------------------------------ gemm

/// op(A) element (i, l) of a row-major host matrix.
double op_at(const HostMat& a, bool trans, std::size_t i, std::size_t l) {
  return trans ? a(l, i) : a(i, l);
}

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

// ------------------------------------------------ linear on 2-byte words

/// A host matrix's values as 16-bit words of `dtype` (round to nearest).
std::vector<std::uint16_t> words_of(const HostMat& a, StorageDtype dtype) {
  std::vector<std::uint16_t> w(a.extent(0) * a.extent(1));
  for (std::size_t r = 0; r < a.extent(0); ++r)
    for (std::size_t c = 0; c < a.extent(1); ++c)
      w[r * a.extent(1) + c] =
          static_cast<std::uint16_t>(storage::store(a(r, c), dtype, Rounding::nearest, 0u));
  return w;
}

TEST(KernelsLinear, TwoByteInputsAreTheRoundedProductsSummedInOrder) {
  // y = round(x) · w16ᵀ + b: each product of two 16-bit values is exact in
  // float32, so the naive loop below (float sums over i in order, then the
  // bias) gives the host reference's bits; the double sum bounds it too.
  const std::size_t rows = 23, in = 45, out = 19;
  for (StorageDtype dtype : {StorageDtype::bf16, StorageDtype::fp16}) {
    SCOPED_TRACE(to_string(dtype));
    const HostMat x = random_host(rows, in, 31);
    const HostMat w = random_host(out, in, 32);
    const HostVec b = random_host_vec(out, 33);
    const std::vector<std::uint16_t> x16 = words_of(x, dtype), w16 = words_of(w, dtype);
    const HalfVec w_words = to_device(w16);
    const k::WeightMatrix matrix(dtype, ConstHalfMat(w_words.data(), out, in));
    HalfVec scratch("x_words", rows * in + 5);
    Mat y("y", rows, out);
    k::linear(space(), y, to_device(x), matrix, to_device(b), scratch);
    const HostMat got = to_host(y);

    // The input rounding: the scratch holds round(x), row-major.
    auto sh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), scratch);
    for (std::size_t i = 0; i < rows * in; ++i) ASSERT_EQ(sh(i), x16[i]) << "x word " << i;

    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t o = 0; o < out; ++o) {
        float sum = 0.0f;
        double exact = 0.0;
        for (std::size_t i = 0; i < in; ++i) {
          const float xv = storage::load(x16[r * in + i], dtype);
          const float wv = storage::load(w16[o * in + i], dtype);
          ASSERT_EQ(double(xv) * double(wv), double(xv * wv)) << "a product is not exact";
          sum += xv * wv;
          exact += double(xv) * double(wv);
        }
        sum += b(o);
        exact += b(o);
#if !defined(KOKKOS_ENABLE_CUDA)
        ASSERT_EQ(fp::to_bits(got(r, o)), fp::to_bits(sum)) << "y(" << r << ", " << o << ")";
#endif
        // cuBLAS sums in its own order: within a dot product's bound.
        ASSERT_NEAR(got(r, o), exact, 1e-5 * (1.0 + std::fabs(exact)))
            << "y(" << r << ", " << o << ")";
      }

    // A float32 matrix through the same entry point is the float linear.
    Mat y32("y32", rows, out), y32_ref("y32_ref", rows, out);
    const Mat wd = to_device(w);
    k::linear(space(), y32, to_device(x), k::WeightMatrix(ConstMat(wd)), to_device(b), HalfVec());
    k::linear(space(), y32_ref, to_device(x), wd, to_device(b));
    const HostMat a = to_host(y32), e = to_host(y32_ref);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t o = 0; o < out; ++o) ASSERT_EQ(fp::to_bits(a(r, o)), fp::to_bits(e(r, o)));

    // Too little scratch for the rounded input is an error, not an overrun.
    HalfVec small("small", rows * in - 1);
    EXPECT_THROW(k::linear(space(), y, to_device(x), matrix, to_device(b), small), Error);
  }
}

TEST(KernelsLinear, ShapeErrorsThrow) {
  Mat y("y", 4, 6), x("x", 4, 5), w("w", 6, 5), w_bad("w_bad", 5, 6);
  Vec b_bad("b_bad", 5);
  EXPECT_THROW(k::linear(space(), y, x, w_bad, ConstVec()), Error);
  EXPECT_THROW(k::linear(space(), y, x, w, b_bad), Error);
  Mat y_bad("y_bad", 4, 5);
  EXPECT_THROW(k::linear(space(), y_bad, x, w, ConstVec()), Error);
}

}  // namespace
