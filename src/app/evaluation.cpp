#include "app/evaluation.hpp"

#include <algorithm>
#include <vector>

namespace distzo::app {

EvalSummary evaluate(zo::Engine& engine, io::BatchBuilder& builder,
                     const io::Dataset& data, std::int64_t limit, int micro_batch,
                     const runtime::Communicator& world, const std::function<void()>& alive) {
  const std::int64_t n = limit > 0 ? std::min(limit, data.num_examples) : data.num_examples;
  double totals[3] = {0, 0, 0};  // loss sum, count, correct
  std::int64_t batch_index = 0;
  for (std::int64_t first = 0; first < n; first += micro_batch, ++batch_index) {
    if (batch_index % world.size() != world.rank()) continue;
    std::vector<std::int64_t> idx;
    for (std::int64_t i = first; i < std::min(n, first + micro_batch); ++i) idx.push_back(i);
    const model::Batch& batch = builder.fill(ExecSpace(), idx);
    const zo::EvalOutcome out = engine.evaluate(batch);
    totals[0] += out.loss_sum;
    totals[1] += out.count;
    if (data.task == model::Task::classification)
      for (std::size_t r = 0; r < idx.size(); ++r)  // filler rows past idx.size() are ignored
        totals[2] += out.predictions[r] == data.labels[static_cast<std::size_t>(idx[r])] ? 1 : 0;
    alive();
  }
  world.allreduce_sum(totals, 3);
  EvalSummary s;
  s.loss = totals[1] > 0 ? totals[0] / totals[1] : 0.0;
  s.examples = n;
  if (data.task == model::Task::classification) s.accuracy = totals[2] / static_cast<double>(n);
  return s;
}

}  // namespace distzo::app
