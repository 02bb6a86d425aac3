// θ stored in 2 bytes (precision.storage bf16 / fp16) through the parameter
// store: writes round to nearest and reads decode, θ takes half the bytes,
// the digest is over the stored words (docs/formats.md, digest version 3),
// decode_storage is storage::load, an evaluation on a
// 2-byte θ is the evaluation on the same values in float32, a step keeps θ
// representable, offloaded blocks stream 2-byte words (the same θ as
// resident), and a node-shared master holds words too.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/digest.hpp"
#include "core/step_state.hpp"
#include "core/storage_dtype.hpp"
#include "kernels/decode_storage.hpp"
#include "runtime/faults.hpp"
#include "runtime/parameter_store.hpp"
#include "support/expect_error.hpp"
#include "support/tiny_model.hpp"
#include "zo/engine.hpp"

namespace {

using namespace distzo;
using distzo::test_support::make_batch;
using distzo::test_support::tiny_config;
using distzo::test_support::TinyModel;
using runtime::PlacementConfig;

constexpr int B = 3, T = 7;
const std::vector<int> kLengths = {7, 5, 3};

PlacementConfig stored_in(StorageDtype dtype, Rounding rounding = Rounding::stochastic) {
  PlacementConfig p;
  p.storage = dtype;
  p.rounding = rounding;
  return p;
}

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// A float32 store holding `values` (by id).
std::unique_ptr<runtime::ParameterStore> float_store(
    const TinyModel& m, const std::vector<std::vector<float>>& values) {
  auto store = std::make_unique<runtime::ParameterStore>(m.registry, PlacementConfig());
  store->fill(
      [&](std::uint32_t id, real* dst) { std::copy(values[id].begin(), values[id].end(), dst); });
  return store;
}

class StoreDtype : public ::testing::TestWithParam<StorageDtype> {};

TEST_P(StoreDtype, WriteRoundsToNearestAndReadDecodes) {
  const StorageDtype dtype = GetParam();
  const TinyModel f32(tiny_config());
  const TinyModel half(tiny_config(), 1234, stored_in(dtype));
  const auto exact = f32.host_theta(), stored = half.host_theta();
  for (const auto& p : f32.registry.parameters())
    for (std::size_t e = 0; e < exact[p.id].size(); ++e)
      ASSERT_EQ(bits(stored[p.id][e]),
                bits(storage::round_to_storage(exact[p.id][e], dtype, Rounding::nearest, 0)))
          << p.name << "[" << e << "]";
  // Written again, a stored value comes back unchanged (nearest of a value
  // the format holds is that value).
  for (const auto& p : half.registry.parameters()) half.store->write(p.id, stored[p.id].data());
  EXPECT_EQ(half.host_theta(), stored);
}

TEST_P(StoreDtype, HalfTheBytes) {
  const TinyModel f32(tiny_config());
  const TinyModel half(tiny_config(), 1234, stored_in(GetParam()));
  EXPECT_GT(f32.store->device_bytes(), 0u);
  EXPECT_EQ(half.store->device_bytes() * 2, f32.store->device_bytes());
  EXPECT_EQ(half.store->host_bytes(), 0u);
}

TEST_P(StoreDtype, DigestIsOverTheStoredWords) {
  const StorageDtype dtype = GetParam();
  const TinyModel half(tiny_config(), 1234, stored_in(dtype));
  // The definition (digest version 3): each word with its format's tag.
  ParameterDigest definition;
  half.store->visit_stored([&](std::uint32_t id, StoredElements data) {
    ASSERT_EQ(data.dtype, dtype);
    const auto& p = half.registry[id];
    std::uint64_t sum = 0;
    for (std::int64_t k = 0; k < p.numel(); ++k)
      sum += digest::element_term(static_cast<std::uint64_t>(k),
                                  digest::stored_word(dtype, data.words()[k]));
    definition.add_tensor(p.name, p.shape, sum);
  });
  EXPECT_EQ(half.digest(), definition.hex());
  // A float32 θ of the same values is another θ as stored: another digest.
  const auto same_values = float_store(half, half.host_theta());
  EXPECT_NE(half.digest(), same_values->digest());
  EXPECT_NE(half.digest(), TinyModel(tiny_config()).digest()) << "the rounding changed θ";
}

TEST_P(StoreDtype, DecodeStorageIsStorageLoad) {
  const StorageDtype dtype = GetParam();
  const std::size_t n = 1u << 16;  // every word
  HalfVec words("words", n);
  Vec out("out", n);
  auto host_words = Kokkos::create_mirror_view(words);
  for (std::size_t w = 0; w < n; ++w) host_words(w) = static_cast<std::uint16_t>(w);
  Kokkos::deep_copy(words, host_words);
  kernels::as_float32(ExecSpace(), StoredVec(dtype, words.data(), n), out);
  const auto host_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (std::size_t w = 0; w < n; ++w)
    ASSERT_EQ(bits(host_out(w)), bits(storage::load(static_cast<std::uint32_t>(w), dtype)))
        << "word " << w;
}

TEST_P(StoreDtype, EvaluationReadsTheDecodedValues) {
  const TinyModel half(tiny_config(), 1234, stored_in(GetParam()));
  const auto same_values = float_store(half, half.host_theta());
  for (model::Task task : {model::Task::causal_lm, model::Task::classification}) {
    const model::Batch batch = make_batch(task, B, T, kLengths);
    const model::BatchShape shape{task, B, T, 2};
    zo::Engine on_half(half.config, *half.store, zo::EvaluationPlan::make(1, 1, 0), shape);
    zo::Engine on_float(half.config, *same_values, zo::EvaluationPlan::make(1, 1, 0), shape);
    const zo::EvalOutcome a = on_half.evaluate(batch), b = on_float.evaluate(batch);
    EXPECT_EQ(bits(static_cast<float>(a.loss_sum)), bits(static_cast<float>(b.loss_sum)));
    EXPECT_EQ(a.loss_sum, b.loss_sum);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.predictions, b.predictions);
  }
}

/// Two ZO steps (seed 7, eps 1e-3, lr 1e-3, projected gradients `g` per
/// query, weight decay `wd`) and a flush of the last update.
void two_steps_and_flush(zo::Engine& engine, const model::Batch& batch,
                         const std::vector<double>& g, double wd) {
  const ZSpec z{7, Distribution::gaussian, ZRecipe::v2};
  PendingUpdate pending;
  for (std::int64_t step = 0; step < 2; ++step) {
    StepPerturbation perturbation;
    perturbation.z = z;
    perturbation.step = step;
    perturbation.eps = 1e-3;
    engine.run_step(batch, perturbation, pending);
    pending = PendingUpdate::after(perturbation, g, 1e-3, wd);
  }
  engine.flush(z, pending);
}

/// Two steps and a flush on a 2-byte θ: θ moves, every value stays one the
/// format holds, and stochastic and nearest rounding take different paths.
TEST_P(StoreDtype, StepsKeepThetaInTheFormat) {
  const StorageDtype dtype = GetParam();
  std::vector<std::string> digests;
  for (Rounding rounding : {Rounding::stochastic, Rounding::nearest}) {
    const TinyModel half(tiny_config(), 1234, stored_in(dtype, rounding));
    const std::string before = half.digest();
    const model::Batch batch = make_batch(model::Task::causal_lm, B, T, kLengths);
    zo::Engine engine(half.config, *half.store, zo::EvaluationPlan::make(1, 1, 0),
                      model::BatchShape{model::Task::causal_lm, B, T, 0});
    two_steps_and_flush(engine, batch, {30.0}, 0.0);
    EXPECT_NE(half.digest(), before);
    digests.push_back(half.digest());
    for (const auto& values : half.host_theta())
      for (float x : values)
        ASSERT_EQ(bits(x), bits(storage::round_to_storage(x, dtype, Rounding::nearest, 0)));
  }
  EXPECT_NE(digests[0], digests[1]) << "stochastic and nearest rounding gave the same θ";
}

/// Two steps and a flush on θ placed by `placement`; returns its digest and
/// the bytes the streamer moved. `poison`: released slots are filled with NaN.
std::pair<std::string, runtime::TransferBytes> train(const PlacementConfig& placement,
                                                     bool poison = false) {
  model::ModelConfig c = tiny_config();
  c.num_hidden_layers = 4;
  const TinyModel m(c, 1234, placement);
  const model::Batch batch = make_batch(model::Task::causal_lm, B, T, kLengths);
  zo::Engine engine(m.config, *m.store, zo::EvaluationPlan::make(2, 1, 0),
                    model::BatchShape{model::Task::causal_lm, B, T, 0});
  if (poison) runtime::poison_released_slots(engine.streamer());
  two_steps_and_flush(engine, batch, {30.0, -20.0}, 0.1);
  engine.evaluate(batch);
  return {m.digest(), engine.streamer().total_bytes()};
}

/// Offloaded blocks of a 2-byte θ stream through 2-byte slots: the same θ
/// as resident, half the bytes of a float32 θ moved and held in host memory.
TEST_P(StoreDtype, OffloadedIsResidentInHalfTheBytes) {
  const auto resident = train(stored_in(GetParam()));
  for (int K : {0, 1, 3})
    for (int prefetch : {1, 2}) {
      SCOPED_TRACE("K=" + std::to_string(K) + " prefetch=" + std::to_string(prefetch));
      PlacementConfig offload = stored_in(GetParam());
      offload.mode = runtime::PlacementMode::offload;
      offload.resident_blocks = K;
      offload.prefetch = prefetch;
      const auto streamed = train(offload);
      EXPECT_EQ(streamed.first, resident.first);
      // Released slots filled with NaN words: nothing reads a slot after release.
      EXPECT_EQ(train(offload, true).first, resident.first);
      PlacementConfig f32 = offload;
      f32.storage = StorageDtype::fp32;
      const auto float_streamed = train(f32);
      EXPECT_GT(streamed.second.to_device, 0u);
      EXPECT_EQ(2 * streamed.second.to_device, float_streamed.second.to_device);
      EXPECT_EQ(2 * streamed.second.to_host, float_streamed.second.to_host);
      model::ModelConfig c = tiny_config();
      c.num_hidden_layers = 4;
      EXPECT_EQ(2 * TinyModel(c, 1234, offload).store->host_bytes(),
                TinyModel(c, 1234, f32).store->host_bytes());
    }
}

/// A node-shared master of 2-byte words (one rank here; tests/mpi has more),
/// written back and checkpointed through its slices.
TEST_P(StoreDtype, SharedMasterHoldsWords) {
  PlacementConfig shared = stored_in(GetParam());
  shared.share_host_master = true;
  const runtime::SerialCommunicator node;
  const TinyModel m(tiny_config(), 1234, shared, &node);
  const TinyModel resident(tiny_config(), 1234, stored_in(GetParam()));
  EXPECT_EQ(m.digest(), resident.digest());
  EXPECT_EQ(2 * m.store->shared_bytes(), TinyModel(tiny_config(), 1234,
                                                   [] {
                                                     PlacementConfig p;
                                                     p.share_host_master = true;
                                                     return p;
                                                   }())
                                             .store->shared_bytes());
  // The slices hand out θ's words (what a checkpoint writes) and take back
  // floats.
  std::vector<std::vector<float>> pieces(m.registry.size());
  m.store->visit_own_slices(
      [&](std::uint32_t id, std::uint64_t, std::size_t count, StoredElements data) {
        ASSERT_EQ(data.dtype, GetParam());
        for (std::size_t i = 0; i < count; ++i)
          pieces[id].push_back(storage::load(data.words()[i], GetParam()));
      });
  EXPECT_EQ(pieces, resident.host_theta());
  m.store->fill_own_slices(
      [&](std::uint32_t id, std::uint64_t first, std::size_t count, real* dst) {
        std::copy(pieces[id].begin() + static_cast<std::ptrdiff_t>(first),
                  pieces[id].begin() + static_cast<std::ptrdiff_t>(first + count), dst);
      });
  EXPECT_EQ(m.digest(), resident.digest());
  EXPECT_EQ(m.store->own_slice_sums().size(), m.registry.size());
}

INSTANTIATE_TEST_SUITE_P(Bf16AndFp16, StoreDtype,
                         ::testing::Values(StorageDtype::bf16, StorageDtype::fp16),
                         [](const ::testing::TestParamInfo<StorageDtype>& info) {
                           return std::string(to_string(info.param));
                         });

}  // namespace
