// Block-sparse perturbation (optim.perturbed_blocks, core/block_choice.hpp):
// the choice of blocks against the Python reference and its statistics; the
// kernel's unperturbed outputs; the engine's step losses against a forward
// at a naively masked w+; and its updates (fused and flushed, with momentum
// and decay) against a naive d-sized reference in double.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/block_choice.hpp"
#include "core/error.hpp"
#include "core/fp.hpp"
#include "support/tiny_model.hpp"
#include "support/update_reference.hpp"
#include "zo/engine.hpp"
#include "zo/momentum.hpp"
#include "zo/update_terms.hpp"

namespace {

using namespace distzo;
using distzo::test_support::make_batch;
using distzo::test_support::tiny_config;
using distzo::test_support::TinyModel;

constexpr int B = 3, T = 7;
const std::vector<int> kLengths = {7, 5, 3};

TEST(BlockChoice, MatchesThePythonReference) {
  // python3 tools/z_reference.py --chosen-blocks SEED STEP K B
  struct Case {
    std::uint64_t seed;
    std::int64_t step;
    int k, blocks;
    std::vector<int> want;
  };
  const std::vector<Case> cases = {
      {2024, 0, 3, 8, {2, 4, 7}},
      {2024, 1, 3, 8, {1, 4, 5}},
      {2024, 7, 1, 30, {11}},
      {18446744073709551615ull, 4294967301, 5, 30, {12, 14, 20, 22, 23}},
      {42, 123456, 10, 12, {0, 1, 4, 5, 6, 7, 8, 9, 10, 11}},
  };
  for (const Case& c : cases) {
    const BlockChoice choice{c.k, c.blocks};
    EXPECT_EQ(choice.chosen_blocks(c.seed, c.step), c.want) << c.seed << " " << c.step;
    for (int b = 0; b < c.blocks; ++b)
      EXPECT_EQ(choice.perturbs(c.seed, c.step, b),
                std::find(c.want.begin(), c.want.end(), b) != c.want.end());
    EXPECT_TRUE(choice.perturbs(c.seed, c.step, -1)) << "edges are perturbed every step";
  }
}

TEST(BlockChoice, DistinctUniformAndFreshEveryStep) {
  const int blocks = 12, k = 4, steps = 6000;
  const BlockChoice choice{k, blocks};
  std::vector<int> hits(blocks, 0);
  std::set<std::vector<int>> distinct;
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::vector<int> c = choice.chosen_blocks(99, s);
    ASSERT_EQ(c.size(), static_cast<std::size_t>(k));
    ASSERT_TRUE(std::is_sorted(c.begin(), c.end()));
    ASSERT_EQ(std::set<int>(c.begin(), c.end()).size(), c.size()) << "a block chosen twice";
    for (int b : c) {
      ASSERT_GE(b, 0);
      ASSERT_LT(b, blocks);
      ++hits[static_cast<std::size_t>(b)];
    }
    distinct.insert(c);
  }
  // Each block is chosen with probability K/B: 2000 of 6000 steps, binomial
  // std 36.5; 5 std is a bound a correct shuffle misses with p ~ 1e-5.
  for (int b = 0; b < blocks; ++b)
    EXPECT_NEAR(hits[static_cast<std::size_t>(b)], steps * k / blocks, 5 * 36.5) << "block " << b;
  EXPECT_GT(distinct.size(), 400u) << "of the 495 subsets, few ever chosen";
  // Another seed, another sequence.
  int differ = 0;
  for (std::int64_t s = 0; s < 20; ++s)
    differ += choice.chosen_blocks(99, s) != choice.chosen_blocks(100, s);
  EXPECT_GT(differ, 15);
}

TEST(BlockChoice, DenseAndRefusals) {
  const BlockChoice dense{0, 5};
  EXPECT_TRUE(dense.dense());
  EXPECT_EQ(dense.chosen_blocks(1, 2), (std::vector<int>{0, 1, 2, 3, 4}));
  for (int b = -1; b < 5; ++b) EXPECT_TRUE(dense.perturbs(1, 2, b));
  // A K whose B was never filled in, or K >= B, fails loudly, never turns dense.
  EXPECT_THROW(BlockChoice({3, 0}).perturbs(1, 2, 0), Error);
  EXPECT_THROW(BlockChoice({5, 5}).chosen_blocks(1, 2), Error);
}

TEST(BlockChoice, UnperturbedOutputsAreThetaAfterTheUpdateAndDrawNoZ) {
  // One tensor through the kernel twice: perturbed = false gives w+ = w− =
  // θ' bit for bit, and θ' is the same as when z is drawn.
  const std::size_t n = 1003;
  Vec theta_a("theta_a", n), theta_b("theta_b", n), plus("plus", n), minus("minus", n),
      plus_b("plus_b", n), minus_b("minus_b", n);
  std::vector<float> start(n);
  for (std::size_t i = 0; i < n; ++i) start[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
  const Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(start.data(),
                                                                                    n);
  Kokkos::deep_copy(theta_a, host);
  Kokkos::deep_copy(theta_b, host);
  const ZSpec z{7};
  kernels::UpdateTerms terms;
  terms.count = 1;
  terms.stream[0] = z.stream(3, 0);
  terms.coefficient[0] = 0.05f;
  terms.decay = 0.001f;
  const ExecSpace space;
  kernels::PerturbedOutputs sparse{StoredVec(plus), StoredVec(minus), StoredVec()};
  sparse.perturbed = false;
  kernels::update_and_perturb(space, StoredVec(theta_a), 4, 0, terms, z.stream(4, 0), 1e-3f,
                              sparse);
  kernels::update_and_perturb(space, StoredVec(theta_b), 4, 0, terms, z.stream(4, 0), 1e-3f,
                              StoredVec(plus_b), StoredVec(minus_b));
  space.fence();
  auto ta = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta_a);
  auto tb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta_b);
  auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plus);
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), minus);
  auto pb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plus_b);
  int moved = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(ta(i), tb(i)) << "the update differs at " << i;
    ASSERT_EQ(p(i), ta(i)) << "w+ is not θ' at " << i;
    ASSERT_EQ(m(i), ta(i)) << "w− is not θ' at " << i;
    moved += pb(i) != ta(i);
    ASSERT_NE(ta(i), start[i]) << "the update did not reach element " << i;
  }
  EXPECT_GT(moved, static_cast<int>(n) * 9 / 10) << "the dense w+ should differ from θ'";
}

/// The run's z: K of the tiny model's blocks a step.
ZSpec sparse_z(const TinyModel& m, int k) {
  ZSpec z{2024, Distribution::gaussian, kDefaultZRecipe};
  z.blocks = BlockChoice{k, m.registry.num_blocks()};
  return z;
}

model::ModelConfig four_blocks() {
  model::ModelConfig c = tiny_config();
  c.num_hidden_layers = 4;
  return c;
}

TEST(BlockSparse, StepLossesAreTheForwardAtTheMaskedPerturbation) {
  // w+ of step 5 built by hand: θ + ε·z on the edges and the chosen blocks,
  // θ elsewhere; its forward loss must be the step's L(θ + εz).
  TinyModel m(four_blocks());
  const ZSpec z = sparse_z(m, 2);
  const std::int64_t step = 5;
  const double eps = 1e-2;
  ASSERT_EQ(z.blocks.chosen_blocks(z.seed, step).size(), 2u);
  const model::Batch batch = make_batch(model::Task::causal_lm, B, T, kLengths);
  std::vector<int> z_streams_by_block(static_cast<std::size_t>(m.registry.num_blocks()) + 1, 0);
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(1, 1, 0),
                model::BatchShape{model::Task::causal_lm, B, T, 0}, zo::NodeExchange(), ExecSpace(),
                [&](const zo::Materialisation& mat) {
                  z_streams_by_block[static_cast<std::size_t>(m.registry[mat.id].block + 1)] +=
                      mat.z_streams;
                });
  PendingUpdate none;
  const zo::LossTable losses = ex.run_step(batch, StepPerturbation{z, step, eps}, none);
  for (int b = 0; b < m.registry.num_blocks(); ++b)
    EXPECT_EQ(z_streams_by_block[static_cast<std::size_t>(b) + 1] > 0, z.perturbs(step, b))
        << "block " << b << ": z drawn exactly where the step perturbs";
  EXPECT_GT(z_streams_by_block[0], 0) << "the edges are perturbed";

  const std::vector<std::vector<float>> theta = m.host_theta();
  const real e = static_cast<real>(eps);
  for (int sign : {+1, -1}) {
    TinyModel w(four_blocks());
    w.store->fill([&](std::uint32_t id, real* dst) {
      const model::ParameterInfo& info = m.registry[id];
      const PerturbationStream s = z.stream(step, 0);
      for (std::size_t i = 0; i < theta[id].size(); ++i) {
        const real ez = fp::mul(e, s.z(id, i));
        dst[i] = !z.perturbs(step, info.block)
                     ? theta[id][i]
                     : (sign > 0 ? fp::add(theta[id][i], ez) : fp::sub(theta[id][i], ez));
      }
    });
    zo::Engine plain(w.config, *w.store, zo::EvaluationPlan::make(1, 1, 0),
                     model::BatchShape{model::Task::causal_lm, B, T, 0});
    const zo::EvalOutcome at_w = plain.evaluate(batch);
    EXPECT_EQ(losses.at(0, sign).count, at_w.count);
    EXPECT_NEAR(losses.at(0, sign).sum, at_w.loss_sum, 1e-9 * std::fabs(at_w.loss_sum))
        << "sign " << sign;
  }
  // The dense step's loss is measurably another.
  TinyModel d(four_blocks());
  zo::Engine dense(d.config, *d.store, zo::EvaluationPlan::make(1, 1, 0),
                   model::BatchShape{model::Task::causal_lm, B, T, 0});
  const ZSpec dense_z{2024, Distribution::gaussian, kDefaultZRecipe};
  const zo::LossTable dense_losses = dense.run_step(batch, {dense_z, step, eps}, none);
  EXPECT_GT(std::fabs(dense_losses.at(0, +1).sum - losses.at(0, +1).sum),
            1e-6 * std::fabs(losses.at(0, +1).sum));
}

std::vector<double> row_of(std::int64_t s, int q) {
  std::vector<double> g;
  for (int i = 0; i < q; ++i) g.push_back(0.7 * std::cos(1.3 * s + 0.9 * i) + 0.1 * (i - 1));
  return g;
}

TEST(BlockSparse, UpdatesMatchANaiveMaskedMomentumInDouble) {
  // d_s = Σ_i ĝ_{s,i} z_{s,i} / q with z_{s,i} = 0 on the blocks step s
  // left out; M_t = Σ_j c_j d_{t−j}; θ ← θ − lr (M_t + wd θ) on every
  // parameter M_t reaches (a block none of the last h steps chose keeps θ):
  // support/update_reference.hpp.
  TinyModel m(four_blocks());
  const test_support::UpdateRun run{sparse_z(m, 1), zo::MomentumSpec{0.8, 2}, 2, 7, 0.05, 0.1,
                                    row_of};
  const std::vector<std::vector<float>> start = m.host_theta();
  int untouched = 0;
  const std::vector<std::vector<double>> theta =
      test_support::naive_theta(m.registry, start, run, &untouched);
  ASSERT_GT(untouched, 0) << "a degenerate test: every update reached every block";

  const std::vector<std::vector<float>> fused = test_support::engine_theta(m.config, run, true);
  const std::vector<std::vector<float>> flushed = test_support::engine_theta(m.config, run, false);
  ASSERT_EQ(test_support::max_difference(fused, flushed), 0.0) << "fused and flushed differ";
  EXPECT_LT(test_support::max_difference(fused, theta), 2e-6)
      << "largest |θ_distzo − θ_naive| over " << run.steps << " steps";
  EXPECT_GT(test_support::max_difference(theta, start), 1e-2)
      << "a degenerate test: the updates barely move θ";

  // The dense run from the same rows is another θ.
  test_support::UpdateRun dense = run;
  dense.z.blocks = BlockChoice();
  EXPECT_GT(test_support::max_difference(test_support::engine_theta(m.config, dense, true), theta),
            100 * 2e-6)
      << "sparse and dense updates are indistinguishable here";
}

TEST(BlockSparse, OffloadWritesBackOnlyTheBlocksTheUpdateReaches) {
  // Every block streamed: a step writes back the blocks its pending update
  // reaches (those the previous step chose), a dense step all four; θ is the
  // resident run's bit for bit, on a float32 and a 2-byte (SR) θ.
  runtime::PlacementConfig offloaded;
  offloaded.mode = runtime::PlacementMode::offload;
  offloaded.resident_blocks = 0;
  runtime::PlacementConfig bf16 = offloaded;
  bf16.storage = StorageDtype::bf16;
  bf16.rounding = Rounding::stochastic;
  runtime::PlacementConfig bf16_resident;
  bf16_resident.storage = StorageDtype::bf16;
  bf16_resident.rounding = Rounding::stochastic;
  const model::Batch batch = make_batch(model::Task::causal_lm, B, T, kLengths);
  const model::BatchShape shape{model::Task::causal_lm, B, T, 0};
  for (const auto& [streamed, resident] :
       {std::pair{offloaded, runtime::PlacementConfig()}, std::pair{bf16, bf16_resident}}) {
    std::uint64_t dense_to_host = 0;
    std::vector<std::string> digests;
    for (int k : {0, 1, 0, 1}) {
      const bool offload = digests.size() < 2;
      TinyModel m(four_blocks(), 1234, offload ? streamed : resident);
      const ZSpec z = sparse_z(m, k);
      zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(1, 1, 0), shape);
      PendingUpdate pending;
      for (int s = 0; s < 4; ++s) {
        ex.run_step(batch, StepPerturbation{z, s, 1e-3}, pending);
        const std::uint64_t to_host = ex.streamer().last_pass_bytes().to_host;
        if (offload && s > 0 && k == 0) dense_to_host = to_host;
        if (offload && s > 0 && k == 1) {
          ASSERT_GT(dense_to_host, 0u);
          EXPECT_EQ(to_host, dense_to_host / 4) << "step " << s << ": one block's write-back";
        }
        pending = PendingUpdate::after({z, s, 1e-3}, {0.5 - s}, 1e-2, 0.01);
      }
      ex.flush(z, pending);
      digests.push_back(ex.parameter_digest());
    }
    EXPECT_EQ(digests[0], digests[2]) << "dense: offloaded and resident θ differ";
    EXPECT_EQ(digests[1], digests[3]) << "block-sparse: offloaded and resident θ differ";
    EXPECT_NE(digests[0], digests[1]);
  }
}

TEST(BlockSparse, DenseChoiceIsTheDenseUpdateTermForTerm) {
  TinyModel m(four_blocks());
  const ZSpec dense{2024, Distribution::gaussian, kDefaultZRecipe};
  ZSpec sparse = sparse_z(m, 2);
  const PendingUpdate u = PendingUpdate::after({dense, 3, 1e-3}, {0.5, -0.25}, 1e-3, 0.01);
  for (const auto& info : m.registry.parameters()) {
    const kernels::UpdateTerms a = zo::update_terms(dense, u, info, Rounding::nearest);
    const kernels::UpdateTerms b = zo::update_terms(sparse, u, info, Rounding::nearest);
    EXPECT_EQ(a.count, 2);
    EXPECT_EQ(b.count, sparse.perturbs(3, info.block) ? 2 : 0) << info.name;
    if (b.count == 0) continue;
    EXPECT_EQ(a.decay, b.decay);
    for (int k = 0; k < 2; ++k) EXPECT_EQ(a.coefficient[k], b.coefficient[k]);
  }
}

}  // namespace
