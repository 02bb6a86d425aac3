#include "model/weights.hpp"

#include "core/error.hpp"

namespace distzo::model {

void WeightView::bind(const ParameterInfo& p, const Vec& tensor) {
  DISTZO_REQUIRE(
      static_cast<std::int64_t>(tensor.extent(0)) == p.numel(),
      "tensor " << p.name << " holds " << tensor.extent(0) << " elements, expected " << p.numel());
  const std::size_t r = index(p.role);
  if (p.shape.size() == 2)
    mats_[r] = kernels::WeightMatrix(ConstMat(tensor.data(), static_cast<std::size_t>(p.shape[0]),
                                              static_cast<std::size_t>(p.shape[1])));
  else
    vecs_[r] = tensor;
}

void WeightView::bind_words(const ParameterInfo& p, StorageDtype dtype, const HalfVec& words) {
  DISTZO_REQUIRE(p.shape.size() == 2 && dtype != StorageDtype::fp32,
                 "tensor " << p.name << ": only a matrix is read as 2-byte (bf16 / fp16) words");
  DISTZO_REQUIRE(
      static_cast<std::int64_t>(words.extent(0)) == p.numel(),
      "tensor " << p.name << " holds " << words.extent(0) << " words, expected " << p.numel());
  mats_[index(p.role)] =
      kernels::WeightMatrix(dtype, ConstHalfMat(words.data(), static_cast<std::size_t>(p.shape[0]),
                                                static_cast<std::size_t>(p.shape[1])));
}

void WeightView::bind_source(const ParameterInfo& p, const MatrixSource& source) {
  DISTZO_REQUIRE(p.shape.size() == 2, "tensor " << p.name << ": only a matrix comes from a source");
  source_ = &source;
  sourced_[index(p.role)] = p.id;
}

WeightView make_group_view(const ParameterRegistry& registry, const GroupTensors& tensors,
                           const std::vector<std::uint32_t>& ids,
                           const std::vector<std::uint32_t>* more_ids) {
  WeightView w;
  const auto bind = [&](std::uint32_t id) {
    if (tensors.source != nullptr && registry[id].shape.size() == 2)
      w.bind_source(registry[id], *tensors.source);
    else if (tensors.words != nullptr && tensors.words->has(id))
      w.bind_words(registry[id], tensors.words->dtype, tensors.words->words[id]);
    else
      w.bind(registry[id], tensors.values->at(id));
  };
  for (std::uint32_t id : ids) bind(id);
  if (more_ids)
    for (std::uint32_t id : *more_ids) bind(id);
  return w;
}

WeightView make_block_view(const ParameterRegistry& registry, const GroupTensors& tensors,
                           int block) {
  return make_group_view(registry, tensors, registry.block_ids(block));
}

WeightView make_edge_view(const ParameterRegistry& registry, const GroupTensors& tensors) {
  return make_group_view(registry, tensors, registry.embedding_ids(), &registry.head_ids());
}

}  // namespace distzo::model
