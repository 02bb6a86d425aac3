#pragma once
// Shared by the engine tests: tiny random models of every architecture and hand-made batches.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/digest.hpp"
#include "model/batch.hpp"
#include "model/init.hpp"
#include "model/model_config.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/parameter_store.hpp"

namespace distzo::test_support {

inline model::ModelConfig tiny_config(bool pre_ln = true, std::int64_t proj = 0) {
  model::ModelConfig c;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.ffn_dim = 32;
  c.vocab_size = 40;
  c.max_position_embeddings = 32;
  c.word_embed_proj_dim = proj ? proj : c.hidden_size;
  c.do_layer_norm_before = pre_ln;
  return model::complete_opt(c);
}

/// A tiny Llama with everything OPT lacks: grouped-query attention (4 query
/// heads over 2 key/value heads), H*hd != C, attention biases, an untied
/// lm_head.
inline model::ModelConfig tiny_llama_config() {
  model::ModelConfig c;
  c.architecture = model::Architecture::llama;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 6;
  c.ffn_dim = 24;
  c.vocab_size = 40;
  c.max_position_embeddings = 32;
  c.word_embed_proj_dim = c.hidden_size;
  c.tie_word_embeddings = false;
  c.attention_bias = true;
  c.activation_function = "silu";
  return c;
}

/// The tiny model of each architecture: OPT's pre-LN one, the Llama above,
/// and Llama's kin from it — Qwen2 (its q, k, v biases in place of
/// attention_bias), Qwen3 (q/k RMSNorm, no biases), Mistral (a sliding
/// window) — and Gemma 3 (its own block) on the same shape. The Llama
/// family's rotary scalings ride along, so every loop over the
/// architectures runs them too: Llama with llama3's, Qwen2 with YaRN, Qwen3
/// with LongRoPE past an original context of 4 tokens (test batches mix rows
/// on both sides of it); Mistral and Gemma 3 stay plain. Qwen2 has a window
/// from its second layer on, Mistral and Gemma 3 theirs (below).
inline model::ModelConfig tiny_config_for(model::Architecture a) {
  if (a == model::Architecture::opt) return tiny_config();
  model::ModelConfig c = tiny_llama_config();
  c.architecture = a;
  model::RopeScaling& rope = c.rope_scaling;
  if (a == model::Architecture::llama) {
    rope.type = model::RopeType::llama3;
    rope.factor = 4;
    rope.low_freq_factor = 1;
    rope.high_freq_factor = 4;
    rope.original_max_position_embeddings = 16;
  } else if (a == model::Architecture::qwen2) {
    rope.type = model::RopeType::yarn;
    rope.factor = 4;
    rope.original_max_position_embeddings = 8;
    c.sliding_window = 3;  // use_sliding_window, from layer 1 on
    c.max_window_layers = 1;
  } else if (a == model::Architecture::qwen3) {
    rope.type = model::RopeType::longrope;
    rope.original_max_position_embeddings = 4;
    rope.short_factor = {1, 1.5, 2};  // head_dim / 2 = 3
    rope.long_factor = {1, 3, 9};
  }
  if (a != model::Architecture::llama) c.attention_bias = false;
  // Windows shorter than the test batches: Mistral's of 3 (the chunked path
  // once T >= 6), Gemma 3's of 5 (the masked path for T < 10).
  if (a == model::Architecture::mistral) c.sliding_window = 3;
  if (a == model::Architecture::phi3) c.sliding_window = 4;  // the chunked path from T = 8
  if (a == model::Architecture::gemma3) {  // layer 0 sliding, layer 1 full: both rotary bases
    c.activation_function = "gelu_pytorch_tanh";
    c.sliding_window = 5;
    c.sliding_window_pattern = 2;
    c.rope_theta = 1e6;
    c.rope_local_base_freq = 1e4;
    c.query_pre_attn_scalar = 10;  // != head_dim
  }
  return c;
}

/// Every architecture of the table, for loops over tiny_config_for.
inline const std::vector<model::Architecture>& all_architectures() {
  static const std::vector<model::Architecture> all = {
      model::Architecture::opt,   model::Architecture::llama,   model::Architecture::qwen2,
      model::Architecture::qwen3, model::Architecture::mistral, model::Architecture::gemma3,
      model::Architecture::olmo2, model::Architecture::phi3};
  return all;
}

/// A tiny random model whose θ lives in a parameter store placed as
/// asked (resident by default). The same seed gives the same θ whatever the
/// placement. A shared host master is shared by the ranks of `node`.
struct TinyModel {
  model::ModelConfig config;
  model::ParameterRegistry registry;
  std::unique_ptr<runtime::ParameterStore> store;

  explicit TinyModel(const model::ModelConfig& c, std::uint64_t seed = 1234,
                     const runtime::PlacementConfig& placement = runtime::PlacementConfig(),
                     const runtime::Communicator* node = nullptr)
      : config(c), registry(model::ParameterRegistry::for_model(c)) {
    store = std::make_unique<runtime::ParameterStore>(registry, placement, node);
    store->fill([&](std::uint32_t id, real* dst) {
      model::random_parameter(registry[id], seed, 0.2, dst);
    });
  }

  std::string digest() const { return store->digest(); }

  /// θ of every parameter in host memory, by id.
  std::vector<std::vector<float>> host_theta() const {
    std::vector<std::vector<float>> out(registry.size());
    for (const auto& p : registry.parameters()) {
      out[p.id].resize(static_cast<std::size_t>(p.numel()));
      store->read(p.id, out[p.id].data());
    }
    return out;
  }
};

/// B rows of lengths `lengths` (right-padded to T) with deterministic tokens.
/// Causal LM: every real token after the first is a target. Classification:
/// K = 2 candidates {5, 6}; gold = row parity; rows past `examples` are filler.
inline model::Batch make_batch(model::Task task, int B, int T, const std::vector<int>& lengths,
                               int examples = -1) {
  if (examples < 0) examples = B;
  model::Batch batch;
  batch.task = task;
  batch.micro_batch = B;
  batch.seq_len = T;
  batch.tokens = IntMat("tokens", B, T);
  batch.mask = IntMat("mask", B, T);
  auto tok = Kokkos::create_mirror_view(batch.tokens);
  auto mask = Kokkos::create_mirror_view(batch.mask);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const bool real_token = b < examples && t < lengths[b];
      tok(b, t) = real_token ? 2 + (7 * b + 3 * t + b * t) % 37 : 1;
      mask(b, t) = real_token ? 1 : 0;
      if (real_token) ++batch.num_tokens;
    }
  Kokkos::deep_copy(batch.tokens, tok);
  Kokkos::deep_copy(batch.mask, mask);
  batch.num_examples = examples;
  if (task == model::Task::causal_lm) {
    batch.targets = IntVec("targets", B * T);
    auto tg = Kokkos::create_mirror_view(batch.targets);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        tg(b * T + t) = (b < examples && t + 1 < lengths[b]) ? tok(b, t + 1) : -100;
    for (int r = 0; r < B * T; ++r) batch.num_targets += tg(r) != -100 ? 1 : 0;
    Kokkos::deep_copy(batch.targets, tg);
  } else {
    batch.rows = IntVec("rows", B);
    batch.gold = IntVec("gold", B);
    batch.candidates = IntVec("candidates", 2);
    auto rows = Kokkos::create_mirror_view(batch.rows);
    auto gold = Kokkos::create_mirror_view(batch.gold);
    auto cand = Kokkos::create_mirror_view(batch.candidates);
    for (int b = 0; b < B; ++b) {
      rows(b) = b * T + (b < examples ? lengths[b] - 1 : 0);
      gold(b) = b < examples ? b % 2 : -100;
    }
    batch.num_targets = examples;
    cand(0) = 5;
    cand(1) = 6;
    Kokkos::deep_copy(batch.rows, rows);
    Kokkos::deep_copy(batch.gold, gold);
    Kokkos::deep_copy(batch.candidates, cand);
  }
  return batch;
}

}  // namespace distzo::test_support
