// The ZO step: the engine's SPSA estimate against an independent naive
// central difference; θ never perturbed in place; the update formula; splits of
// the evaluations over a perturbation group reproduce the single-rank step bit
// for bit; determinism; and loss falling when a batch is learnable.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/losses.hpp"
#include "model/forward.hpp"
#include "model/loss_head.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/communicator.hpp"
#include "support/tiny_model.hpp"
#include "zo/engine.hpp"
#include "zo/estimator.hpp"
#include "zo/model_walk.hpp"

namespace {

using namespace distzo;
using distzo::test_support::make_batch;
using distzo::test_support::tiny_config;
using distzo::test_support::tiny_config_for;
using distzo::test_support::tiny_llama_config;
using distzo::test_support::TinyModel;

constexpr int B = 3, T = 7;
const std::vector<int> kLengths = {7, 5, 3};

/// Loss at θ + sign·ε·z, computed without the engine or the fused kernel:
/// z from the scalar generator on the host, added in double to a host copy
/// of θ, then the plain forward pass of the walk on a store holding w.
double naive_loss(const TinyModel& m, const model::Batch& batch, const StepPerturbation& p,
                  int query, int sign) {
  const std::vector<std::vector<float>> theta = m.host_theta();
  const PerturbationStream s = p.stream(query);
  runtime::ParameterStore w(m.registry, runtime::PlacementConfig());
  w.fill([&](std::uint32_t id, real* dst) {
    for (std::size_t e = 0; e < theta[id].size(); ++e)
      dst[e] = static_cast<float>(double(theta[id][e]) + sign * p.eps * double(s.z(id, e)));
  });
  ExecSpace space;
  runtime::BlockStreamer streamer(w, space);
  model::DecoderForward forward(m.config, B, T);
  model::LossHead head(m.config, model::BatchShape{batch.task, B, T, 2});
  Mat h("h", B * T, m.config.hidden_size);
  zo::FloatTheta theta_f32(w);
  zo::ForwardPass pass(forward, theta_f32, h, batch.tokens, batch.mask);
  zo::walk(streamer, pass);
  kernels::LossSums sums = kernels::make_loss_sums();
  head.loss(space, model::make_edge_view(m.registry, pass.edges()), pass.final_hidden(), batch,
            sums);
  return kernels::read_loss(space, sums).mean();
}

/// The tests' run of z: every step's, and the pending update's.
ZSpec run_z(Distribution d = Distribution::gaussian) { return {2024, d, kDefaultZRecipe}; }

StepPerturbation perturbation(std::int64_t step, double eps = 1e-2,
                              Distribution d = Distribution::gaussian) {
  return {run_z(d), step, eps};
}

class EngineTask : public ::testing::TestWithParam<model::Task> {};

TEST_P(EngineTask, EstimateEqualsNaiveCentralDifference) {
  // OPT pre-LN, OPT post-LN with project_in/out, Llama, Qwen2, Qwen3, Mistral, Gemma 3,
  // OLMo 2, Phi-3.
  for (const model::ModelConfig& config :
       {tiny_config(true, 0), tiny_config(false, 8), tiny_llama_config(),
        tiny_config_for(model::Architecture::qwen2), tiny_config_for(model::Architecture::qwen3),
        tiny_config_for(model::Architecture::mistral), tiny_config_for(model::Architecture::gemma3),
        tiny_config_for(model::Architecture::olmo2), tiny_config_for(model::Architecture::phi3)}) {
    SCOPED_TRACE(model::describe(config, " "));
    TinyModel m(config);
    const model::Batch batch = make_batch(GetParam(), B, T, kLengths);
    const int q = 2;
    zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(q, 1, 0),
                  model::BatchShape{GetParam(), B, T, 2});
    PendingUpdate none;
    const StepPerturbation p = perturbation(3);
    const auto local = ex.run_step(batch, p, none);
    const zo::StepEstimate est = zo::combine_losses(runtime::SerialCommunicator(), local, p.eps);
    for (int query = 0; query < q; ++query) {
      const double plus = naive_loss(m, batch, p, query, +1);
      const double minus = naive_loss(m, batch, p, query, -1);
      const double g = (plus - minus) / (2 * p.eps);  // central difference, in double
      // w± differ from the naive ones by at most one float rounding per
      // element, so the losses agree to ~1e-6 relative; g divides a
      // difference of O(eps) by 2 eps, hence the looser bound.
      EXPECT_NEAR(est.loss_plus[query], plus, 1e-5 * std::fabs(plus));
      EXPECT_NEAR(est.loss_minus[query], minus, 1e-5 * std::fabs(minus));
      EXPECT_NEAR(est.g[query], g, 2e-3 * std::fabs(g) + 1e-4) << "query " << query;
      EXPECT_GT(std::fabs(g), 1e-3) << "a degenerate test: the perturbation does not move the loss";
    }
    EXPECT_EQ(est.stop, StopReason::none);
    // A stop reason travels with the losses and changes nothing else.
    for (const StopReason reason : {StopReason::requeue, StopReason::interrupt}) {
      const zo::StepEstimate stopped =
          zo::combine_losses(runtime::SerialCommunicator(), local, p.eps, reason);
      EXPECT_EQ(stopped.stop, reason);
      EXPECT_EQ(stopped.g, est.g);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tasks, EngineTask,
                         ::testing::Values(model::Task::causal_lm, model::Task::classification));

TEST(Engine, StepLeavesThetaUntouched) {
  TinyModel m(tiny_config());
  const std::string before = m.digest();
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(1, 1, 0),
                model::BatchShape{model::Task::causal_lm, B, T, 0});
  PendingUpdate none;
  ex.run_step(make_batch(model::Task::causal_lm, B, T, kLengths), perturbation(0), none);
  EXPECT_EQ(m.digest(), before) << "θ changed during a step without a pending update";
}

TEST(Engine, UpdateFollowsTheMezoRule) {
  TinyModel m(tiny_config());
  const std::vector<std::vector<float>> before = m.host_theta();
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(2, 1, 0),
                model::BatchShape{model::Task::classification, B, T, 2});
  const ZSpec z{99};
  const std::vector<double> g = {1.5, -0.75};
  PendingUpdate u = PendingUpdate::after({z, 17, 0}, g, 0.05, 0.1);
  ex.flush(z, u);
  EXPECT_FALSE(u.active);

  double max_err = 0;
  bool decay_seen = false, no_decay_seen = false;
  const std::vector<std::vector<float>> after = m.host_theta();
  for (const auto& info : m.registry.parameters()) {
    const std::vector<float>& t0 = before[info.id];
    const std::vector<float>& t1 = after[info.id];
    const double wd = info.weight_decay ? u.weight_decay : 0.0;
    (info.weight_decay ? decay_seen : no_decay_seen) = true;
    for (std::size_t e = 0; e < t0.size(); ++e) {
      double grad = 0;
      for (int q = 0; q < 2; ++q)
        grad +=
            g[q] *
            PerturbationStream::make(99, 17, q, Distribution::gaussian, z.recipe).z(info.id, e) / 2;
      const double want = t0[e] - u.lr * (grad + wd * t0[e]);
      max_err = std::max(max_err, std::fabs(t1[e] - want));
    }
  }
  EXPECT_TRUE(decay_seen && no_decay_seen);
  EXPECT_LT(max_err, 1e-6);
}

/// Runs `steps` steps with the given plan; returns the per-step local
/// tables. g comes from `g_from`'s tables when given (a rank of a group sees
/// only its own losses; the all-gather would give it the single rank's).
std::vector<zo::LossTable> train(TinyModel& m, const zo::EvaluationPlan& plan,
                                 const model::Batch& batch, int steps,
                                 const std::vector<zo::LossTable>* g_from = nullptr,
                                 Distribution d = Distribution::gaussian) {
  zo::Engine ex(m.config, *m.store, plan, model::BatchShape{batch.task, B, T, 2});
  PendingUpdate pending;
  std::vector<zo::LossTable> tables;
  for (int s = 0; s < steps; ++s) {
    const StepPerturbation p = perturbation(s, 1e-3, d);
    tables.push_back(ex.run_step(batch, p, pending));
    const zo::LossTable& table = g_from ? (*g_from)[s] : tables.back();
    const zo::StepEstimate est = zo::combine_losses(runtime::SerialCommunicator(), table, p.eps);
    pending = PendingUpdate::after(p, est.g, 1e-3, 0.01);
  }
  ex.flush(run_z(d), pending);
  return tables;
}

zo::EvaluationPlan one_sided(int directions, int P, int rank) {
  return zo::EvaluationPlan::make(zo::EstimatorSpec::make(EstimatorKind::one_sided, directions), P,
                                  rank);
}

TEST_P(EngineTask, OneSidedEstimateEqualsNaiveForwardDifferences) {
  // L(θ) and L(θ + εz_i) against the naive forward; g_i = (L_i − L_0) / σ
  // (FZOO) from those naive losses, σ their population standard deviation.
  for (const model::ModelConfig& config :
       {tiny_config(true, 0), tiny_llama_config(), tiny_config_for(model::Architecture::gemma3)}) {
    SCOPED_TRACE(model::describe(config, " "));
    TinyModel m(config);
    const model::Batch batch = make_batch(GetParam(), B, T, kLengths);
    const int n = 4;
    zo::Engine ex(m.config, *m.store, one_sided(n, 1, 0), model::BatchShape{GetParam(), B, T, 2});
    PendingUpdate none;
    const StepPerturbation p = perturbation(3, 1e-2, Distribution::rademacher);
    const zo::StepEstimate est =
        zo::combine_losses(runtime::SerialCommunicator(), ex.run_step(batch, p, none), p.eps);
    const double base = naive_loss(m, batch, p, 0, 0);
    std::vector<double> plus;
    double mean = 0, variance = 0;
    for (int i = 0; i < n; ++i) {
      plus.push_back(naive_loss(m, batch, p, i, +1));
      mean += plus.back() / n;
    }
    for (double l : plus) variance += (l - mean) * (l - mean) / n;
    const double sigma = std::sqrt(variance);
    EXPECT_GT(sigma, 1e-4) << "a degenerate test: the directions do not move the loss";
    // The unperturbed evaluation is θ itself: the same bits as the engine's
    // own evaluation of θ.
    EXPECT_EQ(est.loss, ex.evaluate(batch).loss_sum / ex.evaluate(batch).count);
    EXPECT_NEAR(est.loss, base, 1e-6 * std::fabs(base));
    EXPECT_NEAR(est.spread, sigma, 1e-2 * sigma);
    ASSERT_EQ(est.g.size(), static_cast<std::size_t>(n));
    EXPECT_TRUE(est.loss_minus.empty());
    for (int i = 0; i < n; ++i) {
      EXPECT_NEAR(est.loss_plus[i], plus[i], 1e-5 * std::fabs(plus[i]));
      const double g = (plus[i] - base) / sigma;
      EXPECT_NEAR(est.g[i], g, 2e-2 * std::fabs(g) + 1e-2) << "direction " << i;
    }
  }
}

TEST(Estimator, OneSidedStepsAreSkippedWhenEveryDirectionGivesOneLoss) {
  // σ = 0: g would divide by zero. The step is non-finite, so the trainer
  // skips it like a step with a non-finite loss.
  zo::LossTable t(zo::EstimatorSpec::make(EstimatorKind::one_sided, 2));
  for (int e = 0; e < 3; ++e) t.at(t.estimator().at(e)) = {e == 0 ? 1.0 : 2.0, 1.0};
  const zo::StepEstimate est = zo::combine_losses(runtime::SerialCommunicator(), t, 1e-3);
  EXPECT_EQ(est.spread, 0.0);
  EXPECT_FALSE(est.finite);
  t.at(t.estimator().at(2)) = {4.0, 1.0};  // L = 1 | 2, 4: σ = 1, g = (1, 3)
  const zo::StepEstimate ok = zo::combine_losses(runtime::SerialCommunicator(), t, 1e-3);
  EXPECT_TRUE(ok.finite);
  EXPECT_EQ(ok.spread, 1.0);
  EXPECT_EQ(ok.g, (std::vector<double>{1.0, 3.0}));
  EXPECT_EQ(ok.loss, 1.0);
}

TEST(Estimator, EvaluationsOfEachEstimatorAndTheirSplits) {
  const zo::EstimatorSpec spsa = zo::EstimatorSpec::make(EstimatorKind::spsa, 3);
  const zo::EstimatorSpec fzoo = zo::EstimatorSpec::make(EstimatorKind::one_sided, 8);
  EXPECT_EQ(spsa.evaluations(), 6);
  EXPECT_EQ(fzoo.evaluations(), 9);
  for (const zo::EstimatorSpec& spec : {spsa, fzoo})
    for (int e = 0; e < spec.evaluations(); ++e) {
      const zo::Evaluation ev = spec.at(e);
      EXPECT_EQ(ev.index, e);
      EXPECT_EQ(spec.index_of(ev.query, ev.sign), e);
    }
  EXPECT_EQ(fzoo.at(0).sign, 0);
  EXPECT_EQ(fzoo.index_of(3, -1), -1);
  EXPECT_EQ(spsa.index_of(0, 0), -1);
  // N = 8: P divides the 9 evaluations; rank 1 of P = 3 runs directions 2, 3, 4.
  const zo::EvaluationPlan plan = zo::EvaluationPlan::make(fzoo, 3, 1);
  ASSERT_EQ(plan.owned.size(), 3u);
  EXPECT_EQ(zo::queries_of(plan.owned), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(zo::queries_of(zo::EvaluationPlan::make(fzoo, 9, 0).owned), (std::vector<int>{0}));
  try {
    zo::EvaluationPlan::make(fzoo, 2, 0);
    ADD_FAILURE() << "P = 2 accepted for 9 evaluations";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must divide the 9 forward evaluations of a one_sided"),
              std::string::npos)
        << e.what();
  }
}

TEST(Engine, OneSidedSplitsPlacementsAndStorageReproduceOneResidentRankBitwise) {
  // One resident fp32 rank is the reference; each variant runs the same
  // steps: the evaluations split over P ranks (the unperturbed one alone,
  // or sharing its pass with direction 0), offloaded with w one at a time,
  // and on a 2-byte θ (bf16, stochastic rounding) against its own one-rank
  // run.
  runtime::PlacementConfig offloaded;
  offloaded.mode = runtime::PlacementMode::offload;
  offloaded.resident_blocks = 1;
  runtime::PlacementConfig one_at_a_time = offloaded;
  one_at_a_time.perturb_one_at_a_time = true;
  runtime::PlacementConfig bf16;
  bf16.storage = StorageDtype::bf16;
  bf16.rounding = Rounding::stochastic;
  const Distribution d = Distribution::rademacher;
  for (const model::ModelConfig& config : {tiny_config(false, 8), tiny_llama_config()})
    for (const model::Task task : {model::Task::causal_lm, model::Task::classification})
      for (const auto& [n, P] : std::vector<std::pair<int, int>>{{2, 3}, {3, 2}, {3, 4}}) {
        SCOPED_TRACE(model::describe(config, " ") + ", N = " + std::to_string(n) +
                     ", P = " + std::to_string(P));
        const model::Batch batch = make_batch(task, B, T, kLengths);
        for (const runtime::PlacementConfig& storage : {runtime::PlacementConfig(), bf16}) {
          TinyModel single(config, 1234, storage);
          const auto want = train(single, one_sided(n, 1, 0), batch, 3, nullptr, d);
          for (int r = 0; r < P; ++r) {
            TinyModel rank(config, 1234, storage);
            const auto got = train(rank, one_sided(n, P, r), batch, 3, &want, d);
            for (std::size_t s = 0; s < want.size(); ++s)
              for (const zo::Evaluation& e : one_sided(n, P, r).owned)
                EXPECT_EQ(got[s].at(e), want[s].at(e))
                    << "step " << s << ", evaluation " << e.index;
            EXPECT_EQ(rank.digest(), single.digest()) << "rank " << r;
          }
          if (storage.storage != StorageDtype::fp32) continue;
          for (const runtime::PlacementConfig& placed : {offloaded, one_at_a_time}) {
            TinyModel other(config, 1234, placed);
            EXPECT_EQ(train(other, one_sided(n, 1, 0), batch, 3, nullptr, d), want);
            EXPECT_EQ(other.digest(), single.digest())
                << (placed.perturb_one_at_a_time ? "one at a time" : "offloaded");
          }
        }
      }
}

TEST(Engine, PerturbationSplitReproducesSingleRankBitwise) {
  for (const model::Architecture arch : test_support::all_architectures())
    for (const auto& [q, P] : std::vector<std::pair<int, int>>{{1, 2}, {2, 2}, {2, 4}}) {
      SCOPED_TRACE(model::architecture_name(arch));
      const model::Batch batch = make_batch(model::Task::causal_lm, B, T, kLengths);
      TinyModel single(tiny_config_for(arch));
      const auto want = train(single, zo::EvaluationPlan::make(q, 1, 0), batch, 4);
      for (int r = 0; r < P; ++r) {
        // Each rank of the group sees only its own losses; the g it applies is
        // the combined one (here: taken from the single-rank run, which the
        // all-gather reproduces exactly since each entry has one owner).
        TinyModel rank(tiny_config_for(arch));
        const auto got = train(rank, zo::EvaluationPlan::make(q, P, r), batch, 4, &want);
        const zo::EvaluationPlan plan = zo::EvaluationPlan::make(q, P, r);
        for (std::size_t s = 0; s < want.size(); ++s)
          for (const auto& e : plan.owned) {
            EXPECT_EQ(got[s].at(e).sum, want[s].at(e).sum) << "q=" << q << " P=" << P;
            EXPECT_EQ(got[s].at(e).count, want[s].at(e).count);
          }
        EXPECT_EQ(rank.digest(), single.digest()) << "q=" << q << " P=" << P << " rank " << r;
      }
    }
}

/// θ in `dtype`, the blocks' GEMMs on 2-byte inputs (precision.gemm_inputs:
/// storage) when `words`, placed as `base` says.
runtime::PlacementConfig two_byte(StorageDtype dtype, bool words,
                                  runtime::PlacementConfig base = runtime::PlacementConfig()) {
  base.storage = dtype;
  base.two_byte_gemm_inputs = words;
  return base;
}

TEST(Engine, TwoByteGemmInputsAgreeAcrossLayoutsAndStayNearFloat32Inputs) {
  // OPT pre-LN, OPT post-LN with project_in/out (E != C), Llama; both tasks;
  // bf16 and fp16. The same steps with w one at a time and offloaded, and
  // split over P = 2, give the same losses and θ bit for bit; the losses are
  // near, not equal to, those of float32 GEMM inputs on the same 2-byte θ.
  runtime::PlacementConfig offloaded;
  offloaded.mode = runtime::PlacementMode::offload;
  offloaded.resident_blocks = 1;
  offloaded.perturb_one_at_a_time = true;
  for (const model::ModelConfig& config :
       {tiny_config(true, 0), tiny_config(false, 8), tiny_llama_config()}) {
    for (const model::Task task : {model::Task::causal_lm, model::Task::classification}) {
      for (const StorageDtype dtype : {StorageDtype::bf16, StorageDtype::fp16}) {
        SCOPED_TRACE(model::describe(config, " ") +
                     (task == model::Task::causal_lm ? ", causal LM, " : ", classification, ") +
                     to_string(dtype));
        const model::Batch batch = make_batch(task, B, T, kLengths);
        TinyModel a(config, 1234, two_byte(dtype, true));
        const auto want = train(a, zo::EvaluationPlan::make(2, 1, 0), batch, 3);
        TinyModel b(config, 1234, two_byte(dtype, true, offloaded));
        EXPECT_EQ(train(b, zo::EvaluationPlan::make(2, 1, 0), batch, 3), want);
        EXPECT_EQ(b.digest(), a.digest()) << "offloaded, w one at a time";
        for (int r = 0; r < 2; ++r) {
          TinyModel rank(config, 1234, two_byte(dtype, true));
          train(rank, zo::EvaluationPlan::make(2, 2, r), batch, 3, &want);
          EXPECT_EQ(rank.digest(), a.digest()) << "P = 2, rank " << r;
        }
        TinyModel f(config, 1234, two_byte(dtype, false));
        const auto floats = train(f, zo::EvaluationPlan::make(2, 1, 0), batch, 1);
        const double tol = dtype == StorageDtype::bf16 ? 3e-2 : 5e-3;
        bool differs = false;
        for (int query = 0; query < 2; ++query)
          for (int sign : {+1, -1}) {
            const double got = want[0].mean(query, sign), ref = floats[0].mean(query, sign);
            EXPECT_NEAR(got, ref, tol * std::fabs(ref)) << "query " << query << " sign " << sign;
            differs = differs || got != ref;
          }
        EXPECT_TRUE(differs) << "2-byte GEMM inputs gave float32's losses exactly: not in use?";
        // The evaluation reads θ's words in place: near the float32 path's.
        TinyModel ew(config, 1234, two_byte(dtype, true)), ef(config, 1234, two_byte(dtype, false));
        zo::Engine xw(config, *ew.store, zo::EvaluationPlan::make(1, 1, 0),
                      model::BatchShape{task, B, T, 2});
        zo::Engine xf(config, *ef.store, zo::EvaluationPlan::make(1, 1, 0),
                      model::BatchShape{task, B, T, 2});
        const double eval_words = xw.evaluate(batch).loss_sum,
                     eval_floats = xf.evaluate(batch).loss_sum;
        EXPECT_NEAR(eval_words, eval_floats, tol * std::fabs(eval_floats));
        EXPECT_NE(eval_words, eval_floats);
      }
    }
  }
}

/// Lengths of B rows that fit a batch of width `width`: the first row fills it.
std::vector<int> lengths_within(int width) { return {width, std::max(1, width - 2), 1}; }

TEST(Engine, NarrowBatchesInWideBuffersGiveTheBitsOfTheirOwnWidth) {
  // A run's batches come at their own widths (data.batch_width: trimmed) in
  // buffers sized for the widest: every step and evaluation must give the
  // bits an engine built for exactly that width gives, whatever width came
  // before (the views shrink and grow again).
  constexpr int kWide = 24;
  const std::vector<int> widths = {16, 7, 24, 8, 16, 1};
  for (const model::ModelConfig& config :
       {tiny_config(false, 8), tiny_llama_config(), tiny_config_for(model::Architecture::qwen3)})
    for (const model::Task task : {model::Task::causal_lm, model::Task::classification}) {
      SCOPED_TRACE(
          std::string(config.architecture == model::Architecture::llama ? "llama" : "opt") +
          (task == model::Task::causal_lm ? ", causal_lm" : ", classification"));
      TinyModel wide(config), exact(config);
      const zo::EvaluationPlan plan = zo::EvaluationPlan::make(2, 1, 0);
      zo::Engine in_wide(config, *wide.store, plan, model::BatchShape{task, B, kWide, 2});
      PendingUpdate pending_wide, pending_exact;
      for (std::size_t s = 0; s < widths.size(); ++s) {
        const int W = widths[s];
        const model::Batch batch = make_batch(task, B, W, lengths_within(W));
        zo::Engine in_exact(config, *exact.store, plan, model::BatchShape{task, B, W, 2});
        const StepPerturbation p = perturbation(static_cast<std::int64_t>(s), 1e-3);
        const zo::LossTable a = in_wide.run_step(batch, p, pending_wide);
        const zo::LossTable b = in_exact.run_step(batch, p, pending_exact);
        ASSERT_EQ(a, b) << "step " << s << " at width " << W;
        // The step applied the previous update: θ is flushed for evaluation.
        const zo::EvalOutcome ea = in_wide.evaluate(batch), eb = in_exact.evaluate(batch);
        EXPECT_EQ(ea.loss_sum, eb.loss_sum) << "evaluation at width " << W;
        EXPECT_EQ(ea.predictions, eb.predictions);
        std::vector<double> g;
        for (int q = 0; q < plan.queries(); ++q)
          g.push_back((a.mean(q, +1) - a.mean(q, -1)) / 2e-3);
        pending_wide = PendingUpdate::after(p, g, 1e-3, 0.01);
        pending_exact = pending_wide;
        if (s + 1 == widths.size()) {
          in_wide.flush(run_z(), pending_wide);
          in_exact.flush(run_z(), pending_exact);
        }
        ASSERT_EQ(wide.digest(), exact.digest()) << "θ after step " << s;
      }
    }
}

TEST(Engine, PaddingPastEveryLengthChangesTheLossOnlyByRounding) {
  // Why a batch may be trimmed: positions past every example's length are
  // masked keys and ignored targets, so the loss at width 8 is the loss at
  // width 24 up to the rounding of differently shaped GEMMs.
  for (const model::ModelConfig& config : {tiny_config(), tiny_llama_config()})
    for (const model::Task task : {model::Task::causal_lm, model::Task::classification}) {
      TinyModel m(config);
      zo::Engine wide(config, *m.store, zo::EvaluationPlan::make(1, 1, 0),
                      model::BatchShape{task, B, 24, 2});
      const zo::EvalOutcome full = wide.evaluate(make_batch(task, B, 24, kLengths));
      const zo::EvalOutcome trimmed = wide.evaluate(make_batch(task, B, 8, kLengths));
      EXPECT_EQ(full.count, trimmed.count);
      EXPECT_NEAR(trimmed.loss_sum, full.loss_sum, 1e-5 * std::fabs(full.loss_sum));
      EXPECT_EQ(trimmed.predictions, full.predictions);
    }
}

TEST(Engine, RepeatedRunsAreBitIdentical) {
  const model::Batch batch = make_batch(model::Task::classification, B, T, kLengths);
  TinyModel a(tiny_config(false, 8)), b(tiny_config(false, 8));
  const auto ta = train(a, zo::EvaluationPlan::make(1, 1, 0), batch, 5);
  const auto tb = train(b, zo::EvaluationPlan::make(1, 1, 0), batch, 5);
  EXPECT_EQ(ta, tb);
  EXPECT_EQ(a.digest(), b.digest());
}

TEST(Engine, FillerRowsDoNotCount) {
  TinyModel m(tiny_config());
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(1, 1, 0),
                model::BatchShape{model::Task::classification, B, T, 2});
  const zo::EvalOutcome out =
      ex.evaluate(make_batch(model::Task::classification, B, T, kLengths, 2));
  EXPECT_EQ(out.count, 2.0);
  ASSERT_EQ(out.predictions.size(), 3u);
}

TEST(Engine, LossFallsOnALearnableBatch) {
  TinyModel m(tiny_config());
  const model::Batch batch = make_batch(model::Task::classification, B, T, kLengths);
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(1, 1, 0),
                model::BatchShape{batch.task, B, T, 2});
  const double initial = ex.evaluate(batch).loss_sum / 3;
  PendingUpdate pending;
  for (int s = 0; s < 150; ++s) {
    const StepPerturbation p = perturbation(s, 1e-3);
    const auto local = ex.run_step(batch, p, pending);
    const zo::StepEstimate est = zo::combine_losses(runtime::SerialCommunicator(), local, p.eps);
    // lr 0.01 descends steadily (0.96 -> 0.02); at 0.05 the loss first
    // climbs by orders of magnitude and whether it recovers within 150
    // steps depends on the last bits of the forward pass.
    pending = PendingUpdate::after(p, est.g, 0.01, 0.0);
  }
  ex.flush(run_z(), pending);
  const double final_loss = ex.evaluate(batch).loss_sum / 3;
  EXPECT_LT(final_loss, 0.7 * initial) << "initial " << initial << ", final " << final_loss;
}

}  // namespace
