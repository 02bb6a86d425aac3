#pragma once
// A group's arena (embeddings, one block, the head: DESIGN.md, Placement)
// and how the S ranks of a node cut it into slices (Placement II, DistZO2's
// sliced transfers). Plain data; the slices are a function of (layout, S, s):
//
//   arena     | tensor a      |pad| tensor b                  |pad|
//   slices    |  slice 0      |  slice 1      |  slice 2      |
//             0               L               2L              3L >= elements
//
// Every slice has L elements, L a multiple of kArenaAlignElements (16 floats:
// a 64-byte line and four Philox blocks of 4), so a boundary never splits a
// Philox block and every slice starts on a line. Tensor segments start on
// the same grid, so a tensor's part inside a slice begins at an element
// index that is a multiple of 4 within the tensor: z there is the same
// z the unsliced kernel makes. The parameter digest is a sum of
// per-element terms, so any cut combines exactly. Equal slices make the
// exchange an all-gather of S equal pieces (what NCCL offers); the last
// slices may lie wholly or partly in the padding beyond the arena.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/storage_dtype.hpp"
#include "core/types.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/placement.hpp"

namespace distzo::runtime {

/// One parameter inside its group's arena: elements [offset, offset + count).
struct Segment {
  std::uint32_t id = 0;
  std::size_t offset = 0;
  std::size_t count = 0;
};

/// Where each parameter of a group sits in the group's arena. Offsets are
/// multiples of kArenaAlignElements; the padding between tensors is zero.
struct ArenaLayout {
  std::uint32_t first_id = 0;     // the group's ids are first_id .. first_id + size - 1
  std::vector<Segment> segments;  // in id order
  std::size_t elements = 0;       // arena length, padding included

  static ArenaLayout of(const model::ParameterRegistry& registry,
                        const std::vector<std::uint32_t>& ids);
  const Segment& segment(std::uint32_t id) const;
  /// Bytes of the arena with θ stored as `dtype`.
  std::size_t bytes(StorageDtype dtype) const { return elements * bytes_per_element(dtype); }
};

/// The part of one tensor that lies in a slice.
struct SlicePiece {
  std::uint32_t id = 0;
  std::uint64_t first_element = 0;  // within the tensor
  std::size_t arena_offset = 0;     // within the arena
  std::size_t count = 0;
};

struct GroupSlices {
  int slices = 1;                   // S
  int slice = 0;                    // s: this rank's
  std::size_t slice_elements = 0;   // L
  std::size_t buffer_elements = 0;  // S*L: length of an exchange buffer of this group
  std::size_t begin = 0, end = 0;   // this rank's slice, clipped to the arena: [begin, end)
  std::vector<SlicePiece> pieces;   // the tensors' parts in [begin, end), in arena order

  static GroupSlices of(const ArenaLayout& layout, int slices, int slice);
  /// Elements of tensors (padding excluded) in this rank's slice.
  std::size_t tensor_elements() const;
};

}  // namespace distzo::runtime
