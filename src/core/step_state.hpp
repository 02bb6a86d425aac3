#pragma once
// The state of a ZO step as plain data, one type per fact: the trainer, the
// engine, the benchmarks, the tests and the checkpoints all use these.
//
//   ZSpec             which z a run draws: seed, distribution, recipe;
//   StepPerturbation  the perturbation of one step: z_q = Z(ZSpec, step, q),
//                     scaled by eps;
//   PendingUpdate     the SGD update a finished step leaves, applied lazily:
//                     to each tensor right before it is next perturbed
//                     (fused), or to all by a flush. Scalars only: its z is
//                     the run's ZSpec at its step (DESIGN.md invariant 8),
//                     so the run's ZSpec is held once, by whoever runs the
//                     steps, and handed to what applies the update.

#include <cstdint>
#include <utility>
#include <vector>

#include "core/perturbation.hpp"

namespace distzo {

struct ZSpec {
  std::uint64_t seed = 0;  // the run's seed
  Distribution distribution = Distribution::gaussian;
  ZRecipe recipe = kDefaultZRecipe;  // how Gaussian z is computed

  /// z of `query` at `step`: Z(seed, step, query, id, element).
  PerturbationStream stream(std::int64_t step, int query) const {
    return PerturbationStream::make(seed, static_cast<std::uint64_t>(step),
                                    static_cast<std::uint32_t>(query), distribution, recipe);
  }
};

struct StepPerturbation {
  ZSpec z;
  std::int64_t step = 0;
  double eps = 1e-3;

  PerturbationStream stream(int query) const { return z.stream(step, query); }
};

struct PendingUpdate {
  bool active = false;
  std::int64_t step = 0;  // the step whose z (the run's ZSpec) the update uses
  double lr = 0;          // learning rate of that step
  double weight_decay = 0;
  std::vector<double> g;  // projected gradient per query

  /// The update that the step of `perturbation` leaves, given its projected
  /// gradients `g` (one per query) and that step's lr and weight decay.
  static PendingUpdate after(const StepPerturbation& perturbation, std::vector<double> g, double lr,
                             double weight_decay) {
    PendingUpdate u;
    u.active = true;
    u.step = perturbation.step;
    u.lr = lr;
    u.weight_decay = weight_decay;
    u.g = std::move(g);
    return u;
  }
};

}  // namespace distzo
