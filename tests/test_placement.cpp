// Placement: arena layouts, the parameter store under every placement (its
// digest, computed where θ lives, included), the block streamer's schedule
// (asserted on its trace, since Serial Kokkos runs everything in order and
// would hide a missing wait), use-after-release made visible by poisoned
// slots, and the ZO step offloaded ≡ resident bit for bit.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/digest.hpp"
#include "core/fp.hpp"
#include "io/hdf5_file.hpp"
#include "io/model_file.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/faults.hpp"
#include "runtime/parameter_store.hpp"
#include "support/tiny_model.hpp"
#include "zo/engine.hpp"
#include "zo/model_walk.hpp"

namespace {

using namespace distzo;
using distzo::test_support::make_batch;
using distzo::test_support::tiny_config;
using distzo::test_support::TinyModel;
using runtime::Lane;
using runtime::PlacementConfig;
using runtime::PlacementMode;
using runtime::StreamOp;

constexpr int B = 3, T = 7;
const std::vector<int> kLengths = {7, 5, 3};

model::ModelConfig deep_config(int layers,
                               model::Architecture architecture = model::Architecture::opt) {
  model::ModelConfig c = test_support::tiny_config_for(architecture);
  c.num_hidden_layers = layers;
  return c;
}

PlacementConfig offload(int resident_blocks = 0, int prefetch = 1) {
  PlacementConfig p;
  p.mode = PlacementMode::offload;
  p.resident_blocks = resident_blocks;
  p.prefetch = prefetch;
  return p;
}

/// Has the streamer fill its released slots with NaN (or nothing).
void poison_if(bool poison, runtime::BlockStreamer& streamer) {
  if (poison) runtime::poison_released_slots(streamer);
}

TEST(ArenaLayout, SegmentsAreAlignedAndConsecutive) {
  const model::ParameterRegistry r = model::ParameterRegistry::for_model(tiny_config());
  const runtime::ArenaLayout block = runtime::ArenaLayout::of(r, r.block_ids(1));
  ASSERT_EQ(block.segments.size(), r.block_ids(1).size());
  EXPECT_EQ(block.first_id, r.block_ids(1).front());
  std::size_t end = 0;
  for (const runtime::Segment& s : block.segments) {
    EXPECT_EQ(s.offset % runtime::kArenaAlignElements, 0u) << r[s.id].name;
    EXPECT_GE(s.offset, end) << "segments overlap";
    EXPECT_LT(s.offset - end, runtime::kArenaAlignElements) << "more padding than needed";
    EXPECT_EQ(s.count, static_cast<std::size_t>(r[s.id].numel()));
    EXPECT_EQ(&block.segment(s.id), &s);
    end = s.offset + s.count;
  }
  EXPECT_EQ(block.elements % runtime::kArenaAlignElements, 0u);
  EXPECT_GE(block.elements, end);
  EXPECT_THROW(block.segment(0), Error);  // embed_tokens is not in block 1
  // Every block of a model has the same layout relative to its first id.
  const runtime::ArenaLayout block0 = runtime::ArenaLayout::of(r, r.block_ids(0));
  EXPECT_EQ(block0.elements, block.elements);
  // Ids that are not consecutive are not a group.
  EXPECT_THROW(runtime::ArenaLayout::of(r, {0, 2}), Error);
}

TEST(PlacementConfig, BlocksAndSlots) {
  PlacementConfig resident;
  EXPECT_EQ(resident.device_blocks(12), 12);
  EXPECT_EQ(resident.stream_slots(12), 0);
  EXPECT_EQ(offload(0, 1).device_blocks(12), 0);
  EXPECT_EQ(offload(0, 1).stream_slots(12), 3);  // in use + 1 ahead + 1 writing back
  EXPECT_EQ(offload(4, 2).stream_slots(12), 4);
  EXPECT_EQ(offload(10, 3).stream_slots(12), 2);  // no more slots than streamed blocks
  EXPECT_EQ(offload(20).device_blocks(12), 12);   // K >= L: every block resident
  EXPECT_EQ(offload(20).streamed_blocks(12), 0);
}

TEST(ParameterStore, EveryPlacementHoldsTheSameTheta) {
  const TinyModel resident(deep_config(4));
  for (const PlacementConfig& p : {offload(0), offload(1), offload(3, 2), offload(9)}) {
    const TinyModel m(deep_config(4), 1234, p);
    EXPECT_EQ(m.digest(), resident.digest());
    EXPECT_EQ(m.host_theta(), resident.host_theta());
    const int L = 4, K = std::min(p.resident_blocks, L);
    EXPECT_EQ(m.store->device_blocks(), K);
    // Offloaded blocks hold no device tensors; their master is in host memory.
    for (int k = 0; k < L; ++k) {
      const std::uint32_t id = m.registry.block_ids(k).front();
      EXPECT_EQ(m.store->theta()[id].extent() != 0, k < K) << "block " << k;
    }
    const std::size_t block_bytes =
        m.store->layout(model::GroupRef::of_block(0)).bytes(m.store->storage());
    EXPECT_EQ(m.store->host_bytes(), static_cast<std::size_t>(L - K) * block_bytes);
    EXPECT_EQ(m.store->device_bytes() + m.store->host_bytes(), resident.store->device_bytes());
  }
}

TEST(ParameterStore, DigestIsComputedWhereThetaLivesAndMatchesTheFile) {
  // Device arenas are reduced on the execution space, offloaded blocks in
  // host memory on the host space: every placement gives the definition
  // evaluated on a host copy of θ, and the digest of θ written to a model
  // file (what `distzo inspect --digest` prints). With project_in/out, so
  // the head group's order is exercised too.
  const model::ModelConfig c = [] {
    model::ModelConfig p = tiny_config(false, 8);
    p.num_hidden_layers = 3;
    return p;
  }();
  const std::string path = "/tmp/distzo_test_digest_" + std::to_string(getpid()) + ".h5";
  for (const PlacementConfig& p : {PlacementConfig(), offload(0), offload(1), offload(2, 2)}) {
    TinyModel m(c, 99, p);
    const std::vector<std::vector<float>> theta = m.host_theta();
    ParameterDigest definition;
    for (const auto& info : m.registry.parameters()) {
      std::uint64_t sum = 0;
      for (std::size_t k = 0; k < theta[info.id].size(); ++k)
        sum += digest::element_term(k, fp::to_bits(theta[info.id][k]));
      definition.add_tensor(info.name, info.shape, sum);
    }
    const std::string d = m.digest();
    EXPECT_EQ(d, definition.hex()) << "resident blocks " << m.store->device_blocks();

    io::ModelInfo file_info;
    file_info.config = c;
    file_info.registry = m.registry;
    io::write_atomically(path, [&](io::Hdf5File& file) {
      io::write_model_tensors(file, file_info,
                              [&](const io::TensorSink& sink) { m.store->visit(sink); });
    });
    const io::ModelReader written(path);
    EXPECT_EQ(written.digest(), d) << "resident blocks " << m.store->device_blocks();
    EXPECT_EQ(written.info().digest_version, digest_version_of(StorageDtype::fp32));

    // The last element of the last block: host memory when offloaded.
    const std::uint32_t id = m.registry.block_ids(2).back();
    std::vector<float> t = theta[id];
    t.back() = std::nextafter(t.back(), 1.0f);
    m.store->write(id, t.data());
    EXPECT_NE(m.digest(), d) << "resident blocks " << m.store->device_blocks();
  }
  std::remove(path.c_str());
}

TEST(ParameterStore, ReadWriteRoundTrip) {
  TinyModel m(deep_config(3), 7, offload(1));
  const std::uint32_t id = m.registry.block_ids(2).at(2);  // an offloaded weight
  std::vector<float> v(static_cast<std::size_t>(m.registry[id].numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  const std::string before = m.digest();
  m.store->write(id, v.data());
  EXPECT_NE(m.digest(), before);
  std::vector<float> back(v.size());
  m.store->read(id, back.data());
  EXPECT_EQ(back, v);
}

/// Runs one walk of a pass that changes θ (modified) or not over `m`.
class NoOpPass final : public zo::WalkPass {
 public:
  explicit NoOpPass(bool modifies) : modifies_(modifies) {}
  void embeddings(const ExecSpace&, const runtime::ThetaTable&) override {}
  bool block(const ExecSpace&, int, const runtime::ThetaTable&) override { return modifies_; }
  void head(const ExecSpace&, const runtime::ThetaTable&) override {}

 private:
  bool modifies_;
};

/// Index of the first op matching, at or after `from`; -1 if none.
int find(const std::vector<StreamOp>& t, StreamOp::Kind kind, int block, int from = 0,
         Lane lane = Lane::compute, bool any_lane = true) {
  for (int i = from; i < static_cast<int>(t.size()); ++i)
    if (t[i].kind == kind && t[i].block == block && (any_lane || t[i].lane == lane)) return i;
  return -1;
}

/// The schedule's rules, checked on the trace of one pass over L blocks of
/// which the first K are resident.
void check_schedule(const std::vector<StreamOp>& t, int K, int L, int prefetch, int slots,
                    bool modified, bool poison) {
  std::map<int, int> occupant_of_slot;     // slot -> last block uploaded into it
  std::map<int, Lane> free_lane_of_block;  // block -> where its slot was freed
  int uploads = 0, writebacks = 0;
  for (int k = 0; k < L; ++k) {
    SCOPED_TRACE("block " + std::to_string(k));
    const int compute = find(t, StreamOp::Kind::compute, k);
    const int end = find(t, StreamOp::Kind::compute_end, k);
    ASSERT_GE(compute, 0);
    ASSERT_GT(end, compute);
    if (k < K) {
      EXPECT_EQ(t[compute].slot, -1) << "a resident block came from a slot";
      EXPECT_EQ(find(t, StreamOp::Kind::upload, k), -1) << "a resident block was uploaded";
      continue;
    }
    // Upload on the upload lane, then the compute lane waits for it, then compute.
    const int up = find(t, StreamOp::Kind::upload, k);
    ASSERT_GE(up, 0);
    ++uploads;
    EXPECT_EQ(t[up].lane, Lane::upload);
    EXPECT_LT(up, compute);
    const int slot = t[up].slot;
    EXPECT_EQ(slot, (k - K) % slots);
    EXPECT_EQ(t[compute].slot, slot);
    bool waited = false;
    for (int i = up + 1; i < compute; ++i)
      waited = waited || (t[i].kind == StreamOp::Kind::wait && t[i].lane == Lane::compute &&
                          t[i].on_lane == Lane::upload && t[i].on_block == k);
    EXPECT_TRUE(waited) << "compute did not wait for the upload of block " << k;
    // The slot's previous occupant (this pass) was freed before this upload.
    if (occupant_of_slot.count(slot)) {
      const int previous = occupant_of_slot[slot];
      ASSERT_GT(up, find(t, StreamOp::Kind::compute_end, previous))
          << "block " << k << " uploaded into slot " << slot << " while block " << previous
          << " was in use";
      const int wait = up - 1;
      ASSERT_EQ(t[wait].kind, StreamOp::Kind::wait);
      EXPECT_EQ(t[wait].lane, Lane::upload);
      EXPECT_EQ(t[wait].on_block, previous);
      EXPECT_EQ(t[wait].on_lane, free_lane_of_block[previous])
          << "the upload must wait for what last touched the slot";
    }
    occupant_of_slot[slot] = k;
    // Prefetch: the next block's upload is enqueued while this one computes.
    if (k + 1 < L && prefetch >= 1) {
      const int next = find(t, StreamOp::Kind::upload, k + 1);
      ASSERT_GE(next, 0);
      EXPECT_LT(next, end) << "the upload of block " << k + 1 << " does not overlap block " << k;
    }
    // Write-back: after the compute, on the write-back lane, which waited for it.
    const int wb = find(t, StreamOp::Kind::writeback, k);
    if (modified) {
      ASSERT_GT(wb, end);
      ++writebacks;
      EXPECT_EQ(t[wb].lane, Lane::writeback);
      EXPECT_EQ(t[wb - 1].kind, StreamOp::Kind::wait);
      EXPECT_EQ(t[wb - 1].lane, Lane::writeback);
      EXPECT_EQ(t[wb - 1].on_lane, Lane::compute);
      EXPECT_EQ(t[wb - 1].on_block, k);
    } else {
      EXPECT_EQ(wb, -1) << "an unchanged block was written back";
    }
    const int poisoned = find(t, StreamOp::Kind::on_release, k);
    EXPECT_EQ(poisoned >= 0, poison);
    if (poison && modified) {
      EXPECT_GT(poisoned, wb);
    }
    free_lane_of_block[k] = (modified || poison) ? Lane::writeback : Lane::compute;
  }
  EXPECT_EQ(uploads, L - K);
  EXPECT_EQ(writebacks, modified ? L - K : 0);
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.back().kind, StreamOp::Kind::pass_end);
}

TEST(BlockStreamer, ScheduleFollowsZo2) {
  const int L = 6;
  for (int K : {0, 2, 5})
    for (int prefetch : {1, 2, 4})
      for (bool fewest_slots : {false, true})  // prefetch + 2 slots, or prefetch + 1
        for (bool modified : {false, true})
          for (bool poison : {false, true}) {
            SCOPED_TRACE("K=" + std::to_string(K) + " prefetch=" + std::to_string(prefetch) +
                         (fewest_slots ? " slots=prefetch+1" : "") + (modified ? " modified" : "") +
                         (poison ? " poison" : ""));
            PlacementConfig placement = offload(K, prefetch);
            if (fewest_slots) placement.slots = prefetch + 1;
            TinyModel m(deep_config(L), 1, placement);
            runtime::BlockStreamer streamer(*m.store, ExecSpace());
            poison_if(poison, streamer);
            EXPECT_EQ(streamer.slots(), std::min(prefetch + (fewest_slots ? 1 : 2), L - K));
            streamer.record_trace(true);
            for (int pass = 0; pass < 3; ++pass) {  // slots are reused across passes
              streamer.clear_trace();
              NoOpPass p(modified);
              zo::walk(streamer, p);
              check_schedule(streamer.trace(), K, L, prefetch, streamer.slots(), modified, poison);
            }
            const std::size_t block_bytes =
                m.store->layout(model::GroupRef::of_block(0)).bytes(m.store->storage());
            EXPECT_EQ(streamer.last_pass_bytes().to_device, (L - K) * block_bytes);
            EXPECT_EQ(streamer.last_pass_bytes().to_host, modified ? (L - K) * block_bytes : 0u);
            EXPECT_EQ(streamer.total_bytes().to_device, 3 * (L - K) * block_bytes);
          }
}

TEST(BlockStreamer, InstancesAreDistinctOnDeviceBackends) {
  TinyModel m(deep_config(2), 1, offload());
  runtime::BlockStreamer streamer(*m.store, ExecSpace());
  const bool device = !std::is_same<MemSpace, Kokkos::HostSpace>::value;
  EXPECT_EQ(streamer.instances().distinct, device && KOKKOS_VERSION >= 40000)
      << "uploads and write-backs need streams of their own exactly where work is asynchronous";
}

TEST(BlockStreamer, MisuseIsAnError) {
  TinyModel m(deep_config(4), 1, offload());
  runtime::BlockStreamer s(*m.store, ExecSpace());
  EXPECT_THROW(s.acquire(0), Error);  // outside a pass
  s.begin_pass();
  EXPECT_THROW(s.begin_pass(), Error);
  EXPECT_THROW(s.release(0, false), Error);  // not acquired
  s.acquire(0);
  EXPECT_THROW(s.end_pass(), Error);  // block 0 never released
  s.release(0, false);
  s.acquire(1);
  s.release(1, true);
  EXPECT_THROW(s.acquire(0), Error);  // again: its slot may be written back or poisoned
  EXPECT_THROW(s.acquire(4), Error);  // no such block
  PlacementConfig too_few = offload(0, 2);
  too_few.slots = 2;  // the block in use and 2 uploads ahead need 3
  EXPECT_NE(too_few.slots_problem(), "");
  TinyModel few(deep_config(4), 1, too_few);
  EXPECT_THROW(runtime::BlockStreamer(*few.store, ExecSpace()), Error);
}

TEST(Placement, ASharedMasterTakesNeitherOneAtATimeNorTwoByteGemmInputs) {
  PlacementConfig p;
  p.perturb_one_at_a_time = true;
  EXPECT_EQ(p.shared_master_problem().key, "");  // each rank its own θ
  p.share_host_master = true;
  EXPECT_EQ(p.shared_master_problem().key, "placement.perturbed_weights");
  EXPECT_NE(p.shared_master_problem().why.find("set placement.share_host_master: false, or "
                                               "perturbed_weights: together"),
            std::string::npos);
  p.perturb_one_at_a_time = false;
  EXPECT_EQ(p.shared_master_problem().key, "");
  p.storage = StorageDtype::bf16;
  p.two_byte_gemm_inputs = true;
  EXPECT_EQ(p.shared_master_problem().key, "placement.share_host_master");
}

TEST(Placement, PerturbedWeightsAreNamed) {
  EXPECT_TRUE(runtime::perturbs_one_at_a_time("one_at_a_time", "--perturbed-weights"));
  EXPECT_FALSE(runtime::perturbs_one_at_a_time("together", "--perturbed-weights"));
  EXPECT_THROW(runtime::perturbs_one_at_a_time("one-at-a-time", "--perturbed-weights"), Error);
}

/// Keeps block 0's weights past its release and reads them at the next
/// block: a use after release, the bug poisoned slots exist to expose.
class UseAfterReleasePass final : public zo::WalkPass {
 public:
  UseAfterReleasePass(std::uint32_t id) : id_(id) {}
  void embeddings(const ExecSpace&, const runtime::ThetaTable&) override {}
  bool block(const ExecSpace&, int k, const runtime::ThetaTable& theta) override {
    if (k == 0) kept_ = theta[id_].as<real>();
    if (k == 1) {
      auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kept_);
      for (std::size_t i = 0; i < host.extent(0); ++i) nan_seen_ = nan_seen_ || std::isnan(host(i));
    }
    return false;
  }
  void head(const ExecSpace&, const runtime::ThetaTable&) override {}
  bool nan_seen() const { return nan_seen_; }

 private:
  std::uint32_t id_;
  Vec kept_;
  bool nan_seen_ = false;
};

TEST(BlockStreamer, PoisonedSlotsExposeUseAfterRelease) {
  for (bool poison : {false, true}) {
    TinyModel m(deep_config(3), 1, offload(0, 1));
    runtime::BlockStreamer streamer(*m.store, ExecSpace());
    poison_if(poison, streamer);
    UseAfterReleasePass pass(m.registry.block_ids(0).front());
    zo::walk(streamer, pass);
    EXPECT_EQ(pass.nan_seen(), poison)
        << (poison ? "poisoning did not expose the stale read" : "NaN without poisoning");
  }
}

/// Steps of the engine with lazy updates (as the trainer runs them): the
/// local loss table of every step, and (loss sum, count) of an evaluation
/// after the last; `poison`: released slots are filled with NaN.
struct Trained {
  std::vector<zo::LossTable> steps;
  zo::LossSum evaluation;
  bool operator==(const Trained& o) const { return steps == o.steps && evaluation == o.evaluation; }
};

Trained train(TinyModel& m, model::Task task, int q, int steps, bool poison = false) {
  const model::Batch batch = make_batch(task, B, T, kLengths);
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(q, 1, 0),
                model::BatchShape{task, B, T, 2});
  poison_if(poison, ex.streamer());
  const ZSpec z{11};
  PendingUpdate pending;
  Trained out;
  for (int s = 0; s < steps; ++s) {
    const StepPerturbation p{z, s, 1e-3};
    out.steps.push_back(ex.run_step(batch, p, pending));
    const zo::LossTable& t = out.steps.back();
    std::vector<double> g;
    for (int i = 0; i < q; ++i) g.push_back((t.mean(i, +1) - t.mean(i, -1)) / (2 * p.eps));
    pending = PendingUpdate::after(p, g, 1e-2, 0.01);
  }
  ex.flush(z, pending);
  const zo::EvalOutcome eval = ex.evaluate(batch);
  out.evaluation = {eval.loss_sum, eval.count};
  return out;
}

TEST(Offload, StepsAreBitIdenticalToResident) {
  const int L = 4;
  for (const model::Architecture arch : test_support::all_architectures())
    for (model::Task task : {model::Task::causal_lm, model::Task::classification})
      for (int q : {1, 2}) {
        TinyModel resident(deep_config(L, arch));
        const auto want = train(resident, task, q, 5);
        for (const auto& [p, poison] :
             std::vector<std::pair<PlacementConfig, bool>>{{offload(0, 1), true},
                                                           {offload(1, 1), true},
                                                           {offload(L - 1, 2), true},
                                                           {offload(0, 3), false}}) {
          SCOPED_TRACE(std::string(model::architecture_name(arch)) +
                       " K=" + std::to_string(p.resident_blocks) + " q=" + std::to_string(q));
          TinyModel m(deep_config(L, arch), 1234, p);
          EXPECT_EQ(train(m, task, q, 5, poison), want);
          EXPECT_EQ(m.digest(), resident.digest());
        }
      }
}

}  // namespace
