#pragma once
// θ as float32 tensors for a forward pass (the walk's ForwardPass, the
// evaluation's loss head). A float32 store's tensors are read in place:
// nothing is copied. A 2-byte store's (bf16 / fp16) are decoded group by
// group into float scratch right before the group is used
// (kernels::as_float32): one copy of the edges, which the head reads
// again after the blocks, and one block arena, reused block after block —
// its own, or scratch lent by an owner that does not use it meanwhile (the
// engine's perturbed weights between steps).
//
// With precision.gemm_inputs: storage no matrix is decoded: the forward
// reads θ's own words (kernels::linear's 2-byte GEMM, the embedding gather),
// and only the vectors are decoded — a block's into a small packed arena
// (runtime::bind_vectors), the edges' into the lent edge tensors.

#include "core/types.hpp"
#include "model/parameter_registry.hpp"
#include "model/weights.hpp"
#include "runtime/parameter_store.hpp"
#include "runtime/theta_table.hpp"

namespace distzo::zo {

/// Float scratch lent to FloatTheta to decode into; what is empty,
/// FloatTheta allocates.
struct LentScratch {
  const model::TensorTable* edges = nullptr;  // by id: every edge tensor (with 2-byte GEMM
                                              // inputs every edge vector), numel elements each
  Vec block;  // one block arena (max_block_elements); with 2-byte GEMM inputs
              // a block's packed vectors (runtime::max_block_vector_elements)
};

class FloatTheta {
 public:
  /// Allocates the scratch a 2-byte `store` needs (none for float32) that
  /// `lent` does not provide.
  explicit FloatTheta(const runtime::ParameterStore& store, const LentScratch& lent = {});

  const model::ParameterRegistry& registry() const { return store_.registry(); }

  /// The embeddings and head of `theta` as floats (their matrices as θ's
  /// words with 2-byte GEMM inputs), enqueued on `space`; valid until the
  /// next call of edges().
  model::GroupTensors edges(const ExecSpace& space, const runtime::ThetaTable& theta);
  /// Block k of `theta` as floats (its matrices as θ's words with 2-byte
  /// GEMM inputs); valid until the next call of block().
  model::GroupTensors block(const ExecSpace& space, int k, const runtime::ThetaTable& theta);

 private:
  void decode(const ExecSpace& space, model::GroupRef group, const runtime::ThetaTable& theta,
              const Vec& arena);

  const runtime::ParameterStore& store_;
  const bool two_byte_gemm_inputs_;
  const model::TensorTable* lent_edges_ = nullptr;  // decode the edges tensor by tensor into these
  Vec embeddings_, head_, block_;  // decoded groups (arena layout; block_: packed vectors with
                                   // 2-byte GEMM inputs), 2-byte stores only
  model::TensorTable decoded_;     // by id, into the arenas above
  model::TensorTable own_edge_vectors_;  // 2-byte GEMM inputs without lent edges: by id
  model::WordTable words_;  // by id: θ's words of the matrices in use (2-byte GEMM inputs)
};

}  // namespace distzo::zo
