#include "runtime/arena_layout.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "runtime/placement.hpp"

namespace distzo::runtime {

ArenaLayout ArenaLayout::of(const model::ParameterRegistry& registry,
                            const std::vector<std::uint32_t>& ids) {
  ArenaLayout layout;
  layout.first_id = ids.empty() ? 0 : ids.front();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    DISTZO_REQUIRE(
        ids[i] == layout.first_id + i,
        "arena layout: the ids of a group must be consecutive, got " << ids[i] << " at " << i);
    Segment s;
    s.id = ids[i];
    s.offset = layout.elements;
    s.count = static_cast<std::size_t>(registry[ids[i]].numel());
    layout.segments.push_back(s);
    layout.elements = aligned_to_arena(s.offset + s.count);
  }
  return layout;
}

const Segment& ArenaLayout::segment(std::uint32_t id) const {
  DISTZO_REQUIRE(id >= first_id && id - first_id < segments.size(),
                 "arena layout: parameter " << id << " is not in this group (ids " << first_id
                                            << ".." << first_id + segments.size() << ")");
  return segments[id - first_id];
}

GroupSlices GroupSlices::of(const ArenaLayout& layout, int slices, int slice) {
  DISTZO_REQUIRE(slices >= 1 && slice >= 0 && slice < slices,
                 "slice plan: slice " << slice << " of " << slices);
  GroupSlices g;
  g.slices = slices;
  g.slice = slice;
  const std::size_t S = static_cast<std::size_t>(slices);
  const std::size_t per = (layout.elements + S - 1) / S;
  g.slice_elements = aligned_to_arena(per);
  g.buffer_elements = S * g.slice_elements;
  const std::size_t s = static_cast<std::size_t>(slice);
  g.begin = std::min(layout.elements, s * g.slice_elements);
  g.end = std::min(layout.elements, (s + 1) * g.slice_elements);
  for (const Segment& seg : layout.segments) {
    const std::size_t lo = std::max(g.begin, seg.offset);
    const std::size_t hi = std::min(g.end, seg.offset + seg.count);
    if (lo >= hi) continue;
    g.pieces.push_back({seg.id, lo - seg.offset, lo, hi - lo});
  }
  return g;
}

std::size_t GroupSlices::tensor_elements() const {
  std::size_t n = 0;
  for (const SlicePiece& p : pieces) n += p.count;
  return n;
}

}  // namespace distzo::runtime
