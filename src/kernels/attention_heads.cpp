// The fast attention path (kernels/attention.hpp): head-major reordering,
// two GEMMs per (batch row, key/value head) and the masked softmax between
// them.
#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "core/fp.hpp"
#include "core/math.hpp"
#include "kernels/attention.hpp"
#include "kernels/common.hpp"
#include "kernels/host_gemm.hpp"
#include "kernels/linear.hpp"

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
          Kokkos::parallel_for(Kokkos::TeamThreadRange(member, hd),
                               [&](const std::int64_t d) { f(row, b * T + t, h * hd + d, d); });
        });
  }
};

/// One row of scores, query position i of batch row b against the `cols`
/// keys key0, key0 + 1, ..., becomes the softmax over the visible keys — j <=
/// i, i - j < window (0: no window), mask(b, j) != 0 — and exactly 0
/// elsewhere (later keys too: the next GEMM multiplies every column); a row
/// with no visible key becomes zeros. Sequential over the keys, so the host
/// and every backend sum in the same order. With key0 = 0 and no window the
/// keys' order and the operations are those of plain causal attention.
KOKKOS_INLINE_FUNCTION void masked_softmax_row(real* s, std::int64_t i, std::int64_t key0,
                                               std::int64_t cols, std::int64_t window,
                                               const ConstIntMat& mask, std::int64_t b) {
  // Columns [first, last] may be visible: not past i, not older than the window.
  const std::int64_t first = window > 0 && i - window + 1 > key0 ? i - window + 1 - key0 : 0;
  const std::int64_t last = i - key0 < cols - 1 ? i - key0 : cols - 1;
  real row_max = Kokkos::reduction_identity<real>::max();
  int visible = 0;
  for (std::int64_t j = first; j <= last; ++j) {
    if (mask(b, key0 + j) == 0) continue;
    ++visible;
    if (s[j] > row_max) row_max = s[j];
  }
  for (std::int64_t j = first; j <= last; ++j) {
    // fp::exp: a polynomial the host compiler vectorises (libm's expf is a
    // call per element), the same bits on every backend; no branch inside.
    const real e = fp::exp(s[j] - row_max);
    s[j] = (visible != 0) & (mask(b, key0 + j) != 0) ? e : real(0);
  }
  for (std::int64_t j = 0; j < first; ++j) s[j] = real(0);        // out of the window
  for (std::int64_t j = last + 1; j < cols; ++j) s[j] = real(0);  // the future: no exp
  if (visible == 0) return;  // a row of zeros: the output row is zero
  real denom = 0;            // >= 1: the maximal key contributes exp(0)
  for (std::int64_t j = first; j <= last; ++j) denom += s[j];
  for (std::int64_t j = first; j <= last; ++j) s[j] /= denom;
}

/// The (batch row, key/value head) pairs of one attention_heads call.
struct HeadPairs {
  Mat out;
  ConstMat q, k, v;
  ConstIntMat mask;
  real scale;
  std::int64_t heads, kv_heads, group, seq, head_dim;
  real* scores;            // slots of group*T*T floats
  std::int64_t window;     // keys a query sees at most (0: every earlier one)
  std::int64_t first = 0;  // the round's first pair

  std::int64_t batch_row(std::int64_t pair) const { return pair / kv_heads; }
  /// The first head-major row of the pair's query heads (and of its output).
  std::int64_t q_row(std::int64_t pair) const {
    return (pair / kv_heads * heads + pair % kv_heads * group) * seq;
  }
  std::int64_t kv_row(std::int64_t pair) const { return pair * seq; }  // (b*KV + g)*T
  std::int64_t score_rows() const { return group * seq; }
  real* slot(std::int64_t s) const { return scores + s * score_rows() * seq; }
};

/// Pair `first + task` of a round on the host: both GEMMs and the softmax on
/// one thread, in its own slot (host_parallel_tasks).
void host_pair(const void* context, std::int64_t task) {
  const HeadPairs& p = *static_cast<const HeadPairs*>(context);
  const std::int64_t pair = p.first + task, rows = p.score_rows();
  const auto u = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  real* s = p.slot(task);
  const std::size_t ldq = p.q.stride(0), ldk = p.k.stride(0), ldv = p.v.stride(0),
                    ldo = p.out.stride(0);
  host_tiled_gemm(false, true, u(rows), u(p.seq), u(p.head_dim), p.scale,
                  p.q.data() + u(p.q_row(pair)) * ldq, ldq, p.k.data() + u(p.kv_row(pair)) * ldk,
                  ldk, real(0), s, u(p.seq));
  const std::int64_t b = p.batch_row(pair);
  for (std::int64_t r = 0; r < rows; ++r)
    masked_softmax_row(s + r * p.seq, r % p.seq, 0, p.seq, p.window, p.mask, b);
  host_tiled_gemm(false, false, u(rows), u(p.head_dim), u(p.seq), real(1), s, u(p.seq),
                  p.v.data() + u(p.kv_row(pair)) * ldv, ldv, real(0),
                  p.out.data() + u(p.q_row(pair)) * ldo, ldo);
}

/// A round of `n` pairs on `space` through kernels::gemm, the softmax of all
/// their rows in one kernel.
void device_round(const ExecSpace& space, const HeadPairs& p, std::int64_t n) {
  const std::int64_t rows = p.score_rows(), T = p.seq;
  const auto range = [](std::int64_t r0, std::int64_t count) {
    return Kokkos::make_pair(static_cast<std::size_t>(r0), static_cast<std::size_t>(r0 + count));
  };
  const auto slot = [&](std::int64_t s) {
    return Mat(p.slot(s), static_cast<std::size_t>(rows), static_cast<std::size_t>(T));
  };
  for (std::int64_t s = 0; s < n; ++s) {
    const std::int64_t pair = p.first + s;
    gemm(space, "N", "T", p.scale, Kokkos::subview(p.q, range(p.q_row(pair), rows), Kokkos::ALL),
         Kokkos::subview(p.k, range(p.kv_row(pair), T), Kokkos::ALL), real(0), slot(s));
  }
  const ConstIntMat mask = p.mask;
  real* const scores = p.scores;
  const std::int64_t first = p.first, kv = p.kv_heads, window = p.window;
  Kokkos::parallel_for(
      "distzo::attention_heads::softmax", RangePolicy64(space, 0, n * rows),
      KOKKOS_LAMBDA(const std::int64_t row) {  // slot row / rows, its row row % rows
        const std::int64_t b = (first + row / rows) / kv;
        masked_softmax_row(scores + row * T, row % rows % T, 0, T, window, mask, b);
      });
  for (std::int64_t s = 0; s < n; ++s) {
    const std::int64_t pair = p.first + s;
    gemm(space, "N", "N", real(1), slot(s),
         Kokkos::subview(p.v, range(p.kv_row(pair), T), Kokkos::ALL), real(0),
         Kokkos::subview(p.out, range(p.q_row(pair), rows), Kokkos::ALL));
  }
}

/// Windowed attention's work when the window is at most half the sequence:
/// each (batch row, key/value head) pair's queries in chunks of `window`
/// positions, each chunk against the keys its window reaches (at most
/// 2 window - 1 of them), so keys older than the window are skipped, not
/// only masked: scores cost T (2W - 1) per head rather than T².
struct WindowChunks {
  HeadPairs pairs;         // the operands; its `first` unused
  std::int64_t chunks;     // per pair: ceil(T / window)
  std::int64_t first = 0;  // the round's first task (pair * chunks + chunk)

  std::int64_t chunk_rows() const { return pairs.window; }
  std::int64_t max_keys() const { return 2 * pairs.window - 1; }
  std::int64_t slot_floats() const { return pairs.group * chunk_rows() * max_keys(); }
  real* slot(std::int64_t s) const { return pairs.scores + s * slot_floats(); }

  /// Task `task`: its pair, first query t0, query count and key range [k0, k0 + keys).
  struct Task {
    std::int64_t pair, t0, rows, k0, keys;
  };
  Task task(std::int64_t index) const {
    Task t;
    t.pair = index / chunks;
    t.t0 = index % chunks * chunk_rows();
    t.rows = std::min(chunk_rows(), pairs.seq - t.t0);
    t.k0 = std::max<std::int64_t>(0, t.t0 - pairs.window + 1);
    t.keys = t.t0 + t.rows - t.k0;
    return t;
  }
};

/// Task `first + index` of a round on the host, in its own slot: for each
/// query head of the pair, its chunk's scores, softmax and output.
void host_window_task(const void* context, std::int64_t index) {
  const WindowChunks& w = *static_cast<const WindowChunks*>(context);
  const HeadPairs& p = w.pairs;
  const WindowChunks::Task t = w.task(w.first + index);
  const auto u = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  const std::size_t ldq = p.q.stride(0), ldk = p.k.stride(0), ldv = p.v.stride(0),
                    ldo = p.out.stride(0);
  const std::int64_t b = p.batch_row(t.pair);
  real* s = w.slot(index);
  for (std::int64_t head = 0; head < p.group; ++head) {
    const std::int64_t q0 = p.q_row(t.pair) + head * p.seq + t.t0, k0 = p.kv_row(t.pair) + t.k0;
    host_tiled_gemm(false, true, u(t.rows), u(t.keys), u(p.head_dim), p.scale,
                    p.q.data() + u(q0) * ldq, ldq, p.k.data() + u(k0) * ldk, ldk, real(0), s,
                    u(t.keys));
    for (std::int64_t r = 0; r < t.rows; ++r)
      masked_softmax_row(s + r * t.keys, t.t0 + r, t.k0, t.keys, p.window, p.mask, b);
    host_tiled_gemm(false, false, u(t.rows), u(p.head_dim), u(t.keys), real(1), s, u(t.keys),
                    p.v.data() + u(k0) * ldv, ldv, real(0), p.out.data() + u(q0) * ldo, ldo);
  }
}

/// The same task on `space` through kernels::gemm and a softmax kernel.
void device_window_task(const ExecSpace& space, const WindowChunks& w, std::int64_t index) {
  const HeadPairs& p = w.pairs;
  const WindowChunks::Task t = w.task(index);
  const auto range = [](std::int64_t r0, std::int64_t count) {
    return Kokkos::make_pair(static_cast<std::size_t>(r0), static_cast<std::size_t>(r0 + count));
  };
  const Mat s(w.slot(0), static_cast<std::size_t>(t.rows), static_cast<std::size_t>(t.keys));
  const ConstIntMat mask = p.mask;
  const std::int64_t b = p.batch_row(t.pair), t0 = t.t0, k0 = t.k0, keys = t.keys,
                     window = p.window;
  real* const scores = s.data();
  for (std::int64_t head = 0; head < p.group; ++head) {
    const std::int64_t q0 = p.q_row(t.pair) + head * p.seq + t.t0;
    gemm(space, "N", "T", p.scale, Kokkos::subview(p.q, range(q0, t.rows), Kokkos::ALL),
         Kokkos::subview(p.k, range(p.kv_row(t.pair) + t.k0, t.keys), Kokkos::ALL), real(0), s);
    Kokkos::parallel_for(
        "distzo::attention_heads::window_softmax", RangePolicy64(space, 0, t.rows),
        KOKKOS_LAMBDA(const std::int64_t r) {
          masked_softmax_row(scores + r * keys, t0 + r, k0, keys, window, mask, b);
        });
    gemm(space, "N", "N", real(1), s,
         Kokkos::subview(p.v, range(p.kv_row(t.pair) + t.k0, t.keys), Kokkos::ALL), real(0),
         Kokkos::subview(p.out, range(q0, t.rows), Kokkos::ALL));
  }
}

}  // namespace

void split_heads(const ExecSpace& space, const Mat& out, const ConstMat& x, const ConstVec& bias,
                 int heads, int seq) {
  const HeadShape shape("split_heads", x.extent(0), x.extent(1), heads, seq);
  DISTZO_REQUIRE(out.extent(0) == static_cast<std::size_t>(shape.head_major_rows()) &&
                     out.extent(1) == static_cast<std::size_t>(shape.head_dim),
                 "distzo::kernels::split_heads: out is ("
                     << out.extent(0) << ", " << out.extent(1) << "), expected ("
                     << shape.head_major_rows() << ", " << shape.head_dim << ")");
  DISTZO_REQUIRE(bias.extent(0) == 0 || bias.extent(0) == x.extent(1),
                 "distzo::kernels::split_heads: bias has "
                     << bias.extent(0) << " entries, expected " << x.extent(1) << " (or 0)");
  if (x.size() == 0) return;
  const Mat o = out;
  const ConstMat xx = x;
  const ConstVec bb = bias;
  const bool has_bias = bias.extent(0) != 0;
  shape.for_each_element(
      "distzo::split_heads", space,
      KOKKOS_LAMBDA(const std::int64_t row, const std::int64_t r, const std::int64_t c,
                    const std::int64_t d) { o(row, d) = has_bias ? xx(r, c) + bb(c) : xx(r, c); });
}

void merge_heads(const ExecSpace& space, const Mat& out, const ConstMat& x, int heads, int seq) {
  const HeadShape shape("merge_heads", out.extent(0), out.extent(1), heads, seq);
  DISTZO_REQUIRE(x.extent(0) == static_cast<std::size_t>(shape.head_major_rows()) &&
                     x.extent(1) == static_cast<std::size_t>(shape.head_dim),
                 "distzo::kernels::merge_heads: x is ("
                     << x.extent(0) << ", " << x.extent(1) << "), expected ("
                     << shape.head_major_rows() << ", " << shape.head_dim << ")");
  if (out.size() == 0) return;
  const Mat o = out;
  const ConstMat xx = x;
  shape.for_each_element(
      "distzo::merge_heads", space,
      KOKKOS_LAMBDA(const std::int64_t row, const std::int64_t r, const std::int64_t c,
                    const std::int64_t d) { o(r, c) = xx(row, d); });
}

void rotary_tables(const ExecSpace& space, const Mat& cos, const Mat& sin, const ConstIntMat& pos,
                   const ConstMat& inverse, std::int64_t long_from, float factor) {
  const std::size_t rows = pos.extent(0), T = pos.extent(1), half = cos.extent(1);
  DISTZO_REQUIRE(
      cos.extent(0) == rows * T && sin.extent(0) == rows * T && sin.extent(1) == half && half > 0,
      "distzo::kernels::rotary_tables: cos is ("
          << cos.extent(0) << ", " << half << "), sin (" << sin.extent(0) << ", " << sin.extent(1)
          << "), expected (B*T, hd/2) with B*T = " << rows * T);
  DISTZO_REQUIRE((inverse.extent(0) == 1 || inverse.extent(0) == 2) && inverse.extent(1) == half,
                 "distzo::kernels::rotary_tables: the inverse frequencies are ("
                     << inverse.extent(0) << ", " << inverse.extent(1)
                     << "), expected (1 or 2, hd/2 = " << half << ")");
  if (rows * T == 0) return;
  const Mat c = cos, s = sin;
  const ConstIntMat p = pos;
  const ConstMat inv = inverse;
  const bool two_sets = inverse.extent(0) == 2;
  const std::int64_t seq = static_cast<std::int64_t>(T);
  // One work item per (row, frequency): the row's set needs its longest
  // position first. transformers: the angle is a float32 product, cos and
  // sin are scaled by attention_scaling as a float32 product (exact for 1).
  Kokkos::parallel_for(
      "distzo::rotary_tables",
      MDRangePolicy2(space, {0, 0},
                     {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(half)}),
      KOKKOS_LAMBDA(const std::int64_t b, const std::int64_t i) {
        int set = 0;
        if (two_sets) {
          std::int64_t longest = 0;
          for (std::int64_t t = 0; t < seq; ++t)
            longest = p(b, t) > longest ? static_cast<std::int64_t>(p(b, t)) : longest;
          set = longest + 1 > long_from ? 1 : 0;
        }
        const float inv_freq = inv(set, i);
        for (std::int64_t t = 0; t < seq; ++t) {
          const float angle = static_cast<float>(p(b, t)) * inv_freq;
          c(b * seq + t, i) = math::cos(angle) * factor;
          s(b * seq + t, i) = math::sin(angle) * factor;
        }
      });
}

void rotary_embedding(const ExecSpace& space, const Mat& x, const ConstMat& cos,
                      const ConstMat& sin, int heads, int seq) {
  const std::size_t tokens = cos.extent(0), half = cos.extent(1);
  DISTZO_REQUIRE(heads > 0 && seq > 0 && tokens % static_cast<std::size_t>(seq) == 0 &&
                     x.extent(0) == tokens * static_cast<std::size_t>(heads) &&
                     x.extent(1) == 2 * half && sin.extent(0) == tokens && sin.extent(1) == half,
                 "distzo::kernels::rotary_embedding: x is ("
                     << x.extent(0) << ", " << x.extent(1) << "), tables (" << tokens << ", "
                     << half << ") and (" << sin.extent(0) << ", " << sin.extent(1)
                     << "): expected x (B*H*T, hd) and tables (B*T, hd/2) for " << heads
                     << " heads and T = " << seq);
  if (x.size() == 0) return;
  const Mat xx = x;
  const ConstMat c = cos, s = sin;
  const std::int64_t H = heads, T = seq, h = static_cast<std::int64_t>(half);
  for_each_in_rows(
      "distzo::rotary_embedding", space, x.extent(0), h,
      KOKKOS_LAMBDA(const std::int64_t row, const std::int64_t i) {
        const std::int64_t token = row / T / H * T + row % T;  // b*T + t
        const float x1 = xx(row, i), x2 = xx(row, i + h);
        const float cs = c(token, i), sn = s(token, i);
        xx(row, i) = x1 * cs - x2 * sn;
        xx(row, i + h) = x2 * cs + x1 * sn;
      });
}

std::size_t attention_slots(std::size_t floats, std::size_t pairs, std::size_t group,
                            std::size_t seq) {
  const std::size_t per_pair = group * seq * seq;
  return per_pair == 0 ? 0 : std::min(pairs, floats / per_pair);
}

std::size_t attention_scores_floats(std::size_t batch, int heads, int kv_heads, std::size_t seq) {
  DISTZO_REQUIRE(heads > 0 && kv_heads > 0 && heads % kv_heads == 0,
                 "distzo::kernels::attention_scores_floats: "
                     << heads << " query heads and " << kv_heads
                     << " key/value heads: the second must divide the first");
  const std::size_t per_pair = static_cast<std::size_t>(heads / kv_heads) * seq * seq;
  const std::size_t pairs = batch * static_cast<std::size_t>(kv_heads);
  return std::min(pairs * per_pair, std::max(per_pair, attention_scores_budget));
}

void attention_heads(const ExecSpace& space, const Mat& out, const ConstMat& q, const ConstMat& k,
                     const ConstMat& v, const ConstIntMat& mask, int heads, int kv_heads,
                     real scale, const Vec& scores, std::int64_t window) {
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
  DISTZO_REQUIRE(
      shaped(k, kv_rows) && shaped(v, kv_rows) && shaped(out, rows) && q.extent(0) == rows,
      "distzo::kernels::attention_heads: q and out must be (B*H*T, hd) = ("
          << rows << ", " << head_dim << "), k and v (B*KV*T, hd) = (" << kv_rows << ", "
          << head_dim << ") for " << heads << " heads, " << kv_heads << " key/value heads and a ("
          << batch << ", " << seq << ") mask; got q (" << q.extent(0) << ", " << q.extent(1)
          << "), k (" << k.extent(0) << ", " << k.extent(1) << "), v (" << v.extent(0) << ", "
          << v.extent(1) << "), out (" << out.extent(0) << ", " << out.extent(1) << ")");
  const std::size_t group = static_cast<std::size_t>(heads / kv_heads);
  const std::size_t pairs = batch * static_cast<std::size_t>(kv_heads);
  const std::size_t slots = attention_slots(scores.extent(0), pairs, group, seq);
  DISTZO_REQUIRE(rows == 0 || slots >= 1,
                 "distzo::kernels::attention_heads: scores holds "
                     << scores.extent(0)
                     << " floats, fewer than one (batch row, key/value head) pair's " << group
                     << " x " << seq << " x " << seq);
  if (rows == 0 || head_dim == 0) return;
  const auto i64 = [](std::size_t x) { return static_cast<std::int64_t>(x); };
  // A window at least T hides nothing: plain causal attention, its bits.
  const std::int64_t window_keys = window > 0 && window < i64(seq) ? window : 0;
  HeadPairs p{out,        q,        k,          v,        mask,          scale,
              heads,      kv_heads, i64(group), i64(seq), i64(head_dim), scores.data(),
              window_keys};
  bool on_host_threads = false;
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    on_host_threads = host_tiled_gemm_available() && gemm_path() == GemmPath::tiled;
    // The tasks read and write host memory outside Kokkos: work queued on
    // `space` before must be done (free on the synchronous host backends).
    if (on_host_threads) fence(space, "distzo::kernels::attention_heads: inputs ready");
  }
  if (window_keys > 0 && 2 * window_keys <= i64(seq)) {
    WindowChunks w{p, (i64(seq) + window_keys - 1) / window_keys};
    const std::int64_t tasks = i64(pairs) * w.chunks;
    const std::int64_t slots_at_once =
        std::max<std::int64_t>(1, i64(scores.extent(0)) / w.slot_floats());
    for (std::int64_t first = 0; first < tasks; first += slots_at_once) {
      const std::int64_t n = std::min(slots_at_once, tasks - first);
      w.first = first;
      if (on_host_threads) {
        Kokkos::Profiling::pushRegion("distzo::attention_heads[window host tasks]");
        host_parallel_tasks(n, host_window_task, &w);
        Kokkos::Profiling::popRegion();
        continue;
      }
      for (std::int64_t task = first; task < first + n; ++task) device_window_task(space, w, task);
    }
    return;
  }
  for (std::int64_t first = 0; first < i64(pairs); first += i64(slots)) {
    const std::int64_t n = std::min(i64(slots), i64(pairs) - first);
    p.first = first;
    if (on_host_threads) {
      Kokkos::Profiling::pushRegion("distzo::attention_heads[host tasks]");
      host_parallel_tasks(n, host_pair, &p);
      Kokkos::Profiling::popRegion();
      continue;
    }
    device_round(space, p, n);
  }
}

}  // namespace distzo::kernels
