#include "runtime/parameter_store.hpp"

#include "core/digest.hpp"
#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/memory.hpp"
#include "kernels/digest.hpp"

#include <algorithm>

namespace distzo::runtime {

namespace {

using HostUnmanaged = Kokkos::View<real*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstHostUnmanaged =
    Kokkos::View<const real*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using HostWordsUnmanaged =
    Kokkos::View<std::uint16_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;


std::string arena_name(model::GroupRef group) {
  return group.kind == model::ParameterGroup::block ? "block." + std::to_string(group.block)
                                                    : group.name();
}

}  // namespace

void bind_tensors(model::TensorTable& table, const ArenaLayout& layout, const Vec& arena) {
  DISTZO_REQUIRE(arena.extent(0) >= layout.elements,
                 "arena of " << arena.extent(0) << " elements for a layout of " << layout.elements);
  for (const Segment& s : layout.segments)
    table.at(s.id) = Kokkos::subview(arena, std::make_pair(s.offset, s.offset + s.count));
}

void unbind_tensors(model::TensorTable& table, const ArenaLayout& layout) {
  for (const Segment& s : layout.segments) table.at(s.id) = Vec();
}

void bind_words(std::vector<HalfVec>& words, const ArenaLayout& layout, const HalfVec& arena) {
  DISTZO_REQUIRE(arena.extent(0) >= layout.elements,
                 "arena of " << arena.extent(0) << " words for a layout of " << layout.elements);
  for (const Segment& s : layout.segments)
    words.at(s.id) = Kokkos::subview(arena, std::make_pair(s.offset, s.offset + s.count));
}

void unbind_words(std::vector<HalfVec>& words, const ArenaLayout& layout) {
  for (const Segment& s : layout.segments) words.at(s.id) = HalfVec();
}

namespace {

/// f(id, offset, count) for each vector among `ids`, packed; returns the end.
template <class F>
std::size_t each_packed_vector(const model::ParameterRegistry& registry,
                               const std::vector<std::uint32_t>& ids, F&& f) {
  std::size_t offset = 0;
  for (std::uint32_t id : ids) {
    if (registry[id].shape.size() == 2) continue;
    const auto count = static_cast<std::size_t>(registry[id].numel());
    f(id, offset, count);
    offset = aligned_to_arena(offset + count);
  }
  return offset;
}

}  // namespace

std::size_t packed_vector_elements(const model::ParameterRegistry& registry,
                                   const std::vector<std::uint32_t>& ids) {
  return each_packed_vector(registry, ids, [](std::uint32_t, std::size_t, std::size_t) {});
}

std::size_t max_block_vector_elements(const model::ParameterRegistry& registry) {
  std::size_t most = 0;
  for (int k = 0; k < registry.num_blocks(); ++k)
    most = std::max(most, packed_vector_elements(registry, registry.block_ids(k)));
  return most;
}

std::size_t max_block_matrix_elements(const model::ParameterRegistry& registry) {
  std::size_t most = 0;
  for (int k = 0; k < registry.num_blocks(); ++k)
    for (std::uint32_t id : registry.block_ids(k))
      if (registry[id].shape.size() == 2)
        most = std::max(most, static_cast<std::size_t>(registry[id].numel()));
  return most;
}

void bind_vectors(model::TensorTable& table, const model::ParameterRegistry& registry,
                  const std::vector<std::uint32_t>& ids, const Vec& arena) {
  const std::size_t needed = packed_vector_elements(registry, ids);
  DISTZO_REQUIRE(arena.extent(0) >= needed,
                 "vector arena of " << arena.extent(0) << " elements for " << needed);
  each_packed_vector(registry, ids, [&](std::uint32_t id, std::size_t offset, std::size_t count) {
    table.at(id) = Kokkos::subview(arena, std::make_pair(offset, offset + count));
  });
}

namespace {


std::size_t shared_elements(const std::vector<ArenaLayout>& layouts) {
  std::size_t n = 0;
  for (const ArenaLayout& l : layouts) n += aligned_to_arena(l.elements);
  return n;
}

}  // namespace

ParameterStore::ParameterStore(const model::ParameterRegistry& registry,
                               const PlacementConfig& placement, const Communicator* node)
    : registry_(registry),
      placement_(placement),
      node_(node ? *node : one_rank_),
      device_blocks_(placement.device_blocks(registry.num_blocks())),
      group_of_id_(registry.size()),
      theta_(placement.storage, registry.size()) {
  const std::vector<model::GroupRef> groups = registry.groups();
  for (const model::GroupRef& group : groups) {
    layouts_.push_back(ArenaLayout::of(registry, registry.ids(group)));
    // Groups in the shared master are sliced; the edges on a GPU are each
    // rank's own (small next to the blocks) and stay whole.
    const bool shared = sliced() && (kHostAccessibleMemory || group.kind == model::ParameterGroup::block);
    slices_.push_back(GroupSlices::of(layouts_.back(), shared ? node_.size() : 1,
                                      shared ? node_.rank() : 0));
  }
  if (sliced()) {
    // On a GPU build only the offloaded blocks live in host memory: a
    // resident θ on each GPU could not be shared, nor updated by slices.
    DISTZO_INPUT_REQUIRE(kHostAccessibleMemory || device_blocks_ == 0,
                   "placement.share_host_master on a GPU build needs placement.mode: offload "
                   "with resident_blocks: 0 (the shared master is the host copy the GPUs stream "
                   "slices of); got " << device_blocks_ << " blocks resident on each GPU");
    shared_ = node_.allocate_shared(shared_elements(layouts_) * bytes_per_element(storage()));
  }
  const bool two_bytes = storage() != StorageDtype::fp32;
  device_words_.resize(groups.size());  // set for the groups of a 2-byte θ only
  host_words_.resize(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const model::GroupRef& group = groups[g];
    const ArenaLayout& layout = layouts_[g];
    for (const Segment& s : layout.segments) group_of_id_[s.id] = g;
    const bool streamed = group.kind == model::ParameterGroup::block && !on_device(group.block);
    if (group.kind == model::ParameterGroup::block)
      max_block_elements_ = std::max(max_block_elements_, layout.elements);
    in_host_memory_.push_back(streamed);
    if (streamed && two_bytes) {
      device_arenas_.emplace_back();
      host_arenas_.emplace_back();
      if (sliced())
        host_words_[g] =
            PinnedHalfVec(static_cast<std::uint16_t*>(shared_arena(layout.elements)), layout.elements);
      else
        host_words_[g] = PinnedHalfVec(memory_label(MemoryRole::host_master, arena_name(group)),
                                       layout.elements);
    } else if (streamed) {
      device_arenas_.emplace_back();
      if (sliced())
        host_arenas_.emplace_back(static_cast<real*>(shared_arena(layout.elements)), layout.elements);
      else
        host_arenas_.emplace_back(memory_label(MemoryRole::host_master, arena_name(group)),
                                  layout.elements);
    } else if (two_bytes) {
      device_arenas_.emplace_back();
      if (sliced())  // host backends only (checked above)
        device_words_[g] =
            HalfVec(static_cast<std::uint16_t*>(shared_arena(layout.elements)), layout.elements);
      else
        device_words_[g] =
            HalfVec(memory_label(MemoryRole::weights, arena_name(group)), layout.elements);
      host_arenas_.emplace_back();
      bind_words(theta_.words, layout, device_words_[g]);
    } else {
      if (sliced())  // host backends only (checked above)
        device_arenas_.emplace_back(static_cast<real*>(shared_arena(layout.elements)),
                                    layout.elements);
      else
        device_arenas_.emplace_back(memory_label(MemoryRole::weights, arena_name(group)),
                                    layout.elements);
      host_arenas_.emplace_back();
      bind_tensors(theta_.f32, layout, device_arenas_.back());
    }
  }
#ifdef KOKKOS_ENABLE_CUDA
  // Pinned, so uploads and write-backs of slices are asynchronous DMA.
  if (shared_ && shared_->bytes() > 0) pin_host_memory(shared_->data(), shared_->bytes());
#endif
}

ParameterStore::~ParameterStore() {
#ifdef KOKKOS_ENABLE_CUDA
  if (shared_ && shared_->bytes() > 0) unpin_host_memory(shared_->data());
#endif
}

void* ParameterStore::shared_arena(std::size_t elements) {
  void* p = static_cast<char*>(shared_->data()) + shared_used_ * bytes_per_element(storage());
  shared_used_ += aligned_to_arena(elements);
  return p;
}

const GroupSlices& ParameterStore::slices(model::GroupRef group) const {
  return slices_[index(group)];
}

std::size_t ParameterStore::index(model::GroupRef group) const {
  switch (group.kind) {
    case model::ParameterGroup::embeddings: return 0;
    case model::ParameterGroup::head: return layouts_.size() - 1;
    case model::ParameterGroup::block: break;
  }
  DISTZO_REQUIRE(group.block >= 0 && group.block < num_blocks(),
                 "parameter store: no block " << group.block << " in a model of " << num_blocks());
  return 1 + static_cast<std::size_t>(group.block);
}

std::size_t ParameterStore::index_of_id(std::uint32_t id) const {
  DISTZO_REQUIRE(id < group_of_id_.size(), "parameter store: no parameter " << id);
  return group_of_id_[id];
}

const ArenaLayout& ParameterStore::layout(model::GroupRef group) const {
  return layouts_[index(group)];
}

const PinnedVec& ParameterStore::host_block(int block) const {
  const PinnedVec& arena = host_arenas_[index(model::GroupRef::of_block(block))];
  DISTZO_REQUIRE(!on_device(block), "parameter store: block " << block << " lives on the device");
  return arena;
}

const PinnedHalfVec& ParameterStore::host_block_words(int block) const {
  const PinnedHalfVec& arena = host_words_[index(model::GroupRef::of_block(block))];
  DISTZO_REQUIRE(!on_device(block), "parameter store: block " << block << " lives on the device");
  return arena;
}

std::size_t ParameterStore::device_bytes() const {
  std::size_t n = 0;
  for (const Vec& a : device_arenas_) n += a.extent(0) * sizeof(real);
  for (const HalfVec& a : device_words_) n += a.extent(0) * sizeof(std::uint16_t);
  return n;
}

std::size_t ParameterStore::host_bytes() const {
  std::size_t n = 0;
  for (const PinnedVec& a : host_arenas_) n += a.extent(0) * sizeof(real);
  for (const PinnedHalfVec& a : host_words_) n += a.extent(0) * sizeof(std::uint16_t);
  return n;
}

void ParameterStore::read(std::uint32_t id, real* host_dst) const {
  const std::size_t g = index_of_id(id);
  const Segment& s = layouts_[g].segment(id);
  const auto range = std::make_pair(s.offset, s.offset + s.count);
  const HostUnmanaged dst(host_dst, s.count);
  if (storage() != StorageDtype::fp32) {
    std::vector<std::uint16_t> words(s.count);
    copy_words(g, s, words.data());
    for (std::size_t i = 0; i < s.count; ++i) host_dst[i] = storage::load(words[i], storage());
  } else if (in_host_memory_[g])
    Kokkos::deep_copy(dst, Kokkos::subview(host_arenas_[g], range));
  else
    Kokkos::deep_copy(dst, Kokkos::subview(device_arenas_[g], range));
}

void ParameterStore::write(std::uint32_t id, const real* host_src) {
  const std::size_t g = index_of_id(id);
  const Segment& s = layouts_[g].segment(id);
  const auto range = std::make_pair(s.offset, s.offset + s.count);
  const ConstHostUnmanaged src(host_src, s.count);
  if (storage() != StorageDtype::fp32) {
    // Round to nearest: a float32 value is brought into 2 bytes once, the
    // same way on every rank, with no random words to key.
    std::vector<std::uint16_t> words(s.count);
    for (std::size_t i = 0; i < s.count; ++i)
      words[i] = static_cast<std::uint16_t>(
          storage::store(host_src[i], storage(), Rounding::nearest, 0));
    const HostWordsUnmanaged src_words(words.data(), s.count);
    if (in_host_memory_[g])
      Kokkos::deep_copy(Kokkos::subview(host_words_[g], range), src_words);
    else
      Kokkos::deep_copy(Kokkos::subview(device_words_[g], range), src_words);
  } else if (in_host_memory_[g])
    Kokkos::deep_copy(Kokkos::subview(host_arenas_[g], range), src);
  else
    Kokkos::deep_copy(Kokkos::subview(device_arenas_[g], range), src);
}

void ParameterStore::fill(const std::function<void(std::uint32_t id, real* dst)>& source) {
  if (sliced() && node_.rank() != 0) {  // the node's rank 0 fills the shared master
    node_.barrier();
    return;
  }
  std::vector<real> buffer;
  for (const auto& p : registry_.parameters()) {
    buffer.assign(static_cast<std::size_t>(p.numel()), real(0));
    source(p.id, buffer.data());
    write(p.id, buffer.data());
  }
  if (sliced()) {
    Kokkos::fence();  // the deep copies into the shared master are done
    node_.barrier();
  }
}

void ParameterStore::visit(
    const std::function<void(std::uint32_t id, const real* data)>& sink) const {
  std::vector<real> buffer;
  for (const auto& p : registry_.parameters()) {
    buffer.resize(static_cast<std::size_t>(p.numel()));
    read(p.id, buffer.data());
    sink(p.id, buffer.data());
  }
}

void ParameterStore::visit_stored(
    const std::function<void(std::uint32_t id, StoredElements data)>& sink) const {
  if (storage() == StorageDtype::fp32) {
    visit([&](std::uint32_t id, const real* data) { sink(id, data); });
    return;
  }
  std::vector<std::uint16_t> words;
  for (const auto& p : registry_.parameters()) {
    const std::size_t g = index_of_id(p.id);
    const Segment& s = layouts_[g].segment(p.id);
    words.resize(s.count);
    copy_words(g, s, words.data());
    sink(p.id, StoredElements(storage(), words.data()));
  }
}

void ParameterStore::copy_words(std::size_t g, const Segment& s, std::uint16_t* host_dst) const {
  const auto range = std::make_pair(s.offset, s.offset + s.count);
  const HostWordsUnmanaged dst(host_dst, s.count);
  if (in_host_memory_[g])
    Kokkos::deep_copy(dst, Kokkos::subview(host_words_[g], range));
  else
    Kokkos::deep_copy(dst, Kokkos::subview(device_words_[g], range));
}

void ParameterStore::visit_own_slices(const PieceSink& sink) const {
  std::vector<real> buffer;
  std::vector<std::uint16_t> words;
  for (std::size_t g = 0; g < layouts_.size(); ++g) {
    if (slices_[g].slices > 1 && storage() != StorageDtype::fp32) {
      // A sliced group lives in node-shared host memory: hand out its words.
      const std::uint16_t* words =
          in_host_memory_[g] ? host_words_[g].data() : device_words_[g].data();
      for (const SlicePiece& p : slices_[g].pieces)
        sink(p.id, p.first_element, p.count, StoredElements(storage(), words + p.arena_offset));
    } else if (slices_[g].slices > 1) {
      // A sliced group lives in node-shared host memory: hand out pointers.
      const real* arena = in_host_memory_[g] ? host_arenas_[g].data() : device_arenas_[g].data();
      for (const SlicePiece& p : slices_[g].pieces)
        sink(p.id, p.first_element, p.count, arena + p.arena_offset);
    } else if (node_.rank() == 0 && storage() != StorageDtype::fp32) {
      for (const Segment& seg : layouts_[g].segments) {
        words.resize(seg.count);
        copy_words(g, seg, words.data());
        sink(seg.id, 0, seg.count, StoredElements(storage(), words.data()));
      }
    } else if (node_.rank() == 0) {
      for (const Segment& seg : layouts_[g].segments) {
        buffer.resize(seg.count);
        read(seg.id, buffer.data());
        sink(seg.id, 0, seg.count, buffer.data());
      }
    }
  }
}

void ParameterStore::fill_own_slices(const PieceSource& source) {
  DISTZO_REQUIRE(sliced(), "parameter store: fill_own_slices needs a sliced store");
  std::vector<real> buffer;
  for (std::size_t g = 0; g < layouts_.size(); ++g) {
    if (slices_[g].slices > 1 && storage() != StorageDtype::fp32) {
      // Rounded to nearest, as write() does.
      std::uint16_t* words = in_host_memory_[g] ? host_words_[g].data() : device_words_[g].data();
      for (const SlicePiece& p : slices_[g].pieces) {
        buffer.resize(p.count);
        source(p.id, p.first_element, p.count, buffer.data());
        for (std::size_t i = 0; i < p.count; ++i)
          words[p.arena_offset + i] = static_cast<std::uint16_t>(
              storage::store(buffer[i], storage(), Rounding::nearest, 0));
      }
    } else if (slices_[g].slices > 1) {
      real* arena = in_host_memory_[g] ? host_arenas_[g].data() : device_arenas_[g].data();
      for (const SlicePiece& p : slices_[g].pieces)
        source(p.id, p.first_element, p.count, arena + p.arena_offset);
    } else {
      for (const Segment& seg : layouts_[g].segments) {
        buffer.resize(seg.count);
        source(seg.id, 0, seg.count, buffer.data());
        write(seg.id, buffer.data());
      }
    }
  }
  Kokkos::fence();
  node_.barrier();  // every slice is in place before anyone reads θ
}

std::string ParameterStore::digest(const ExecSpace& space) const {
  // Each tensor's element sum is reduced where its arena lives, into host
  // memory (pinned under CUDA, written by the device directly): no tensor is
  // copied or decoded and no device memory is allocated.
  const Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, PinnedSpace> sums(
      memory_label(MemoryRole::host_master, "digest_sums"), registry_.size());  // by id
  const Kokkos::DefaultHostExecutionSpace host;
  for (std::size_t g = 0; g < layouts_.size(); ++g) {
    for (const Segment& s : layouts_[g].segments) {
      const auto range = std::make_pair(s.offset, s.offset + s.count);
      if (storage() != StorageDtype::fp32 && in_host_memory_[g]) {
        sums(s.id) = kernels::host_tensor_element_sum(
            host, kernels::HostWords(host_words_[g].data() + s.offset, s.count), storage());
      } else if (storage() != StorageDtype::fp32) {
        kernels::tensor_element_sum(space, Kokkos::subview(device_words_[g], range), storage(), 0,
                                    Kokkos::subview(sums, s.id));
      } else if (in_host_memory_[g]) {
        sums(s.id) = kernels::host_tensor_element_sum(
            host, kernels::HostTensor(host_arenas_[g].data() + s.offset, s.count));
      } else {
        kernels::tensor_element_sum(
            space, Kokkos::subview(device_arenas_[g], std::make_pair(s.offset, s.offset + s.count)),
            0, Kokkos::subview(sums, s.id));
      }
    }
  }
  fence(space, "distzo: digest element sums ready for the host fold");

  ParameterDigest digest;
  for (const auto& p : registry_.parameters()) digest.add_tensor(p.name, p.shape, sums(p.id));
  return digest.hex();
}

std::vector<std::uint64_t> ParameterStore::own_slice_sums(const ExecSpace& space) const {
  std::size_t pieces = 0;
  for (const GroupSlices& g : slices_) pieces += g.pieces.size();
  const Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, PinnedSpace> sums(
      memory_label(MemoryRole::host_master, "slice_sums"), pieces);
  const Kokkos::DefaultHostExecutionSpace host;
  std::size_t i = 0;
  for (std::size_t g = 0; g < layouts_.size(); ++g) {
    for (const SlicePiece& p : slices_[g].pieces) {
      const auto range = std::make_pair(p.arena_offset, p.arena_offset + p.count);
      // A 2-byte θ's sums are over its words, as the digest's.
      if (storage() != StorageDtype::fp32 && in_host_memory_[g]) {
        sums(i) = kernels::host_tensor_element_sum(
            host, kernels::HostWords(host_words_[g].data() + p.arena_offset, p.count), storage(),
            p.first_element);
      } else if (storage() != StorageDtype::fp32) {
        kernels::tensor_element_sum(space, Kokkos::subview(device_words_[g], range), storage(),
                                    p.first_element, Kokkos::subview(sums, i));
      } else if (in_host_memory_[g])
        sums(i) = kernels::host_tensor_element_sum(
            host, Kokkos::subview(host_arenas_[g], range), p.first_element);
      else
        kernels::tensor_element_sum(space, Kokkos::subview(device_arenas_[g], range),
                                    p.first_element, Kokkos::subview(sums, i));
      ++i;
    }
  }
  fence(space, "distzo: slice element sums ready");
  return std::vector<std::uint64_t>(sums.data(), sums.data() + pieces);
}

void ParameterStore::corrupt_element(int owner) {
  const bool sliced_somewhere =
      std::any_of(slices_.begin(), slices_.end(), [](const GroupSlices& s) { return s.slices > 1; });
  for (std::size_t g = 0; g < layouts_.size(); ++g) {
    if (sliced_somewhere && slices_[g].slices == 1) continue;
    const GroupSlices theirs =
        GroupSlices::of(layouts_[g], slices_[g].slices, sliced_somewhere ? owner : 0);
    if (theirs.pieces.empty()) continue;
    const std::size_t at = theirs.pieces.front().arena_offset;
    const auto word =
        static_cast<std::uint16_t>(storage::store(real(12345), storage(), Rounding::nearest, 0));
    if (storage() != StorageDtype::fp32 && in_host_memory_[g])
      Kokkos::deep_copy(Kokkos::subview(host_words_[g], at), word);
    else if (storage() != StorageDtype::fp32)
      Kokkos::deep_copy(Kokkos::subview(device_words_[g], at), word);
    else if (in_host_memory_[g])
      Kokkos::deep_copy(Kokkos::subview(host_arenas_[g], at), real(12345));
    else
      Kokkos::deep_copy(Kokkos::subview(device_arenas_[g], at), real(12345));
    return;
  }
}

}  // namespace distzo::runtime
