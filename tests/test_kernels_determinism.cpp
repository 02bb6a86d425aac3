// A forward slice through several kernels, run twice, gives the same bits
// (tests/support/kernel_check.hpp).

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"
#include "support/kernel_check.hpp"

namespace {

using namespace distzo;
using namespace distzo::test_support;
namespace k = distzo::kernels;

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

}  // namespace
