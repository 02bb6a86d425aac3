// Log-only checkpoints (log-STEP.h5: the training state without θ): what
// they hold and how large they are, where a resume takes θ from (a full
// checkpoint of the run whose seed log the log continues, else the run's base
// model, checked), that θ rebuilt must reach the digest the log recorded, and
// their rotation. The resume itself, bit for bit, is
// tests/cli/log_checkpoints.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "app/log_checkpoints.hpp"
#include "app/run_directory.hpp"
#include "app/seed_log_replay.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "io/model_file.hpp"
#include "model/batch.hpp"
#include "runtime/parameter_store.hpp"
#include "support/expect_error.hpp"
#include "support/model_checkpoint.hpp"
#include "zo/engine.hpp"

namespace {

using namespace distzo;
namespace fs = std::filesystem;

const std::string kModel = std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5";
const std::string kOtherModel = std::string(DISTZO_TEST_DATA) + "/opt_tiny_postln.model.h5";

/// A fresh directory of this test process, removed with the object.
struct TempDir {
  TempDir() : path("/tmp/distzo_test_log_checkpoint_" + std::to_string(getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

/// The training state of run `run_id` after `steps` steps of q = 1 (seed 0,
/// Gaussian z: the deck's), started from the tiny model.
io::TrainingState state_after(std::int64_t steps, const std::string& run_id) {
  io::TrainingState s;
  s.step = steps;
  s.queries = 1;
  s.run_id = run_id;
  s.deck_yaml = io::resolved_yaml(
      io::parse_deck("model:\n  path: model.h5\ndata:\n  train: train.h5\noptim:\n  steps: 1000\n"
                     "  lr: 1.0e-3\noutput:\n  dir: out\ncheckpoint:\n  log_interval: 10\n",
                     "test deck"));
  for (std::int64_t i = 0; i < steps; ++i)
    s.seed_log.push_back({i, 1e-3, 0.7 - 1e-4 * static_cast<double>(i), {0.25 * (i % 7) - 0.8}});
  s.base_model_digest = io::ModelReader(kModel).digest();
  s.parameter_digest = "0123456789abcdef";
  return s;
}

/// A full checkpoint of `state` at DIR/ckpt-STEP.h5 holding the tiny model's
/// tensors (its recorded digest theirs, so that it reads back whole).
std::string write_full(const std::string& dir, io::TrainingState state) {
  const io::ModelReader model(kModel);
  state.parameter_digest = model.digest();
  const std::string path = dir + "/" + io::checkpoint_name(state.step);
  test_support::write_model_checkpoint(path, model, state);
  return path;
}

std::string write_log(const std::string& dir, const io::TrainingState& state) {
  const std::string path = dir + "/" + io::log_checkpoint_name(state.step);
  io::write_log_checkpoint(path, state);
  return path;
}

TEST(LogCheckpoint, HoldsTheTrainingStateInKilobytes) {
  const TempDir tmp;
  const io::TrainingState s = state_after(1000, "0123456789abcdef");
  const std::string path = write_log(tmp.path, s);
  EXPECT_EQ(io::distzo_format(path), io::kSeedLogFormat);
  const io::TrainingState back = io::read_training_state(path);
  EXPECT_EQ(back.step, 1000);
  EXPECT_EQ(back.run_id, s.run_id);
  EXPECT_EQ(back.parameter_digest, s.parameter_digest);
  EXPECT_EQ(back.base_model_digest, s.base_model_digest);
  EXPECT_EQ(back.deck_yaml, s.deck_yaml);
  ASSERT_EQ(back.seed_log.size(), 1000u);
  EXPECT_EQ(back.seed_log[999].g, s.seed_log[999].g);
  EXPECT_EQ(back.seed_log[999].loss, s.seed_log[999].loss);
  EXPECT_FALSE(back.pending.active);
  // 1000 steps of q = 1: 32 bytes a row (step, lr, loss, g) plus the deck
  // and HDF5's metadata (docs/formats.md quotes this).
  const auto bytes = fs::file_size(path);
  RecordProperty("bytes_of_1000_steps", static_cast<int>(bytes));
  std::cout << "a log-only checkpoint of 1000 steps (q = 1) takes " << bytes << " bytes\n";
  EXPECT_GT(bytes, 32000u);
  EXPECT_LT(bytes, 48u * 1024u);
  // No tensors: it is not a model, and says what it is.
  EXPECT_ERROR_CONTAINS("seed_log", io::ModelReader{path});
  EXPECT_EQ(app::log_checkpoint_problem(path), "");
  io::TrainingState no_digest = s;
  no_digest.parameter_digest.clear();
  EXPECT_NE(app::log_checkpoint_problem(write_log(tmp.path, no_digest)).find("no parameter_digest"),
            std::string::npos);
}

TEST(LogCheckpoint, ListedApartFromFullOnes) {
  const TempDir tmp;
  for (const char* name : {"ckpt-000010.h5", "log-000005.h5", "log-000015.h5",
                           "log-000020.h5.tmp.9", "log-000020.run-abc.h5"})
    std::ofstream(tmp.path + "/" + name) << "";
  const auto logs = io::list_checkpoints(tmp.path, "log-");
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].first, 5);
  EXPECT_EQ(logs[1].second, tmp.path + "/log-000015.h5");
  ASSERT_EQ(io::list_checkpoints(tmp.path).size(), 1u);
  EXPECT_EQ(io::list_checkpoints(tmp.path)[0].first, 10);
}

TEST(LogCheckpoint, ThetaComesFromTheRunsNewestFullCheckpointItContinues) {
  const TempDir tmp;
  const io::TrainingState log = state_after(40, "ours");
  const std::string path = write_log(tmp.path, log);
  std::vector<std::string> notes;

  // Nothing beside it: the base model, digest checked.
  app::ResumeChoice c = app::resume_log(path, kModel, "", notes);
  EXPECT_EQ(c.path, path);
  EXPECT_EQ(c.theta_from, kModel);
  EXPECT_EQ(c.theta_step, 0);
  EXPECT_EQ(c.base_digest, log.base_model_digest);
  EXPECT_TRUE(c.log_only());

  // A full checkpoint of the run at step 20: θ from there.
  const std::string at20 = write_full(tmp.path, state_after(20, "ours"));
  c = app::resume_log(path, kModel, "", notes);
  EXPECT_EQ(c.theta_from, at20);
  EXPECT_EQ(c.theta_step, 20);
  EXPECT_TRUE(notes.empty());

  // Newer ones it does not take: another run's, one past the log's step, one
  // whose seed log the log does not continue (the run went another way).
  write_full(tmp.path, state_after(30, "another run"));
  write_full(tmp.path, state_after(50, "ours"));
  io::TrainingState other_way = state_after(35, "ours");
  other_way.seed_log[33].g = {1.5};
  write_full(tmp.path, other_way);
  c = app::resume_log(path, kModel, "", notes);
  EXPECT_EQ(c.theta_from, at20);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("ckpt-000035.h5 is not θ's source for " + path +
                          ": its seed log differs from the log's at step 34"),
            std::string::npos)
      << notes[0];

  // Without a full checkpoint of the run, another base model is refused,
  // naming both digests.
  fs::remove(at20);
  fs::remove(tmp.path + "/ckpt-000035.h5");
  const std::string other = io::ModelReader(kOtherModel).digest();
  EXPECT_ERROR_CONTAINS("is rebuilt from its run's base model, of parameter digest " +
                            log.base_model_digest + " (no full checkpoint of run ours at or " +
                            "before step 40 in " + tmp.path + " reads back whole), but " +
                            "model.path " + kOtherModel + " has digest " + other +
                            ": not that model",
                        app::resume_log(path, kOtherModel, "", notes));
}

/// θ of the tiny model in float32, with the engine whose flush replay uses.
struct TinyTheta {
  explicit TinyTheta(const io::ModelReader& model)
      : store(model.info().registry, runtime::PlacementConfig{}),
        engine(model.info().config, store, zo::EvaluationPlan::make(1, 1, 0),
               model::BatchShape{model::Task::causal_lm, 1, 1, 0}) {
    store.fill([&](std::uint32_t id, real* dst) { model.read(id, dst); });
  }
  runtime::ParameterStore store;
  zo::Engine engine;
};

TEST(LogCheckpoint, ThetaRebuiltMustReachTheRecordedDigest) {
  const TempDir tmp;
  const io::ModelReader model(kModel);
  io::TrainingState log = state_after(5, "ours");
  {
    TinyTheta run(model);  // the run's θ after its 5 steps (no weight decay)
    app::apply_seed_log(run.engine, log.z, {}, log.queries, log.seed_log, 0, 5, 0.0,
                        [](std::int64_t) {});
    log.parameter_digest = run.engine.parameter_digest();
  }
  const app::ResumeChoice choice{write_log(tmp.path, log), kModel, 0, log.base_model_digest};
  std::vector<std::string> lines;
  const auto print = [&](const std::string& line) { lines.push_back(line); };
  {
    TinyTheta theta(model);
    const std::string said = app::rebuild_at_log_step(
        theta.engine, choice, io::read_training_state(choice.path), log.z, {}, 0.0, print, 0);
    EXPECT_NE(said.find("the run's base model " + kModel +
                        ", then steps 1 to 5 of its seed log replayed (5 updates, 0 skipped)"),
              std::string::npos)
        << said;
    EXPECT_EQ(theta.engine.parameter_digest(), log.parameter_digest);
    EXPECT_FALSE(lines.empty());  // progress every row at interval 0, the last included
  }
  // One row changed, its checksums made again by distzo's own writer: the
  // file reads back whole, but θ rebuilt from it is not the recorded one.
  io::TrainingState altered = log;
  altered.seed_log[2].g = {9.0};
  write_log(tmp.path, altered);
  TinyTheta theta(model);
  EXPECT_ERROR_CONTAINS(
      "but " + choice.path + " recorded " + log.parameter_digest + ": not resumed",
      app::rebuild_at_log_step(theta.engine, choice, io::read_training_state(choice.path), log.z,
                               {}, 0.0, print, 0));
}

TEST(LogCheckpoint, RotationKeepsTheRunsNewestAndMovesAnotherRunsAside) {
  const TempDir tmp;
  const app::RunCheckpoints checkpoints(tmp.path, 2);
  write_log(tmp.path, state_after(60, "another run"));
  for (const std::int64_t step : {20, 40, 60}) {
    const auto written = checkpoints.write_log(state_after(step, "ours"));
    EXPECT_EQ(written.path, tmp.path + "/" + io::log_checkpoint_name(step));
    EXPECT_EQ(written.kept_aside,
              step == 60 ? tmp.path + "/log-000060.run-another run.h5" : std::string());
  }
  const auto logs = io::list_checkpoints(tmp.path, "log-");
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].first, 40);
  EXPECT_EQ(io::checkpoint_run_id(logs[1].second), "ours");
  EXPECT_EQ(io::checkpoint_run_id(tmp.path + "/log-000060.run-another run.h5"), "another run");
}

}  // namespace
