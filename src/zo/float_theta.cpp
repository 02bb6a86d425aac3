#include "zo/float_theta.hpp"

#include "core/error.hpp"
#include "core/memory.hpp"
#include "kernels/decode_storage.hpp"

namespace distzo::zo {

FloatTheta::FloatTheta(const runtime::ParameterStore& store, const LentScratch& lent)
    : store_(store) {
  if (store.storage() == StorageDtype::fp32) return;
  const auto arena = [&](model::GroupRef group, std::size_t elements) {
    return Vec(memory_label(MemoryRole::scratch, "decoded_" + group.name()), elements);
  };
  if (lent.edges != nullptr) {
    lent_edges_ = lent.edges;
  } else {
    embeddings_ = arena(model::GroupRef::embeddings(),
                        store.layout(model::GroupRef::embeddings()).elements);
    head_ = arena(model::GroupRef::head(), store.layout(model::GroupRef::head()).elements);
  }
  if (lent.block.extent(0) != 0) {
    DISTZO_REQUIRE(lent.block.extent(0) >= store.max_block_elements(),
                   "float theta: a lent block arena of " << lent.block.extent(0)
                                                         << " elements is smaller than a block");
    block_ = lent.block;
  } else if (store.num_blocks() > 0) {
    block_ = arena(model::GroupRef::of_block(0), store.max_block_elements());
  }
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
  if (lent_edges_ == nullptr) {
    decode(space, model::GroupRef::embeddings(), theta, embeddings_);
    decode(space, model::GroupRef::head(), theta, head_);
    return decoded_;
  }
  for (const auto group : {model::GroupRef::embeddings(), model::GroupRef::head()})
    for (const runtime::Segment& s : store_.layout(group).segments) {
      decoded_[s.id] = (*lent_edges_)[s.id];
      kernels::decode_storage(space, theta.words.at(s.id), theta.dtype, decoded_[s.id]);
    }
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
