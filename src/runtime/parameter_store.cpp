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

std::size_t aligned(std::size_t n) {
  return (n + kArenaAlignElements - 1) / kArenaAlignElements * kArenaAlignElements;
}

std::string arena_name(model::GroupRef group) {
  return group.kind == model::ParameterGroup::block ? "block." + std::to_string(group.block)
                                                    : group.name();
}

}  // namespace

ArenaLayout ArenaLayout::of(const model::ParameterRegistry& registry,
                            const std::vector<std::uint32_t>& ids) {
  ArenaLayout layout;
  layout.first_id = ids.empty() ? 0 : ids.front();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    DISTZO_REQUIRE(ids[i] == layout.first_id + i,
                   "arena layout: the ids of a group must be consecutive, got " << ids[i]
                                                                                << " at " << i);
    Segment s;
    s.id = ids[i];
    s.offset = layout.elements;
    s.count = static_cast<std::size_t>(registry[ids[i]].numel());
    layout.segments.push_back(s);
    layout.elements = aligned(s.offset + s.count);
  }
  return layout;
}

const Segment& ArenaLayout::segment(std::uint32_t id) const {
  DISTZO_REQUIRE(id >= first_id && id - first_id < segments.size(),
                 "arena layout: parameter " << id << " is not in this group (ids " << first_id
                                            << ".." << first_id + segments.size() << ")");
  return segments[id - first_id];
}

void bind_tensors(model::TensorTable& table, const ArenaLayout& layout, const Vec& arena) {
  DISTZO_REQUIRE(arena.extent(0) >= layout.elements,
                 "arena of " << arena.extent(0) << " elements for a layout of " << layout.elements);
  for (const Segment& s : layout.segments)
    table.at(s.id) = Kokkos::subview(arena, std::make_pair(s.offset, s.offset + s.count));
}

void unbind_tensors(model::TensorTable& table, const ArenaLayout& layout) {
  for (const Segment& s : layout.segments) table.at(s.id) = Vec();
}

ParameterStore::ParameterStore(const model::ParameterRegistry& registry,
                               const PlacementConfig& placement)
    : registry_(registry),
      placement_(placement),
      device_blocks_(placement.device_blocks(registry.num_blocks())),
      group_of_id_(registry.size()),
      device_tensors_(registry.size()) {
  for (const model::GroupRef& group : registry.groups()) {
    const std::size_t g = layouts_.size();
    layouts_.push_back(ArenaLayout::of(registry, registry.ids(group)));
    const ArenaLayout& layout = layouts_.back();
    for (const Segment& s : layout.segments) group_of_id_[s.id] = g;
    const bool streamed = group.kind == model::ParameterGroup::block && !on_device(group.block);
    if (group.kind == model::ParameterGroup::block)
      max_block_elements_ = std::max(max_block_elements_, layout.elements);
    in_host_memory_.push_back(streamed);
    if (streamed) {
      device_arenas_.emplace_back();
      host_arenas_.emplace_back(memory_label(MemoryRole::host_master, arena_name(group)),
                                layout.elements);
    } else {
      device_arenas_.emplace_back(memory_label(MemoryRole::weights, arena_name(group)),
                                  layout.elements);
      host_arenas_.emplace_back();
      bind_tensors(device_tensors_, layout, device_arenas_.back());
    }
  }
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

std::size_t ParameterStore::device_bytes() const {
  std::size_t n = 0;
  for (const Vec& a : device_arenas_) n += a.extent(0) * sizeof(real);
  return n;
}

std::size_t ParameterStore::host_bytes() const {
  std::size_t n = 0;
  for (const PinnedVec& a : host_arenas_) n += a.extent(0) * sizeof(real);
  return n;
}

void ParameterStore::read(std::uint32_t id, real* host_dst) const {
  const std::size_t g = index_of_id(id);
  const Segment& s = layouts_[g].segment(id);
  const auto range = std::make_pair(s.offset, s.offset + s.count);
  const HostUnmanaged dst(host_dst, s.count);
  if (in_host_memory_[g])
    Kokkos::deep_copy(dst, Kokkos::subview(host_arenas_[g], range));
  else
    Kokkos::deep_copy(dst, Kokkos::subview(device_arenas_[g], range));
}

void ParameterStore::write(std::uint32_t id, const real* host_src) {
  const std::size_t g = index_of_id(id);
  const Segment& s = layouts_[g].segment(id);
  const auto range = std::make_pair(s.offset, s.offset + s.count);
  const ConstHostUnmanaged src(host_src, s.count);
  if (in_host_memory_[g])
    Kokkos::deep_copy(Kokkos::subview(host_arenas_[g], range), src);
  else
    Kokkos::deep_copy(Kokkos::subview(device_arenas_[g], range), src);
}

void ParameterStore::fill(const std::function<void(std::uint32_t id, real* dst)>& source) {
  std::vector<real> buffer;
  for (const auto& p : registry_.parameters()) {
    buffer.assign(static_cast<std::size_t>(p.numel()), real(0));
    source(p.id, buffer.data());
    write(p.id, buffer.data());
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

std::string ParameterStore::digest(const ExecSpace& space) const {
  // Each tensor's element sum is reduced where its arena lives, into host
  // memory (pinned under CUDA, written by the device directly): no tensor
  // is copied and no device memory is allocated.
  const Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, PinnedSpace> sums(
      memory_label(MemoryRole::host_master, "digest_sums"), registry_.size());  // by id
  const Kokkos::DefaultHostExecutionSpace host;
  for (std::size_t g = 0; g < layouts_.size(); ++g) {
    for (const Segment& s : layouts_[g].segments) {
      if (in_host_memory_[g]) {
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

void ParameterStore::debug_corrupt() {
  std::vector<real> tensor(static_cast<std::size_t>(registry_[0].numel()));
  read(0, tensor.data());
  tensor.at(0) = 12345;
  write(0, tensor.data());
}

}  // namespace distzo::runtime
