#pragma once
// The zeroth-order estimators a deck names (optim.estimator) and zo/
// implements (zo/evaluation_plan.hpp: which forward evaluations a step
// needs; zo/estimator.hpp: how their losses become the update): here, below
// both, so that io's deck structs and zo's plan hold the same enum.
// docs/perturbation.md gives each one's formula and the paper it follows.

namespace distzo {

/// spsa: q two-sided queries, L(θ ± εz_q), 2q evaluations (MeZO-SGD).
/// one_sided: one unperturbed L(θ) and N one-sided L(θ + εz_i), N + 1
/// evaluations, the step normalised by the spread of the N losses (FZOO).
enum class EstimatorKind { spsa, one_sided };

/// "spsa" | "one_sided" (the spelling of decks and checkpoints).
inline const char* to_string(EstimatorKind kind) {
  switch (kind) {
    case EstimatorKind::spsa:
      return "spsa";
    case EstimatorKind::one_sided:
      return "one_sided";
  }
  return "?";
}

/// Forward evaluations of one step with `queries` directions: 2q (spsa), N + 1 (one_sided).
inline long long step_evaluations(EstimatorKind kind, long long queries) {
  return kind == EstimatorKind::spsa ? 2 * queries : queries + 1;
}

}  // namespace distzo
