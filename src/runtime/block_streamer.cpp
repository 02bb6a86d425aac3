#include "runtime/block_streamer.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/memory.hpp"

namespace distzo::runtime {

const char* to_string(Lane lane) {
  switch (lane) {
    case Lane::compute:
      return "compute";
    case Lane::upload:
      return "upload";
    case Lane::writeback:
      return "writeback";
  }
  return "?";
}

const char* to_string(StreamOp::Kind kind) {
  using K = StreamOp::Kind;
  switch (kind) {
    case K::upload:
      return "upload";
    case K::wait:
      return "wait";
    case K::compute:
      return "compute";
    case K::compute_end:
      return "compute_end";
    case K::writeback:
      return "writeback";
    case K::on_release:
      return "on_release";
    case K::pass_end:
      return "pass_end";
  }
  return "?";
}

BlockStreamer::BlockStreamer(ParameterStore& store, const ExecSpace& compute)
    : store_(store),
      instances_(StreamInstances::make(compute)),
      first_streamed_(store.device_blocks()),
      num_blocks_(store.num_blocks()),
      prefetch_(store.placement().prefetch) {
  DISTZO_REQUIRE(prefetch_ >= 1, "block streamer: prefetch must be >= 1, got " << prefetch_);
  DISTZO_REQUIRE(store.placement().slots_problem().empty(),
                 "block streamer: " << store.placement().slots_problem());
  const int slots = store.placement().stream_slots(num_blocks_);
  for (int j = 0; j < slots; ++j) {
    Slot s;
    const std::string label = memory_label(MemoryRole::weights, "slot." + std::to_string(j));
    s.arena = StoredVec(label, store.storage(), store.max_block_elements());
    s.tensors = ThetaTable(store.registry().size());
    slots_.push_back(std::move(s));
  }
}

int BlockStreamer::slot_of(int block) const {
  return (block - first_streamed_) % static_cast<int>(slots_.size());
}

void BlockStreamer::note(const StreamOp& op) {
  if (tracing_) trace_.push_back(op);
}

void BlockStreamer::upload(int block) {
  Slot& s = slots_[static_cast<std::size_t>(slot_of(block))];
  DISTZO_REQUIRE(!s.in_use, "block streamer: the upload of block "
                                << block << " would overwrite block " << s.occupant
                                << " while it is in use (slot " << slot_of(block) << ")");
  // The slot's previous occupant must be done with: its compute read it, its
  // write-back read it, its on_release work may have written it.
  s.free.enqueue_wait(instances_.upload);
  if (s.occupant >= 0)
    note({StreamOp::Kind::wait, block, slot_of(block), Lane::upload, s.free_lane, s.occupant});
  const auto range = moved_range(block, own_slices_);
  const std::size_t count = range.second - range.first;
  deep_copy_stored(instances_.upload, s.arena.piece(range.first, count),
                   store_.host_arena(block).piece(range.first, count));
  pass_.to_device += count * bytes_per_element(store_.storage());
  s.uploaded = StreamEvent::record(instances_.upload);
  s.occupant = block;
  note({StreamOp::Kind::upload, block, slot_of(block), Lane::upload});
}

std::pair<std::size_t, std::size_t> BlockStreamer::moved_range(int block, bool own_slice) const {
  const model::GroupRef group = model::GroupRef::of_block(block);
  if (!own_slice) return {0, store_.layout(group).elements};
  const GroupSlices& slice = store_.slices(group);
  return {slice.begin, slice.end};
}

void BlockStreamer::begin_pass(bool own_slices) {
  DISTZO_REQUIRE(!in_pass_, "block streamer: begin_pass() twice without end_pass()");
  in_pass_ = true;
  own_slices_ = own_slices;
  pass_ = TransferBytes();
  last_acquired_ = -1;
  next_upload_ = first_streamed_;
  const int last = std::min(num_blocks_, first_streamed_ + 1 + prefetch_);
  while (next_upload_ < last) upload(next_upload_++);
}

const ThetaTable& BlockStreamer::acquire(int block) {
  DISTZO_REQUIRE(in_pass_, "block streamer: acquire(" << block << ") outside a pass");
  DISTZO_REQUIRE(block >= 0 && block < num_blocks_,
                 "block streamer: no block " << block << " in a model of " << num_blocks_);
  // A released slot may already be written back, overwritten or refilled.
  DISTZO_REQUIRE(block > last_acquired_, "block streamer: acquire("
                                             << block << ") after block " << last_acquired_
                                             << ": a pass acquires blocks in increasing order");
  last_acquired_ = block;
  if (block < first_streamed_) {
    note({StreamOp::Kind::compute, block, -1, Lane::compute});
    return store_.theta();
  }
  while (next_upload_ <= block) upload(next_upload_++);
  Slot& s = slots_[static_cast<std::size_t>(slot_of(block))];
  DISTZO_REQUIRE(s.occupant == block && !s.in_use,
                 "block streamer: block " << block << " is not in its slot");
  s.uploaded.enqueue_wait(instances_.compute);
  note({StreamOp::Kind::wait, block, slot_of(block), Lane::compute, Lane::upload, block});
  const ArenaLayout& layout = store_.layout(model::GroupRef::of_block(block));
  s.tensors.bind(layout, s.arena);
  s.in_use = true;
  note({StreamOp::Kind::compute, block, slot_of(block), Lane::compute});
  // The next uploads run under this block's compute.
  const int last = std::min(num_blocks_, block + 1 + prefetch_);
  while (next_upload_ < last) upload(next_upload_++);
  return s.tensors;
}

void BlockStreamer::release(int block, bool modified) {
  DISTZO_REQUIRE(in_pass_, "block streamer: release(" << block << ") outside a pass");
  if (block < first_streamed_) {
    note({StreamOp::Kind::compute_end, block, -1, Lane::compute});
    return;  // a device block: θ_k was updated in place, nothing to move
  }
  const int j = slot_of(block);
  Slot& s = slots_[static_cast<std::size_t>(j)];
  DISTZO_REQUIRE(s.in_use && s.occupant == block,
                 "block streamer: release(" << block << ") of a block that was not acquired");
  note({StreamOp::Kind::compute_end, block, j, Lane::compute});
  const ArenaLayout& layout = store_.layout(model::GroupRef::of_block(block));
  s.tensors.unbind(layout);
  s.in_use = false;
  const StreamEvent computed = StreamEvent::record(instances_.compute);
  if (!modified && !on_release_) {
    s.free = computed;
    s.free_lane = Lane::compute;
    return;
  }
  computed.enqueue_wait(instances_.writeback);
  note({StreamOp::Kind::wait, block, j, Lane::writeback, Lane::compute, block});
  if (modified) {
    // A sliced store's ranks change only their own slices of θ.
    const auto range = moved_range(block, store_.sliced());
    const std::size_t count = range.second - range.first;
    deep_copy_stored(instances_.writeback, store_.host_arena(block).piece(range.first, count),
                     s.arena.piece(range.first, count));
    pass_.to_host += count * bytes_per_element(store_.storage());
    note({StreamOp::Kind::writeback, block, j, Lane::writeback});
  }
  if (on_release_) {
    on_release_(instances_.writeback, s.arena);
    note({StreamOp::Kind::on_release, block, j, Lane::writeback});
  }
  s.free = StreamEvent::record(instances_.writeback);
  s.free_lane = Lane::writeback;
}

void BlockStreamer::end_pass() {
  DISTZO_REQUIRE(in_pass_, "block streamer: end_pass() without begin_pass()");
  for (const Slot& s : slots_)
    DISTZO_REQUIRE(!s.in_use, "block streamer: block " << s.occupant << " was never released");
  fence(instances_.upload, "distzo: uploads of the pass done");
  fence(instances_.writeback, "distzo: write-backs of the pass done; the host master is current");
  in_pass_ = false;
  last_pass_ = pass_;
  total_.to_device += pass_.to_device;
  total_.to_host += pass_.to_host;
  note({StreamOp::Kind::pass_end, -1, -1, Lane::compute});
}

}  // namespace distzo::runtime
