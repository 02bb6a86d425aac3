#pragma once
// θ's tensors by parameter id as they are stored (core/stored_view.hpp). The
// walk hands θ to a pass in this one type whatever the storage; the kernels
// that write θ take its entries as they are (zo::PerturbedWeights::
// materialise, the engine's flush), and a forward pass reads float tensors
// through zo::FloatTheta.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/stored_view.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/arena_layout.hpp"

namespace distzo::runtime {

/// One tensor of θ, or elements [first, first + count) of one.
using ThetaTensor = StoredVec;

/// θ's tensors by id; an entry of a group that is not here is empty.
struct ThetaTable {
  std::vector<StoredVec> tensors;  // by id

  ThetaTable() = default;
  explicit ThetaTable(std::size_t parameters) : tensors(parameters) {}

  const StoredVec& operator[](std::uint32_t id) const { return tensors.at(id); }

  /// Points every parameter of `layout` at its segment of `arena`.
  void bind(const ArenaLayout& layout, const StoredVec& arena) {
    DISTZO_REQUIRE(arena.extent() >= layout.elements, "arena of " << arena.extent()
                                                                  << " elements for a layout of "
                                                                  << layout.elements);
    for (const Segment& s : layout.segments) tensors.at(s.id) = arena.piece(s.offset, s.count);
  }
  /// Empties the entries of every parameter of `layout`.
  void unbind(const ArenaLayout& layout) {
    for (const Segment& s : layout.segments) tensors.at(s.id) = StoredVec();
  }
};

}  // namespace distzo::runtime
