#pragma once
// Causal multi-head self-attention with key padding, two ways:
//
//   attention        the reference kernel: one team per query row, scores
//                    and sums in scratch, on the interleaved (B*T, C) layout;
//                    the oracle the fast path is tested against;
//   attention_heads  the fast path: per (batch row, key/value head) two GEMMs
//                    over all the query heads that share it (OpenBLAS on the
//                    host, cuBLAS under CUDA) around a masked softmax, on
//                    head-major buffers, which split_heads and merge_heads
//                    convert to and from.
//
// Head-major layout: a (B*H*T, hd) matrix whose rows (b*H + h)*T .. +T are
// the T positions of head h of batch row b, each row hd contiguous floats,
// so every (b, h) is a contiguous LayoutRight (T, hd) matrix that BLAS takes
// as it is (a strided per-head view of the interleaved layout would send
// Kokkos Kernels to its slow native GEMM).

#include <cstddef>

#include "core/types.hpp"

namespace distzo::kernels {

/// out = softmax(scale * q k^T + causal and padding mask) v, per batch row b
/// and head h, for every query position i:
///   out[b*T + i, h*hd + d] = sum_j p_ij v[b*T + j, h*hd + d],
///   p_ij = softmax over the visible keys j of scale * <q_i, k_j> (head h),
/// where key j is visible to query i iff j <= i (causal) and mask[b, j] != 0.
///
///   out, q, k, v: (B*T, C), heads interleaved as in Hugging Face: head h
///                 uses columns [h*hd, (h+1)*hd), hd = C / heads
///   mask: (B, T), 1 = real token, 0 = padding (left or right)
///   scale: usually 1/sqrt(hd) (OPT multiplies q by it before the product;
///          here it multiplies the dot product, which differs by rounding)
///
/// A query with no visible key (a left-padding position: all keys up to it
/// are padding) gets an output row of zeros. Hugging Face produces a different,
/// meaningless value there (it adds the dtype minimum instead of masking), and
/// those positions never reach a loss, so only real-token positions are
/// comparable with it. Queries at padding positions that do see real keys are
/// computed normally.
/// out must not alias q, k or v. Softmax is max-subtracted (stable); scores
/// and sums are float, as in torch's fp32 eager attention.
/// With a `window` W > 0, key j is visible to query i only if i - j < W too
/// (a sliding-window layer; 0: no window).
void attention(const ExecSpace& space, const Mat& out, const ConstMat& q, const ConstMat& k,
               const ConstMat& v, const ConstIntMat& mask, int heads, real scale, int window = 0);

/// out (head-major) = x + b, reordered: out[(b*H + h)*T + t, d] =
/// x[b*T + t, h*hd + d] + bias[h*hd + d]. The bias pass of the q, k and v
/// projections and the reordering in one pass.
///   out: (B*H*T, hd)  x: (B*T, C)  bias: (C), or empty  seq: T
void split_heads(const ExecSpace& space, const Mat& out, const ConstMat& x, const ConstVec& bias,
                 int heads, int seq);

/// Rotary position embeddings (Su et al., 2021) as transformers' Llama
/// applies them (rotate_half layout), in two kernels:
///
/// rotary_tables, once per batch: for token b*T + t and frequency i < hd/2,
///   angle = pos[b, t] * inverse[s_b, i],
///   cos[b*T + t, i] = cos(angle) * factor,  sin[b*T + t, i] = sin(angle) * factor,
/// in float as Hugging Face computes them. The inverse frequencies and the
/// factor come from the config (model::rotary_frequencies); s_b = 0, or,
/// with two sets (LongRoPE's short and long), 1 when row b is longer than
/// `long_from` tokens (its largest position + 1).
///   cos, sin: (B*T, hd/2)   pos: (B, T)   inverse: (1 or 2, hd/2)
void rotary_tables(const ExecSpace& space, const Mat& cos, const Mat& sin, const ConstIntMat& pos,
                   const ConstMat& inverse, std::int64_t long_from, float factor);

/// rotary_embedding, on head-major q or k of every layer: channel pair
/// (i, i + hd/2) of row (b*H + h)*T + t turns by the angle of token b*T + t,
///   x_i' = x_i cos - x_{i+hd/2} sin,  x_{i+hd/2}' = x_{i+hd/2} cos + x_i sin.
///   x: (B*H*T, hd), hd even   cos, sin: (B*T, hd/2) from rotary_tables   seq: T
void rotary_embedding(const ExecSpace& space, const Mat& x, const ConstMat& cos,
                      const ConstMat& sin, int heads, int seq);

/// The inverse reordering: out[b*T + t, h*hd + d] = x[(b*H + h)*T + t, d].
///   out: (B*T, C)  x: (B*H*T, hd)  seq: T
void merge_heads(const ExecSpace& space, const Mat& out, const ConstMat& x, int heads, int seq);

/// The same attention as `attention`, on head-major q, k, v and out, one
/// (batch row b, key/value head g) pair at a time: its `group` = heads /
/// kv_heads query heads are consecutive head-major rows, so one GEMM gives
/// all their scores, scale * q_group kᵀ: (group*T, T); then the causal and
/// key-padding masked softmax of each row (max-subtracted; masked keys get
/// exactly 0; a query with no visible key gets a row of zeros, hence an
/// output of zeros); then one GEMM, out_group = p v. K and v are read where
/// they are (grouped-query heads share them without a copy, as transformers'
/// repeat_kv does; kv_heads = heads is plain multi-head). Results differ from
/// `attention` by rounding only (another summation order).
///
/// `scores` is flat scratch for attention_slots() pairs at once; on host
/// execution spaces the pairs of a round are spread over the host GEMM's
/// threads (host_parallel_tasks), each through its own GEMMs and softmax,
/// on other backends the round's softmax is one kernel. A pair's bits depend
/// neither on the threads nor on the number of slots. The causal mask is not
/// exploited: BLAS has no GEMM with a triangular result.
///   out, q: (B*H*T, hd)  k, v: (B*KV*T, hd)  mask: (B, T)
///   scores: at least group*T*T floats
///
/// With a `window` W > 0 (sliding-window layers) a query i sees only the keys
/// j with i - j < W (transformers' sliding_window_overlay). W >= T hides
/// nothing and is plain causal attention, to the bit. 2W <= T: keys older
/// than the window are skipped, not only masked — each pair's queries go in
/// chunks of W positions against the at most 2W - 1 keys their windows
/// reach, so scores cost T (2W - 1) per head, not T²; T/2 < W < T: the
/// full scores with the window masked.
void attention_heads(const ExecSpace& space, const Mat& out, const ConstMat& q, const ConstMat& k,
                     const ConstMat& v, const ConstIntMat& mask, int heads, int kv_heads,
                     real scale, const Vec& scores, std::int64_t window = 0);

/// Floats of attention_heads' scores for batches of up to (batch, seq): every
/// (batch row, key/value head) pair at once when they fit in
/// attention_scores_budget floats, else as many as fit, at least one. A
/// function of the shape only (not of the threads), so `distzo plan` knows it.
inline constexpr std::size_t attention_scores_budget = std::size_t(1) << 21;  // 8 MiB of floats
std::size_t attention_scores_floats(std::size_t batch, int heads, int kv_heads, std::size_t seq);

/// The pairs attention_heads computes at once with `floats` of scores.
std::size_t attention_slots(std::size_t floats, std::size_t pairs, std::size_t group,
                            std::size_t seq);

}  // namespace distzo::kernels
