// Losses (src/kernels/losses.hpp): causal-LM and classification cross entropy
// against logsumexp in double, candidate logits against a dot product
// (tests/support/kernel_check.hpp says how kernels are compared).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "core/error.hpp"
#include "kernels/losses.hpp"
#include "support/kernel_check.hpp"

namespace {

using namespace distzo;
using namespace distzo::test_support;
namespace k = distzo::kernels;

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

}  // namespace
