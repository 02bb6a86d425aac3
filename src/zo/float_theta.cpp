#include "zo/float_theta.hpp"

#include "core/memory.hpp"
#include "kernels/decode_storage.hpp"

namespace distzo::zo {

FloatTheta::FloatTheta(const runtime::ParameterStore& store) : store_(store) {
  if (store.storage() == StorageDtype::fp32) return;
  const auto arena = [&](model::GroupRef group, std::size_t elements) {
    return Vec(memory_label(MemoryRole::scratch, "decoded_" + group.name()), elements);
  };
  embeddings_ = arena(model::GroupRef::embeddings(),
                      store.layout(model::GroupRef::embeddings()).elements);
  head_ = arena(model::GroupRef::head(), store.layout(model::GroupRef::head()).elements);
  if (store.num_blocks() > 0)
    block_ = arena(model::GroupRef::of_block(0), store.max_block_elements());
  decoded_.resize(store.registry().size());
}

void FloatTheta::decode(const ExecSpace& space, model::GroupRef group,
                        const runtime::ThetaTable& theta, const Vec& arena) {
  const runtime::ArenaLayout& layout = store_.layout(group);
  runtime::bind_tensors(decoded_, layout, arena);
  for (const runtime::Segment& s : layout.segments)
    kernels::decode_storage(space, theta.words.at(s.id), theta.dtype, decoded_[s.id]);
}

const model::TensorTable& FloatTheta::edges(const ExecSpace& space,
                                            const runtime::ThetaTable& theta) {
  if (theta.dtype == StorageDtype::fp32) return theta.f32;
  decode(space, model::GroupRef::embeddings(), theta, embeddings_);
  decode(space, model::GroupRef::head(), theta, head_);
  return decoded_;
}

const model::TensorTable& FloatTheta::block(const ExecSpace& space, int k,
                                            const runtime::ThetaTable& theta) {
  if (theta.dtype == StorageDtype::fp32) return theta.f32;
  if (k > 0) runtime::unbind_tensors(decoded_, store_.layout(model::GroupRef::of_block(k - 1)));
  decode(space, model::GroupRef::of_block(k), theta, block_);
  return decoded_;
}

}  // namespace distzo::zo
