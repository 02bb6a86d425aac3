// Dataset files (docs/datasets.md): round trip, every validation error, the
// deterministic data order, and the synthetic datasets. Known answers for the data order and the
// synthetic recipes come from an independent Python implementation of the documented recipes
// (Philox checked against Random123's vectors there too).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/dataset.hpp"
#include "io/hdf5_file.hpp"
#include "io/synthetic.hpp"
#include "support/small_datasets.hpp"

namespace distzo_test_dataset {

using distzo::Error;
using distzo::io::DataOrder;
using distzo::io::Dataset;
using distzo::io::Hdf5File;
using distzo::io::Task;
using distzo::test_support::small_causal;
using distzo::test_support::small_classification;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "distzo_test_dataset_" + name + ".h5";
}

/// Runs `fn`, expects a distzo::Error whose message contains every fragment.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const auto& f : fragments)
      EXPECT_NE(what.find(f), std::string::npos) << "message lacks '" << f << "':\n  " << what;
    return;
  }
  ADD_FAILURE() << "no distzo::Error thrown (expected one mentioning '" << fragments.front()
                << "')";
}

/// Writes the fields of `d` without validating (to build broken files), with
/// optional extra work on the open file.
void write_raw(const std::string& path, const Dataset& d,
               const std::function<void(Hdf5File&)>& extra = {}) {
  Hdf5File f(path, Hdf5File::Mode::create);
  f.write_string_attribute("distzo_format", "dataset");
  f.write_int_attribute("format_version", 1);
  f.write_string_attribute("task", distzo::io::to_string(d.task));
  f.write_int_attribute("pad_token_id", d.pad_token_id);
  const std::int64_t n = d.num_examples, T = d.seq_len;
  f.write_ints("input_ids", {n, T}, d.input_ids.data());
  f.write_ints("lengths", {static_cast<std::int64_t>(d.lengths.size())}, d.lengths.data());
  if (!d.target_mask.empty()) f.write_ints("target_mask", {n, T}, d.target_mask.data());
  if (!d.candidates.empty()) f.write_ints("candidates", {d.num_candidates()}, d.candidates.data());
  if (!d.labels.empty())
    f.write_ints("labels", {static_cast<std::int64_t>(d.labels.size())}, d.labels.data());
  if (extra) extra(f);
}

void expect_equal(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.task, b.task);
  EXPECT_EQ(a.pad_token_id, b.pad_token_id);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.num_examples, b.num_examples);
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.input_ids, b.input_ids);
  EXPECT_EQ(a.lengths, b.lengths);
  EXPECT_EQ(a.target_mask, b.target_mask);
  EXPECT_EQ(a.candidates, b.candidates);
  EXPECT_EQ(a.labels, b.labels);
}

// ---------------------------------------------------------------- file format

TEST(DatasetFile, RoundTripCausalLm) {
  const std::string path = temp_path("roundtrip_lm");
  const Dataset d = small_causal();
  distzo::io::write_dataset(path, d);
  expect_equal(distzo::io::load_dataset(path, 16), d);

  Hdf5File f(path, Hdf5File::Mode::read);
  EXPECT_EQ(f.read_string_attribute("distzo_format"), "dataset");
  EXPECT_EQ(f.read_int_attribute("format_version"), 1);
  EXPECT_EQ(f.read_string_attribute("task"), "causal_lm");
  EXPECT_EQ(f.dataset_info("input_ids").dtype, "int32");
  EXPECT_EQ(f.dataset_info("input_ids").shape, (std::vector<std::int64_t>{3, 4}));
  std::remove(path.c_str());
}

TEST(DatasetFile, RoundTripClassification) {
  const std::string path = temp_path("roundtrip_cls");
  const Dataset d = small_classification();
  distzo::io::write_dataset(path, d);
  expect_equal(distzo::io::load_dataset(path, 23), d);
  std::remove(path.c_str());
}

TEST(DatasetFile, AcceptsInt64AndNormalisesNonzeroMask) {
  // h5py's default integer type is int64, and any nonzero mask value counts.
  const std::string path = temp_path("int64");
  const Dataset d = small_causal();
  {
    Hdf5File f(path, Hdf5File::Mode::create);
    f.write_string_attribute("distzo_format", "dataset");
    f.write_int_attribute("format_version", 1);
    f.write_string_attribute("task", "causal_lm");
    f.write_int_attribute("pad_token_id", 0);
    using distzo::io::Hdf5Handle;
    const auto i64 = [&](const std::string& name, std::vector<hsize_t> dims,
                         const std::vector<std::int32_t>& v) {
      std::vector<long long> w(v.begin(), v.end());
      Hdf5Handle s(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
      Hdf5Handle ds(H5Dcreate2(f.id(), name.c_str(), H5T_STD_I64LE, s.get(), H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT),
                    H5Dclose);
      ASSERT_GE(H5Dwrite(ds.get(), H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, w.data()), 0);
    };
    i64("input_ids", {3, 4}, d.input_ids);
    i64("lengths", {3}, d.lengths);
    std::vector<std::int32_t> mask = d.target_mask;
    for (auto& m : mask) m *= 7;
    i64("target_mask", {3, 4}, mask);
  }
  Dataset expected = d;
  expected.description.clear();
  expect_equal(distzo::io::load_dataset(path, 16), expected);
  std::remove(path.c_str());
}

TEST(DatasetFile, WriteIsAtomicAndValidates) {
  const std::string path = temp_path("atomic");
  distzo::io::write_dataset(path, small_causal());
  Dataset bad = small_causal();
  bad.lengths[1] = 9;
  expect_error([&] { distzo::io::write_dataset(path, bad); }, {path, "lengths", "example 1"});
  // The previous file is untouched.
  expect_equal(distzo::io::load_dataset(path, 16), small_causal());
  std::remove(path.c_str());
}

// One test per validation rule; each message names the file, the dataset and
// the offending example.
TEST(DatasetFile, ValidationErrors) {
  const std::string path = temp_path("invalid");
  const auto load = [&](std::int64_t vocab) {
    return [&path, vocab] { distzo::io::load_dataset(path, vocab); };
  };

  {  // token id >= vocab
    Dataset d = small_causal();
    d.input_ids[1 * 4 + 2] = 16;
    write_raw(path, d);
    expect_error(load(16), {path, "input_ids", "example 1", "position 2", "16", "[0, 16)"});
  }
  {  // negative token id
    Dataset d = small_causal();
    d.input_ids[2 * 4 + 0] = -3;
    write_raw(path, d);
    expect_error(load(16), {path, "input_ids", "example 2", "-3"});
  }
  {  // padding is not pad_token_id (e.g. left-padded data)
    Dataset d = small_causal();
    d.input_ids[0 * 4 + 3] = 9;
    write_raw(path, d);
    expect_error(load(16), {path, "input_ids", "example 0", "position 3", "right-padded"});
  }
  {  // pad_token_id outside the vocabulary
    Dataset d = small_causal();
    d.pad_token_id = 40;
    for (std::size_t k : {3u, 10u, 11u}) d.input_ids[k] = 40;
    write_raw(path, d);
    expect_error(load(16), {path, "pad_token_id", "40"});
  }
  {  // length 0
    Dataset d = small_causal();
    d.lengths[2] = 0;
    write_raw(path, d);
    expect_error(load(16), {path, "lengths", "example 2", "length 0", "[1, 4]"});
  }
  {  // length > T
    Dataset d = small_causal();
    d.lengths[0] = 5;
    write_raw(path, d);
    expect_error(load(16), {path, "lengths", "example 0", "length 5"});
  }
  {  // target at position 0
    Dataset d = small_causal();
    d.target_mask[1 * 4 + 0] = 1;
    write_raw(path, d);
    expect_error(load(16), {path, "target_mask", "example 1", "position 0"});
  }
  {  // target in the padding
    Dataset d = small_causal();
    d.target_mask[2 * 4 + 3] = 1;
    write_raw(path, d);
    expect_error(load(16), {path, "target_mask", "example 2", "position 3"});
  }
  {  // an example without targets
    Dataset d = small_causal();
    d.target_mask[0 * 4 + 2] = 0;
    write_raw(path, d);
    expect_error(load(16), {path, "target_mask", "example 0", "no target"});
  }
  {  // label out of range
    Dataset d = small_classification();
    d.labels[1] = 3;
    write_raw(path, d);
    expect_error(load(23), {path, "labels", "example 1", "label 3", "[0, 3)"});
  }
  {  // negative label
    Dataset d = small_classification();
    d.labels[2] = -1;
    write_raw(path, d);
    expect_error(load(23), {path, "labels", "example 2", "label -1"});
  }
  {  // candidate outside the vocabulary
    Dataset d = small_classification();
    write_raw(path, d);
    expect_error(load(22), {path, "candidates", "candidate 2", "22"});
  }
  {  // duplicate candidate
    Dataset d = small_classification();
    d.candidates[2] = 20;
    write_raw(path, d);
    expect_error(load(23), {path, "candidates", "20", "twice"});
  }
  {  // a single candidate
    Dataset d = small_classification();
    d.candidates = {20};
    d.labels = {0, 0, 0};
    write_raw(path, d);
    expect_error(load(23), {path, "candidates", "at least 2"});
  }
  {  // lengths shape inconsistent with input_ids
    Dataset d = small_causal();
    d.lengths.push_back(2);
    write_raw(path, d);
    expect_error(load(16), {path, "'lengths'", "(4,)", "(3,)"});
  }
  {  // labels shape inconsistent with input_ids
    Dataset d = small_classification();
    d.labels.pop_back();
    write_raw(path, d);
    expect_error(load(23), {path, "'labels'", "(2,)", "(3,)"});
  }
  {  // target_mask shape inconsistent with input_ids
    Dataset d = small_causal();
    write_raw(path, d, [](Hdf5File& f) {
      H5Ldelete(f.id(), "target_mask", H5P_DEFAULT);
      const std::vector<std::int32_t> m(3 * 5, 0);
      f.write_ints("target_mask", {3, 5}, m.data());
    });
    expect_error(load(16), {path, "'target_mask'", "(3, 5)", "(3, 4)"});
  }
  {  // input_ids of the wrong rank
    Dataset d = small_causal();
    write_raw(path, d, [&](Hdf5File& f) {
      H5Ldelete(f.id(), "input_ids", H5P_DEFAULT);
      f.write_ints("input_ids", {12}, d.input_ids.data());
    });
    expect_error(load(16), {path, "'input_ids'", "(12,)", "2 dimensions"});
  }
  {  // floats where integers belong
    Dataset d = small_causal();
    write_raw(path, d, [](Hdf5File& f) {
      H5Ldelete(f.id(), "lengths", H5P_DEFAULT);
      const float l[3] = {3, 4, 2};
      f.write_floats("lengths", {3}, l);
    });
    expect_error(load(16), {path, "'lengths'", "integers", "float32"});
  }
  {  // missing dataset
    Dataset d = small_causal();
    d.target_mask.clear();
    write_raw(path, d);
    expect_error(load(16), {path, "missing dataset 'target_mask'"});
  }
  {  // a dataset of the other task
    Dataset d = small_classification();
    write_raw(path, d, [](Hdf5File& f) {
      const std::vector<std::int32_t> m(12, 0);
      f.write_ints("target_mask", {3, 4}, m.data());
    });
    expect_error(load(23), {path, "unexpected dataset 'target_mask'", "classification"});
  }
  {  // not a dataset file
    Dataset d = small_causal();
    write_raw(path, d, [](Hdf5File& f) { f.write_string_attribute("distzo_format", "model"); });
    expect_error(load(16), {path, "'model'", "expected 'dataset'"});
  }
  {  // a future format version
    Dataset d = small_causal();
    write_raw(path, d, [](Hdf5File& f) { f.write_int_attribute("format_version", 2); });
    expect_error(load(16), {path, "format_version 2"});
  }
  {  // unknown task
    Dataset d = small_causal();
    write_raw(path, d, [](Hdf5File& f) { f.write_string_attribute("task", "regression"); });
    expect_error(load(16), {path, "attribute 'task'", "regression", "causal_lm, classification"});
  }
  {  // a required attribute missing
    Dataset d = small_causal();
    write_raw(path, d, [](Hdf5File& f) { H5Adelete(f.id(), "pad_token_id"); });
    expect_error(load(16), {path, "missing attribute 'pad_token_id'"});
  }
  {  // no attributes at all
    Hdf5File f(path, Hdf5File::Mode::create);
    const std::int32_t x = 0;
    f.write_ints("x", {1}, &x);
  }
  expect_error(load(16), {path, "not a distzo dataset file"});
  std::remove(path.c_str());
  expect_error(load(16), {path, "cannot read"});
}

TEST(DatasetFile, ReportsHowManyViolations) {
  Dataset d = small_causal();
  d.input_ids[0] = 99;
  d.input_ids[5] = 98;
  expect_error([&] { distzo::io::validate_dataset(d, 16, "mem"); },
               {"mem: input_ids", "example 0", "position 0", "99",
                "(2 tokens outside the vocabulary in all)"});
}

// ---------------------------------------------------------------- data order

bool is_permutation_of_iota(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

TEST(DataOrder, KnownAnswers) {
  // From the Python reference of the recipe in docs/datasets.md.
  DataOrder order(10, 1234);
  EXPECT_EQ(order.permutation(0), (std::vector<std::int64_t>{3, 0, 6, 7, 5, 8, 9, 1, 4, 2}));
  EXPECT_EQ(order.permutation(1), (std::vector<std::int64_t>{3, 6, 4, 0, 8, 9, 1, 2, 7, 5}));
  DataOrder big_seed(10, 0xDEADBEEFCAFEF00Dull);
  EXPECT_EQ(big_seed.permutation(5), (std::vector<std::int64_t>{1, 6, 0, 8, 3, 9, 5, 2, 4, 7}));
}

TEST(DataOrder, EachEpochIsAPermutation) {
  for (std::int64_t n : {1, 2, 7, 100, 1001}) {
    DataOrder order(n, 42);
    for (std::int64_t e : {0, 1, 2, 17}) {
      const auto p = order.permutation(e);
      ASSERT_EQ(p.size(), static_cast<std::size_t>(n));
      EXPECT_TRUE(is_permutation_of_iota(p)) << "n=" << n << " epoch " << e;
    }
  }
}

TEST(DataOrder, DeterministicAndSeedDependent) {
  DataOrder a(1000, 7), b(1000, 7), c(1000, 8);
  EXPECT_EQ(a.permutation(3), b.permutation(3));
  EXPECT_NE(a.permutation(0), c.permutation(0));
  EXPECT_NE(a.permutation(0), a.permutation(1));
  // Roughly uniform: few fixed points (expected 1).
  const auto p = a.permutation(0);
  int fixed = 0;
  for (std::size_t i = 0; i < p.size(); ++i) fixed += p[i] == static_cast<std::int64_t>(i);
  EXPECT_LT(fixed, 8);
}

TEST(DataOrder, ResumeMidRunGivesTheSameBatches) {
  DataOrder running(37, 99);
  std::vector<std::vector<std::int64_t>> seen;
  for (std::int64_t s = 0; s < 40; ++s) seen.push_back(running.micro_batch(s, 1, 2, 3));
  // A fresh object (a resumed run) asked for a late step first.
  DataOrder resumed(37, 99);
  for (std::int64_t s = 39; s >= 25; --s) EXPECT_EQ(resumed.micro_batch(s, 1, 2, 3), seen[s]) << s;
}

TEST(DataOrder, ReplicasPartitionTheGlobalBatch) {
  for (int data_size : {1, 2, 3, 4}) {
    for (int mb : {1, 2, 5}) {
      DataOrder order(23, 5);
      DataOrder single(23, 5);
      const int global = mb * data_size;
      for (std::int64_t step = 0; step < 20; ++step) {
        std::vector<std::int64_t> all;
        for (int d = 0; d < data_size; ++d) {
          const auto part = order.micro_batch(step, d, data_size, mb);
          ASSERT_EQ(part.size(), static_cast<std::size_t>(mb));
          all.insert(all.end(), part.begin(), part.end());
        }
        EXPECT_EQ(all, single.micro_batch(step, 0, 1, global))
            << "data_size " << data_size << " mb " << mb << " step " << step;
      }
    }
  }
}

TEST(DataOrder, StepsWalkTheEpochsInOrder) {
  // N = 10, G = 4: step 2 takes positions 8..11, across the first boundary.
  DataOrder order(10, 1234);
  const auto e0 = order.permutation(0), e1 = order.permutation(1), e2 = order.permutation(2);
  EXPECT_EQ(order.micro_batch(0, 0, 1, 4), (std::vector<std::int64_t>{e0[0], e0[1], e0[2], e0[3]}));
  EXPECT_EQ(order.micro_batch(2, 0, 1, 4), (std::vector<std::int64_t>{e0[8], e0[9], e1[0], e1[1]}));
  EXPECT_EQ(order.micro_batch(2, 1, 2, 2), (std::vector<std::int64_t>{e1[0], e1[1]}));
  EXPECT_EQ(order.micro_batch(4, 0, 1, 4), (std::vector<std::int64_t>{e1[6], e1[7], e1[8], e1[9]}));
  EXPECT_EQ(order.micro_batch(5, 0, 1, 4), (std::vector<std::int64_t>{e2[0], e2[1], e2[2], e2[3]}));
  EXPECT_EQ(order.epoch_of_step(2, 4), 0);
  EXPECT_EQ(order.epoch_of_step(3, 4), 1);
  EXPECT_EQ(order.epoch_of_step(5, 4), 2);

  // A global batch larger than the dataset spans several epochs in one step.
  DataOrder tiny(3, 1);
  const auto t0 = tiny.permutation(0), t1 = tiny.permutation(1), t2 = tiny.permutation(2);
  EXPECT_EQ(tiny.micro_batch(0, 0, 1, 8),
            (std::vector<std::int64_t>{t0[0], t0[1], t0[2], t1[0], t1[1], t1[2], t2[0], t2[1]}));

  // When G divides N, one epoch of steps sees every example exactly once.
  DataOrder exact(24, 3);
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::int64_t> seen;
    for (std::int64_t s = epoch * 4; s < (epoch + 1) * 4; ++s)
      for (int d = 0; d < 2; ++d) {
        const auto part = exact.micro_batch(s, d, 2, 3);
        seen.insert(seen.end(), part.begin(), part.end());
      }
    EXPECT_TRUE(is_permutation_of_iota(seen)) << "epoch " << epoch;
  }
}

TEST(DataOrder, RejectsBadArguments) {
  DataOrder order(10, 1);
  expect_error([&] { order.micro_batch(-1, 0, 1, 1); }, {"step"});
  expect_error([&] { order.micro_batch(0, 2, 2, 1); }, {"rank 2 of 2"});
  expect_error([&] { order.micro_batch(0, 0, 0, 1); }, {"rank 0 of 0"});
  expect_error([&] { order.micro_batch(0, 0, 1, 0); }, {"micro_batch"});
  expect_error([&] { order.permutation(-1); }, {"epoch"});
  expect_error([] { DataOrder(0, 1); }, {"no examples"});
}

// ---------------------------------------------------------------- synthetic

TEST(Synthetic, ClassificationKnownAnswerAndStructure) {
  namespace syn = distzo::io::synthetic;
  const Dataset d = distzo::io::make_synthetic_classification(3, 8, 32, 7);
  // From the Python reference of the recipe in docs/datasets.md.
  EXPECT_EQ(d.input_ids, (std::vector<std::int32_t>{13, 2, 30, 28, 8,  6,  13, 5,  //
                                                    8,  9, 25, 2,  20, 30, 5,  0,  //
                                                    23, 1, 27, 5,  0,  0,  0,  0}));
  EXPECT_EQ(d.lengths, (std::vector<std::int32_t>{8, 7, 4}));
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{1, 1, 0}));

  const Dataset big = distzo::io::make_synthetic_classification(500, 16, 64, 11);
  distzo::io::validate_dataset(big, 64, "synthetic");
  EXPECT_EQ(big.candidates, (std::vector<std::int32_t>{syn::kWordA, syn::kWordB}));
  int ones = 0;
  for (std::int64_t i = 0; i < big.num_examples; ++i) {
    const int len = big.lengths[i];
    EXPECT_GE(len, 8);
    EXPECT_EQ(big.token(i, len - 1), syn::kQuery);
    int a = 0, b = 0;
    for (int t = 0; t < len - 1; ++t) {
      a += big.token(i, t) == syn::kMarkerA;
      b += big.token(i, t) == syn::kMarkerB;
      if (big.token(i, t) > syn::kMarkerB) {
        EXPECT_GE(big.token(i, t), syn::kFirstFiller);
      }
    }
    EXPECT_EQ(a + b, 1) << "example " << i;
    EXPECT_EQ(big.labels[i], b);  // marker B <=> label 1
    ones += big.labels[i];
  }
  EXPECT_GT(ones, 200);
  EXPECT_LT(ones, 300);
}

TEST(Synthetic, CausalLmKnownAnswerAndStructure) {
  const Dataset d = distzo::io::make_synthetic_causal_lm(3, 8, 32, 7);
  EXPECT_EQ(d.input_ids, (std::vector<std::int32_t>{24, 25, 26, 27, 0, 0, 0, 0,  //
                                                    6,  7,  8,  9,  0, 0, 0, 0,  //
                                                    31, 1,  2,  3,  4, 0, 0, 0}));
  EXPECT_EQ(d.lengths, (std::vector<std::int32_t>{4, 4, 5}));
  EXPECT_EQ(d.target_mask, (std::vector<std::int32_t>{0, 0, 1, 1, 0, 0, 0, 0,  //
                                                      0, 0, 1, 1, 0, 0, 0, 0,  //
                                                      0, 0, 1, 1, 1, 0, 0, 0}));

  const Dataset big = distzo::io::make_synthetic_causal_lm(300, 10, 16, 3);
  distzo::io::validate_dataset(big, 16, "synthetic");
  for (std::int64_t i = 0; i < big.num_examples; ++i)
    for (int t = 0; t + 1 < big.lengths[i]; ++t)
      EXPECT_EQ(big.token(i, t + 1), big.token(i, t) % 15 + 1);
}

TEST(Synthetic, DeterministicAndSeedDependentAndWritable) {
  using distzo::io::make_synthetic_causal_lm;
  using distzo::io::make_synthetic_classification;
  expect_equal(make_synthetic_classification(50, 12, 40, 1),
               make_synthetic_classification(50, 12, 40, 1));
  expect_equal(make_synthetic_causal_lm(50, 12, 40, 1), make_synthetic_causal_lm(50, 12, 40, 1));
  EXPECT_NE(make_synthetic_classification(50, 12, 40, 1).input_ids,
            make_synthetic_classification(50, 12, 40, 2).input_ids);
  EXPECT_NE(make_synthetic_causal_lm(50, 12, 40, 1).input_ids,
            make_synthetic_causal_lm(50, 12, 40, 2).input_ids);
  // A prefix of the examples does not depend on how many there are.
  const Dataset few = make_synthetic_classification(5, 12, 40, 1);
  const Dataset many = make_synthetic_classification(50, 12, 40, 1);
  EXPECT_TRUE(std::equal(few.input_ids.begin(), few.input_ids.end(), many.input_ids.begin()));

  const std::string path = temp_path("synthetic");
  const Dataset d = make_synthetic_classification(20, 6, 10, 4);
  distzo::io::write_dataset(path, d);
  expect_equal(distzo::io::load_dataset(path, 10), d);
  std::remove(path.c_str());

  expect_error([] { make_synthetic_classification(4, 8, 7, 1); }, {"vocab_size"});
  expect_error([] { make_synthetic_causal_lm(4, 1, 16, 1); }, {"seq_len"});
  expect_error([] { make_synthetic_causal_lm(0, 4, 16, 1); }, {"examples"});
}

}  // namespace distzo_test_dataset
