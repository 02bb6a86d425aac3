// model::BatchBuilder (docs/datasets.md, "Micro-batches"): batch contents
// against hand-computed cases, trimmed widths against a dataset cut to the
// width, and the refusals.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/losses.hpp"
#include "model/batch_builder.hpp"
#include "support/expect_error.hpp"
#include "support/small_datasets.hpp"

namespace distzo_test_batch_builder {

using distzo::model::Batch;
using distzo::model::BatchBuilder;
using distzo::model::BatchWidth;
using distzo::model::Dataset;
using distzo::model::Task;
using distzo::test_support::small_causal;
using distzo::test_support::small_classification;

/// The label of a padding position or row: what the loss kernels skip.
constexpr int kIgnored = distzo::kernels::kIgnoreIndex;

template <class View>
std::vector<int> to_host(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<int>(h.data(), h.data() + h.size());
}

TEST(BatchBuilder, CausalLmHandComputed) {
  const Dataset d = small_causal();
  BatchBuilder builder(d, 3, BatchWidth::full);  // the layout at the dataset's T
  const Batch& b = builder.fill({1, 0});         // third row is padding

  EXPECT_EQ(b.task, Task::causal_lm);
  EXPECT_EQ(b.tokens.extent(0), 3u);
  EXPECT_EQ(b.tokens.extent(1), 4u);
  EXPECT_EQ(to_host(b.tokens), (std::vector<int>{8, 9, 10, 11, /**/ 5, 6, 7, 0, /**/ 0, 0, 0, 0}));
  EXPECT_EQ(to_host(b.mask), (std::vector<int>{1, 1, 1, 1, /**/ 1, 1, 1, 0, /**/ 0, 0, 0, 0}));
  const int X = kIgnored;
  EXPECT_EQ(to_host(b.targets), (std::vector<int>{9, 10, 11, X, /**/ X, 7, X, X, /**/ X, X, X, X}));
  EXPECT_EQ(b.num_examples, 2);
  EXPECT_EQ(b.num_tokens, 4 + 3);
  EXPECT_EQ(b.num_targets, 3 + 1);
  EXPECT_EQ(b.rows.extent(0), 0u);

  // Refill the same views: a full batch, with a repeat.
  const Batch& again = builder.fill({2, 2, 0});
  EXPECT_EQ(again.tokens.data(), b.tokens.data());
  EXPECT_EQ(to_host(again.tokens),
            (std::vector<int>{4, 12, 0, 0, /**/ 4, 12, 0, 0, /**/ 5, 6, 7, 0}));
  EXPECT_EQ(to_host(again.mask), (std::vector<int>{1, 1, 0, 0, /**/ 1, 1, 0, 0, /**/ 1, 1, 1, 0}));
  EXPECT_EQ(to_host(again.targets),
            (std::vector<int>{12, X, X, X, /**/ 12, X, X, X, /**/ X, 7, X, X}));
  EXPECT_EQ(again.num_examples, 3);
  EXPECT_EQ(again.num_tokens, 2 + 2 + 3);
  EXPECT_EQ(again.num_targets, 3);

  // An empty fill is all padding.
  builder.fill(distzo::ExecSpace(), {});
  distzo::ExecSpace().fence();
  EXPECT_EQ(to_host(builder.batch().targets), std::vector<int>(12, X));
  EXPECT_EQ(builder.batch().num_examples, 0);
  EXPECT_EQ(builder.batch().num_targets, 0);
}

TEST(BatchBuilder, ClassificationHandComputed) {
  const Dataset d = small_classification();
  BatchBuilder builder(d, 3, BatchWidth::full);  // the layout at the dataset's T
  const Batch& b = builder.fill({2, 0});
  EXPECT_EQ(b.task, Task::classification);
  EXPECT_EQ(to_host(b.tokens), (std::vector<int>{13, 14, 15, 1, /**/ 7, 8, 1, 1, /**/ 1, 1, 1, 1}));
  EXPECT_EQ(to_host(b.mask), (std::vector<int>{1, 1, 1, 0, /**/ 1, 1, 0, 0, /**/ 0, 0, 0, 0}));
  // rows = b*T + length-1; the padding row points at its own first position.
  EXPECT_EQ(to_host(b.rows), (std::vector<int>{0 * 4 + 2, 1 * 4 + 1, 2 * 4}));
  EXPECT_EQ(to_host(b.gold), (std::vector<int>{1, 2, kIgnored}));
  EXPECT_EQ(to_host(b.candidates), (std::vector<int>{20, 21, 22}));
  EXPECT_EQ(b.num_examples, 2);
  EXPECT_EQ(b.num_tokens, 3 + 2);
  EXPECT_EQ(b.num_targets, 2);
  EXPECT_EQ(b.targets.extent(0), 0u);
}

/// 3 examples of lengths 3, 11 and 9 right-padded to T = 20 (pad 0): every
/// position after the first a target (causal LM), or labels 0, 1, 0.
Dataset wide_dataset(Task task) {
  Dataset d;
  d.task = task;
  d.pad_token_id = 0;
  d.num_examples = 3;
  d.seq_len = 20;
  d.lengths = {3, 11, 9};
  for (std::int64_t i = 0; i < d.num_examples; ++i)
    for (std::int64_t t = 0; t < d.seq_len; ++t) {
      const bool real = t < d.lengths[static_cast<std::size_t>(i)];
      d.input_ids.push_back(real ? static_cast<std::int32_t>(2 + 5 * i + t) : 0);
      if (task == Task::causal_lm) d.target_mask.push_back(real && t > 0 ? 1 : 0);
    }
  if (task == Task::classification) {
    d.candidates = {30, 31};
    d.labels = {0, 1, 0};
  }
  return d;
}

/// `d` with every example cut to its first `width` positions (all its
/// tokens must fit).
Dataset cut_to(const Dataset& d, int width) {
  Dataset c = d;
  c.seq_len = width;
  c.input_ids.clear();
  c.target_mask.clear();
  for (std::int64_t i = 0; i < d.num_examples; ++i)
    for (std::int64_t t = 0; t < width; ++t) {
      c.input_ids.push_back(d.token(i, t));
      if (!d.target_mask.empty())
        c.target_mask.push_back(d.target_mask[static_cast<std::size_t>(i * d.seq_len + t)]);
    }
  return c;
}

TEST(BatchBuilder, TrimmedWidthIsTheLongestExample) {
  const Dataset d = wide_dataset(Task::causal_lm);
  BatchBuilder trimmed(d, 2);  // the default width
  BatchBuilder full(d, 2, BatchWidth::full);
  const std::vector<std::pair<std::vector<std::int64_t>, int>> cases = {
      {{0}, 3}, {{0, 2}, 9}, {{1, 0}, 11}, {{}, 1}, {{2, 2}, 9}};
  const int* tokens = nullptr;
  for (const auto& [examples, width] : cases) {
    EXPECT_EQ(trimmed.width_of(examples), width);
    const Batch& b = trimmed.fill(examples);
    EXPECT_EQ(b.seq_len, width);
    EXPECT_EQ(b.tokens.extent(1), static_cast<std::size_t>(width));
    EXPECT_EQ(b.mask.extent(1), static_cast<std::size_t>(width));
    EXPECT_EQ(b.targets.extent(0), static_cast<std::size_t>(2 * width));
    // The same buffers at every width: nothing is reallocated.
    if (tokens == nullptr) tokens = b.tokens.data();
    EXPECT_EQ(b.tokens.data(), tokens);
    EXPECT_EQ(full.fill(examples).seq_len, 20);
  }
  // An example as long as the dataset's T runs at T.
  const Dataset narrow = cut_to(d, 11);
  EXPECT_EQ(BatchBuilder(narrow, 2).width_of({1}), 11);
  EXPECT_EQ(BatchBuilder(narrow, 2).width_of({0, 2}), 9);
}

TEST(BatchBuilder, TrimmedBatchIsTheBatchOfADatasetCutToItsWidth) {
  // What the engine's bit-for-bit guarantee at a width rests on: a trimmed
  // fill holds exactly what the same examples of a dataset of that width
  // hold, rows at b*T' for classification, targets (B*T').
  for (const Task task : {Task::causal_lm, Task::classification}) {
    const Dataset d = wide_dataset(task);
    BatchBuilder trimmed(d, 3);
    for (const std::vector<std::int64_t>& examples :
         std::vector<std::vector<std::int64_t>>{{1, 0, 2}, {0, 2}, {0}}) {
      const Batch& a = trimmed.fill(examples);
      const Dataset c = cut_to(d, a.seq_len);
      BatchBuilder exact(c, 3, BatchWidth::full);
      const Batch& b = exact.fill(examples);
      ASSERT_EQ(a.seq_len, b.seq_len);
      EXPECT_EQ(to_host(a.tokens), to_host(b.tokens));
      EXPECT_EQ(to_host(a.mask), to_host(b.mask));
      EXPECT_EQ(to_host(a.targets), to_host(b.targets));
      EXPECT_EQ(to_host(a.rows), to_host(b.rows));
      EXPECT_EQ(to_host(a.gold), to_host(b.gold));
      EXPECT_EQ(a.num_tokens, b.num_tokens);
      EXPECT_EQ(a.num_targets, b.num_targets);
    }
    // A width asked for (a replica's global batch's) lays the batch out at it.
    const Batch& a = trimmed.fill(distzo::ExecSpace(), {0, 2}, 15);
    distzo::ExecSpace().fence();
    const Dataset cut = cut_to(d, 15);  // the builder refers to it
    BatchBuilder exact(cut, 3, BatchWidth::full);
    const Batch& b = exact.fill({0, 2});
    EXPECT_EQ(a.seq_len, 15);
    EXPECT_EQ(to_host(a.tokens), to_host(b.tokens));
    EXPECT_EQ(to_host(a.targets), to_host(b.targets));
    EXPECT_EQ(to_host(a.rows), to_host(b.rows));
    EXPECT_ERROR_CONTAINS("width 8 is outside [9, 20]",
                          trimmed.fill(distzo::ExecSpace(), {0, 2}, 8));
    EXPECT_ERROR_CONTAINS("width 21", trimmed.fill(distzo::ExecSpace(), {0}, 21));
  }
}

TEST(BatchBuilder, RejectsBadIndices) {
  const Dataset d = small_causal();
  BatchBuilder builder(d, 2);
  EXPECT_ERROR_CONTAINS("3 examples do not fit a micro-batch of 2", builder.fill({0, 1, 2}));
  EXPECT_ERROR_CONTAINS("example index 3 (row 1) is outside [0, 3)", builder.fill({0, 3}));
  EXPECT_ERROR_CONTAINS("example index -1", builder.fill({-1}));
  EXPECT_ERROR_CONTAINS("micro_batch must be at least 1", BatchBuilder(d, 0));
}

}  // namespace distzo_test_batch_builder
