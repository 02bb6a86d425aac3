// The training state of a checkpoint round-trips, and the recipe of z is
// read the way resume relies on: written when present, 1 when the attribute
// is absent (checkpoints from before recipe 2), an error when unknown; a
// run's checkpoints are chosen the way `resume: latest` relies on.
#include "app/run_directory.hpp"
#include "io/checkpoint.hpp"
#include "io/hdf5_file.hpp"
#include "io/model_file.hpp"

#include "core/digest.hpp"
#include "core/error.hpp"
#include "support/expect_error.hpp"
#include "support/hdf5_edit.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace distzo;

/// A checkpoint of the tiny test model with `state`, at a fresh path.
std::string write_tiny_checkpoint(const io::TrainingState& state, const std::string& name) {
  const io::ModelReader model(std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5");
  const std::string path = "/tmp/distzo_test_checkpoint_" + std::to_string(getpid()) + "_" + name;
  io::write_checkpoint(path, model.info(), [&](const io::TensorSink& sink) {
    for (const auto& p : model.info().registry.parameters()) {
      std::vector<real> data(static_cast<std::size_t>(p.numel()));
      model.read(p.id, data.data());
      sink(p.id, data.data());
    }
  }, state);
  return path;
}

io::TrainingState some_state() {
  io::TrainingState s;
  s.step = 3;
  s.z = {0xFFFFFFFFFFFFFFFFull, Distribution::rademacher, ZRecipe::v2};  // uint64 beyond int64: text
  s.queries = 2;
  s.pending = PendingUpdate::after({s.z, 2, 1e-3}, {0.75, -1.5}, 2e-3, 0.01);
  s.deck_yaml = "optim:\n  steps: 3\n";
  s.parameter_digest = "0123456789abcdef";
  s.nonfinite_streak = 2;
  for (int i = 1; i <= 3; ++i) s.seed_log.push_back({i, 1e-3 * i, 2.5 / i, {0.5 * i, -0.25 * i}});
  return s;
}

/// Rewrites the root attribute `name` of `path` (HDF5 C API): removed when
/// value < 0, else set to value.
void set_root_attribute(const std::string& path, const char* name, long long value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Adelete(file, name), 0);
  if (value >= 0) {
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t attr = H5Acreate2(file, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Awrite(attr, H5T_NATIVE_LLONG, &value), 0);
    H5Aclose(attr);
    H5Sclose(space);
  }
  H5Fclose(file);
}

TEST(Checkpoint, TrainingStateRoundTrips) {
  const io::TrainingState s = some_state();
  const std::string path = write_tiny_checkpoint(s, "roundtrip.h5");
  const io::TrainingState r = io::read_training_state(path);
  std::remove(path.c_str());
  EXPECT_EQ(r.step, s.step);
  EXPECT_EQ(r.z.seed, s.z.seed);
  EXPECT_EQ(r.queries, s.queries);
  EXPECT_EQ(r.z.distribution, s.z.distribution);
  EXPECT_EQ(r.z.recipe, ZRecipe::v2);
  // The pending update, with the run's z (stored once).
  EXPECT_TRUE(r.pending.active);
  EXPECT_EQ(r.pending.z.seed, s.z.seed);
  EXPECT_EQ(r.pending.z.distribution, s.z.distribution);
  EXPECT_EQ(r.pending.z.recipe, s.z.recipe);
  EXPECT_EQ(r.pending.step, s.pending.step);
  EXPECT_EQ(r.pending.lr, s.pending.lr);
  EXPECT_EQ(r.pending.weight_decay, s.pending.weight_decay);
  EXPECT_EQ(r.pending.g, s.pending.g);
  EXPECT_EQ(r.deck_yaml, s.deck_yaml);
  EXPECT_EQ(r.parameter_digest, s.parameter_digest);
  EXPECT_EQ(r.nonfinite_streak, s.nonfinite_streak);
  ASSERT_EQ(r.seed_log.size(), s.seed_log.size());
  for (std::size_t i = 0; i < s.seed_log.size(); ++i) {
    EXPECT_EQ(r.seed_log[i].step, s.seed_log[i].step);
    EXPECT_EQ(r.seed_log[i].lr, s.seed_log[i].lr);
    EXPECT_EQ(r.seed_log[i].g, s.seed_log[i].g);
  }
}

TEST(Checkpoint, RecordsTheDigestVersionAndKeepsTheDigest) {
  const std::string path = write_tiny_checkpoint(some_state(), "digest.h5");
  const io::ModelReader checkpoint(path);
  const io::ModelReader model(std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5");
  EXPECT_EQ(checkpoint.info().digest_version, kDigestVersion);
  EXPECT_EQ(model.info().digest_version, 0) << "the fixture was written by tools/distzo_h5.py";
  EXPECT_EQ(checkpoint.digest(), model.digest()) << "the same tensors, the same digest";
  std::remove(path.c_str());
}

TEST(Checkpoint, RecipeIsOneWhenTheAttributeIsAbsent) {
  io::TrainingState s = some_state();
  s.z.recipe = ZRecipe::v2;
  const std::string path = write_tiny_checkpoint(s, "norecipe.h5");
  set_root_attribute(path, "z_recipe", -1);
  const io::TrainingState r = io::read_training_state(path);
  std::remove(path.c_str());
  EXPECT_EQ(r.z.recipe, ZRecipe::v1);
}

TEST(Checkpoint, UnknownRecipeIsAnError) {
  const std::string path = write_tiny_checkpoint(some_state(), "recipe3.h5");
  set_root_attribute(path, "z_recipe", 3);
  EXPECT_ERROR_CONTAINS("z_recipe 3 is not a recipe this distzo knows (1, 2)",
                        io::read_training_state(path));
  std::remove(path.c_str());
}

TEST(Checkpoint, SeedThatIsNotANumberIsAnError) {
  const std::string path = write_tiny_checkpoint(some_state(), "badseed.h5");
  test_support::replace_string_attribute(path, "seed", "12x45", 5);
  EXPECT_ERROR_CONTAINS(
      "attribute 'seed' is \"12x45\", not an unsigned 64-bit integer in decimal",
      io::read_training_state(path));
  std::remove(path.c_str());
}

TEST(RunCheckpoints, TheLatestGoodIsTheRunsNewestThatReadsBackWhole) {
  const std::string dir = "/tmp/distzo_test_checkpoint_" + std::to_string(getpid()) + "_run";
  std::filesystem::create_directories(dir);
  io::TrainingState s = some_state();
  s.parameter_digest =
      io::ModelReader(std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5").digest();
  const auto write = [&](std::int64_t step, const std::string& run_id) {
    s.step = step;
    s.run_id = run_id;
    return write_tiny_checkpoint(s, "run/" + io::checkpoint_name(step));
  };
  write(1, "ours");
  const std::string good = write(2, "ours");
  write(3, "another run's");
  const std::string truncated = write(4, "ours");
  std::filesystem::resize_file(truncated, std::filesystem::file_size(truncated) / 2);

  const app::RunCheckpoints checkpoints(dir, 1);
  std::vector<std::string> passed_over;
  EXPECT_EQ(checkpoints.latest_good("ours", passed_over), good);
  ASSERT_EQ(passed_over.size(), 1u);
  EXPECT_EQ(passed_over[0].rfind(truncated + ": ", 0), 0u) << passed_over[0];
  EXPECT_NE(app::checkpoint_problem(truncated), "");
  EXPECT_EQ(app::checkpoint_problem(good), "");
  // Another run's newest is its step 3; the truncated one before it, whose
  // run id cannot be read, is tried for every run.
  passed_over.clear();
  EXPECT_EQ(checkpoints.latest_good("another run's", passed_over), dir + "/ckpt-000003.h5");
  EXPECT_EQ(passed_over.size(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
