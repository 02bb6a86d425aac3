#pragma once
// The state of a ZO step as plain data, one type per fact: the trainer, the
// engine, the benchmarks, the tests and the checkpoints all use these.
//
//   ZSpec             which z a run draws: seed, distribution, recipe, and
//                     the blocks each step perturbs (core/block_choice.hpp);
//   StepPerturbation  the perturbation of one step: z_q = Z(ZSpec, step, q),
//                     scaled by eps;
//   PendingUpdate     the update a finished step leaves, applied lazily: to
//                     each tensor right before it is next perturbed (fused),
//                     or to all by a flush. A list of terms, each a z of an
//                     earlier or this step times a scalar (plain SGD: the
//                     step's q directions; with momentum, those of its last
//                     h steps, zo/momentum.hpp). Scalars only: every z is
//                     the run's ZSpec at its step (DESIGN.md invariant 8),
//                     so the run's ZSpec is held once, by whoever runs the
//                     steps, and handed to what applies the update.

#include <cstdint>
#include <vector>

#include "core/block_choice.hpp"
#include "core/perturbation.hpp"

namespace distzo {

struct ZSpec {
  std::uint64_t seed = 0;  // the run's seed
  Distribution distribution = Distribution::gaussian;
  ZRecipe recipe = kDefaultZRecipe;  // how Gaussian z is computed
  BlockChoice blocks;                // K of B blocks a step; dense by default

  ZSpec() = default;
  explicit ZSpec(std::uint64_t seed_) : seed(seed_) {}
  ZSpec(std::uint64_t seed_, Distribution distribution_, ZRecipe recipe_ = kDefaultZRecipe,
        BlockChoice blocks_ = BlockChoice())
      : seed(seed_), distribution(distribution_), recipe(recipe_), blocks(blocks_) {}

  /// z of `query` at `step`: Z(seed, step, query, id, element) on the
  /// parameters of the blocks `step` perturbs, 0 on the others.
  PerturbationStream stream(std::int64_t step, int query) const {
    return PerturbationStream::make(seed, static_cast<std::uint64_t>(step),
                                    static_cast<std::uint32_t>(query), distribution, recipe);
  }
  /// Whether `step`'s z is drawn on the parameters of `block` (-1: outside
  /// the blocks, always), or is 0 there.
  bool perturbs(std::int64_t step, int block) const { return blocks.perturbs(seed, step, block); }
};

struct StepPerturbation {
  ZSpec z;
  std::int64_t step = 0;
  double eps = 1e-3;

  PerturbationStream stream(int query) const { return z.stream(step, query); }
};

/// One z of a pending update: Z(the run's ZSpec, step, query), times
/// lr · weight / q in the update.
struct UpdateTerm {
  std::int64_t step = 0;  // the step that drew this z
  int query = 0;          // which of that step's q directions
  double weight = 0;      // c_j · ĝ_{step, query}; plain SGD: ĝ itself (c_0 = 1)

  bool operator==(const UpdateTerm& o) const {
    return step == o.step && query == o.query && weight == o.weight;
  }
};

struct PendingUpdate {
  bool active = false;
  std::int64_t step = 0;  // the step that leaves the update: its lr, its rounding words
  double lr = 0;          // learning rate of that step
  double weight_decay = 0;
  int queries = 1;                // q, the directions of a step: every weight is divided by it
  std::vector<UpdateTerm> terms;  // in the order the kernel adds them (zo/momentum.hpp)

  /// θ ← θ − lr·(Σ_k weight_k · z_k / q + wd·θ), one z_k per term.
  /// Plain SGD: the update that the step of `perturbation` leaves, given its
  /// projected gradients `g` (one per query) and that step's lr and weight
  /// decay — one term per query of the step itself.
  static PendingUpdate after(const StepPerturbation& perturbation, const std::vector<double>& g,
                             double lr, double weight_decay) {
    PendingUpdate u;
    u.active = true;
    u.step = perturbation.step;
    u.lr = lr;
    u.weight_decay = weight_decay;
    u.queries = static_cast<int>(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
      u.terms.push_back({perturbation.step, static_cast<int>(i), g[i]});
    return u;
  }

  /// The weights of the step's own terms, when the update is plain SGD
  /// (every term of `step`, queries 0 .. q−1 in order): its ĝ, as a
  /// checkpoint's pending_g records it; empty otherwise.
  std::vector<double> own_row() const {
    std::vector<double> g;
    if (terms.size() != static_cast<std::size_t>(queries)) return g;
    for (std::size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].step != step || terms[i].query != static_cast<int>(i)) return {};
      g.push_back(terms[i].weight);
    }
    return g;
  }
};

}  // namespace distzo
