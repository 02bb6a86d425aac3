#include "zo/float_theta.hpp"

#include <utility>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "kernels/decode_storage.hpp"

namespace distzo::zo {

namespace {

/// Scratch for the segment s of an arena of decoded floats (none when θ is
/// read in place and `arena` is empty).
Vec scratch_of(const Vec& arena, const runtime::Segment& s) {
  if (arena.extent(0) == 0) return Vec();
  return Kokkos::subview(arena, std::make_pair(s.offset, s.offset + s.count));
}

}  // namespace

FloatTheta::FloatTheta(const runtime::ParameterStore& store, const LentScratch& lent)
    : store_(store), two_byte_gemm_inputs_(store.placement().two_byte_gemm_inputs) {
  decoded_.resize(store.registry().size());
  if (two_byte_gemm_inputs_) {
    words_.dtype = store.storage();
    words_.words.resize(store.registry().size());
  }
  if (!kernels::decodes_to_scratch(store.storage())) return;
  const auto arena = [&](model::GroupRef group, std::size_t elements) {
    return Vec(memory_label(MemoryRole::scratch, "decoded_" + group.name()), elements);
  };
  if (lent.edges != nullptr) {
    lent_edges_ = lent.edges;
  } else if (two_byte_gemm_inputs_) {
    // Only the edges' vectors are decoded: a tensor each.
    const model::ParameterRegistry& registry = store.registry();
    own_edge_vectors_.resize(registry.size());
    for (const auto group : {model::GroupRef::embeddings(), model::GroupRef::head()})
      for (const runtime::Segment& s : store.layout(group).segments)
        if (registry[s.id].shape.size() != 2)
          own_edge_vectors_[s.id] =
              Vec(memory_label(MemoryRole::scratch, "decoded_" + registry[s.id].name), s.count);
    lent_edges_ = &own_edge_vectors_;
  } else {
    embeddings_ =
        arena(model::GroupRef::embeddings(), store.layout(model::GroupRef::embeddings()).elements);
    head_ = arena(model::GroupRef::head(), store.layout(model::GroupRef::head()).elements);
  }
  const std::size_t block_elements = two_byte_gemm_inputs_
                                         ? runtime::max_block_vector_elements(store.registry())
                                         : store.max_block_elements();
  if (lent.block.extent(0) != 0) {
    DISTZO_REQUIRE(lent.block.extent(0) >= block_elements,
                   "float theta: a lent block arena of " << lent.block.extent(0)
                                                         << " elements is smaller than a block's "
                                                         << block_elements);
    block_ = lent.block;
  } else if (store.num_blocks() > 0) {
    block_ = arena(model::GroupRef::of_block(0), block_elements);
  }
}

void FloatTheta::decode(const ExecSpace& space, model::GroupRef group,
                        const runtime::ThetaTable& theta, const Vec& arena) {
  for (const runtime::Segment& s : store_.layout(group).segments)
    decoded_[s.id] = kernels::as_float32(space, theta[s.id], scratch_of(arena, s));
}

model::GroupTensors FloatTheta::edges(const ExecSpace& space, const runtime::ThetaTable& theta) {
  if (lent_edges_ == nullptr) {
    decode(space, model::GroupRef::embeddings(), theta, embeddings_);
    decode(space, model::GroupRef::head(), theta, head_);
    return decoded_;
  }
  const model::ParameterRegistry& registry = store_.registry();
  for (const auto group : {model::GroupRef::embeddings(), model::GroupRef::head()})
    for (const runtime::Segment& s : store_.layout(group).segments) {
      if (two_byte_gemm_inputs_ && registry[s.id].shape.size() == 2) {
        words_.words[s.id] = theta[s.id].as<std::uint16_t>();
        continue;
      }
      decoded_[s.id] = kernels::as_float32(space, theta[s.id], (*lent_edges_)[s.id]);
    }
  if (two_byte_gemm_inputs_) return model::GroupTensors(decoded_, &words_);
  return decoded_;
}

model::GroupTensors FloatTheta::block(const ExecSpace& space, int k,
                                      const runtime::ThetaTable& theta) {
  if (k > 0) {
    const runtime::ArenaLayout& previous = store_.layout(model::GroupRef::of_block(k - 1));
    runtime::unbind_tensors(decoded_, previous);
    if (two_byte_gemm_inputs_) runtime::unbind_words(words_.words, previous);
  }
  if (!two_byte_gemm_inputs_) {
    decode(space, model::GroupRef::of_block(k), theta, block_);
    return decoded_;
  }
  const model::ParameterRegistry& registry = store_.registry();
  const std::vector<std::uint32_t>& ids = registry.block_ids(k);
  runtime::bind_vectors(decoded_, registry, ids, block_);
  for (std::uint32_t id : ids) {
    if (registry[id].shape.size() == 2)
      words_.words[id] = theta[id].as<std::uint16_t>();
    else
      decoded_[id] = kernels::as_float32(space, theta[id], decoded_[id]);
  }
  return model::GroupTensors(decoded_, &words_);
}

}  // namespace distzo::zo
