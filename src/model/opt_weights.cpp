#include "model/opt_weights.hpp"

#include "core/error.hpp"

namespace distzo::model {

namespace {

const Vec& tensor_for(const ParameterRegistry& registry, const TensorTable& tensors,
                      std::uint32_t id) {
  const Vec& v = tensors.at(id);
  DISTZO_REQUIRE(static_cast<std::int64_t>(v.extent(0)) == registry[id].numel(),
                 "tensor " << registry[id].name << " holds " << v.extent(0)
                           << " elements, expected " << registry[id].numel());
  return v;
}

ConstMat matrix(const ParameterRegistry& registry, const TensorTable& tensors, std::uint32_t id) {
  const auto& shape = registry[id].shape;
  DISTZO_REQUIRE(shape.size() == 2, "tensor " << registry[id].name << " is not a matrix");
  const Vec& v = tensor_for(registry, tensors, id);
  return ConstMat(v.data(), static_cast<std::size_t>(shape[0]), static_cast<std::size_t>(shape[1]));
}

ConstVec vector(const ParameterRegistry& registry, const TensorTable& tensors, std::uint32_t id) {
  return tensor_for(registry, tensors, id);
}

}  // namespace

OptBlockView make_block_view(const ParameterRegistry& registry, const TensorTable& tensors,
                             int block) {
  using R = ParameterRole;
  auto mat = [&](R role) { return matrix(registry, tensors, registry.id_of(role, block)); };
  auto vec = [&](R role) { return vector(registry, tensors, registry.id_of(role, block)); };
  OptBlockView b;
  b.q_w = mat(R::q_weight);
  b.q_b = vec(R::q_bias);
  b.k_w = mat(R::k_weight);
  b.k_b = vec(R::k_bias);
  b.v_w = mat(R::v_weight);
  b.v_b = vec(R::v_bias);
  b.out_w = mat(R::out_weight);
  b.out_b = vec(R::out_bias);
  b.attn_norm_w = vec(R::attn_norm_weight);
  b.attn_norm_b = vec(R::attn_norm_bias);
  b.fc1_w = mat(R::fc1_weight);
  b.fc1_b = vec(R::fc1_bias);
  b.fc2_w = mat(R::fc2_weight);
  b.fc2_b = vec(R::fc2_bias);
  b.ffn_norm_w = vec(R::ffn_norm_weight);
  b.ffn_norm_b = vec(R::ffn_norm_bias);
  return b;
}

OptEdgeView make_edge_view(const ParameterRegistry& registry, const TensorTable& tensors) {
  using R = ParameterRole;
  OptEdgeView e;
  e.embed_tokens = matrix(registry, tensors, registry.id_of(R::embed_tokens));
  e.embed_positions = matrix(registry, tensors, registry.id_of(R::embed_positions));
  for (const auto& p : registry.parameters()) {
    if (p.role == R::project_in) e.project_in = matrix(registry, tensors, p.id);
    if (p.role == R::project_out) e.project_out = matrix(registry, tensors, p.id);
    if (p.role == R::final_norm_weight) e.final_norm_w = vector(registry, tensors, p.id);
    if (p.role == R::final_norm_bias) e.final_norm_b = vector(registry, tensors, p.id);
  }
  return e;
}

}  // namespace distzo::model
