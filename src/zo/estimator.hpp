#pragma once
// SPSA estimate from scalars (DESIGN.md invariant 4). Each rank contributes,
// for every evaluation e of the step, (loss sum, count) — zeros for the ones it
// did not run. The contributions are all-gathered and every rank adds them in
// rank order in double precision, so every rank derives the identical g, and
// the loss is the token-weighted mean over the global batch.

#include "runtime/communicator.hpp"

#include <vector>

namespace distzo::zo {

struct StepEstimate {
  std::vector<double> loss_plus;   // per query: L(θ + εz_q)
  std::vector<double> loss_minus;  // per query: L(θ − εz_q)
  std::vector<double> g;           // per query: (L+ − L−) / (2ε)
  double loss = 0;                 // mean over queries of (L+ + L−)/2
  double count = 0;                // tokens (or examples) in the global batch
  bool finite = true;              // every loss and g is finite
  bool stop = false;               // some rank was asked to stop (a signal)
};

/// `local` holds 2 doubles per evaluation e (index order 2*query + (sign<0)):
/// (loss sum, count). `stop`: this rank was asked to stop; the flag travels
/// with the losses, so every rank learns in the same gather whether any was.
/// Collective over `comm`.
StepEstimate combine_losses(const runtime::Communicator& comm, const std::vector<double>& local,
                            int queries, double eps, bool stop = false);

}  // namespace distzo::zo
