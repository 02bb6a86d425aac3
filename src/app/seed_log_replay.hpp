#pragma once
// θ at step N from θ at step M and the seed log's rows M..N-1: the one home
// of that, for `distzo replay` and for a resume from a log-only checkpoint
// (app/log_checkpoints.hpp). Each row becomes the pending update the run
// made of it, applied by the engine's flush — the kernel and walk of the
// run's own updates, fused into its steps or flushed before a checkpoint —
// so the result is the run's θ bit for bit (DESIGN.md invariant 8).

#include <cstdint>
#include <functional>
#include <vector>

#include "core/perturbation.hpp"
#include "io/checkpoint.hpp"
#include "zo/engine.hpp"
#include "zo/momentum.hpp"

namespace distzo::app {

/// The rows of `log` before row `end` that an update may use: the last
/// `momentum.history` of them, in a history of that capacity.
zo::GradientHistory history_before(const std::vector<io::SeedLogEntry>& log, std::int64_t end,
                                   const zo::MomentumSpec& momentum);

/// Applies rows [from, to) of `log` (the whole log from step 0: a momentum
/// reads the h − 1 rows before `from` too) to θ through `engine`, each as
/// the run's pending update of its step (zo::pending_update: the run's z
/// `z`, `momentum`, `queries` a row and decoupled weight decay
/// `weight_decay`); a skipped row (no g) changes nothing. `after_row(i)` is
/// called after row i. Returns the updates applied. Collective as
/// Engine::flush (the ranks of a node that share θ each update their slices).
std::int64_t apply_seed_log(zo::Engine& engine, const ZSpec& z, const zo::MomentumSpec& momentum,
                            int queries, const std::vector<io::SeedLogEntry>& log,
                            std::int64_t from, std::int64_t to, double weight_decay,
                            const std::function<void(std::int64_t row)>& after_row);

}  // namespace distzo::app
