#pragma once
// Views of an OPT model's parameters as the forward pass consumes them.
//
// Parameters are seen flat, one 1-D View per parameter id (the element index
// of the perturbation generator is the flat row-major index); the Views are
// segments of a group's arena (runtime::ParameterStore, the streamer's
// slots, the executor's scratch). The forward pass sees them through
// OptBlockView / OptEdgeView, which reshape them without copying. A view may
// point at the master weights θ or at a scratch buffer holding θ ± εz: the
// forward pass cannot tell, which is the point.

#include "core/types.hpp"
#include "model/parameter_registry.hpp"

#include <vector>

namespace distzo::model {

/// One flat device tensor per parameter id; unused ids may hold empty Views.
using TensorTable = std::vector<Vec>;

/// The weights of transformer block k, in the shapes the kernels take.
struct OptBlockView {
  ConstMat q_w, k_w, v_w, out_w;  // (C, C)
  ConstVec q_b, k_b, v_b, out_b;  // (C)
  ConstVec attn_norm_w, attn_norm_b;  // (C)
  ConstMat fc1_w;  // (F, C)
  ConstVec fc1_b;  // (F)
  ConstMat fc2_w;  // (C, F)
  ConstVec fc2_b;  // (C)
  ConstVec ffn_norm_w, ffn_norm_b;  // (C)
};

/// The weights outside the blocks: embeddings, optional projections, final norm.
struct OptEdgeView {
  ConstMat embed_tokens;     // (V, E); also the tied LM head
  ConstMat embed_positions;  // (max_pos + 2, C)
  ConstMat project_in;       // (C, E) or empty
  ConstMat project_out;      // (E, C) or empty
  ConstVec final_norm_w, final_norm_b;  // (C) or empty
};

OptBlockView make_block_view(const ParameterRegistry& registry, const TensorTable& tensors,
                             int block);
OptEdgeView make_edge_view(const ParameterRegistry& registry, const TensorTable& tensors);

}  // namespace distzo::model
