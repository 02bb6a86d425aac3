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
// holding θ ± εz: the forward pass cannot tell, which is the point. With
// precision.gemm_inputs: storage a matrix may be 2-byte words instead of
// floats (matrix() says which), or be materialised only when it is read.

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/error.hpp"
#include "core/storage_dtype.hpp"
#include "core/types.hpp"
#include "kernels/weight_matrix.hpp"
#include "model/parameter_registry.hpp"

namespace distzo::model {

/// One flat device tensor per parameter id; unused ids may hold empty Views.
using TensorTable = std::vector<Vec>;

/// 2-byte words per parameter id (precision.gemm_inputs: storage): the
/// matrices that the forward reads as bf16 / fp16 words (GEMM inputs,
/// gathers, the head), w± or θ itself. An empty entry is read from the float
/// table instead.
struct WordTable {
  StorageDtype dtype = StorageDtype::fp32;  // the words' format (bf16 / fp16)
  std::vector<HalfVec> words;               // by id

  bool has(std::uint32_t id) const { return id < words.size() && words[id].extent(0) != 0; }
};

/// Makes matrix `id` ready when a dense layer reads it and returns it: w
/// materialised a tensor at a time (placement.perturbed_weights:
/// one_at_a_time with 2-byte GEMM inputs), valid until the next call.
using MatrixSource = std::function<kernels::WeightMatrix(std::uint32_t id)>;

/// A group's tensors as a forward pass reads them: float32 tensors by id,
/// and, where `words` has an entry, that matrix as 2-byte words instead;
/// with a `source`, every matrix comes from it when it is read.
struct GroupTensors {
  const TensorTable* values = nullptr;
  const WordTable* words = nullptr;
  const MatrixSource* source = nullptr;

  GroupTensors() = default;
  // NOLINTNEXTLINE(google-explicit-constructor): a float table is a group's tensors.
  GroupTensors(const TensorTable& v, const WordTable* w = nullptr, const MatrixSource* s = nullptr)
      : values(&v), words(w), source(s) {}
};

class WeightView {
 public:
  /// The (rows, cols) float32 matrix of `role`; empty (extent 0) when the
  /// group has none. A matrix held in 2-byte words is read by matrix().
  const ConstMat& mat(ParameterRole role) const {
    const kernels::WeightMatrix& m = mats_[index(role)];
    DISTZO_REQUIRE(!m.is_words() && sourced_[index(role)] == kNone,
                   "weights: role " << static_cast<int>(role)
                                    << " is held in 2-byte words or made when read; read it "
                                       "with matrix()");
    return m.values;
  }
  /// The matrix of `role` as a dense layer reads it: float32, or 2-byte
  /// words; a sourced matrix is made ready now (and the previous one it
  /// returned is gone: read each right before its use).
  kernels::WeightMatrix matrix(ParameterRole role) const {
    const std::uint32_t id = sourced_[index(role)];
    return id == kNone ? mats_[index(role)] : (*source_)(id);
  }
  /// The vector of `role`; empty when absent (a kernel's "no bias").
  const ConstVec& vec(ParameterRole role) const { return vecs_[index(role)]; }
  /// The LM head: lm_head when the model has its own, else the tied
  /// embed_tokens (float32 or 2-byte words).
  kernels::WeightMatrix lm_head() const {
    const kernels::WeightMatrix own = matrix(ParameterRole::lm_head);
    return own.rows() != 0 ? own : matrix(ParameterRole::embed_tokens);
  }

  /// Binds `p`'s flat tensor under its role (reshaped when p is a matrix);
  /// checks its size against the registry.
  void bind(const ParameterInfo& p, const Vec& tensor);
  /// Binds matrix `p` held as 2-byte words of `dtype`.
  void bind_words(const ParameterInfo& p, StorageDtype dtype, const HalfVec& words);
  /// Binds matrix `p` to come from `source` when it is read.
  void bind_source(const ParameterInfo& p, const MatrixSource& source);

 private:
  static std::size_t index(ParameterRole role) { return static_cast<std::size_t>(role); }
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};

  const MatrixSource* source_ = nullptr;
  std::array<std::uint32_t, kParameterRoleCount> sourced_ = filled(kNone);  // ids from source_
  static std::array<std::uint32_t, kParameterRoleCount> filled(std::uint32_t v) {
    std::array<std::uint32_t, kParameterRoleCount> a{};
    a.fill(v);
    return a;
  }

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
