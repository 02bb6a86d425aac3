// Element-wise kernels (src/kernels/activations.hpp): bias + ReLU and bias +
// residual bit for bit, SwiGLU's silu_mul and GeGLU's gelu_tanh_mul against
// their definitions
// (tests/support/kernel_check.hpp says how kernels are compared).

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>

#include "core/error.hpp"
#include "kernels/activations.hpp"
#include "kernels/host_gemm.hpp"
#include "support/kernel_check.hpp"

namespace {

using namespace distzo;
using namespace distzo::test_support;
namespace k = distzo::kernels;

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

// --------------------------------------------------- silu_mul (Llama's SwiGLU)

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

// ---------------------------------------------- gelu_tanh_mul (Gemma 3's GeGLU)

TEST(KernelsGeGlu, GeluTanhMulMatchesTorchsTanhForm) {
  // torch's gelu(approximate="tanh"): t/2 (1 + tanh(u)), u = sqrt(2/pi) (t +
  // 0.044715 t^3), in double as t / (1 + e^(-2u)) — the same function, where
  // 1 + tanh(u) would cancel in the negative tail even in double.
  HostMat gate = random_host(17, 37, 181, -9.0, 9.0);
  gate(0, 0) = 0.0f;
  gate(0, 1) = -30.0f;  // e^(-2u) overflows: exactly -0 * up
  gate(0, 2) = 30.0f;   // e^(-2u) -> 0: t * up
  const HostMat up = random_host(17, 37, 182);
  Mat g = to_device(gate);
  k::gelu_tanh_mul(space(), g, to_device(up));
  Ref want(17, 37);
  for (std::size_t r = 0; r < 17; ++r)
    for (std::size_t c = 0; c < 37; ++c) {
      const double t = gate(r, c);
      const double inner = std::sqrt(2.0 / M_PI) * (t + 0.044715 * t * t * t);
      want(r, c) = t / (1.0 + std::exp(-2.0 * inner)) * double(up(r, c));
      if (std::abs(inner) < 5) {  // away from the tails, torch's form agrees
        EXPECT_NEAR(want(r, c), 0.5 * t * (1.0 + std::tanh(inner)) * double(up(r, c)), 1e-12);
      }
    }
  // The cube and inner (4 roundings, relative error carried through exp as
  // |2u| ~ 10^3 u at t = 9 near the tails), exp to 2 ulp, then the division
  // and the product: within 1e-5 relative where the value is not tiny.
  const HostMat got = to_host(g);
  EXPECT_TRUE(all_close(got, want, 1e-30, 1e-5));
  EXPECT_EQ(got(0, 0), 0.0f);
  EXPECT_EQ(got(0, 2), 30.0f * up(0, 2));
  // SiLU is not GELU: the same inputs through silu_mul differ.
  Mat s = to_device(gate);
  k::silu_mul(space(), s, to_device(up), ConstVec(), ConstVec());
  EXPECT_FALSE(all_close(to_host(s), want, 1e-3, 1e-3));
  EXPECT_THROW(k::gelu_tanh_mul(space(), g, Mat("up", 17, 36)), Error);
}

TEST(KernelsSwiGlu, HostThreadsGiveTheBitsOfOneThread) {
  // Past kernels::detail::host_threads_min_elements the rows go to the host
  // GEMM's threads (for_each_in_rows): the same bits as one thread.
  const std::size_t rows = 301, cols = 257;
  const HostMat gate = random_host(rows, cols, 171, -8.0, 8.0);
  const HostMat up = random_host(rows, cols, 172);
  std::vector<HostMat> got;
  for (const int threads : {1, 2, 3}) {
    k::set_gemm_threads(threads, k::GemmPath::tiled);
    Mat g = to_device(gate);
    k::silu_mul(space(), g, to_device(up), ConstVec(), ConstVec());
    got.push_back(to_host(g));
  }
  k::set_gemm_threads(1, k::GemmPath::tiled);
  EXPECT_TRUE(bit_equal(got[1], got[0]));
  EXPECT_TRUE(bit_equal(got[2], got[0]));
}

}  // namespace
