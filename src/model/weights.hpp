#pragma once
// A group's weights by role, in the shapes the kernels take.
//
// Parameters are stored flat, one 1-D View per parameter id (the element
// index of the perturbation generator is the flat row-major index); the
// Views are segments of a group's arena (runtime::ParameterStore, the
// streamer's slots, the perturbed weights' scratch). A WeightView reshapes them
// without copying and indexes them by role, so the forward functions of
// every architecture read "the q projection of this block" and never a name
// or an id. A view may point at the master weights θ or at a scratch buffer
// holding θ ± εz: the forward pass cannot tell, which is the point.

#include "core/error.hpp"
#include "core/storage_dtype.hpp"
#include "core/types.hpp"
#include "kernels/linear.hpp"
#include "model/parameter_registry.hpp"

#include <array>
#include <vector>

namespace distzo::model {

/// One flat device tensor per parameter id; unused ids may hold empty Views.
using TensorTable = std::vector<Vec>;

/// 2-byte words per parameter id (precision.gemm_inputs: storage): the block
/// matrices that the dense layers read as bf16 / fp16 GEMM inputs, w± or θ
/// itself. An empty entry is read from the float table instead.
struct WordTable {
  StorageDtype dtype = StorageDtype::fp32;  // the words' format (bf16 / fp16)
  std::vector<HalfVec> words;               // by id

  bool has(std::uint32_t id) const { return id < words.size() && words[id].extent(0) != 0; }
};

/// A group's tensors as a forward pass reads them: float32 tensors by id,
/// and, where `words` has an entry, that matrix as 2-byte words instead.
struct GroupTensors {
  const TensorTable* values = nullptr;
  const WordTable* words = nullptr;

  GroupTensors() = default;
  GroupTensors(const TensorTable& v, const WordTable* w = nullptr)  // NOLINT(google-explicit-constructor)
      : values(&v), words(w) {}
};

class WeightView {
 public:
  /// The (rows, cols) float32 matrix of `role`; empty (extent 0) when the
  /// group has none. A matrix held in 2-byte words is read by matrix().
  const ConstMat& mat(ParameterRole role) const {
    const kernels::WeightMatrix& m = mats_[index(role)];
    DISTZO_REQUIRE(!m.is_words(), "weights: role " << static_cast<int>(role)
                                      << " is held in 2-byte words; read it with matrix()");
    return m.values;
  }
  /// The matrix of `role` as a dense layer reads it: float32, or 2-byte words.
  const kernels::WeightMatrix& matrix(ParameterRole role) const { return mats_[index(role)]; }
  /// The vector of `role`; empty when absent (a kernel's "no bias").
  const ConstVec& vec(ParameterRole role) const { return vecs_[index(role)]; }
  /// The LM head: lm_head when the model has its own, else the tied
  /// embed_tokens (float32 or 2-byte words).
  const kernels::WeightMatrix& lm_head() const {
    const kernels::WeightMatrix& own = matrix(ParameterRole::lm_head);
    return own.rows() != 0 ? own : matrix(ParameterRole::embed_tokens);
  }

  /// Binds `p`'s flat tensor under its role (reshaped when p is a matrix);
  /// checks its size against the registry.
  void bind(const ParameterInfo& p, const Vec& tensor);
  /// Binds matrix `p` held as 2-byte words of `dtype`.
  void bind_words(const ParameterInfo& p, StorageDtype dtype, const HalfVec& words);

 private:
  static std::size_t index(ParameterRole role) { return static_cast<std::size_t>(role); }

  std::array<kernels::WeightMatrix, kParameterRoleCount> mats_;
  std::array<ConstVec, kParameterRoleCount> vecs_;
};

/// The parameters `ids` (and `more_ids`, if given) of `tensors` by role; each
/// tensor's size is checked against the registry.
WeightView make_group_view(const ParameterRegistry& registry, const GroupTensors& tensors,
                           const std::vector<std::uint32_t>& ids,
                           const std::vector<std::uint32_t>* more_ids = nullptr);
/// Block k's weights.
WeightView make_block_view(const ParameterRegistry& registry, const GroupTensors& tensors,
                           int block);
/// The weights outside the blocks: embeddings and head.
WeightView make_edge_view(const ParameterRegistry& registry, const GroupTensors& tensors);

}  // namespace distzo::model
