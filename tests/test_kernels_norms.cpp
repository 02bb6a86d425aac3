// LayerNorm (OPT) and RMSNorm (Llama) (src/kernels/layernorm.hpp) against
// their torch definitions (tests/support/kernel_check.hpp says how kernels are
// compared).

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>

#include "core/error.hpp"
#include "kernels/layernorm.hpp"
#include "support/kernel_check.hpp"

namespace {

using namespace distzo;
using namespace distzo::test_support;
namespace k = distzo::kernels;

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

// ------------------------------------------------- rmsnorm (Llama, Gemma 3)

Ref rmsnorm_ref(const HostMat& x, const HostVec& g, double eps, double offset = 0) {
  const std::size_t rows = x.extent(0), cols = x.extent(1);
  Ref y(rows, cols);
  for (std::size_t r = 0; r < rows; ++r) {
    double sq = 0.0;
    for (std::size_t c = 0; c < cols; ++c) sq += double(x(r, c)) * double(x(r, c));
    const double inv = 1.0 / std::sqrt(sq / cols + eps);
    for (std::size_t c = 0; c < cols; ++c) y(r, c) = double(x(r, c)) * inv * (offset + g(c));
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

TEST(KernelsRmsNorm, GemmaScalesByOnePlusTheWeights) {
  // Gemma3RMSNorm: weights w near 0 scale by 1 + w (a float sum, then the
  // product): three roundings; offset 0 is the Llama norm bit for bit.
  const HostMat x = random_host(19, 67, 153, -2.0, 3.0);
  const HostVec w = random_host_vec(67, 154, -0.5, 0.5);
  Mat y("y", 19, 67);
  k::rmsnorm(space(), y, to_device(x), to_device(w), 1e-6f, 1.0f);
  EXPECT_TRUE(all_close(to_host(y), rmsnorm_ref(x, w, 1e-6, 1.0), 3 * 18 * kFloatU, 3 * kFloatU));
  Mat plain("plain", 19, 67), offset0("offset0", 19, 67);
  k::rmsnorm(space(), plain, to_device(x), to_device(w), 1e-6f);
  k::rmsnorm(space(), offset0, to_device(x), to_device(w), 1e-6f, 0.0f);
  EXPECT_TRUE(bit_equal(to_host(plain), to_host(offset0)));
  // 1 + w is not w: a kernel that ignored the offset fails here.
  EXPECT_FALSE(all_close(to_host(y), rmsnorm_ref(x, w, 1e-6), 1e-3, 1e-3));
}

}  // namespace
