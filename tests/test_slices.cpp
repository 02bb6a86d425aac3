// Placement II's slice plan: every element of every tensor lies in exactly
// one slice, every cut is on the 16-element grid (so a Philox block is never
// split), the slices are equal and the exchange buffer holds them all.

#include <gtest/gtest.h>

#include <vector>

#include "core/error.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/arena_layout.hpp"
#include "support/tiny_model.hpp"

namespace {

using namespace distzo;
using runtime::ArenaLayout;
using runtime::GroupSlices;

TEST(SlicePlan, EveryElementInExactlyOneSliceOnTheGrid) {
  const model::ParameterRegistry registry =
      model::ParameterRegistry::for_model(test_support::tiny_config());
  for (const model::GroupRef& group : registry.groups()) {
    const ArenaLayout layout = ArenaLayout::of(registry, registry.ids(group));
    for (int S = 1; S <= 7; ++S) {
      std::vector<int> seen(layout.elements, 0);  // per arena element: slices holding it
      std::size_t previous_end = 0;
      for (int s = 0; s < S; ++s) {
        const GroupSlices g = GroupSlices::of(layout, S, s);
        EXPECT_EQ(g.slice_elements % 16, 0u);
        EXPECT_GE(g.buffer_elements, layout.elements);
        EXPECT_LT(g.buffer_elements - layout.elements,
                  static_cast<std::size_t>(S) * 16 + g.slice_elements);
        EXPECT_EQ(g.begin, previous_end) << "slices are contiguous, in rank order";
        previous_end = g.end;
        for (const runtime::SlicePiece& p : g.pieces) {
          const runtime::Segment& seg = layout.segment(p.id);
          EXPECT_EQ(p.first_element % 16, 0u) << "a cut inside a tensor splits a Philox block";
          EXPECT_EQ(p.arena_offset, seg.offset + p.first_element);
          EXPECT_LE(p.first_element + p.count, seg.count);
          EXPECT_GE(p.arena_offset, g.begin);
          EXPECT_LE(p.arena_offset + p.count, g.end);
          for (std::size_t i = 0; i < p.count; ++i) ++seen[p.arena_offset + i];
        }
      }
      EXPECT_EQ(previous_end, layout.elements);
      for (const runtime::Segment& seg : layout.segments)
        for (std::size_t i = 0; i < seg.count; ++i)
          ASSERT_EQ(seen[seg.offset + i], 1)
              << group.name() << " S=" << S << " tensor " << seg.id << " element " << i;
    }
  }
}

TEST(SlicePlan, OneSliceIsTheWholeArena) {
  const model::ParameterRegistry registry =
      model::ParameterRegistry::for_model(test_support::tiny_config());
  const ArenaLayout layout = ArenaLayout::of(registry, registry.block_ids(0));
  const GroupSlices g = GroupSlices::of(layout, 1, 0);
  EXPECT_EQ(g.begin, 0u);
  EXPECT_EQ(g.end, layout.elements);
  EXPECT_EQ(g.pieces.size(), layout.segments.size());
  std::size_t elements = 0;
  for (std::uint32_t id : registry.block_ids(0))
    elements += static_cast<std::size_t>(registry[id].numel());
  EXPECT_EQ(g.tensor_elements(), elements);
}

TEST(SlicePlan, BadSliceIsRejected) {
  const ArenaLayout layout;
  EXPECT_THROW(GroupSlices::of(layout, 2, 2), Error);
  EXPECT_THROW(GroupSlices::of(layout, 0, 0), Error);
}

}  // namespace
