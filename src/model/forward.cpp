#include "model/forward.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "kernels/activations.hpp"
#include "kernels/attention.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"

namespace distzo::model {

Mat ForwardScratch::projected_as(std::size_t rows, std::size_t cols) const {
  DISTZO_REQUIRE(rows * cols <= projected.size(),
                 "forward scratch: a (" << rows << ", " << cols << ") projection does not fit in "
                                        << projected.size() << " floats");
  return Mat(projected.data(), rows, cols);
}

namespace {

/// The frequencies on the device, in a view labelled `label`.
RotaryInverse rotary_inverse(const std::string& label, const RotaryFrequencies& frequencies) {
  RotaryInverse out;
  const auto sets = static_cast<std::size_t>(frequencies.sets);
  out.inverse = Mat(label, sets, frequencies.inverse.size() / sets);
  const auto host = Kokkos::create_mirror_view(out.inverse);
  for (std::size_t set = 0; set < sets; ++set)
    for (std::size_t i = 0; i < host.extent(1); ++i)
      host(set, i) = frequencies.inverse[set * host.extent(1) + i];
  Kokkos::deep_copy(out.inverse, host);
  out.long_from = frequencies.long_from;
  out.attention_factor = frequencies.attention_factor;
  return out;
}

}  // namespace

void rotary_tables(const ExecSpace& space, const Mat& cos, const Mat& sin,
                   const ConstIntMat& positions, const RotaryInverse& rotary) {
  kernels::rotary_tables(space, cos, sin, positions, rotary.inverse, rotary.long_from,
                         rotary.attention_factor);
}

Mat attention_output(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                     const WeightView& w, int layer, ConstMat x, ConstIntMat mask,
                     const Rotation& rotation) {
  using R = ParameterRole;
  const int heads = static_cast<int>(config.num_attention_heads);
  const int kv_heads = static_cast<int>(config.num_key_value_heads);
  const int T = s.seq_len;
  const auto N = static_cast<std::size_t>(s.rows());
  const real scale = static_cast<real>(config.attention_scale());
  // `projected` holds each projection's output until it is reordered
  // head-major, then the attention output (head-major), then o_proj's.
  const Mat q_out = s.projected_as(N, static_cast<std::size_t>(config.q_width()));
  const Mat kv_out = s.projected_as(N, static_cast<std::size_t>(config.kv_width()));
  const real eps = static_cast<real>(config.rms_norm_eps);
  const bool full_width = config.qk_norm_full_width();  // OLMo 2: before the split
  kernels::linear(space, q_out, x, w.matrix(R::q_weight), ConstVec(), s.gemm_input);
  if (full_width) kernels::rmsnorm(space, q_out, q_out, w.vec(R::q_norm_weight), eps);
  kernels::split_heads(space, s.q, q_out, w.vec(R::q_bias), heads, T);
  kernels::linear(space, kv_out, x, w.matrix(R::k_weight), ConstVec(), s.gemm_input);
  if (full_width) kernels::rmsnorm(space, kv_out, kv_out, w.vec(R::k_norm_weight), eps);
  kernels::split_heads(space, s.k, kv_out, w.vec(R::k_bias), kv_heads, T);
  kernels::linear(space, kv_out, x, w.matrix(R::v_weight), ConstVec(), s.gemm_input);
  kernels::split_heads(space, s.v, kv_out, w.vec(R::v_bias), kv_heads, T);
  if (config.qk_norm() && !full_width) {  // Qwen3, Gemma 3: each head's hd channels
    const real offset = config.norm_weight_offset();
    kernels::rmsnorm(space, s.q, s.q, w.vec(R::q_norm_weight), eps, offset);
    kernels::rmsnorm(space, s.k, s.k, w.vec(R::k_norm_weight), eps, offset);
  }
  if (!rotation.none()) {
    kernels::rotary_embedding(space, s.q, rotation.cos, rotation.sin, heads, T);
    kernels::rotary_embedding(space, s.k, rotation.cos, rotation.sin, kv_heads, T);
  }
  const Mat heads_out = s.projected_as(s.q.extent(0), s.q.extent(1));
  kernels::attention_heads(space, heads_out, s.q, s.k, s.v, mask, heads, kv_heads, scale, s.scores,
                           config.attention_window(layer));
  kernels::merge_heads(space, s.attended, heads_out, heads, T);
  const Mat out = s.projected_as(N, static_cast<std::size_t>(config.hidden_size));
  kernels::linear(space, out, s.attended, w.matrix(R::out_weight), ConstVec(), s.gemm_input);
  return out;
}

void self_attention(const ModelConfig& config, ForwardScratch& s, const ExecSpace& space,
                    const WeightView& w, int layer, ConstMat x, ConstIntMat mask, const Mat& h,
                    const Rotation& rotation) {
  const Mat out = attention_output(config, s, space, w, layer, x, mask, rotation);
  kernels::add_bias_residual(space, h, out, w.vec(ParameterRole::out_bias));
}

DecoderForward::DecoderForward(const ModelConfig& config, int batch, int seq_len,
                               StorageDtype gemm_inputs)
    : config_(config), arch_(architecture_spec(config.architecture)) {
  config_.validate();
  DISTZO_REQUIRE(
      batch > 0 && seq_len > 0,
      "forward: batch and sequence length must be positive, got " << batch << " x " << seq_len);
  const std::string too_long = config.sequence_problem(seq_len);
  DISTZO_REQUIRE(too_long.empty(), "forward: " << too_long);
  ForwardScratch& s = capacity_;
  s.batch = batch;
  s.seq_len = seq_len;
  const auto N = static_cast<std::size_t>(s.rows());
  const auto C = static_cast<std::size_t>(config.hidden_size);
  const auto E = static_cast<std::size_t>(config.embedding_dim());
  const auto F = static_cast<std::size_t>(config.ffn_dim);
  const auto H = static_cast<std::size_t>(config.num_attention_heads);
  const auto KV = static_cast<std::size_t>(config.num_key_value_heads);
  const auto hd = static_cast<std::size_t>(config.head_dim);
  auto label = [](const char* name) { return memory_label(MemoryRole::activations, name); };
  s.positions = IntMat(label("forward.positions"), batch, seq_len);
  if (config.has_projection()) {
    s.embedded = Mat(label("forward.embedded"), N, E);
    s.hidden_out = Mat(label("forward.hidden_out"), N, E);
  }
  s.normed = Mat(label("forward.normed"), N, C);
  s.q = Mat(label("forward.q"), N * H, hd);
  s.k = Mat(label("forward.k"), N * KV, hd);
  s.v = Mat(label("forward.v"), N * KV, hd);
  s.scores = Vec(
      label("forward.scores"),
      kernels::attention_scores_floats(static_cast<std::size_t>(batch), static_cast<int>(H),
                                       static_cast<int>(KV), static_cast<std::size_t>(seq_len)));
  s.attended = Mat(label("forward.attended"), N, H * hd);
  s.projected = Mat(label("forward.projected"), N, std::max(C, H * hd));
  s.ffn = Mat(label("forward.ffn"), N, F);
  if (arch_.gated_mlp) s.ffn_gate = Mat(label("forward.ffn_gate"), N, F);
  if (arch_.rotary_bases >= 1) {
    s.rope_cos = Mat(label("forward.rope_cos"), N, hd / 2);
    s.rope_sin = Mat(label("forward.rope_sin"), N, hd / 2);
    s.rope_inverse =
        rotary_inverse(label("forward.rope_inverse"),
                       rotary_frequencies(config.rope_scaling, config.rope_theta, config.head_dim,
                                          config.max_position_embeddings));
  }
  if (arch_.rotary_bases >= 2) {
    s.rope_local_cos = Mat(label("forward.rope_local_cos"), N, hd / 2);
    s.rope_local_sin = Mat(label("forward.rope_local_sin"), N, hd / 2);
    s.rope_local_inverse =
        rotary_inverse(label("forward.rope_local_inverse"),
                       rotary_frequencies(RopeScaling{}, config.rope_local_base_freq,
                                          config.head_dim, config.max_position_embeddings));
  }
  if (gemm_inputs != StorageDtype::fp32)
    s.gemm_input = HalfVec(label("forward.gemm_input"), N * std::max({C, H * hd, F}));
  set_seq_len(seq_len);
}

namespace {

/// The first `rows` rows of a (capacity rows, cols) buffer (empty stays empty).
template <class View>
View prefix_rows(const View& buffer, std::size_t rows) {
  if (buffer.size() == 0) return buffer;
  return View(buffer.data(), rows, buffer.extent(1));
}

}  // namespace

void DecoderForward::set_seq_len(int seq_len) {
  const ForwardScratch& c = capacity_;
  DISTZO_REQUIRE(
      seq_len >= 1 && seq_len <= c.seq_len,
      "forward: a batch of " << seq_len << " positions does not fit buffers for " << c.seq_len);
  ForwardScratch& s = scratch_;
  s.batch = c.batch;
  s.seq_len = seq_len;
  const auto T = static_cast<std::size_t>(seq_len);
  const auto N = static_cast<std::size_t>(s.rows());
  const auto H = static_cast<std::size_t>(config_.num_attention_heads);
  const auto KV = static_cast<std::size_t>(config_.num_key_value_heads);
  s.positions = IntMat(c.positions.data(), static_cast<std::size_t>(c.batch), T);
  s.embedded = prefix_rows(c.embedded, N);
  s.normed = prefix_rows(c.normed, N);
  s.q = prefix_rows(c.q, N * H);
  s.k = prefix_rows(c.k, N * KV);
  s.v = prefix_rows(c.v, N * KV);
  s.scores = c.scores;  // flat: attention computes as many pairs at once as fit
  s.attended = prefix_rows(c.attended, N);
  s.projected = prefix_rows(c.projected, N);
  s.ffn = prefix_rows(c.ffn, N);
  s.ffn_gate = prefix_rows(c.ffn_gate, N);
  s.hidden_out = prefix_rows(c.hidden_out, N);
  s.rope_cos = prefix_rows(c.rope_cos, N);
  s.rope_sin = prefix_rows(c.rope_sin, N);
  s.rope_local_cos = prefix_rows(c.rope_local_cos, N);
  s.rope_local_sin = prefix_rows(c.rope_local_sin, N);
  s.rope_inverse = c.rope_inverse;
  s.rope_local_inverse = c.rope_local_inverse;
  s.gemm_input = c.gemm_input;  // flat scratch: a GEMM uses its first rows * in words
}

std::uint64_t DecoderForward::scratch_bytes(const ModelConfig& config, int batch, int seq_len,
                                            StorageDtype gemm_inputs) {
  // What the constructor allocates, term by term.
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  const std::uint64_t N = u(batch) * u(seq_len), C = u(config.hidden_size),
                      E = u(config.embedding_dim()), F = u(config.ffn_dim), Q = u(config.q_width()),
                      K = u(config.kv_width());
  const ArchitectureSpec& arch = architecture_spec(config.architecture);
  const std::uint64_t half = u(config.head_dim) / 2;
  const auto f = [](std::uint64_t elements) { return view_bytes(elements, sizeof(real)); };
  return view_bytes(N, sizeof(int))                                 // positions
         + (config.has_projection() ? 2 * f(N * E) : 0) + f(N * C)  // embedded, hidden_out, normed
         + f(N * Q) + 2 * f(N * K)                                  // q, k, v
         + f(kernels::attention_scores_floats(                      // scores
               u(batch), static_cast<int>(config.num_attention_heads),
               static_cast<int>(config.num_key_value_heads), u(seq_len))) +
         f(N * Q) + f(N * std::max(C, Q))          // attended, projected
         + (arch.gated_mlp ? 2 : 1) * f(N * F)     // ffn (, gate)
         + u(arch.rotary_bases) * 2 * f(N * half)  // cos, sin (per base)
         + (arch.rotary_bases >= 1 ? f(rotary_sets(config.rope_scaling) * half) : 0)  // inverse
         + (arch.rotary_bases >= 2 ? f(half) : 0)  // frequencies: global (1 or 2 sets), local
         + (gemm_inputs != StorageDtype::fp32      // gemm_input
                ? view_bytes(N * std::max({C, Q, F}), sizeof(std::uint16_t))
                : 0);
}

void DecoderForward::embed(const ExecSpace& space, const WeightView& edge, ConstIntMat tokens,
                           ConstIntMat mask, const Mat& h) {
  arch_.embed(config_, scratch_, space, edge, tokens, mask, h);
}

void DecoderForward::block(const ExecSpace& space, const WeightView& w, int layer, ConstIntMat mask,
                           const Mat& h) {
  arch_.block(config_, scratch_, space, w, layer, mask, h);
}

Mat DecoderForward::final_hidden(const ExecSpace& space, const WeightView& edge, const Mat& h) {
  return arch_.final_hidden(config_, scratch_, space, edge, h);
}

void DecoderForward::logits(const ExecSpace& space, const WeightView& edge, ConstMat hidden,
                            const Mat& logits) {
  kernels::linear(space, logits, hidden, edge.lm_head(), ConstVec(), scratch_.gemm_input);
}

}  // namespace distzo::model
