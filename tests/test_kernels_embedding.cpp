// Embedding gathers, OPT positions and row sets (src/kernels/embedding.hpp),
// exact against plain loops (tests/support/kernel_check.hpp).

#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "kernels/embedding.hpp"
#include "support/kernel_check.hpp"

namespace {

using namespace distzo;
using namespace distzo::test_support;
namespace k = distzo::kernels;

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

}  // namespace
