#include "model/weights.hpp"

#include "core/error.hpp"

namespace distzo::model {

void WeightView::bind(const ParameterInfo& p, const Vec& tensor) {
  DISTZO_REQUIRE(static_cast<std::int64_t>(tensor.extent(0)) == p.numel(),
                 "tensor " << p.name << " holds " << tensor.extent(0) << " elements, expected "
                           << p.numel());
  const std::size_t r = index(p.role);
  if (p.shape.size() == 2)
    mats_[r] = ConstMat(tensor.data(), static_cast<std::size_t>(p.shape[0]),
                        static_cast<std::size_t>(p.shape[1]));
  else
    vecs_[r] = tensor;
}

WeightView make_group_view(const ParameterRegistry& registry, const TensorTable& tensors,
                           const std::vector<std::uint32_t>& ids,
                           const std::vector<std::uint32_t>* more_ids) {
  WeightView w;
  for (std::uint32_t id : ids) w.bind(registry[id], tensors.at(id));
  if (more_ids)
    for (std::uint32_t id : *more_ids) w.bind(registry[id], tensors.at(id));
  return w;
}

WeightView make_block_view(const ParameterRegistry& registry, const TensorTable& tensors,
                           int block) {
  return make_group_view(registry, tensors, registry.block_ids(block));
}

WeightView make_edge_view(const ParameterRegistry& registry, const TensorTable& tensors) {
  return make_group_view(registry, tensors, registry.embedding_ids(), &registry.head_ids());
}

}  // namespace distzo::model
