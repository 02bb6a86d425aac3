// The fast attention path (kernels/attention.hpp): head-major reordering,
// two GEMMs per (batch row, head) and the masked softmax between them.
#include "kernels/attention.hpp"

#include "core/error.hpp"
#include "core/math.hpp"
#include "core/fp.hpp"
#include "kernels/common.hpp"
#include "kernels/linear.hpp"

#include <cstdint>

namespace distzo::kernels {

namespace {

/// (B, H, T, hd) of an interleaved (B*T, C) matrix; throws unless T and H fit.
struct HeadShape {
  std::int64_t batch, heads, seq, head_dim;
  HeadShape(const char* kernel, std::size_t rows, std::size_t channels, int heads_, int seq_)
      : batch(0), heads(heads_), seq(seq_), head_dim(0) {
    DISTZO_REQUIRE(heads_ > 0 && seq_ > 0 && channels % static_cast<std::size_t>(heads_) == 0 &&
                       rows % static_cast<std::size_t>(seq_) == 0,
                   "distzo::kernels::" << kernel << ": " << heads_ << " heads and sequence length "
                                       << seq_ << " do not divide a (" << rows << ", " << channels
                                       << ") matrix");
    batch = static_cast<std::int64_t>(rows) / seq;
    head_dim = static_cast<std::int64_t>(channels) / heads;
  }
  std::int64_t head_major_rows() const { return batch * heads * seq; }
  /// f(head-major row, interleaved row, interleaved column, d) for every
  /// element: a team per head-major row, its threads over the hd contiguous
  /// columns (a vectorised loop on the host, coalesced accesses on a GPU).
  template <class Element>
  void for_each_element(const char* label, const ExecSpace& space, const Element& f) const {
    const std::int64_t H = heads, T = seq, hd = head_dim;
    Kokkos::parallel_for(
        label, TeamPolicy(space, static_cast<int>(head_major_rows()), Kokkos::AUTO),
        KOKKOS_LAMBDA(const TeamMember& member) {
          const std::int64_t row = member.league_rank();  // (b*H + h)*T + t
          const std::int64_t t = row % T, h = row / T % H, b = row / T / H;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(member, hd), [&](const std::int64_t d) {
            f(row, b * T + t, h * hd + d, d);
          });
        });
  }
};

/// Row i of scores (one head of batch row b) becomes the softmax over the
/// keys j <= i with mask(b, j) != 0, and exactly 0 elsewhere (j > i too: the
/// next GEMM multiplies every column).
void masked_softmax(const ExecSpace& space, const Mat& scores, const ConstIntMat& mask, int b) {
  const Mat s = scores;
  const ConstIntMat m = mask;
  const int seq = static_cast<int>(scores.extent(0));
  Kokkos::parallel_for(
      "distzo::attention_heads::softmax", TeamPolicy(space, seq, Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamMember& member) {
        const int i = member.league_rank();
        real row_max = 0;
        int visible = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, i + 1),
            [&](const int j, real& mx) {
              if (m(b, j) != 0 && s(i, j) > mx) mx = s(i, j);
            },
            Kokkos::Max<real>(row_max));
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, i + 1),
            [&](const int j, int& count) { count += m(b, j) != 0 ? 1 : 0; }, visible);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, seq), [&](const int j) {
          // fp::exp: a polynomial the host compiler vectorises (libm's expf is
          // a call per element), the same bits on every backend.
          const real e = fp::exp(s(i, j) - row_max);
          s(i, j) = visible != 0 && j <= i && m(b, j) != 0 ? e : real(0);
        });
        member.team_barrier();
        if (visible == 0) return;  // a row of zeros: the output row is zero
        real denom = 0;  // >= 1: the maximal key contributes exp(0)
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, i + 1), [&](const int j, real& acc) { acc += s(i, j); },
            denom);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, i + 1),
                             [&](const int j) { s(i, j) /= denom; });
      });
}

}  // namespace

void split_heads(const ExecSpace& space, const Mat& out, const ConstMat& x, const ConstVec& bias,
                 int heads, int seq) {
  const HeadShape shape("split_heads", x.extent(0), x.extent(1), heads, seq);
  DISTZO_REQUIRE(out.extent(0) == static_cast<std::size_t>(shape.head_major_rows()) &&
                     out.extent(1) == static_cast<std::size_t>(shape.head_dim),
                 "distzo::kernels::split_heads: out is (" << out.extent(0) << ", " << out.extent(1)
                     << "), expected (" << shape.head_major_rows() << ", " << shape.head_dim << ")");
  DISTZO_REQUIRE(bias.extent(0) == 0 || bias.extent(0) == x.extent(1),
                 "distzo::kernels::split_heads: bias has " << bias.extent(0) << " entries, expected "
                                                           << x.extent(1) << " (or 0)");
  if (x.size() == 0) return;
  const Mat o = out;
  const ConstMat xx = x;
  const ConstVec bb = bias;
  const bool has_bias = bias.extent(0) != 0;
  shape.for_each_element(
      "distzo::split_heads", space,
      KOKKOS_LAMBDA(const std::int64_t row, const std::int64_t r, const std::int64_t c,
                    const std::int64_t d) {
        o(row, d) = has_bias ? xx(r, c) + bb(c) : xx(r, c);
      });
}

void merge_heads(const ExecSpace& space, const Mat& out, const ConstMat& x, int heads, int seq) {
  const HeadShape shape("merge_heads", out.extent(0), out.extent(1), heads, seq);
  DISTZO_REQUIRE(x.extent(0) == static_cast<std::size_t>(shape.head_major_rows()) &&
                     x.extent(1) == static_cast<std::size_t>(shape.head_dim),
                 "distzo::kernels::merge_heads: x is (" << x.extent(0) << ", " << x.extent(1)
                     << "), expected (" << shape.head_major_rows() << ", " << shape.head_dim << ")");
  if (out.size() == 0) return;
  const Mat o = out;
  const ConstMat xx = x;
  shape.for_each_element(
      "distzo::merge_heads", space,
      KOKKOS_LAMBDA(const std::int64_t row, const std::int64_t r, const std::int64_t c,
                    const std::int64_t d) { o(r, c) = xx(row, d); });
}

void rotary_tables(const ExecSpace& space, const Mat& cos, const Mat& sin, const ConstIntMat& pos,
                   double theta) {
  const std::size_t tokens = pos.extent(0) * pos.extent(1), half = cos.extent(1);
  DISTZO_REQUIRE(cos.extent(0) == tokens && sin.extent(0) == tokens && sin.extent(1) == half &&
                     half > 0,
                 "distzo::kernels::rotary_tables: cos is (" << cos.extent(0) << ", " << half
                     << "), sin (" << sin.extent(0) << ", " << sin.extent(1)
                     << "), expected (B*T, hd/2) with B*T = " << tokens);
  DISTZO_REQUIRE(theta > 1, "distzo::kernels::rotary_tables: the base must exceed 1, got " << theta);
  const Mat c = cos, s = sin;
  const ConstIntMat p = pos;
  const std::int64_t T = static_cast<std::int64_t>(pos.extent(1));
  const float base = static_cast<float>(theta), dim = static_cast<float>(2 * half);
  Kokkos::parallel_for(
      "distzo::rotary_tables", MDRangePolicy2(space, {0, 0},
                                              {static_cast<std::int64_t>(tokens),
                                               static_cast<std::int64_t>(half)}),
      KOKKOS_LAMBDA(const std::int64_t token, const std::int64_t i) {
        // transformers: inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim)) in
        // float32, then the angle as a float32 product.
        const float inv_freq = 1.0f / math::pow(base, static_cast<float>(2 * i) / dim);
        const float angle = static_cast<float>(p(token / T, token % T)) * inv_freq;
        c(token, i) = math::cos(angle);
        s(token, i) = math::sin(angle);
      });
}

void rotary_embedding(const ExecSpace& space, const Mat& x, const ConstMat& cos,
                      const ConstMat& sin, int heads, int seq) {
  const std::size_t tokens = cos.extent(0), half = cos.extent(1);
  DISTZO_REQUIRE(heads > 0 && seq > 0 && tokens % static_cast<std::size_t>(seq) == 0 &&
                     x.extent(0) == tokens * static_cast<std::size_t>(heads) &&
                     x.extent(1) == 2 * half && sin.extent(0) == tokens && sin.extent(1) == half,
                 "distzo::kernels::rotary_embedding: x is (" << x.extent(0) << ", " << x.extent(1)
                     << "), tables (" << tokens << ", " << half << ") and (" << sin.extent(0)
                     << ", " << sin.extent(1) << "): expected x (B*H*T, hd) and tables (B*T, hd/2) for "
                     << heads << " heads and T = " << seq);
  if (x.size() == 0) return;
  const Mat xx = x;
  const ConstMat c = cos, s = sin;
  const std::int64_t H = heads, T = seq, h = static_cast<std::int64_t>(half);
  for_each_in_rows("distzo::rotary_embedding", space, x.extent(0), h,
                  KOKKOS_LAMBDA(const std::int64_t row, const std::int64_t i) {
                    const std::int64_t token = row / T / H * T + row % T;  // b*T + t
                    const float x1 = xx(row, i), x2 = xx(row, i + h);
                    const float cs = c(token, i), sn = s(token, i);
                    xx(row, i) = x1 * cs - x2 * sn;
                    xx(row, i + h) = x2 * cs + x1 * sn;
                  });
}

void attention_heads(const ExecSpace& space, const Mat& out, const ConstMat& q, const ConstMat& k,
                     const ConstMat& v, const ConstIntMat& mask, int heads, int kv_heads,
                     real scale, const Mat& scores) {
  const std::size_t batch = mask.extent(0), seq = mask.extent(1), head_dim = q.extent(1);
  const bool grouped = heads > 0 && kv_heads > 0 && heads % kv_heads == 0;
  DISTZO_REQUIRE(grouped, "distzo::kernels::attention_heads: " << heads << " query heads and "
                                                               << kv_heads
                                                               << " key/value heads: the second "
                                                                  "must divide the first");
  const std::size_t rows = batch * static_cast<std::size_t>(heads) * seq;
  const std::size_t kv_rows = batch * static_cast<std::size_t>(kv_heads) * seq;
  const auto shaped = [&](const auto& t, std::size_t r) {
    return t.extent(0) == r && t.extent(1) == head_dim;
  };
  DISTZO_REQUIRE(shaped(k, kv_rows) && shaped(v, kv_rows) && shaped(out, rows) &&
                     q.extent(0) == rows,
                 "distzo::kernels::attention_heads: q and out must be (B*H*T, hd) = ("
                     << rows << ", " << head_dim << "), k and v (B*KV*T, hd) = (" << kv_rows
                     << ", " << head_dim << ") for " << heads << " heads, " << kv_heads
                     << " key/value heads and a (" << batch << ", " << seq << ") mask; got q ("
                     << q.extent(0) << ", " << q.extent(1) << "), k (" << k.extent(0) << ", "
                     << k.extent(1) << "), v (" << v.extent(0) << ", " << v.extent(1)
                     << "), out (" << out.extent(0) << ", " << out.extent(1) << ")");
  DISTZO_REQUIRE(scores.extent(0) == seq && scores.extent(1) == seq,
                 "distzo::kernels::attention_heads: scores is (" << scores.extent(0) << ", "
                     << scores.extent(1) << "), expected (" << seq << ", " << seq << ")");
  if (rows == 0 || head_dim == 0) return;
  const std::size_t H = static_cast<std::size_t>(heads), KV = static_cast<std::size_t>(kv_heads);
  const std::size_t group = H / KV;
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t r0 = (b * H + h) * seq;
      const std::size_t kv0 = (b * KV + h / group) * seq;
      const auto head = Kokkos::make_pair(r0, r0 + seq);
      const auto kv_head = Kokkos::make_pair(kv0, kv0 + seq);
      gemm(space, "N", "T", scale, Kokkos::subview(q, head, Kokkos::ALL),
           Kokkos::subview(k, kv_head, Kokkos::ALL), real(0), scores);
      masked_softmax(space, scores, mask, static_cast<int>(b));
      gemm(space, "N", "N", real(1), scores, Kokkos::subview(v, kv_head, Kokkos::ALL), real(0),
           Kokkos::subview(out, head, Kokkos::ALL));
    }
  }
}

}  // namespace distzo::kernels
