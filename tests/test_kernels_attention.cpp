// Attention (src/kernels/attention.hpp): the reference kernel and the
// head-major path against causal + key-padding attention from the definition,
// grouped-query heads, head reorderings and rotary embeddings
// (tests/support/kernel_check.hpp says how kernels are compared).

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "kernels/attention.hpp"
#include "kernels/embedding.hpp"
#include "kernels/host_gemm.hpp"
#include "support/kernel_check.hpp"

namespace {

using namespace distzo;
using namespace distzo::test_support;
namespace k = distzo::kernels;

// ------------------------------------------------------------- attention

/// Causal + key-padding attention from the definition, in double. Queries
/// with no visible key give zeros (the kernel's documented convention).
Ref attention_ref(const HostMat& q, const HostMat& kk, const HostMat& v, const HostIntMat& mask,
                  int heads, double scale, std::size_t window = 0) {
  const std::size_t batch = mask.extent(0), seq = mask.extent(1), channels = q.extent(1);
  const std::size_t hd = channels / heads;
  Ref out(batch * seq, channels);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t h = 0; h < std::size_t(heads); ++h)
      for (std::size_t i = 0; i < seq; ++i) {
        std::vector<double> scores;
        std::vector<std::size_t> keys;
        for (std::size_t j = 0; j <= i; ++j) {
          if (mask(b, j) == 0 || (window > 0 && i - j >= window)) continue;
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

/// Interleaved (rows, KV*hd) keys or values with each key/value head repeated
/// for the heads / KV query heads that read it (transformers' repeat_kv):
/// (rows, H*hd), what plain multi-head attention takes.
HostMat repeat_kv(const HostMat& x, int heads, int kv_heads) {
  const std::size_t rows = x.extent(0), hd = x.extent(1) / std::size_t(kv_heads);
  const std::size_t group = std::size_t(heads / kv_heads);
  HostMat out("repeated", rows, std::size_t(heads) * hd);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t h = 0; h < std::size_t(heads); ++h)
      for (std::size_t d = 0; d < hd; ++d) out(r, h * hd + d) = x(r, (h / group) * hd + d);
  return out;
}

/// A float result as a reference, to compare two kernel results.
Ref as_ref(const HostMat& m) {
  Ref r(m.extent(0), m.extent(1));
  for (std::size_t i = 0; i < r.rows; ++i)
    for (std::size_t j = 0; j < r.cols; ++j) r(i, j) = m(i, j);
  return r;
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
  Mat oh("oh", rows * heads, hd);
  Vec scores("scores", seq * seq);  // one pair at a time
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
    for (std::size_t c = 0; c < channels; ++c)
      EXPECT_EQ(float_bits(round_trip(r, c)), float_bits(x(r, c)));
  EXPECT_THROW(k::split_heads(space(), hm, to_device(x), ConstVec(), 5, seq), Error);    // 5 ∤ 12
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
  Mat h("h", 12, 4), o("o", 12, 4);
  Vec scores("scores", 9);
  EXPECT_NO_THROW(k::attention_heads(space(), o, h, h, h, mask, 2, 2, 1.0f, scores));
  EXPECT_THROW(k::attention_heads(space(), o, h, h, h, mask, 3, 3, 1.0f, scores), Error);
  // Fewer floats than one pair's 1 x 3 x 3 scores.
  EXPECT_THROW(k::attention_heads(space(), o, h, h, h, mask, 2, 2, 1.0f, Vec("s", 8)), Error);
  EXPECT_THROW(k::attention_heads(space(), Mat("o", 12, 3), h, h, h, mask, 2, 2, 1.0f, scores),
               Error);
}

// ---------------------------------- rotary embedding and grouped-query heads (Llama)

/// Plain RoPE's inverse frequencies 1 / theta^(2i/hd), in float, as a (1, hd/2) table.
Mat plain_inverse(double theta, std::size_t hd) {
  HostMat host("inverse", 1, hd / 2);
  for (std::size_t i = 0; i < hd / 2; ++i)
    host(0, i) = 1.0f / std::pow(static_cast<float>(theta),
                                 static_cast<float>(2 * i) / static_cast<float>(hd));
  return to_device(host);
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
    k::rotary_tables(space(), cos, sin, pos, plain_inverse(theta, hd), 0, 1.0f);
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
  const Mat inverse = plain_inverse(10000.0, hd);
  k::rotary_tables(space(), cos, sin, pos, inverse, 0, 1.0f);
  Mat bad("bad", batch * heads * seq, 9);
  EXPECT_THROW(k::rotary_embedding(space(), bad, cos, sin, heads, static_cast<int>(seq)), Error);
  Mat xr = to_device(x);
  EXPECT_THROW(k::rotary_embedding(space(), xr, cos, sin, heads + 1, static_cast<int>(seq)), Error);
  EXPECT_THROW(
      k::rotary_tables(space(), cos, Mat("s", batch * seq, half + 1), pos, inverse, 0, 1.0f),
      Error);
  EXPECT_THROW(k::rotary_tables(space(), cos, sin, pos, Mat("i", 1, half + 1), 0, 1.0f), Error);
  EXPECT_THROW(k::rotary_tables(space(), cos, sin, pos, Mat("i", 3, half), 0, 1.0f), Error);
}

TEST(KernelsRotary, TwoSetsChooseByEachRowsLengthAndTheFactorScalesBothTables) {
  // LongRoPE's short and long sets: rows of 4, 7 and 9 real tokens, long
  // after 6 tokens, so rows 1 and 2 take the long set, row 0 the short one,
  // whatever the others in its batch. Each table entry must equal the
  // one-set table of its row's set, times the factor, to the bit.
  const std::size_t seq = 9, half = 4;
  const HostIntMat mask = int_mat(
      {{1, 1, 1, 1, 0, 0, 0, 0, 0}, {0, 0, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1}});
  const std::size_t batch = mask.extent(0), tokens = batch * seq;
  IntMat pos("pos", batch, seq);
  k::positions_from_mask(space(), pos, to_device(mask));
  const HostMat both = random_host(2, half, 191, 0.01, 1.0);
  HostMat set0("set0", 1, half), set1("set1", 1, half);
  for (std::size_t i = 0; i < half; ++i) {
    set0(0, i) = both(0, i);
    set1(0, i) = both(1, i);
  }
  const float factor = 1.1875f;
  Mat cos("cos", tokens, half), sin("sin", tokens, half);
  k::rotary_tables(space(), cos, sin, pos, to_device(both), 6, factor);
  Mat cos0("cos0", tokens, half), sin0("sin0", tokens, half);
  Mat cos1("cos1", tokens, half), sin1("sin1", tokens, half);
  k::rotary_tables(space(), cos0, sin0, pos, to_device(set0), 0, 1.0f);
  k::rotary_tables(space(), cos1, sin1, pos, to_device(set1), 0, 1.0f);
  const HostMat c = to_host(cos), s = to_host(sin);
  const HostMat c0 = to_host(cos0), s0 = to_host(sin0), c1 = to_host(cos1), s1 = to_host(sin1);
  for (std::size_t token = 0; token < tokens; ++token) {
    const bool long_row = token / seq != 0;
    for (std::size_t i = 0; i < half; ++i) {
      EXPECT_EQ(c(token, i), (long_row ? c1 : c0)(token, i) * factor) << token << ", " << i;
      EXPECT_EQ(s(token, i), (long_row ? s1 : s0)(token, i) * factor) << token << ", " << i;
    }
  }
}

TEST(KernelsAttention, GroupedQueryHeadsReadTheirSharedKeyValueHead) {
  // 6 query heads over 2 key/value heads: query head h reads kv head h / 3,
  // which the reference sees as k and v with each kv head repeated
  // (transformers' repeat_kv).
  const int heads = 6, kv_heads = 2;
  const std::size_t seq = 9, hd = 8;
  const HostIntMat mask = int_mat(
      {{1, 1, 1, 1, 1, 1, 1, 1, 1}, {0, 0, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 0, 0, 0, 0}});
  const std::size_t batch = mask.extent(0), rows = batch * seq;
  const HostMat q = random_host(rows, heads * hd, 181);
  const HostMat kk = random_host(rows, kv_heads * hd, 182);
  const HostMat v = random_host(rows, kv_heads * hd, 183);
  const HostMat k_rep = repeat_kv(kk, heads, kv_heads), v_rep = repeat_kv(v, heads, kv_heads);
  const real scale = 1.0f / std::sqrt(real(hd));
  const Ref ref = attention_ref(q, k_rep, v_rep, mask, heads, scale);

  Mat qh("qh", rows * heads, hd), kh("kh", rows * kv_heads, hd), vh("vh", rows * kv_heads, hd);
  Mat oh("oh", rows * heads, hd), out("out", rows, heads * hd);
  Vec scores("scores", k::attention_scores_floats(batch, heads, kv_heads, seq));
  k::split_heads(space(), qh, to_device(q), ConstVec(), heads, static_cast<int>(seq));
  k::split_heads(space(), kh, to_device(kk), ConstVec(), kv_heads, static_cast<int>(seq));
  k::split_heads(space(), vh, to_device(v), ConstVec(), kv_heads, static_cast<int>(seq));
  k::attention_heads(space(), oh, qh, kh, vh, to_device(mask), heads, kv_heads, scale, scores);
  k::merge_heads(space(), out, oh, heads, static_cast<int>(seq));
  const double atol = 2.0 * dot_bound(hd + 1, scale * hd) + dot_bound(seq + 2, 1.0) + 4 * kFloatU;
  EXPECT_TRUE(all_close(to_host(out), ref, atol, 0.0));
  // The same as plain multi-head attention on the repeated k and v, up to the
  // rounding of the scores GEMM's other shape (group * T rows, not T).
  Mat kh_rep("kh_rep", rows * heads, hd), vh_rep("vh_rep", rows * heads, hd);
  Mat oh_rep("oh_rep", rows * heads, hd);
  k::split_heads(space(), kh_rep, to_device(k_rep), ConstVec(), heads, static_cast<int>(seq));
  k::split_heads(space(), vh_rep, to_device(v_rep), ConstVec(), heads, static_cast<int>(seq));
  k::attention_heads(space(), oh_rep, qh, kh_rep, vh_rep, to_device(mask), heads, heads, scale,
                     scores);
  EXPECT_TRUE(all_close(to_host(oh), as_ref(to_host(oh_rep)), 4 * kFloatU, 4 * kFloatU));
  EXPECT_THROW(
      k::attention_heads(space(), oh, qh, kh, vh, to_device(mask), heads, 4, scale, scores),
      Error);  // 4 does not divide 6
}

TEST(KernelsAttention, SlidingWindowMatchesTheReferenceOnEveryPath) {
  // A query sees itself and the window - 1 keys before it. Windows of at
  // most T/2 take the chunked path (keys past the window never computed),
  // larger ones the masked full scores, >= T plain causal attention to the
  // bit; the naive kernel is checked too. GQA (6 over 2), padding on both
  // sides, T = 17 so the last chunk is short.
  const int heads = 6, kv_heads = 2;
  const std::size_t seq = 17, hd = 8;
  HostIntMat mask("mask", 3, seq);
  for (std::size_t t = 0; t < seq; ++t) {
    mask(0, t) = 1;
    mask(1, t) = t >= 4 ? 1 : 0;  // left-padded
    mask(2, t) = t < 11 ? 1 : 0;  // right-padded
  }
  const std::size_t batch = mask.extent(0), rows = batch * seq;
  const HostMat q = random_host(rows, heads * hd, 401);
  const HostMat kk = random_host(rows, kv_heads * hd, 402);
  const HostMat v = random_host(rows, kv_heads * hd, 403);
  const HostMat k_rep = repeat_kv(kk, heads, kv_heads), v_rep = repeat_kv(v, heads, kv_heads);
  const real scale = 1.0f / std::sqrt(real(hd));
  Mat qh("qh", rows * heads, hd), kh("kh", rows * kv_heads, hd), vh("vh", rows * kv_heads, hd);
  Vec scores("scores", k::attention_scores_floats(batch, heads, kv_heads, seq));
  k::split_heads(space(), qh, to_device(q), ConstVec(), heads, static_cast<int>(seq));
  k::split_heads(space(), kh, to_device(kk), ConstVec(), kv_heads, static_cast<int>(seq));
  k::split_heads(space(), vh, to_device(v), ConstVec(), kv_heads, static_cast<int>(seq));
  const auto heads_path = [&](std::int64_t window) {
    Mat oh("oh", rows * heads, hd), out("out", rows, heads * hd);
    k::attention_heads(space(), oh, qh, kh, vh, to_device(mask), heads, kv_heads, scale, scores,
                       window);
    k::merge_heads(space(), out, oh, heads, static_cast<int>(seq));
    return to_host(out);
  };
  const HostMat causal = heads_path(0);
  const double atol = 2.0 * dot_bound(hd + 1, scale * hd) + dot_bound(seq + 2, 1.0) + 4 * kFloatU;
  for (const std::size_t window : {1, 2, 3, 5, 8, 9, 16, 17, 40}) {
    SCOPED_TRACE(::testing::Message() << "window " << window);
    const Ref ref = attention_ref(q, k_rep, v_rep, mask, heads, scale, window);
    const HostMat got = heads_path(static_cast<std::int64_t>(window));
    EXPECT_TRUE(all_close(got, ref, atol, 0.0));
    Mat naive("naive", rows, heads * hd);
    k::attention(space(), naive, to_device(q), to_device(k_rep), to_device(v_rep), to_device(mask),
                 heads, scale, static_cast<int>(window));
    EXPECT_TRUE(all_close(to_host(naive), ref, atol, 0.0));
    if (window >= seq) {
      EXPECT_TRUE(bit_equal(got, causal));
    } else {
      EXPECT_FALSE(bit_equal(got, causal));  // the window hides something
    }
  }
}

TEST(KernelsAttention, PairsGiveTheSameBitsAtAnyThreadCountAndSlotCount) {
  // attention_heads computes its (batch row, key/value head) pairs as many at
  // a time as its scratch holds, on the host spread over the GEMM's threads:
  // neither may change a bit (DESIGN.md invariant 6). 4 batch rows x 2 kv
  // heads = 8 pairs, 3 query heads each, padded on both sides; T = 70 puts
  // the scores GEMM (210 x 70 x 16) past one tile's shape on some BLAS.
  const int heads = 6, kv_heads = 2;
  const std::size_t batch = 4, seq = 70, hd = 16, group = heads / kv_heads;
  HostIntMat mask("mask", batch, seq);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < seq; ++t) mask(b, t) = t >= 3 * b && t + 5 * b < seq ? 1 : 0;
  const std::size_t rows = batch * seq;
  const Mat qh = to_device(random_host(rows * heads, hd, 301));
  const Mat kh = to_device(random_host(rows * kv_heads, hd, 302));
  const Mat vh = to_device(random_host(rows * kv_heads, hd, 303));
  const IntMat m = to_device(mask);
  const real scale = 1.0f / std::sqrt(real(hd));
  const std::size_t pair = group * seq * seq;
  ASSERT_EQ(k::attention_scores_floats(batch, heads, kv_heads, seq),
            std::min(batch * kv_heads * pair, std::max(pair, k::attention_scores_budget)));
  std::int64_t window = 0;
  const auto run = [&](int threads, std::size_t slots) {
    k::set_gemm_threads(threads, k::GemmPath::tiled);
    EXPECT_EQ(k::attention_slots(slots * pair + pair / 2, batch * kv_heads, group, seq), slots);
    Vec scores("scores", slots * pair + pair / 2);  // a partial slot stays unused
    Mat oh("oh", rows * heads, hd);
    Kokkos::deep_copy(oh, 321.0f);
    k::attention_heads(space(), oh, qh, kh, vh, m, heads, kv_heads, scale, scores, window);
    k::set_gemm_threads(1, k::GemmPath::tiled);
    return to_host(oh);
  };
  // No window; a window of 30 (masked full scores); of 12 (chunked: 6
  // chunks per pair, 48 tasks, as many at once as the scores hold).
  for (const std::int64_t w : {std::int64_t(0), std::int64_t(30), std::int64_t(12)}) {
    window = w;
    const HostMat one = run(1, 1);
    for (const int threads : {1, 2, 3})
      for (const std::size_t slots : {std::size_t(1), std::size_t(3), batch * kv_heads}) {
        SCOPED_TRACE(::testing::Message()
                     << threads << " threads, " << slots << " slots, window " << w);
        EXPECT_TRUE(bit_equal(run(threads, slots), one));
      }
  }
}

}  // namespace
