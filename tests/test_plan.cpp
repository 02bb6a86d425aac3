// `distzo plan`'s memory formula against what Kokkos Tools sees allocated by
// the objects of a run (the parameter store, the engine with its
// streamer, the batch builders), across tasks, queries, perturbation
// splits, placements and a projected model; the config.json reader; and
// `distzo inspect`, which must not allocate in the execution space.

#include <gtest/gtest.h>

#include <sstream>

#include "app/inspect.hpp"
#include "app/plan.hpp"
#include "app/sliced_schedule.hpp"
#include "core/memory.hpp"
#include "io/dataset.hpp"
#include "io/hf_config.hpp"
#include "io/synthetic.hpp"
#include "model/batch_builder.hpp"
#include "support/expect_error.hpp"
#include "support/tiny_model.hpp"
#include "zo/engine.hpp"

namespace {

using namespace distzo;
using distzo::test_support::tiny_config;

struct Case {
  model::Task task;
  int queries, perturbation;
  runtime::PlacementConfig placement;
  std::int64_t proj;
  bool eval_set;
  bool llama = false;
};

runtime::PlacementConfig offload(int k, int prefetch) {
  runtime::PlacementConfig p;
  p.mode = runtime::PlacementMode::offload;
  p.resident_blocks = k;
  p.prefetch = prefetch;
  return p;
}

/// θ placed as `placement` says, stored in 2 bytes.
runtime::PlacementConfig stored_in(
    StorageDtype dtype, runtime::PlacementConfig placement = runtime::PlacementConfig()) {
  placement.storage = dtype;
  return placement;
}

/// θ placed as `placement` says, its evaluations' w materialised one at a time.
runtime::PlacementConfig one_at_a_time(runtime::PlacementConfig placement) {
  placement.perturb_one_at_a_time = true;
  return placement;
}

/// θ placed as `placement` says, its blocks' GEMMs taking 2-byte inputs.
runtime::PlacementConfig two_byte_gemm(runtime::PlacementConfig placement) {
  placement.two_byte_gemm_inputs = true;
  return placement;
}

TEST(Plan, PredictsWhatARunAllocates) {
  const std::vector<Case> cases = {
      {model::Task::causal_lm, 1, 1, runtime::PlacementConfig(), 0, true},
      {model::Task::classification, 1, 1, runtime::PlacementConfig(), 0, false},
      {model::Task::classification, 2, 2, offload(0, 1), 0, true},
      {model::Task::causal_lm, 2, 4, offload(1, 2), 8, false},
      {model::Task::classification, 3, 1, offload(3, 1), 8, true},
      {model::Task::causal_lm, 1, 1, runtime::PlacementConfig(), 0, true, true},
      {model::Task::classification, 2, 2, offload(1, 2), 0, false, true},
      {model::Task::causal_lm, 1, 1, stored_in(StorageDtype::bf16), 0, true},
      {model::Task::classification, 2, 2, stored_in(StorageDtype::fp16), 0, false, true},
      {model::Task::causal_lm, 2, 4, stored_in(StorageDtype::bf16, offload(1, 2)), 8, true},
      {model::Task::causal_lm, 2, 1, one_at_a_time(runtime::PlacementConfig()), 0, true},
      {model::Task::classification, 2, 1,
       one_at_a_time(stored_in(StorageDtype::bf16, offload(0, 1))), 0, true, true},
      {model::Task::causal_lm, 1, 2, one_at_a_time(stored_in(StorageDtype::fp16)), 8, false},
      {model::Task::causal_lm, 1, 1, two_byte_gemm(stored_in(StorageDtype::bf16)), 0, true},
      {model::Task::classification, 2, 2,
       two_byte_gemm(stored_in(StorageDtype::fp16, offload(1, 2))), 0, false, true},
      {model::Task::causal_lm, 2, 1,
       two_byte_gemm(one_at_a_time(stored_in(StorageDtype::bf16, offload(0, 1)))), 8, true, true},
  };
  for (const Case& c : cases) {
    model::ModelConfig config =
        c.llama ? test_support::tiny_llama_config() : tiny_config(true, c.proj);
    config.num_hidden_layers = 5;
    const int B = 4, T = 9;
    const io::Dataset data = c.task == model::Task::causal_lm
                                 ? io::make_synthetic_causal_lm(16, T, config.vocab_size, 1)
                                 : io::make_synthetic_classification(16, T, config.vocab_size, 1);
    app::PlanInputs in;
    in.config = config;
    in.placement = c.placement;
    in.batch = {c.task, B, T, static_cast<int>(data.num_candidates())};
    in.queries = c.queries;
    in.perturbation = c.perturbation;
    in.eval_set = c.eval_set;
    const app::MemoryPlan plan = app::plan_memory(in);

    MemoryAccounting::start();
    MemoryUsage used;
    {
      const model::ParameterRegistry registry = model::ParameterRegistry::for_model(config);
      runtime::ParameterStore store(registry, c.placement);
      zo::Engine engine(config, store, zo::EvaluationPlan::make(c.queries, c.perturbation, 0),
                        in.batch);
      model::BatchBuilder train(data, B);
      std::unique_ptr<model::BatchBuilder> eval;
      if (c.eval_set) eval = std::make_unique<model::BatchBuilder>(data, B);
      used = MemoryAccounting::usage();
      EXPECT_EQ(plan.host_master, store.host_bytes());
    }
    const MemoryUsage after = MemoryAccounting::usage();
    MemoryAccounting::stop();

    SCOPED_TRACE("task " + std::to_string(static_cast<int>(c.task)) +
                 " q=" + std::to_string(c.queries) + " P=" + std::to_string(c.perturbation) +
                 " K=" + std::to_string(c.placement.resident_blocks));
    // The formula is exact: every role's high-water mark to the byte.
    EXPECT_EQ(used.peak_of(MemoryRole::weights), plan.weights);
    EXPECT_EQ(used.peak_of(MemoryRole::scratch), plan.scratch);
    EXPECT_EQ(used.peak_of(MemoryRole::activations), plan.activations);
    EXPECT_EQ(used.device_peak, plan.device_total());
    EXPECT_GT(used.allocations, 10u);
    // Everything was freed again: the listener saw the deallocations too.
    EXPECT_EQ(after.device_current, 0u);
  }
}

TEST(Plan, TrafficAndHostMemoryFollowThePlacement) {
  app::PlanInputs in;
  in.config = tiny_config();
  in.config.num_hidden_layers = 6;
  const std::uint64_t block = app::plan_memory(in).block_arena;
  EXPECT_EQ(app::plan_memory(in).to_device_per_step, 0u);  // resident moves nothing
  in.placement = offload(2, 1);
  const app::MemoryPlan p = app::plan_memory(in);
  EXPECT_EQ(p.host_master, 4 * block);
  EXPECT_EQ(p.to_device_per_step, 4 * block);
  EXPECT_EQ(p.to_host_per_step, 4 * block);
  EXPECT_EQ(p.slots, 3);
  in.perturbation = 3;  // does not divide 2q = 2
  EXPECT_THROW(app::plan_memory(in), Error);
}

TEST(Plan, ATwoByteThetaHalvesItsWeights) {
  app::PlanInputs in;
  in.config = tiny_config();
  const app::MemoryPlan f32 = app::plan_memory(in);
  in.placement = stored_in(StorageDtype::bf16);
  const app::MemoryPlan bf16 = app::plan_memory(in);
  EXPECT_EQ(2 * bf16.weights, f32.weights);
  EXPECT_EQ(2 * bf16.block_arena, f32.block_arena);
  in.placement = stored_in(StorageDtype::bf16, offload(0, 1));
  in.config.num_hidden_layers = 3;
  const std::uint64_t moved = app::plan_memory(in).to_device_per_step;
  in.placement.storage = StorageDtype::fp32;
  EXPECT_EQ(2 * moved, app::plan_memory(in).to_device_per_step);
  in.placement = stored_in(StorageDtype::bf16);
  EXPECT_NE(app::describe_plan(in, bf16).find("storage      bf16: θ is "), std::string::npos)
      << app::describe_plan(in, bf16);
}

// The sliced schedule's formula, recomputed by hand for one shape.
TEST(Plan, SlicedScheduleFollowsTheFormula) {
  app::PlanInputs in;
  in.config = tiny_config();
  in.config.num_hidden_layers = 4;
  in.batch.micro_batch = 8;
  in.batch.seq_len = 16;
  in.queries = 2;
  in.perturbation = 2;
  in.placement.mode = runtime::PlacementMode::offload;
  double block_params = 0;  // hand count of one OPT block (pre-LN, biases)
  const double C = in.config.hidden_size, F = in.config.ffn_dim;
  block_params = 4 * (C * C + C) + 2 * 2 * C + (C * F + F) + (F * C + C);
  const double A = 4 * block_params;
  app::Bandwidths bw;
  bw.pcie = 1e9;
  bw.nvlink = 4e9;
  bw.hbm = 20e9;
  bw.gemm_flops = 1e12;
  const app::SlicedSchedule s = app::sliced_schedule(in, 4, bw);
  EXPECT_EQ(s.data, 2);
  EXPECT_EQ(s.evaluations, 2);
  EXPECT_EQ(s.node_evaluations, 4);
  EXPECT_DOUBLE_EQ(s.pcie_up, 4 * A / 4);
  EXPECT_DOUBLE_EQ(s.nvlink, 4 * 4 * A * 3 / 4);
  // Each of the D = 2 replicas evaluates its own micro-batch of 8 x 16
  // tokens; ZO2 runs the global batch, 16 x 16, on one GPU.
  const double work = 6 * A / 4 / bw.hbm + 4 * A * 3 / 4 / bw.nvlink +
                      2 * (8.0 * 16) * block_params * 2 / bw.gemm_flops;
  EXPECT_DOUBLE_EQ(s.block_seconds, std::max(A / 4 / bw.pcie, work));
  EXPECT_DOUBLE_EQ(s.step_seconds, 4 * s.block_seconds);
  const double zo2 =
      std::max(A / bw.pcie, 6 * A / bw.hbm + 2 * 256.0 * block_params * 4 / bw.gemm_flops);
  EXPECT_DOUBLE_EQ(s.zo2_step_seconds, 4 * zo2);
  EXPECT_GT(s.speedup(), 1.0);

  // One GPU: nothing over NVLink, the whole block over PCIe.
  in.perturbation = 1;
  const app::SlicedSchedule one = app::sliced_schedule(in, 1, bw);
  EXPECT_EQ(one.nvlink, 0.0);
  EXPECT_DOUBLE_EQ(one.pcie_up, 4 * A);
  in.perturbation = 4;  // P = 4 does not divide 3 GPUs
  EXPECT_THROW(app::sliced_schedule(in, 3, bw), Error);
  in.perturbation = 1;  // resident blocks on each GPU cannot be sliced
  in.placement.resident_blocks = 1;
  EXPECT_THROW(app::sliced_schedule(in, 2, bw), Error);
  in.placement.mode = runtime::PlacementMode::resident;
  in.placement.resident_blocks = 0;
  EXPECT_THROW(app::sliced_schedule(in, 2, bw), Error);
}

/// What parse_hf_config says of `text`, or "(no error)".
std::string hf_config_error(const std::string& text) {
  return test_support::error_message([&] { io::parse_hf_config(text, "c.json"); });
}

TEST(HfConfig, ReadsOptAndRefusesWhatDistzoDoesNotImplement) {
  const model::ModelConfig c = io::parse_hf_config(
      R"({"model_type": "opt", "hidden_size": 64, "num_hidden_layers": 3,
          "num_attention_heads": 4, "ffn_dim": 256, "vocab_size": 100,
          "max_position_embeddings": 128, "word_embed_proj_dim": 32,
          "do_layer_norm_before": false, "torch_dtype": "float16"})",
      "config.json");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_hidden_layers, 3);
  EXPECT_EQ(c.word_embed_proj_dim, 32);
  EXPECT_FALSE(c.do_layer_norm_before);
  // Left out: OPTConfig's defaults (opt-125m's shape).
  const model::ModelConfig d = io::parse_hf_config(R"({"model_type": "opt"})", "c.json");
  EXPECT_EQ(d.hidden_size, 768);
  EXPECT_EQ(d.vocab_size, 50272);
  EXPECT_EQ(d.word_embed_proj_dim, 768);
  // Round trip through the writer.
  const model::ModelConfig back = io::parse_hf_config(io::hf_config_json(c), "back.json");
  EXPECT_EQ(back.hidden_size, c.hidden_size);
  EXPECT_EQ(back.word_embed_proj_dim, c.word_embed_proj_dim);
  EXPECT_EQ(back.do_layer_norm_before, c.do_layer_norm_before);

  EXPECT_NE(hf_config_error(R"({"model_type": "gpt2"})").find("model_type is 'gpt2'"),
            std::string::npos);
  EXPECT_NE(hf_config_error(R"({"model_type": "opt", "tie_word_embeddings": false})")
                .find("tie_word_embeddings"),
            std::string::npos);
  EXPECT_NE(hf_config_error(R"({"model_type": "opt", "activation_function": "gelu"})").find("gelu"),
            std::string::npos);
  EXPECT_NE(hf_config_error(R"({"model_type": "opt", "hidden_size": "big"})")
                .find("hidden_size must be an integer"),
            std::string::npos);
  EXPECT_NE(hf_config_error("[1, 2]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(hf_config_error("{\"model_type\": ").find("not valid JSON"), std::string::npos);
}

TEST(HfConfig, ReadsLlamaWithEitherRopeForm) {
  // SmolLM2-135M's config.json (transformers 4 form: rope_theta at the top).
  const std::string smollm2 = R"({"model_type": "llama", "hidden_size": 576,
      "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
      "num_key_value_heads": 3, "vocab_size": 49152, "max_position_embeddings": 8192,
      "rms_norm_eps": 1e-05, "rope_theta": 100000, "rope_scaling": null,
      "tie_word_embeddings": true, "hidden_act": "silu", "head_dim": null})";
  const model::ModelConfig c = io::parse_hf_config(smollm2, "config.json");
  EXPECT_EQ(c.architecture, model::Architecture::llama);
  EXPECT_EQ(c.num_key_value_heads, 3);
  EXPECT_EQ(c.head_dim, 64);  // null: hidden_size / num_attention_heads
  EXPECT_EQ(c.ffn_dim, 1536);
  EXPECT_EQ(c.rope_theta, 100000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(model::ParameterRegistry::for_model(c).total_elements(), 134515008);
  // transformers 5 writes the base inside rope_parameters.
  const model::ModelConfig v5 = io::parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
          "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
          "attention_bias": true, "head_dim": 32})",
      "config.json");
  EXPECT_EQ(v5.rope_theta, 500000.0);
  EXPECT_EQ(v5.head_dim, 32);
  EXPECT_EQ(v5.q_width(), 128);
  EXPECT_TRUE(v5.attention_bias);
  EXPECT_FALSE(v5.tie_word_embeddings);  // LlamaConfig's default
  // Round trip through the writer.
  EXPECT_EQ(io::parse_hf_config(io::hf_config_json(c), "back.json"), c);
  EXPECT_EQ(io::parse_hf_config(io::hf_config_json(v5), "back.json"), v5);

  EXPECT_NE(
      hf_config_error(
          R"({"model_type": "llama", "rope_parameters": {"rope_type": "default", "factor": 2.0}})")
          .find("rope_parameters.factor"),
      std::string::npos);
  EXPECT_NE(
      hf_config_error(R"({"model_type": "llama", "hidden_act": "gelu"})").find("hidden_act 'gelu'"),
      std::string::npos);
  EXPECT_NE(hf_config_error(R"({"model_type": "llama", "num_key_value_heads": 5})")
                .find("multiple of num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(
      hf_config_error(R"({"model_type": "llama", "pretraining_tp": 2})").find("pretraining_tp"),
      std::string::npos);
}

TEST(HfConfig, ReadsLlamasKinAndRefusesWhatTheyDoNotShare) {
  // Qwen2.5-0.5B's and Qwen3-0.6B's config.json (the keys that shape them):
  // the parameter counts are transformers' numel() of the released models.
  const model::ModelConfig qwen2 = io::parse_hf_config(
      R"({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 896,
          "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
          "num_key_value_heads": 2, "vocab_size": 151936, "max_position_embeddings": 32768,
          "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
          "use_sliding_window": false, "max_window_layers": 21, "tie_word_embeddings": true,
          "hidden_act": "silu"})",
      "config.json");
  EXPECT_EQ(qwen2.architecture, model::Architecture::qwen2);
  EXPECT_TRUE(qwen2.qkv_bias());
  EXPECT_FALSE(qwen2.attention_bias);  // o_proj has none
  EXPECT_EQ(qwen2.sliding_window, 0);  // use_sliding_window false: full attention
  EXPECT_EQ(model::ParameterRegistry::for_model(qwen2).total_elements(), 494032768);
  const model::ModelConfig qwen3 = io::parse_hf_config(
      R"({"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072,
          "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
          "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
          "rms_norm_eps": 1e-06, "rope_theta": 1000000, "attention_bias": false,
          "use_sliding_window": false, "sliding_window": null, "tie_word_embeddings": true,
          "hidden_act": "silu"})",
      "config.json");
  EXPECT_TRUE(qwen3.qk_norm());
  EXPECT_FALSE(qwen3.qkv_bias());
  EXPECT_EQ(model::ParameterRegistry::for_model(qwen3).total_elements(), 596049920);
  const model::ModelConfig mistral = io::parse_hf_config(
      R"({"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
          "num_hidden_layers": 2, "vocab_size": 100, "max_position_embeddings": 512,
          "sliding_window": 128})",
      "config.json");
  EXPECT_EQ(mistral.sliding_window, 128);
  // No key: MistralConfig's default window; null: none.
  EXPECT_EQ(io::parse_hf_config(R"({"model_type": "mistral"})", "c.json").sliding_window, 4096);
  EXPECT_EQ(io::parse_hf_config(R"({"model_type": "mistral", "sliding_window": null})", "c.json")
                .sliding_window,
            0);
  EXPECT_NE(model::describe(mistral, "; ").find("sliding window 128"), std::string::npos);
  for (const model::ModelConfig& c : {qwen2, qwen3, mistral})
    EXPECT_EQ(io::parse_hf_config(io::hf_config_json(c), "back.json"), c);

  // use_sliding_window: the layers from max_window_layers on attend within
  // the window; layer_types, when given, says the same or is refused.
  const std::string windowed = R"({"model_type": "qwen2", "num_hidden_layers": 4,
      "use_sliding_window": true, "sliding_window": 256, "max_window_layers": 3)";
  const model::ModelConfig qwen_window = io::parse_hf_config(windowed + "}", "c.json");
  EXPECT_EQ(qwen_window.sliding_window, 256);
  EXPECT_EQ(qwen_window.max_window_layers, 3);
  for (std::int64_t k = 0; k < 4; ++k) EXPECT_EQ(qwen_window.attention_window(k), k < 3 ? 0 : 256);
  EXPECT_EQ(io::parse_hf_config(windowed + R"(, "layer_types": ["full_attention",
                "sliding_attention", "sliding_attention", "sliding_attention"]})",
                                "c.json")
                .max_window_layers,
            1);
  EXPECT_NE(hf_config_error(windowed + R"(, "layer_types": ["sliding_attention",
                "full_attention", "sliding_attention", "sliding_attention"]})")
                .find("layer 0 is sliding_attention before a full_attention one"),
            std::string::npos);
  EXPECT_EQ(io::parse_hf_config(io::hf_config_json(qwen_window), "back.json"), qwen_window);
  EXPECT_EQ(io::parse_hf_config(R"({"model_type": "qwen3", "num_hidden_layers": 4,
                "use_sliding_window": true, "max_window_layers": 28})",
                                "c.json")
                .sliding_window,
            0);  // no layer from 28 on in 4: full attention
  EXPECT_NE(hf_config_error(R"({"model_type": "qwen2", "attention_bias": true})")
                .find("biases on q, k and v only"),
            std::string::npos);
  EXPECT_NE(
      hf_config_error(R"({"model_type": "gemma2"})").find("distzo supports opt, llama, qwen2"),
      std::string::npos);
  // Past the window: windowed attention, which the plan describes; past the
  // positions: refused before anything runs.
  app::PlanInputs in;
  in.config = mistral;
  in.batch.seq_len = 128;
  EXPECT_NE(
      app::describe_plan(in, app::plan_memory(in)).find("the sliding window of 128 hides nothing"),
      std::string::npos)
      << app::describe_plan(in, app::plan_memory(in));
  in.batch.seq_len = 256;
  EXPECT_NE(app::describe_plan(in, app::plan_memory(in))
                .find("2 of 2 layers within a sliding window of 128 keys, the "
                      "keys past it skipped (each chunk of 128 queries scores the 255 keys"),
            std::string::npos)
      << app::describe_plan(in, app::plan_memory(in));
  in.batch.seq_len = static_cast<int>(mistral.max_position_embeddings) + 1;
  EXPECT_ERROR_CONTAINS("positions", app::plan_memory(in));
}

TEST(HfConfig, ReadsOlmo2) {
  // OLMo-2-0425-1B's config.json (the keys that shape it): the count is
  // transformers' numel() of Olmo2ForCausalLM at that config.
  const model::ModelConfig olmo2 = io::parse_hf_config(
      R"({"model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"], "hidden_size": 2048,
          "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 16,
          "num_key_value_heads": 16, "vocab_size": 100352, "max_position_embeddings": 4096,
          "rms_norm_eps": 1e-06, "rope_theta": 500000, "attention_bias": false,
          "tie_word_embeddings": false, "hidden_act": "silu"})",
      "config.json");
  EXPECT_TRUE(olmo2.norms_after_sublayers());
  EXPECT_TRUE(olmo2.qk_norm_full_width());
  EXPECT_EQ(model::ParameterRegistry::for_model(olmo2).total_elements(), 1484916736);
  EXPECT_NE(model::describe(olmo2, "; ").find("norms after attention and MLP"), std::string::npos);
  EXPECT_EQ(io::parse_hf_config(io::hf_config_json(olmo2), "back.json"), olmo2);
  EXPECT_NE(hf_config_error(R"({"model_type": "olmo2", "attention_bias": true})")
                .find("its bias would have to come before the norm"),
            std::string::npos);
}

TEST(HfConfig, ReadsPhi3WithItsLongRope) {
  // Phi-3-mini-128k-instruct's config.json (the keys that shape it; its 48
  // factors abridged to constants): transformers' numel() at that config.
  std::string factors = "1.0";
  for (int i = 1; i < 48; ++i) factors += ", 1.0";
  const std::string text = R"({"model_type": "phi3", "architectures": ["Phi3ForCausalLM"],
      "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
      "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
      "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 262144,
      "tie_word_embeddings": false, "hidden_act": "silu",
      "rope_scaling": {"type": "su", "short_factor": [)" +
                           factors + R"(], "long_factor": [)" + factors + "]}}";
  const model::ModelConfig phi3 = io::parse_hf_config(text, "config.json");
  EXPECT_EQ(model::ParameterRegistry::for_model(phi3).total_elements(), 3821079552);
  EXPECT_EQ(phi3.rope_scaling.type, model::RopeType::longrope);  // "su": Phi3Config's old name
  EXPECT_EQ(phi3.rope_scaling.original_max_position_embeddings, 4096);  // Phi3Config's own key
  EXPECT_EQ(phi3.attention_window(31), 262144);
  EXPECT_EQ(io::parse_hf_config(io::hf_config_json(phi3), "back.json"), phi3);
  EXPECT_NE(hf_config_error(R"({"model_type": "phi3", "partial_rotary_factor": 0.75})")
                .find("Phi-4-mini's 0.75"),
            std::string::npos);
}

TEST(HfConfig, ReadsGemma3InEitherFormAndRefusesWhatItDoesNotImplement) {
  // Gemma 3 270M's config.json as released (transformers 4 form): the count
  // is transformers' numel() of the released model (tied head).
  const std::string layer_types =
      R"("layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
          "sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
          "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
          "full_attention", "sliding_attention", "sliding_attention", "sliding_attention",
          "sliding_attention", "sliding_attention", "full_attention"])";
  const std::string shape =
      R"("model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"],
         "hidden_size": 640, "intermediate_size": 2048, "num_hidden_layers": 18,
         "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
         "vocab_size": 262144, "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
         "query_pre_attn_scalar": 256, "sliding_window": 512, "attention_bias": false,
         "hidden_activation": "gelu_pytorch_tanh", "attn_logit_softcapping": null,
         "final_logit_softcapping": null, "use_bidirectional_attention": false)";
  const model::ModelConfig v4 = io::parse_hf_config(
      "{" + shape + R"(, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
         "rope_scaling": null, "_sliding_window_pattern": 6, )" +
          layer_types + "}",
      "config.json");
  EXPECT_EQ(v4.architecture, model::Architecture::gemma3);
  EXPECT_EQ(v4.sliding_window_pattern, 6);
  EXPECT_EQ(v4.rope_theta, 1e6);
  EXPECT_EQ(v4.rope_local_base_freq, 1e4);
  EXPECT_TRUE(v4.qk_norm());
  EXPECT_TRUE(v4.tie_word_embeddings);
  EXPECT_TRUE(v4.sliding_layer(0));
  EXPECT_FALSE(v4.sliding_layer(5));
  EXPECT_FALSE(v4.sliding_layer(17));
  EXPECT_EQ(v4.attention_scale(), 1.0 / 16);
  EXPECT_EQ(model::ParameterRegistry::for_model(v4).total_elements(), 268098176);
  // transformers 5: rope_parameters per layer type; a pattern instead of the list.
  const model::ModelConfig v5 =
      io::parse_hf_config("{" + shape + R"(, "sliding_window_pattern": 6, "rope_parameters": {
         "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}})",
                          "config.json");
  EXPECT_EQ(v5, v4);
  EXPECT_EQ(io::parse_hf_config(io::hf_config_json(v4), "back.json"), v4);
  const std::string described = model::describe(v4, "; ");
  EXPECT_NE(described.find("3 full-attention layers (rotary base 1e+06), 15 sliding"),
            std::string::npos)
      << described;
  // Defaults: Gemma3TextConfig's (4096-position window, pattern 6, tied).
  const model::ModelConfig defaults =
      io::parse_hf_config(R"({"model_type": "gemma3_text"})", "c.json");
  EXPECT_EQ(defaults.sliding_window, 4096);
  EXPECT_EQ(defaults.sliding_window_pattern, 6);
  EXPECT_EQ(defaults.query_pre_attn_scalar, 256);

  const auto refusal = [](const std::string& keys) {
    return hf_config_error(R"({"model_type": "gemma3_text", "num_hidden_layers": 3, )" + keys +
                           "}");
  };
  EXPECT_NE(refusal(R"("final_logit_softcapping": 30.0)").find("final_logit_softcapping is set"),
            std::string::npos);
  EXPECT_NE(refusal(R"("attn_logit_softcapping": 50.0)").find("attn_logit_softcapping is set"),
            std::string::npos);
  EXPECT_NE(refusal(R"("use_bidirectional_attention": true)").find("causal"), std::string::npos);
  EXPECT_NE(refusal(R"("attention_bias": true)").find("no released Gemma 3"), std::string::npos);
  EXPECT_NE(refusal(R"("hidden_activation": "gelu")").find("hidden_activation 'gelu'"),
            std::string::npos);
  EXPECT_NE(refusal(R"("rope_scaling": {"rope_type": "linear", "factor": 8.0})")
                .find("rope_scaling is set"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"("rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0}})")
          .find("rope_type 'linear'"),
      std::string::npos);
  EXPECT_NE(refusal(R"("rope_parameters": {"rope_type": "default", "rope_theta": 5.0})")
                .find("one entry per layer type"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"("layer_types": ["full_attention", "sliding_attention", "sliding_attention"])")
          .find("one repeating pattern"),
      std::string::npos);
  EXPECT_NE(refusal(R"("layer_types": ["sliding_attention", "full_attention"])").find("3) entries"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"("layer_types": ["sliding_attention", "chunked_attention", "full_attention"])")
          .find("'chunked_attention'"),
      std::string::npos);
  // No full layer at all: the pattern is L + 1.
  EXPECT_EQ(io::parse_hf_config(R"({"model_type": "gemma3_text", "num_hidden_layers": 2,
                                   "layer_types": ["sliding_attention", "sliding_attention"]})",
                                "c.json")
                .sliding_window_pattern,
            3);
  // Past the window, the sliding layers attend within it; the plan says how many.
  app::PlanInputs in;
  in.config = v4;
  in.batch.seq_len = 600;
  EXPECT_NE(app::describe_plan(in, app::plan_memory(in))
                .find("15 of 18 layers within a sliding window of 512 keys, "
                      "masked in the full scores"),
            std::string::npos)
      << app::describe_plan(in, app::plan_memory(in));
}

TEST(Inspect, AllocatesNothingInTheExecutionSpace) {
  const std::string model = std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5";
  MemoryAccounting::start();
  std::ostringstream table, digest;
  app::inspect(model, false, table);
  app::inspect(model, true, digest);
  const MemoryUsage u = MemoryAccounting::usage();
  MemoryAccounting::stop();
  EXPECT_NE(table.str().find("parameters"), std::string::npos);
  EXPECT_NE(table.str().find("digest        version 3"), std::string::npos);
  EXPECT_EQ(digest.str().size(), 17u);  // 16 hex digits and a newline
  // The digest is a reduction on the host execution space, whose backend
  // may keep a reduction buffer in host memory (role other); nothing else.
  for (MemoryRole role :
       {MemoryRole::weights, MemoryRole::scratch, MemoryRole::activations, MemoryRole::host_master})
    EXPECT_EQ(u.peak_of(role), 0u) << "inspect allocated " << to_string(role) << " memory";
  EXPECT_EQ(u.device_peak, 0u);
}

TEST(MemoryRoles, LabelsCarryTheRole) {
  EXPECT_EQ(memory_label(MemoryRole::scratch, "block_w+"), "distzo:scratch:block_w+");
  EXPECT_EQ(memory_role_of("distzo:weights:slot.0"), MemoryRole::weights);
  EXPECT_EQ(memory_role_of("distzo:host_master:block.3"), MemoryRole::host_master);
  EXPECT_EQ(memory_role_of("distzo::forward::q"), MemoryRole::other);
  EXPECT_EQ(memory_role_of("Kokkos::Serial::scratch"), MemoryRole::other);
  EXPECT_EQ(memory_role_of("distzo:nonsense:x"), MemoryRole::other);
  EXPECT_TRUE(is_device_role(MemoryRole::activations));
  EXPECT_FALSE(is_device_role(MemoryRole::host_master));
}

}  // namespace
