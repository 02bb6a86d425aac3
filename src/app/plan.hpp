#pragma once
// `distzo plan`: what a run will hold and move, predicted before it is
// submitted (DESIGN.md, Placement: accounting). The prediction is a formula
// over the architecture, the placement and the batch (docs/placement.md),
// written independently of the allocations it predicts; the run measures the
// same quantities through Kokkos Tools (core/memory.hpp) and the block
// streamer's byte counters, and tests hold the two together.

#include <cstdint>
#include <string>
#include <vector>

#include "core/estimator_kind.hpp"
#include "io/dataset.hpp"
#include "io/deck.hpp"
#include "model/batch.hpp"
#include "model/model_config.hpp"
#include "runtime/placement.hpp"

namespace distzo::app {

/// Everything the prediction depends on.
struct PlanInputs {
  model::ModelConfig config;
  runtime::PlacementConfig placement;
  model::BatchShape batch{model::Task::causal_lm, 1, 1, 0};  // B x T, K candidates
  EstimatorKind estimator = EstimatorKind::spsa;
  int queries = 1;           // q directions per step
  double momentum = 0;       // optim.momentum β: 0 = plain SGD
  int history = 1;           // optim.history h: an update regenerates h × q z
  int perturbed_blocks = 0;  // optim.perturbed_blocks K: blocks a step perturbs; 0 = all
  int perturbation = 1;      // P: a rank owns evaluations() / P evaluations
  bool eval_set = false;     // a run with an eval set holds a second batch

  /// Forward evaluations of a step: 2q (spsa), q + 1 (one_sided).
  int evaluations() const { return static_cast<int>(step_evaluations(estimator, queries)); }
};

/// Bytes per role on one rank's device, θ in host memory, and θ's traffic.
struct MemoryPlan {
  std::uint64_t weights = 0;      // resident arenas + streaming slots
  std::uint64_t scratch = 0;      // w± of one block, the edges' w±, row marks
  std::uint64_t activations = 0;  // forward scratch, hidden states, head, batches, loss sums
  std::uint64_t device_total() const { return weights + scratch + activations; }
  std::uint64_t host_master = 0;         // offloaded blocks' master copy
  std::uint64_t to_device_per_step = 0;  // uploads of a step (with an update pending)
  std::uint64_t to_host_per_step = 0;    // write-backs of a step (on average when block-sparse)
  // The terms, for the printed breakdown.
  std::uint64_t edge_arena = 0, block_arena = 0;
  int device_blocks = 0, slots = 0, evaluations = 0;
};

/// A run's inputs: its deck, its model's architecture and its training set.
PlanInputs plan_inputs(const io::Deck& deck, const model::ModelConfig& config,
                       const io::Dataset& train);

/// Throws distzo::Error for inputs no run accepts (q above 32, P not
/// dividing 2q, a sequence longer than the model's positions, ...).
void check_plan_inputs(const PlanInputs& in);

MemoryPlan plan_memory(const PlanInputs& in);

/// Whether the run fits a device of `device_bytes` (also in *fits, if given),
/// and the largest number of resident blocks K that does (offloading the rest).
std::string fit_on_device(const PlanInputs& in, double device_bytes, bool* fits = nullptr);

/// The printed plan (what `distzo plan` writes).
std::string describe_plan(const PlanInputs& in, const MemoryPlan& plan);

/// The subcommand: `distzo plan DECK.yaml` or `distzo plan config.json [...]`.
int plan(const std::vector<std::string>& args);
/// `distzo plan`'s usage: its arguments and options (distzo plan --help).
const char* plan_usage();

}  // namespace distzo::app
