#include "runtime/parameter_store.hpp"

#include <algorithm>

#include "core/digest.hpp"
#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/memory.hpp"
#include "kernels/digest.hpp"

namespace distzo::runtime {

namespace {

/// `count` elements of `dtype` in host memory, as a stored view to copy into.
using HostStored = StoredView<Kokkos::HostSpace>;

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
      theta_(registry.size()) {
  const std::vector<model::GroupRef> groups = registry.groups();
  for (const model::GroupRef& group : groups) {
    layouts_.push_back(ArenaLayout::of(registry, registry.ids(group)));
    // Groups in the shared master are sliced; the edges on a GPU are each
    // rank's own (small next to the blocks) and stay whole.
    const bool shared =
        sliced() && (kHostAccessibleMemory || group.kind == model::ParameterGroup::block);
    slices_.push_back(
        GroupSlices::of(layouts_.back(), shared ? node_.size() : 1, shared ? node_.rank() : 0));
  }
  if (sliced()) {
    // On a GPU build only the offloaded blocks live in host memory: a
    // resident θ on each GPU could not be shared, nor updated by slices.
    DISTZO_INPUT_REQUIRE(
        kHostAccessibleMemory || device_blocks_ == 0,
        "placement.share_host_master on a GPU build needs placement.mode: offload "
        "with resident_blocks: 0 (the shared master is the host copy the GPUs stream "
        "slices of); got "
            << device_blocks_ << " blocks resident on each GPU");
    shared_ = node_.allocate_shared(shared_elements(layouts_) * bytes_per_element(storage()));
  }
  device_arenas_.resize(groups.size());
  host_arenas_.resize(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const model::GroupRef& group = groups[g];
    const ArenaLayout& layout = layouts_[g];
    for (const Segment& s : layout.segments) group_of_id_[s.id] = g;
    const bool streamed = group.kind == model::ParameterGroup::block && !on_device(group.block);
    if (group.kind == model::ParameterGroup::block)
      max_block_elements_ = std::max(max_block_elements_, layout.elements);
    in_host_memory_.push_back(streamed);
    // A shared master lives in the node's allocation (the device arenas
    // too, on host backends only: checked above).
    if (streamed && sliced())
      host_arenas_[g] = PinnedStoredVec(storage(), shared_arena(layout.elements), layout.elements);
    else if (streamed)
      host_arenas_[g] = PinnedStoredVec(memory_label(MemoryRole::host_master, arena_name(group)),
                                        storage(), layout.elements);
    else if (sliced())
      device_arenas_[g] = StoredVec(storage(), shared_arena(layout.elements), layout.elements);
    else
      device_arenas_[g] = StoredVec(memory_label(MemoryRole::weights, arena_name(group)), storage(),
                                    layout.elements);
    if (!streamed) theta_.bind(layout, device_arenas_[g]);
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
    case model::ParameterGroup::embeddings:
      return 0;
    case model::ParameterGroup::head:
      return layouts_.size() - 1;
    case model::ParameterGroup::block:
      break;
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

const PinnedStoredVec& ParameterStore::host_arena(int block) const {
  DISTZO_REQUIRE(!on_device(block), "parameter store: block " << block << " lives on the device");
  return host_arenas_[index(model::GroupRef::of_block(block))];
}

std::size_t ParameterStore::device_bytes() const {
  std::size_t n = 0;
  for (const StoredVec& a : device_arenas_) n += a.bytes();
  return n;
}

std::size_t ParameterStore::host_bytes() const {
  std::size_t n = 0;
  for (const PinnedStoredVec& a : host_arenas_) n += a.bytes();
  return n;
}

void ParameterStore::copy_stored(std::size_t g, std::size_t offset, std::size_t count,
                                 void* host_dst) const {
  const HostStored dst(storage(), host_dst, count);
  if (in_host_memory_[g])
    deep_copy_stored(dst, host_arenas_[g].piece(offset, count));
  else
    deep_copy_stored(dst, device_arenas_[g].piece(offset, count));
}

void ParameterStore::read(std::uint32_t id, real* host_dst) const {
  const std::size_t g = index_of_id(id);
  const Segment& s = layouts_[g].segment(id);
  std::vector<unsigned char> stored(s.count * bytes_per_element(storage()));
  copy_stored(g, s.offset, s.count, stored.data());
  StoredElements(storage(), stored.data()).decode_into(s.count, host_dst);
}

void ParameterStore::write(std::uint32_t id, const real* host_src) {
  const std::size_t g = index_of_id(id);
  const Segment& s = layouts_[g].segment(id);
  // Round to nearest: a float32 value is brought into 2 bytes once, the
  // same way on every rank, with no random words to key.
  std::vector<unsigned char> stored(s.count * bytes_per_element(storage()));
  storage::encode_nearest(host_src, s.count, storage(), stored.data());
  const HostStored src(storage(), stored.data(), s.count);
  if (in_host_memory_[g])
    deep_copy_stored(host_arenas_[g].piece(s.offset, s.count), src);
  else
    deep_copy_stored(device_arenas_[g].piece(s.offset, s.count), src);
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
    fence_all("distzo: the shared master filled");
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
  std::vector<unsigned char> stored;
  for (const auto& p : registry_.parameters()) {
    const std::size_t g = index_of_id(p.id);
    const Segment& s = layouts_[g].segment(p.id);
    stored.resize(s.count * bytes_per_element(storage()));
    copy_stored(g, s.offset, s.count, stored.data());
    sink(p.id, StoredElements(storage(), stored.data()));
  }
}

unsigned char* ParameterStore::shared_elements_of(std::size_t g) const {
  // A sliced group lives in node-shared host memory, which host code reads
  // and writes directly.
  return static_cast<unsigned char*>(in_host_memory_[g] ? host_arenas_[g].data()
                                                        : device_arenas_[g].data());
}

void ParameterStore::visit_own_slices(const PieceSink& sink) const {
  const std::size_t b = bytes_per_element(storage());
  std::vector<unsigned char> stored;
  for (std::size_t g = 0; g < layouts_.size(); ++g) {
    if (slices_[g].slices > 1) {
      const unsigned char* arena = shared_elements_of(g);
      for (const SlicePiece& p : slices_[g].pieces)
        sink(p.id, p.first_element, p.count, StoredElements(storage(), arena + p.arena_offset * b));
    } else if (node_.rank() == 0) {
      for (const Segment& seg : layouts_[g].segments) {
        stored.resize(seg.count * b);
        copy_stored(g, seg.offset, seg.count, stored.data());
        sink(seg.id, 0, seg.count, StoredElements(storage(), stored.data()));
      }
    }
  }
}

void ParameterStore::fill_own_slices(const PieceSource& source) {
  DISTZO_REQUIRE(sliced(), "parameter store: fill_own_slices needs a sliced store");
  const std::size_t b = bytes_per_element(storage());
  std::vector<real> buffer;
  for (std::size_t g = 0; g < layouts_.size(); ++g) {
    if (slices_[g].slices > 1) {
      // Rounded to nearest, as write() does.
      unsigned char* arena = shared_elements_of(g);
      for (const SlicePiece& p : slices_[g].pieces) {
        buffer.resize(p.count);
        source(p.id, p.first_element, p.count, buffer.data());
        storage::encode_nearest(buffer.data(), p.count, storage(), arena + p.arena_offset * b);
      }
    } else {
      for (const Segment& seg : layouts_[g].segments) {
        buffer.resize(seg.count);
        source(seg.id, 0, seg.count, buffer.data());
        write(seg.id, buffer.data());
      }
    }
  }
  fence_all("distzo: this rank's slices of θ written");
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
      if (in_host_memory_[g])
        sums(s.id) = kernels::host_tensor_element_sum(
            host, StoredElements(storage(), host_arenas_[g].piece(s.offset, s.count).data()),
            s.count);
      else
        kernels::tensor_element_sum(space, device_arenas_[g].piece(s.offset, s.count), 0,
                                    Kokkos::subview(sums, s.id));
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
      // A 2-byte θ's sums are over its words, as the digest's.
      if (in_host_memory_[g])
        sums(i) = kernels::host_tensor_element_sum(
            host, StoredElements(storage(), host_arenas_[g].piece(p.arena_offset, p.count).data()),
            p.count, p.first_element);
      else
        kernels::tensor_element_sum(space, device_arenas_[g].piece(p.arena_offset, p.count),
                                    p.first_element, Kokkos::subview(sums, i));
      ++i;
    }
  }
  fence(space, "distzo: slice element sums ready");
  return std::vector<std::uint64_t>(sums.data(), sums.data() + pieces);
}

}  // namespace distzo::runtime
