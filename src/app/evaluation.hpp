#pragma once
// Held-out evaluation: loss and accuracy at θ (no perturbation).

#include <cstdint>
#include <functional>

#include "io/dataset.hpp"
#include "model/batch_builder.hpp"
#include "runtime/communicator.hpp"
#include "zo/engine.hpp"

namespace distzo::app {

struct EvalSummary {
  double loss = 0;       // token-weighted (causal LM) or per-example (classification) mean
  double accuracy = -1;  // classification: argmax over the candidates == label; else -1
  std::int64_t examples = 0;
};

/// How far an evaluation has come after one of this rank's micro-batches:
/// batch j (in evaluation order) done on world rank j % size, the ranks are
/// taken to be at the same place, so batches 0 .. j + size - 1 count as done.
struct EvalProgress {
  std::int64_t batches_done = 0, batches = 0;
  std::int64_t examples_done = 0, examples = 0;
};

/// Evaluates the first `limit` examples of `data` (all if limit == 0), in
/// file order, or with a trimming builder (data.batch_width: trimmed) in
/// order of length (ties in file order), micro-batch j on world rank
/// j % size; totals are summed over
/// `world`, so every rank returns the same summary. θ must be flushed.
/// `progress` is called after each micro-batch of this rank (a watchdog's
/// liveness tick, progress lines): output only, nothing it does changes
/// the summary.
EvalSummary evaluate(
    zo::Engine& engine, model::BatchBuilder& builder, const io::Dataset& data, std::int64_t limit,
    int micro_batch, const runtime::Communicator& world,
    const std::function<void(const EvalProgress&)>& progress = [](const EvalProgress&) {});

}  // namespace distzo::app
