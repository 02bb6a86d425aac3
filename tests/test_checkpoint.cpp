// The training state of a checkpoint round-trips, and the recipe of z is
// read the way resume relies on: written when present, 1 when the attribute
// is absent (checkpoints from before recipe 2), an error when unknown; a
// run's checkpoints are chosen the way `resume: latest` relies on.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "app/inspect.hpp"
#include "app/run_directory.hpp"
#include "core/digest.hpp"
#include "core/error.hpp"
#include "core/fp.hpp"
#include "core/version.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "io/hdf5_file.hpp"
#include "io/model_file.hpp"
#include "support/expect_error.hpp"
#include "support/hdf5_edit.hpp"
#include "support/model_checkpoint.hpp"
#include "support/tiny_model.hpp"
#include "support/tokenizer_files.hpp"

namespace {

using namespace distzo;

/// A checkpoint of the tiny test model with `state`, at a fresh path.
std::string write_tiny_checkpoint(const io::TrainingState& state, const std::string& name) {
  const io::ModelReader model(std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5");
  const std::string path = "/tmp/distzo_test_checkpoint_" + std::to_string(getpid()) + "_" + name;
  test_support::write_model_checkpoint(path, model, state);
  return path;
}

io::TrainingState some_state() {
  io::TrainingState s;
  s.step = 3;
  s.z = {0xFFFFFFFFFFFFFFFFull, Distribution::rademacher,
         ZRecipe::v2};  // uint64 beyond int64: text
  s.queries = 2;
  // The log holds steps 0, 1, 2; the pending update is the last one's.
  for (int i = 0; i < 3; ++i)
    s.seed_log.push_back({i, 1e-3 * (i + 1), 2.5 / (i + 1), {0.5 * i, -0.25 * i}});
  s.pending = PendingUpdate::after({s.z, 2, 1e-3}, s.seed_log.back().g, s.seed_log.back().lr, 0.01);
  s.deck_yaml = "optim:\n  steps: 3\n";
  s.parameter_digest = "0123456789abcdef";
  s.nonfinite_streak = 2;
  return s;
}

/// Rewrites the root attribute `name` of `path` (HDF5 C API): removed when
/// value < 0, else set to value.
void set_root_attribute(const std::string& path, const char* name, long long value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  test_support::drop_attributes_checksum(file);  // an older file, not a damaged one
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
  // The pending update (its z is the run's, above).
  EXPECT_TRUE(r.pending.active);
  EXPECT_EQ(r.pending.step, s.pending.step);
  EXPECT_EQ(r.pending.lr, s.pending.lr);
  EXPECT_EQ(r.pending.weight_decay, s.pending.weight_decay);
  EXPECT_EQ(r.pending.queries, s.pending.queries);
  EXPECT_EQ(r.pending.terms, s.pending.terms);
  EXPECT_EQ(r.deck_yaml, s.deck_yaml);
  EXPECT_EQ(r.parameter_digest, s.parameter_digest);
  EXPECT_EQ(r.nonfinite_streak, s.nonfinite_streak);
  EXPECT_TRUE(s.writer_version.empty());
  EXPECT_EQ(r.writer_version, distzo_version()) << "the writer records its version";
  ASSERT_EQ(r.seed_log.size(), s.seed_log.size());
  for (std::size_t i = 0; i < s.seed_log.size(); ++i) {
    EXPECT_EQ(r.seed_log[i].step, s.seed_log[i].step);
    EXPECT_EQ(r.seed_log[i].lr, s.seed_log[i].lr);
    EXPECT_EQ(r.seed_log[i].g, s.seed_log[i].g);
  }
}

/// A Qwen model with use_sliding_window keeps its window in two optional
/// attributes; one without has neither (as every file before them).
TEST(ModelFile, KeepsQwensSlidingWindowOnlyWhenItHasOne) {
  const std::string path = "/tmp/distzo_test_checkpoint_" + std::to_string(getpid()) + "_qwen.h5";
  for (const std::int64_t window : {std::int64_t(0), std::int64_t(5)}) {
    model::ModelConfig c = test_support::tiny_config_for(model::Architecture::qwen2);
    c.sliding_window = window;
    c.max_window_layers = window > 0 ? 1 : 0;
    {
      io::Hdf5File file(path, io::Hdf5File::Mode::create);
      file.write_string_attribute("distzo_format", "model");
      io::write_model_config(file, c, "");
    }
    const io::Hdf5File file(path, io::Hdf5File::Mode::read);
    EXPECT_EQ(file.has_attribute("max_window_layers"), window > 0);
    EXPECT_EQ(io::read_model_config(file), c);
  }
  std::remove(path.c_str());
}

TEST(Checkpoint, RecordsTheDigestVersionAndKeepsTheDigest) {
  const std::string path = write_tiny_checkpoint(some_state(), "digest.h5");
  const io::ModelReader checkpoint(path);
  const io::ModelReader model(std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5");
  EXPECT_EQ(checkpoint.info().digest_version, digest_version_of(StorageDtype::fp32));
  EXPECT_EQ(model.info().digest_version, 0) << "the fixture was written by tools/distzo_tools";
  EXPECT_EQ(checkpoint.digest(), model.digest()) << "the same tensors, the same digest";
  std::remove(path.c_str());
}

/// The tokenizer files an import kept travel into a checkpoint unchanged
/// (over 64 KiB: HDF5's dense attribute storage), and inspect names them.
TEST(Checkpoint, CarriesTheTokenizerFilesUnchanged) {
  const io::ModelReader model(std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5");
  EXPECT_EQ(model.info().hf_tokenizer_files, "") << "the fixture carries none";
  io::ModelInfo info = model.info();
  info.hf_tokenizer_files = test_support::tokenizer_files_json();
  ASSERT_GT(info.hf_tokenizer_files.size(), 64u * 1024u);
  const std::string path =
      "/tmp/distzo_test_checkpoint_" + std::to_string(getpid()) + "_tokenizer.h5";
  io::write_checkpoint(
      path, info,
      [&](const io::TensorSink& sink) {
        for (const auto& p : info.registry.parameters()) {
          std::vector<real> data(static_cast<std::size_t>(p.numel()));
          model.read(p.id, data.data());
          sink(p.id, data.data());
        }
      },
      some_state());
  EXPECT_EQ(io::ModelReader(path).info().hf_tokenizer_files, info.hf_tokenizer_files);
  std::ostringstream shown;
  app::inspect(path, false, shown);
  EXPECT_NE(shown.str().find("tokenizer     merges.txt, tokenizer.json ("), std::string::npos)
      << shown.str();
  std::ostringstream bare;
  app::inspect(std::string(DISTZO_TEST_DATA) + "/opt_tiny_preln.model.h5", false, bare);
  EXPECT_NE(bare.str().find("tokenizer     none kept"), std::string::npos) << bare.str();
  std::remove(path.c_str());
}

TEST(Checkpoint, TokenizerFilesAreAJsonObjectOfStrings) {
  const auto names = [](const std::string& json) {
    std::string all;
    for (const io::TokenizerFile& f : io::tokenizer_files(json, "f.h5"))
      all += f.name + ":" + std::to_string(f.json_bytes) + " ";
    return all;
  };
  EXPECT_EQ(names("{}"), "");
  EXPECT_EQ(names(" { }\n"), "");
  // Escaped quotes inside a name and a text; names decoded, lengths as JSON
  // writes them (a surrogate pair is 12 bytes of JSON, 'é' 2 of UTF-8).
  EXPECT_EQ(names(R"({"a.json": "{\"x\": 1}", "b\"c":""})"), R"(a.json:10 b"c:0 )");
  EXPECT_EQ(names("{\"t\": \"\\ud83d\\ude00\xC3\xA9\"}"), "t:14 ");
  for (const char* bad : {"", "[]", R"({"a": 1})", R"({"a" "b"})", R"({"a": "b")",
                          R"({"a": "b"} x)", R"({"a": "b",})", R"({"a": "b)",
                          R"({"a": "", "a": ""})", R"({"a": "\q"})", "{\"a\": \"\n\"}"}) {
    SCOPED_TRACE(bad);
    EXPECT_ERROR_CONTAINS("f.h5: hf_tokenizer_files is not a JSON object",
                          io::tokenizer_files(bad, "f.h5"));
  }
  // A name is judged decoded: escapes spell no way out of the directory.
  for (const char* bad : {R"({"../x.json": ""})", R"({".hidden": ""})", R"({"": ""})",
                          R"({"\u002e\u002e\u002fx.json": ""})", R"({"a\/b": ""})"}) {
    SCOPED_TRACE(bad);
    EXPECT_ERROR_CONTAINS("which is not a plain file name", io::tokenizer_files(bad, "f.h5"));
  }
}

/// A checkpoint of a tiny model's θ as its store holds it.
std::string write_store_checkpoint(const test_support::TinyModel& m, StorageDtype storage,
                                   const std::string& name) {
  io::ModelInfo info;
  info.config = m.config;
  info.registry = m.registry;
  io::TrainingState state = some_state();
  state.storage = storage;
  state.parameter_digest = m.digest();
  const std::string path = "/tmp/distzo_test_checkpoint_" + std::to_string(getpid()) + "_" + name;
  io::write_checkpoint(
      path, info, [&](const io::TensorSink& sink) { m.store->visit_stored(sink); }, state);
  return path;
}

runtime::PlacementConfig stored_in(StorageDtype storage) {
  runtime::PlacementConfig p;
  p.storage = storage;
  return p;
}

/// A 2-byte θ is written as its words, in HDF5 float types h5py reads
/// (float16; bfloat16), digested over the words in memory and in the file
/// alike, read back word for word, and shown by inspect.
TEST(CheckpointDtype, TwoByteThetaIsWrittenAsItsWords) {
  for (const StorageDtype storage : {StorageDtype::bf16, StorageDtype::fp16}) {
    SCOPED_TRACE(to_string(storage));
    const test_support::TinyModel m(test_support::tiny_config(), 1234, stored_in(storage));
    const std::string path = write_store_checkpoint(m, storage, "words.h5");
    const io::ModelReader reader(path);
    EXPECT_TRUE(reader.all_in(storage));
    EXPECT_EQ(reader.theta_dtype(), storage);
    EXPECT_EQ(reader.info().digest_version, kDigestVersion);
    EXPECT_EQ(io::read_training_state(path).storage, storage);
    // In memory and in the file: one digest, over the words.
    EXPECT_EQ(reader.digest(), m.digest());

    // The HDF5 types: 2 bytes, IEEE half's or bfloat16's fields and bias.
    const io::Hdf5File file(path, io::Hdf5File::Mode::read);
    const char* expected = storage == StorageDtype::bf16 ? "bfloat16" : "float16";
    std::vector<std::vector<std::uint16_t>> words(m.registry.size());
    m.store->visit_stored([&](std::uint32_t id, StoredElements data) {
      ASSERT_EQ(data.dtype, storage);
      words[id].assign(data.words(), data.words() + m.registry[id].numel());
    });
    for (const auto& p : m.registry.parameters()) {
      EXPECT_EQ(file.dataset_info(p.name).dtype, expected) << p.name;
      StorageDtype found = StorageDtype::fp32;
      EXPECT_EQ(file.read_words(p.name, &found), words[p.id]) << p.name;
      EXPECT_EQ(found, storage);
    }
    {
      const hid_t dset = H5Dopen2(file.id(), m.registry[0].name.c_str(), H5P_DEFAULT);
      const hid_t type = H5Dget_type(dset);
      std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
      H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize);
      EXPECT_EQ(H5Tget_size(type), 2u);
      EXPECT_EQ(H5Tget_precision(type), 16u);
      EXPECT_EQ(H5Tget_order(type), H5T_ORDER_LE);
      EXPECT_EQ(spos, 15u);
      EXPECT_EQ(mpos, 0u);
      if (storage == StorageDtype::fp16) {
        EXPECT_TRUE(epos == 10 && esize == 5 && msize == 10 && H5Tget_ebias(type) == 15);
      } else {
        EXPECT_TRUE(epos == 7 && esize == 8 && msize == 7 && H5Tget_ebias(type) == 127);
      }
      H5Tclose(type);
      H5Dclose(dset);
    }

    // Loaded into the same storage: the same words (the same digest); into
    // float32: the decoded values, exactly.
    runtime::ParameterStore again(m.registry, stored_in(storage));
    again.fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
    EXPECT_EQ(again.digest(), m.digest());
    runtime::ParameterStore wide(m.registry, stored_in(StorageDtype::fp32));
    wide.fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
    std::vector<std::vector<float>> values(m.registry.size());
    for (const auto& p : m.registry.parameters()) {
      values[p.id].resize(static_cast<std::size_t>(p.numel()));
      wide.read(p.id, values[p.id].data());
    }
    EXPECT_EQ(values, m.host_theta());
    EXPECT_NE(wide.digest(), m.digest()) << "float32 and 2-byte words digest differently";
    // A range read (what each rank of a sliced store reads) decodes too.
    std::vector<float> part(5);
    reader.read_range(3, 2, part.size(), part.data());
    EXPECT_TRUE(std::equal(part.begin(), part.end(), values[3].begin() + 2));

    // inspect names the dtype and digests the words.
    std::ostringstream table, digest;
    app::inspect(path, false, table);
    app::inspect(path, true, digest);
    EXPECT_EQ(digest.str(), m.digest() + "\n");
    const std::string text = table.str();
    EXPECT_NE(text.find(std::string("tensors       ") + to_string(storage) + ": every dataset is " +
                        (storage == StorageDtype::bf16 ? "bfloat16 (h5py reads float32"
                                                       : "IEEE float16 (numpy float16)")),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(std::string("storage       θ held in ") + to_string(storage) +
                        ", updates rounded stochastically (the datasets hold θ's words)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(std::string("  ") + to_string(storage) + "   block 0"), std::string::npos)
        << text;
    std::remove(path.c_str());
  }
}

/// A float32 θ is written as before: float32 datasets, digest_version 2 (the
/// definition versions 2 and 3 share for float32), the digest of version 2.
TEST(CheckpointDtype, Float32CheckpointIsAsBefore) {
  const test_support::TinyModel m(test_support::tiny_config(), 1234);
  const std::string path = write_store_checkpoint(m, StorageDtype::fp32, "float32.h5");
  const io::ModelReader reader(path);
  EXPECT_TRUE(reader.all_in(StorageDtype::fp32));
  EXPECT_EQ(reader.info().digest_version, 2);
  const io::Hdf5File file(path, io::Hdf5File::Mode::read);
  ParameterDigest v2;  // version 2, spelled out: float bits, no tag
  for (const auto& p : m.registry.parameters()) {
    EXPECT_EQ(file.dataset_info(p.name).dtype, "float32");
    const std::vector<float> x = file.read_floats(p.name);
    std::uint64_t sum = 0;
    for (std::size_t k = 0; k < x.size(); ++k) sum += digest::element_term(k, fp::to_bits(x[k]));
    v2.add_tensor(p.name, p.shape, sum);
  }
  EXPECT_EQ(reader.digest(), v2.hex());
  EXPECT_EQ(m.digest(), v2.hex());
  std::ostringstream table;
  app::inspect(path, false, table);
  EXPECT_NE(table.str().find("tensors       fp32: every dataset is float32"), std::string::npos)
      << table.str();
  std::remove(path.c_str());
}

/// A checkpoint of a bf16 run written before checkpoints held words (float32
/// datasets of θ's decoded values, storage "bf16"): inspect says so, its
/// digest is the float32 one its run printed (version 2 over the decoded
/// values), and a bf16 store loads it word for word.
TEST(CheckpointDtype, OlderTwoByteCheckpointReadsAsBefore) {
  const test_support::TinyModel m(test_support::tiny_config(), 1234, stored_in(StorageDtype::bf16));
  const auto decoded = m.host_theta();
  runtime::ParameterStore values(m.registry, stored_in(StorageDtype::fp32));
  values.fill(
      [&](std::uint32_t id, real* dst) { std::copy(decoded[id].begin(), decoded[id].end(), dst); });
  io::ModelInfo info;
  info.config = m.config;
  info.registry = m.registry;
  const io::TrainingState state = some_state();  // storage fp32, relabelled below
  const std::string path = "/tmp/distzo_test_checkpoint_" + std::to_string(getpid()) + "_older.h5";
  io::write_checkpoint(
      path, info, [&](const io::TensorSink& sink) { values.visit_stored(sink); }, state);
  test_support::replace_string_attribute(path, "storage", "bf16", 4);
  EXPECT_EQ(io::read_training_state(path).storage, StorageDtype::bf16);
  const io::ModelReader reader(path);
  EXPECT_EQ(reader.digest(), values.digest()) << "the version 2 digest its run printed";
  runtime::ParameterStore again(m.registry, stored_in(StorageDtype::bf16));
  again.fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
  EXPECT_EQ(again.digest(), m.digest());
  std::ostringstream table;
  app::inspect(path, false, table);
  EXPECT_NE(table.str().find("storage       θ held in bf16, updates rounded stochastically (the "
                             "datasets hold its values decoded to float32"),
            std::string::npos)
      << table.str();
  std::remove(path.c_str());
}

/// A file whose tensors come in several dtypes (a GGUF import: fp16 matrices,
/// fp32 norms) is read tensor by tensor; its θ dtype is the one holding most
/// elements.
TEST(CheckpointDtype, MixedFileIsReadTensorByTensor) {
  const test_support::TinyModel m(test_support::tiny_config(), 1234, stored_in(StorageDtype::fp16));
  io::ModelInfo info;
  info.config = m.config;
  info.registry = m.registry;
  const std::string path = "/tmp/distzo_test_checkpoint_" + std::to_string(getpid()) + "_mixed.h5";
  io::write_atomically(path, [&](io::Hdf5File& file) {
    file.write_string_attribute("distzo_format", "model");
    io::write_model_config(file, info.config, "");
    m.store->visit_stored([&](std::uint32_t id, StoredElements data) {
      const auto& p = m.registry[id];
      if (p.shape.size() == 2) {
        file.write_words(p.name, p.shape, StorageDtype::fp16, data.words());
      } else {
        std::vector<float> v(static_cast<std::size_t>(p.numel()));
        for (std::size_t i = 0; i < v.size(); ++i)
          v[i] = storage::load(data.words()[i], data.dtype);
        file.write_floats(p.name, p.shape, v.data());
      }
    });
  });
  const io::ModelReader reader(path);
  EXPECT_FALSE(reader.all_in(StorageDtype::fp16));
  EXPECT_EQ(reader.theta_dtype(), StorageDtype::fp16);
  EXPECT_NE(reader.describe_dtypes().find("fp16 ("), std::string::npos) << reader.describe_dtypes();
  EXPECT_NE(reader.describe_dtypes().find(", fp32 ("), std::string::npos)
      << reader.describe_dtypes();
  runtime::ParameterStore again(m.registry, stored_in(StorageDtype::fp16));
  again.fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
  EXPECT_EQ(again.digest(), m.digest())
      << "fp32 values that fp16 holds come back as the same words";
  EXPECT_NE(reader.digest(), m.digest()) << "the file digests its float32 vectors as float32";
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

TEST(Checkpoint, BatchWidthRoundTripsAndIsFullWhenTheAttributeIsAbsent) {
  io::TrainingState s = some_state();
  s.batch_width = model::BatchWidth::trimmed;
  const std::string path = write_tiny_checkpoint(s, "width.h5");
  EXPECT_EQ(io::read_training_state(path).batch_width, model::BatchWidth::trimmed);
  // A checkpoint from before data.batch_width ran every batch at full width.
  set_root_attribute(path, "batch_width", -1);
  EXPECT_EQ(io::read_training_state(path).batch_width, model::BatchWidth::full);
  std::remove(path.c_str());
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
  EXPECT_ERROR_CONTAINS("attribute 'seed' is \"12x45\", not an unsigned 64-bit integer in decimal",
                        io::read_training_state(path));
  std::remove(path.c_str());
}

TEST(Checkpoint, StepThatDisagreesWithItsSeedLogIsAnError) {
  // An edit whose attributes' checksum was made again passes the checksum;
  // resumed, it continued a run with a step missing from its log.
  io::TrainingState s = some_state();
  s.step = 4;
  std::string path = write_tiny_checkpoint(s, "step_ahead.h5");
  EXPECT_ERROR_CONTAINS("attribute 'step' is 4 but its seed log holds 3 step(s)",
                        io::read_training_state(path));
  std::remove(path.c_str());

  s = some_state();
  s.seed_log[1].step = 7;
  path = write_tiny_checkpoint(s, "log_gap.h5");
  EXPECT_ERROR_CONTAINS("the seed log's entry 1 is for step 7", io::read_training_state(path));
  std::remove(path.c_str());

  s = some_state();
  s.pending.lr *= 2;
  path = write_tiny_checkpoint(s, "pending_lr.h5");
  EXPECT_ERROR_CONTAINS("the pending update (step 2) is not the seed log's last step",
                        io::read_training_state(path));
  std::remove(path.c_str());
}

TEST(Checkpoint, SeedThatDisagreesWithItsDeckIsAnError) {
  io::TrainingState s = some_state();
  s.deck_yaml = io::resolved_yaml(io::parse_deck(
      "model:\n  path: m.h5\ndata:\n  train: t.h5\noptim:\n  steps: 3\n  lr: 1.0e-3\n"
      "  seed: 5\n  queries: 2\n  distribution: rademacher\noutput:\n  dir: o\n",
      "test deck"));
  const std::string path = write_tiny_checkpoint(s, "deck_seed.h5");
  EXPECT_ERROR_CONTAINS("are not its deck's (5, 2, rademacher)", io::read_training_state(path));
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
    s.seed_log.clear();  // steps 0 .. step - 1, the last one pending
    for (std::int64_t i = 0; i < step; ++i) s.seed_log.push_back({i, 1e-3, 1.0, {0.5, -0.5}});
    s.pending = PendingUpdate::after({s.z, step - 1, 1e-3}, {0.5, -0.5}, 1e-3, 0.01);
    return write_tiny_checkpoint(s, "run/" + io::checkpoint_name(step));
  };
  write(1, "ours");
  const std::string good = write(2, "ours");
  write(3, "another run's");
  const std::string truncated = write(4, "ours");
  std::filesystem::resize_file(truncated, std::filesystem::file_size(truncated) / 2);

  // Issue 24: a damaged global heap (under a variable-length string, as
  // files of earlier versions hold) crashed the resume before it could pass
  // over the file; now it is passed over like any other broken checkpoint.
  const std::string damaged = write(5, "ours");
  test_support::replace_with_variable_string(damaged, "rounding", "nearest");
  test_support::damage_global_heap(damaged);

  // And one whose step attribute changed in place (the fuzzer's flip of a
  // value that still reads as a step): its attributes' checksum tells.
  const std::string altered = write(6, "ours");
  {
    const hid_t file = H5Fopen(altered.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t attr = H5Aopen(file, "step", H5P_DEFAULT);
    const long long step = 1048576;
    ASSERT_GE(H5Awrite(attr, H5T_NATIVE_LLONG, &step), 0);
    H5Aclose(attr);
    H5Fclose(file);
  }
  EXPECT_ERROR_CONTAINS(altered + ": its attributes do not match their checksum",
                        io::read_training_state(altered));

  const app::RunCheckpoints checkpoints(dir, 1);
  std::vector<std::string> passed_over;
  EXPECT_EQ(checkpoints.latest_good("ours", passed_over), good);
  ASSERT_EQ(passed_over.size(), 3u);
  EXPECT_EQ(passed_over[0].rfind(altered + ": ", 0), 0u) << passed_over[0];
  EXPECT_EQ(passed_over[1].rfind(damaged + ": ", 0), 0u) << passed_over[1];
  EXPECT_NE(passed_over[1].find("is damaged: reading its structure"), std::string::npos)
      << passed_over[1];
  passed_over.erase(passed_over.begin(), passed_over.begin() + 2);
  ASSERT_EQ(passed_over.size(), 1u);
  EXPECT_EQ(passed_over[0].rfind(truncated + ": ", 0), 0u) << passed_over[0];
  EXPECT_NE(app::checkpoint_problem(truncated), "");
  EXPECT_EQ(app::checkpoint_problem(good), "");
  {
    // Issue 24's fuzzer: without a recorded digest (and a tensor without its
    // checksum) NaN passed the check, to fail the resume later. Every tensor
    // is read and checked now, digest or not.
    io::TrainingState plain = s;
    plain.parameter_digest.clear();
    const std::string nan = write_tiny_checkpoint(plain, "nan.h5");
    EXPECT_EQ(app::checkpoint_problem(nan), "");
    const std::string tensor = io::ModelReader(nan).info().registry[3].name;
    const hid_t file = H5Fopen(nan.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t dset = H5Dopen2(file, tensor.c_str(), H5P_DEFAULT);
    H5Adelete(dset, "checksum");
    const float not_a_number = std::numeric_limits<float>::quiet_NaN();
    const hsize_t at = 0, one = 1;
    const hid_t space = H5Dget_space(dset), memory = H5Screate_simple(1, &one, nullptr);
    H5Sselect_elements(space, H5S_SELECT_SET, 1, &at);
    ASSERT_GE(H5Dwrite(dset, H5T_NATIVE_FLOAT, memory, space, H5P_DEFAULT, &not_a_number), 0);
    H5Sclose(memory);
    H5Sclose(space);
    H5Dclose(dset);
    H5Fclose(file);
    EXPECT_NE(app::checkpoint_problem(nan).find("tensor " + tensor + " holds 1 non-finite value"),
              std::string::npos)
        << app::checkpoint_problem(nan);
    std::remove(nan.c_str());
  }
  // Another run's newest is its step 3; the truncated, damaged-heap and
  // altered ones after it, whose run ids cannot be trusted, are tried for
  // every run.
  passed_over.clear();
  EXPECT_EQ(checkpoints.latest_good("another run's", passed_over), dir + "/ckpt-000003.h5");
  EXPECT_EQ(passed_over.size(), 3u);
  std::filesystem::remove_all(dir);
}

}  // namespace
