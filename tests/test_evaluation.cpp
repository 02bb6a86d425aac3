// Held-out evaluation: accuracy on a hand-made case whose answer is known by
// construction, across micro-batch sizes (including a filler tail).

#include <gtest/gtest.h>

#include "app/evaluation.hpp"
#include "io/synthetic.hpp"
#include "runtime/communicator.hpp"
#include "support/tiny_model.hpp"

namespace {

using namespace distzo;

TEST(Evaluation, AccuracyOnAHandMadeCase) {
  test_support::TinyModel m(test_support::tiny_config());
  io::Dataset data = io::make_synthetic_classification(7, 9, m.config.vocab_size, 11);

  // The model's own prediction for each example, one example per batch.
  std::vector<int> predicted;
  {
    zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(1, 1, 0),
                  model::BatchShape{data.task, 1, static_cast<int>(data.seq_len), 2});
    model::BatchBuilder one(data, 1);
    for (std::int64_t i = 0; i < data.num_examples; ++i)
      predicted.push_back(ex.evaluate(one.fill({i})).predictions.at(0));
  }
  // Labels agree with the model on examples 0, 2, 4, 6 and disagree on 1, 3,
  // 5: accuracy 4/7 on all, 2/4 on the first four (max_examples = 4).
  for (std::size_t i = 0; i < predicted.size(); ++i)
    data.labels[i] = i % 2 == 0 ? predicted[i] : 1 - predicted[i];

  for (int micro_batch : {1, 2, 3, 7, 8}) {
    zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(1, 1, 0),
                  model::BatchShape{data.task, micro_batch, static_cast<int>(data.seq_len), 2});
    model::BatchBuilder builder(data, micro_batch);
    const runtime::SerialCommunicator world;
    const app::EvalSummary all = app::evaluate(ex, builder, data, 0, micro_batch, world);
    EXPECT_EQ(all.examples, 7);
    EXPECT_DOUBLE_EQ(all.accuracy, 4.0 / 7.0) << "micro_batch " << micro_batch;
    EXPECT_GT(all.loss, 0.0);
    const app::EvalSummary first4 = app::evaluate(ex, builder, data, 4, micro_batch, world);
    EXPECT_EQ(first4.examples, 4);
    EXPECT_DOUBLE_EQ(first4.accuracy, 0.5) << "micro_batch " << micro_batch;
  }
}

TEST(Evaluation, CausalLmHasNoAccuracy) {
  test_support::TinyModel m(test_support::tiny_config());
  const io::Dataset data = io::make_synthetic_causal_lm(5, 8, m.config.vocab_size, 3);
  zo::Engine ex(m.config, *m.store, zo::EvaluationPlan::make(1, 1, 0),
                model::BatchShape{data.task, 2, 8, 0});
  model::BatchBuilder builder(data, 2);
  const app::EvalSummary s = app::evaluate(ex, builder, data, 0, 2, runtime::SerialCommunicator());
  EXPECT_LT(s.accuracy, 0);
  EXPECT_GT(s.loss, 0);
}

}  // namespace
