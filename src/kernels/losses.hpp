#pragma once
// Losses. Each writes (loss sum, token count) into a device View instead of
// returning a host scalar, so no fence is forced: the sums stay on the device
// until the caller fences once (e.g. right before the MPI all-gather of every
// (query, sign) loss, DESIGN.md invariant 4).

#include <string>

#include "core/types.hpp"
#include "kernels/weight_matrix.hpp"

namespace distzo::kernels {

/// Device pair (loss sum, token count), both double:
///   sums(0) = sum over counted rows of -log p(target)
///   sums(1) = number of counted rows (exact in double up to 2^53).
/// A loss kernel OVERWRITES both entries; combine several calls on the host.
using LossSums = Kokkos::View<double*, Kokkos::LayoutRight, MemSpace>;

/// Labels ignored by the losses, as PyTorch's CrossEntropyLoss ignore_index.
inline constexpr int kIgnoreIndex = -100;

/// Allocates a zeroed LossSums of length 2.
LossSums make_loss_sums(const std::string& label = "distzo::loss_sums");

/// Host copy of a LossSums.
struct LossValue {
  double sum = 0.0;
  double count = 0.0;
  /// Token-weighted mean; 0 when nothing was counted.
  double mean() const { return count > 0.0 ? sum / count : 0.0; }
};

/// Copies `sums` to the host; fences `space` (and only `space`) with a reason.
LossValue read_loss(const ExecSpace& space, const LossSums& sums);

/// Causal language-model loss, summed (not averaged) over rows:
///   sums = ( sum_{r : targets[r] != -100} logsumexp(logits[r, :]) - logits[r, targets[r]],
///            #{r : targets[r] != -100} )
///   logits: (N, V)   targets: (N), already shifted by the caller (targets[r] is
///   the token that follows row r), in [0, V) or -100 = ignored.
/// Stable log-sum-exp (max-subtracted): each exp in float (fp::exp, within
/// 1 ulp), chunks of 16 summed in float, the row sum in double. Target ids are
/// not range-checked on the device; the caller validates them on load.
void causal_lm_loss(const ExecSpace& space, const LossSums& sums, const ConstMat& logits,
                    const ConstIntVec& targets);

/// MeZO "train as classification": logits of the K candidate tokens only,
/// i.e. the candidate columns of the tied LM head hidden * table^T:
///   out[r, c] = <hidden[r, :], table[candidates[c], :]>
///   out: (R, K)   hidden: (R, C)   table: (V, C)   candidates: (K) in [0, V)
/// Dot products accumulate in double; a table of 2-byte words is decoded
/// exactly (hidden stays float32).
void candidate_logits(const ExecSpace& space, const Mat& out, const ConstMat& hidden,
                      const WeightMatrix& table, const ConstIntVec& candidates);

/// Cross-entropy restricted to the K candidates, and the predicted candidate:
///   predictions[r] = argmax_c cand_logits[r, c] (lowest c on ties), every row
///   sums = ( sum_{r : gold[r] != -100} logsumexp(cand_logits[r, :]) - cand_logits[r, gold[r]],
///            #{r : gold[r] != -100} )
///   predictions: (R)   cand_logits: (R, K), K >= 1   gold: (R) in [0, K) or -100
void classification_loss(const ExecSpace& space, const LossSums& sums, const IntVec& predictions,
                         const ConstMat& cand_logits, const ConstIntVec& gold);

}  // namespace distzo::kernels
