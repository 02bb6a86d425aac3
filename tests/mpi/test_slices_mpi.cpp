// Placement II under MPI (ctest runs it with mpiexec -n 2 and -n 4: every
// rank on one node). The ranks share one θ master, each updates and perturbs
// its slice, the slices are exchanged; every rank also runs the plain
// one-rank engine on a private copy of the same θ as the reference. After
// several steps (pending updates fused, then a flush) the shared θ's digest
// and every owned loss must equal the reference bit for bit, under every
// placement and both exchanges — and each rank must have evaluated z for
// about 2q/S of the parameters per step, not 2q of them.

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/model_file.hpp"
#include "runtime/faults.hpp"
#include "runtime/mpi_communicator.hpp"
#include "runtime/nccl_exchange.hpp"
#include "runtime/slice_exchange.hpp"
#include "support/tiny_model.hpp"
#include "support/tokenizer_files.hpp"
#include "zo/engine.hpp"
#include "zo/estimator.hpp"
#include "zo/evaluation_plan.hpp"

namespace {

using namespace distzo;
using test_support::make_batch;
using test_support::tiny_config;
using test_support::tiny_config_for;
using test_support::TinyModel;

constexpr int B = 3, T = 7, kSteps = 3;
const std::vector<int> kLengths = {7, 5, 3};

struct Case {
  model::Task task;
  int queries;
  runtime::PlacementMode mode;
  int resident_blocks;
  runtime::ExchangeKind exchange;
  model::Architecture architecture = model::Architecture::opt;
  StorageDtype storage = StorageDtype::fp32;  // of both θs: the sliced one and the reference
  EstimatorKind estimator = EstimatorKind::spsa;

  model::ModelConfig config() const { return tiny_config_for(architecture); }
  zo::EstimatorSpec spec() const { return zo::EstimatorSpec::make(estimator, queries); }
  std::string name() const {
    return std::string(to_string(storage)) + " " + model::architecture_name(architecture) + " " +
           (task == model::Task::causal_lm ? "causal_lm" : "classification") + " " +
           to_string(estimator) + " q=" + std::to_string(queries) + " " + to_string(mode) +
           " K=" + std::to_string(resident_blocks) + " " + to_string(exchange);
  }
};

/// Elements of z an engine's perturbed weights make, each Gaussian or sign
/// counted once per stream (the pending update's q and this step's), as its
/// materialisations report them.
struct ZCount {
  std::uint64_t elements = 0;
  zo::MaterialisationObserver observer() {
    return [this](const zo::Materialisation& m) {
      elements += m.elements * static_cast<std::uint64_t>(m.z_streams);
    };
  }
};

/// The tests' run of z: every step's, and the pending update's.
const ZSpec kZ{17};
StepPerturbation perturbation(std::int64_t step) { return {kZ, step, 1e-3}; }

void run_case(const runtime::Communicator& node, const Case& c) {
  SCOPED_TRACE(c.name());
  const int S = node.size();
  // P ranks split the step's evaluations; the other factor of S is data
  // replicas on the same batch (so every rank's losses match the reference).
  const int evaluations = c.spec().evaluations();
  const int P = evaluations % S == 0 ? S : evaluations % 2 == 0 ? 2 : 1;
  const int p = node.rank() % P;
  const model::Batch batch = make_batch(c.task, B, T, kLengths);

  runtime::PlacementConfig resident;
  resident.storage = c.storage;
  TinyModel reference(c.config(), 1234, resident);
  const model::BatchShape shape{c.task, B, T, 2};
  ZCount z_plain_made, z_made;
  zo::Engine plain(reference.config, *reference.store, zo::EvaluationPlan::make(c.spec(), 1, 0),
                   shape, zo::NodeExchange(), ExecSpace(), z_plain_made.observer());

  runtime::PlacementConfig placement;
  placement.mode = c.mode;
  placement.resident_blocks = c.resident_blocks;
  placement.share_host_master = true;
  placement.storage = c.storage;
  TinyModel shared(c.config(), 1234, placement, &node);
  const zo::EvaluationPlan plan = zo::EvaluationPlan::make(c.spec(), P, p);
  zo::Engine sliced(shared.config, *shared.store, plan, shape, zo::NodeExchange{&node, c.exchange},
                    ExecSpace(), z_made.observer());
  runtime::poison_released_slots(sliced.streamer());
  ASSERT_EQ(shared.digest(), reference.digest()) << "the shared master was filled differently";

  PendingUpdate pending_plain, pending_sliced;
  for (std::int64_t step = 0; step < kSteps; ++step) {
    const std::uint64_t z_before = z_made.elements;
    const std::uint64_t z_plain_before = z_plain_made.elements;
    const zo::LossTable expected = plain.run_step(batch, perturbation(step), pending_plain);
    const zo::LossTable got = sliced.run_step(batch, perturbation(step), pending_sliced);
    for (const zo::Evaluation& e : plan.owned) {
      EXPECT_EQ(got.at(e).sum, expected.at(e).sum) << "step " << step << ", evaluation " << e.index;
      EXPECT_EQ(got.at(e).count, expected.at(e).count)
          << "step " << step << ", evaluation " << e.index;
    }

    // z work: 2q per parameter unsliced (q for the pending update, q for
    // this step's directions, with either estimator); here 2q per parameter
    // of this rank's slices, which differ from N/S by at most one
    // 16-element boundary per group.
    const double N = static_cast<double>(reference.registry.total_elements());
    const double groups = reference.registry.num_blocks() + 2;
    const double z = static_cast<double>(z_made.elements - z_before);
    const double z_plain = static_cast<double>(z_plain_made.elements - z_plain_before);
    if (step > 0) {  // with the previous step's update pending
      EXPECT_EQ(z_plain, 2.0 * c.queries * N);
      EXPECT_LE(z, 2.0 * c.queries * (N / S + 16 * groups));
      EXPECT_GE(z, 2.0 * c.queries * (N / S - 16 * groups));
    }
    // The same g on every rank (the reference's).
    const std::vector<double> g =
        zo::combine_losses(runtime::SerialCommunicator(), expected, 1e-3).g;
    pending_plain = PendingUpdate::after(perturbation(step), g, 0.05, 0.01);
    pending_sliced = pending_plain;
  }
  EXPECT_EQ(sliced.parameter_digest(), plain.parameter_digest()) << "θ with the update pending";
  plain.flush(kZ, pending_plain);
  sliced.flush(kZ, pending_sliced);
  EXPECT_EQ(sliced.parameter_digest(), plain.parameter_digest()) << "θ after the flush";
  EXPECT_NE(plain.parameter_digest(), TinyModel(c.config(), 1234, resident).digest())
      << "θ never moved";

  // Evaluation reads the whole shared θ.
  const zo::EvalOutcome a = plain.evaluate(batch), b = sliced.evaluate(batch);
  EXPECT_EQ(a.loss_sum, b.loss_sum);
}

TEST(SlicesMpi, ShardedStepEqualsOneRankBitForBit) {
  const auto world = runtime::MpiCommunicator::world();
  const auto node = world->split_node();
  ASSERT_EQ(node->size(), world->size()) << "this test runs its ranks on one node";
  using runtime::ExchangeKind;
  using runtime::PlacementMode;
  constexpr auto causal = model::Task::causal_lm, classification = model::Task::classification;
  constexpr auto opt = model::Architecture::opt, llama = model::Architecture::llama,
                 qwen3 = model::Architecture::qwen3;
  if (!Kokkos::SpaceAccessibility<HostSpace, MemSpace>::accessible) {
    // A GPU build shares only the host master of offloaded blocks (K = 0).
    // NCCL needs one GPU per rank: perf/device_check.sh asks for it with
    // DISTZO_TEST_NCCL=1 when the machine has enough.
    std::vector<ExchangeKind> exchanges = {ExchangeKind::mpi};
    if (runtime::nccl_available() && std::getenv("DISTZO_TEST_NCCL") != nullptr)
      exchanges.push_back(ExchangeKind::nccl);
    for (ExchangeKind exchange : exchanges)
      for (model::Task task : {causal, classification})
        for (int queries : {1, 2})
          run_case(*node, {task, queries, PlacementMode::offload, 0, exchange});
    run_case(*node, {classification, 1, PlacementMode::offload, 0, ExchangeKind::mpi, llama});
  } else if (node->size() <= 2) {  // every combination
    for (model::Task task : {causal, classification})
      for (int queries : {1, 2})
        for (auto exchange : {ExchangeKind::shared_memory, ExchangeKind::mpi}) {
          run_case(*node, {task, queries, PlacementMode::resident, 0, exchange});
          run_case(*node, {task, queries, PlacementMode::offload, 0, exchange});
          run_case(*node, {task, queries, PlacementMode::offload, 1, exchange});
        }
    for (auto exchange : {ExchangeKind::shared_memory, ExchangeKind::mpi}) {  // Llama
      run_case(*node, {causal, 2, PlacementMode::resident, 0, exchange, llama});
      run_case(*node, {classification, 1, PlacementMode::offload, 1, exchange, llama});
    }
    for (const model::Architecture kin :
         {model::Architecture::qwen2, model::Architecture::qwen3, model::Architecture::mistral,
          model::Architecture::gemma3, model::Architecture::olmo2,
          model::Architecture::phi3}) {  // Llama's kin, Gemma 3
      run_case(*node, {causal, 2, PlacementMode::resident, 0, ExchangeKind::shared_memory, kin});
      run_case(*node, {classification, 1, PlacementMode::offload, 1, ExchangeKind::mpi, kin});
    }
    for (StorageDtype storage : {StorageDtype::bf16, StorageDtype::fp16}) {  // θ in 2 bytes
      run_case(*node,
               {causal, 2, PlacementMode::resident, 0, ExchangeKind::shared_memory, opt, storage});
      run_case(*node,
               {classification, 1, PlacementMode::offload, 1, ExchangeKind::mpi, opt, storage});
    }
    // One-sided steps: N = 3 (4 evaluations: P = 2) and N = 2 (3: P = 1, two
    // replicas sharing θ), fp32 and bf16.
    for (int n : {2, 3}) {
      run_case(*node, {causal, n, PlacementMode::resident, 0, ExchangeKind::shared_memory, opt,
                       StorageDtype::fp32, EstimatorKind::one_sided});
      run_case(*node, {classification, n, PlacementMode::offload, 1, ExchangeKind::mpi, llama,
                       StorageDtype::bf16, EstimatorKind::one_sided});
    }
  } else {
    // Oversubscribed ranks make every node barrier cost a time slice: a
    // covering subset (P=4 with q=2, P=2 x D=2 with q=1).
    run_case(*node, {causal, 2, PlacementMode::resident, 0, ExchangeKind::shared_memory});
    run_case(*node, {classification, 1, PlacementMode::offload, 0, ExchangeKind::mpi});
    run_case(*node, {classification, 2, PlacementMode::offload, 1, ExchangeKind::shared_memory});
    run_case(*node, {causal, 1, PlacementMode::resident, 0, ExchangeKind::mpi});
    run_case(*node,
             {classification, 2, PlacementMode::offload, 0, ExchangeKind::shared_memory, llama});
    run_case(*node, {causal, 2, PlacementMode::offload, 0, ExchangeKind::shared_memory, opt,
                     StorageDtype::bf16});
    run_case(*node, {causal, 1, PlacementMode::offload, 0, ExchangeKind::mpi, qwen3});
    run_case(*node, {classification, 3, PlacementMode::offload, 0, ExchangeKind::shared_memory, opt,
                     StorageDtype::fp32, EstimatorKind::one_sided});  // N + 1 = 4 = P
  }
}

/// A node-shared θ checkpointed by the node's ranks together
/// (write_checkpoint_parallel: collective MPI-IO) is written in its storage
/// dtype — 2-byte words for bf16 and fp16 — with the same datasets, checksums
/// and digest as one rank's checkpoint of the same θ (write_checkpoint), and
/// the digest θ has in memory; the tokenizer files go in as one rank writes them.
TEST(SlicesMpi, ParallelCheckpointInTheStorageDtype) {
  if (!io::Hdf5File::parallel_available()) GTEST_SKIP() << "HDF5 without MPI";
  const auto world = runtime::MpiCommunicator::world();
  const auto node = world->split_node();
  const auto* mpi_node = dynamic_cast<const runtime::MpiCommunicator*>(node.get());
  ASSERT_NE(mpi_node, nullptr);
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, world->comm());
  for (const StorageDtype storage : {StorageDtype::fp32, StorageDtype::bf16, StorageDtype::fp16}) {
    SCOPED_TRACE(to_string(storage));
    runtime::PlacementConfig shared;
    shared.share_host_master = true;
    shared.storage = storage;
    TinyModel m(tiny_config(), 1234, shared, node.get());
    runtime::PlacementConfig own;
    own.storage = storage;
    const TinyModel reference(tiny_config(), 1234, own);
    io::ModelInfo info;
    info.config = m.config;
    info.registry = m.registry;
    info.hf_tokenizer_files = test_support::tokenizer_files_json();  // one value on every rank
    io::TrainingState state;
    state.storage = storage;
    state.deck_yaml = "optim:\n  steps: 1\n";
    const std::string stem =
        "/tmp/distzo_test_slices_" + std::to_string(pid) + "_" + to_string(storage);
    const std::string parallel = stem + "_parallel.h5", serial = stem + "_serial.h5";
    // The writers' collectives (rank 0's node alone, in a job of several
    // nodes) stay out of a watchdog's count of every rank's collectives.
    int counted = 0;
    world->on_collective([&] { ++counted; });
    io::write_checkpoint_parallel(
        parallel, info, *mpi_node,
        [&](const io::SliceSink& sink) { m.store->visit_own_slices(sink); }, state);
    world->on_collective({});
    EXPECT_EQ(counted, 0);
    const std::string digest = m.digest();  // every rank sees the whole shared master
    if (node->rank() == 0) {
      io::write_checkpoint(
          serial, info, [&](const io::TensorSink& sink) { reference.store->visit_stored(sink); },
          state);
      const io::ModelReader a(parallel), b(serial);
      EXPECT_TRUE(a.all_in(storage));
      EXPECT_EQ(a.digest(), digest) << "in the file and in memory";
      EXPECT_EQ(a.digest(), b.digest()) << "parallel and one rank";
      EXPECT_EQ(a.info().digest_version, digest_version_of(storage));
      EXPECT_EQ(a.info().hf_tokenizer_files, info.hf_tokenizer_files);
      EXPECT_EQ(b.info().hf_tokenizer_files, info.hf_tokenizer_files);
      const io::Hdf5File fa(parallel, io::Hdf5File::Mode::read),
          fb(serial, io::Hdf5File::Mode::read);
      for (const auto& p : m.registry.parameters()) {
        EXPECT_EQ(fa.dataset_info(p.name).dtype, fb.dataset_info(p.name).dtype) << p.name;
        if (storage == StorageDtype::fp32)
          EXPECT_EQ(fa.read_floats(p.name), fb.read_floats(p.name)) << p.name;
        else
          EXPECT_EQ(fa.read_words(p.name, nullptr), fb.read_words(p.name, nullptr)) << p.name;
      }
      std::remove(parallel.c_str());
      std::remove(serial.c_str());
    }
    MPI_Barrier(world->comm());
  }
}

TEST(SlicesMpi, NcclWithoutNcclIsAClearError) {
  if (runtime::nccl_available()) GTEST_SKIP() << "this build has NCCL";
  const auto world = runtime::MpiCommunicator::world();
  try {
    runtime::make_slice_exchange(runtime::ExchangeKind::nccl, *world);
    FAIL() << "an NCCL exchange without NCCL";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-DDISTZO_ENABLE_NCCL=ON"), std::string::npos) << e.what();
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, failed = 0, any_failed = 0;
  {
    ::testing::InitGoogleTest(&argc, argv);
    Kokkos::ScopeGuard kokkos(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    // Only rank 0 prints; every rank's result decides the exit status.
    if (rank != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
    }
    failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  }
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
