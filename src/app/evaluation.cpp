#include "app/evaluation.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace distzo::app {

EvalSummary evaluate(zo::Engine& engine, model::BatchBuilder& builder, const io::Dataset& data,
                     std::int64_t limit, int micro_batch, const runtime::Communicator& world,
                     const std::function<void(const EvalProgress&)>& progress) {
  const std::int64_t n = limit > 0 ? std::min(limit, data.num_examples) : data.num_examples;
  // Trimmed batches run at their longest example: grouping the examples by
  // length makes each batch about as wide as its examples. The order is a
  // function of the lengths alone (ties in file order), the same on every rank.
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (builder.width() == model::BatchWidth::trimmed)
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return data.lengths[static_cast<std::size_t>(a)] < data.lengths[static_cast<std::size_t>(b)];
    });
  EvalProgress at;
  at.examples = n;
  at.batches = (n + micro_batch - 1) / micro_batch;
  double totals[3] = {0, 0, 0};  // loss sum, count, correct
  std::int64_t batch_index = 0;
  for (std::int64_t first = 0; first < n; first += micro_batch, ++batch_index) {
    if (batch_index % world.size() != world.rank()) continue;
    const std::vector<std::int64_t> idx(order.begin() + first,
                                        order.begin() + std::min(n, first + micro_batch));
    const model::Batch& batch = builder.fill(ExecSpace(), idx);
    const zo::EvalOutcome out = engine.evaluate(batch);
    totals[0] += out.loss_sum;
    totals[1] += out.count;
    if (data.task == model::Task::classification)
      for (std::size_t r = 0; r < idx.size(); ++r)  // filler rows past idx.size() are ignored
        totals[2] += out.predictions[r] == data.labels[static_cast<std::size_t>(idx[r])] ? 1 : 0;
    at.batches_done = std::min(at.batches, batch_index + world.size());
    at.examples_done = std::min(n, at.batches_done * micro_batch);
    progress(at);
  }
  world.allreduce_sum(totals, 3);
  EvalSummary s;
  s.loss = totals[1] > 0 ? totals[0] / totals[1] : 0.0;
  s.examples = n;
  if (data.task == model::Task::classification) s.accuracy = totals[2] / static_cast<double>(n);
  return s;
}

}  // namespace distzo::app
