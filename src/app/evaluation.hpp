#pragma once
// Held-out evaluation: loss and accuracy at θ (no perturbation).

#include "io/dataset.hpp"
#include "runtime/communicator.hpp"
#include "zo/engine.hpp"

#include <cstdint>
#include <functional>

namespace distzo::app {

struct EvalSummary {
  double loss = 0;        // token-weighted (causal LM) or per-example (classification) mean
  double accuracy = -1;   // classification: argmax over the candidates == label; else -1
  std::int64_t examples = 0;
};

/// Evaluates the first `limit` examples of `data` (all if limit == 0), in
/// file order, or with a trimming builder (data.batch_width: trimmed) in
/// order of length (ties in file order), micro-batch j on world rank
/// j % size; totals are summed over
/// `world`, so every rank returns the same summary. θ must be flushed.
/// `alive` is called after each micro-batch (a watchdog's liveness tick).
EvalSummary evaluate(zo::Engine& engine, io::BatchBuilder& builder,
                     const io::Dataset& data, std::int64_t limit, int micro_batch,
                     const runtime::Communicator& world,
                     const std::function<void()>& alive = [] {});

}  // namespace distzo::app
