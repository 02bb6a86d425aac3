#pragma once
// θ's master copy (DESIGN.md, Placement). Parameters are kept per group of
// the walk — embeddings, block 0..L-1, head — each group in one contiguous
// arena described by (parameter id, offset, count) segments. Where an arena
// lives is the placement's choice:
//
//   device  (resident groups)  a View in the execution space; the tensors
//           θ's tensors are subviews of it (theta());
//   host    (offloaded blocks) a View in pinned host memory (plain host
//           memory without CUDA); the block streamer uploads it into a
//           device slot when the walk reaches the block, and writes the
//           updated block back.
//
// The store is filled and read one parameter at a time through host memory,
// so a model is loaded and checkpointed without ever being whole in the
// execution space; the digest is reduced in place, tensor by tensor. It
// knows nothing of files, MPI or the algorithm.
//
// With a shared host master (Placement II) the host arenas — every arena on
// host backends, the offloaded blocks' on GPUs — are one node-shared
// allocation: one copy of θ per node, whatever the mesh. Each rank of the
// node owns one slice of every arena (slices()); only the owner writes it.
//
// θ is stored as placement.storage says: float32, or 2-byte bf16 / fp16
// words (half the bytes). The host interface — read, write, fill, visit,
// fill_own_slices — stays float32 whatever the storage: write() rounds to
// nearest (a float32 model imported into a bf16 store is rounded once; a
// value the format holds comes back as the same word), read() decodes
// (exact). visit_stored and visit_own_slices hand out θ as stored (the words
// of a 2-byte θ), for checkpoints in θ's own dtype. Every arena is a
// StoredView (core/stored_view.hpp) of θ's dtype: the offloaded blocks' host
// master and the node-shared master included; the store never asks which
// format it holds.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/stored_view.hpp"
#include "core/types.hpp"
#include "model/parameter_registry.hpp"
#include "model/weights.hpp"
#include "runtime/arena_layout.hpp"
#include "runtime/communicator.hpp"
#include "runtime/placement.hpp"
#include "runtime/theta_table.hpp"

namespace distzo::runtime {

/// Points table[id] at its segment of `arena`, for every parameter of the layout.
void bind_tensors(model::TensorTable& table, const ArenaLayout& layout, const Vec& arena);
/// Empties table[id] for every parameter of the layout.
void unbind_tensors(model::TensorTable& table, const ArenaLayout& layout);
/// The same for a 2-byte θ: words[id] into its segment of `arena`, or emptied.
void bind_words(std::vector<HalfVec>& words, const ArenaLayout& layout, const HalfVec& arena);
void unbind_words(std::vector<HalfVec>& words, const ArenaLayout& layout);

// With precision.gemm_inputs: storage a block's matrices are read as 2-byte
// words and only its vectors (norm weights, biases) as float32: those get a
// small float arena of their own, packed in id order, each aligned like an
// arena segment.

/// Elements of that float arena for the tensors `ids` (their vectors only).
std::size_t packed_vector_elements(const model::ParameterRegistry& registry,
                                   const std::vector<std::uint32_t>& ids);
/// The largest of them over the blocks.
std::size_t max_block_vector_elements(const model::ParameterRegistry& registry);
/// Elements of the largest matrix of any block (w a tensor at a time).
std::size_t max_block_matrix_elements(const model::ParameterRegistry& registry);
/// Points table[id] of every vector among `ids` at its place in `arena`.
void bind_vectors(model::TensorTable& table, const model::ParameterRegistry& registry,
                  const std::vector<std::uint32_t>& ids, const Vec& arena);

class ParameterStore {
 public:
  /// Allocates every arena (zeroed) for `placement`; fill() loads θ. A
  /// shared host master (placement.share_host_master) is shared by the
  /// ranks of `node` (collective over them; one rank without `node`).
  ParameterStore(const model::ParameterRegistry& registry, const PlacementConfig& placement,
                 const Communicator* node = nullptr);
  ~ParameterStore();
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  const model::ParameterRegistry& registry() const { return registry_; }
  const PlacementConfig& placement() const { return placement_; }
  int num_blocks() const { return registry_.num_blocks(); }
  /// Blocks 0..device_blocks()-1 live on the device; the others in host memory.
  int device_blocks() const { return device_blocks_; }
  bool on_device(int block) const { return block < device_blocks_; }

  const ArenaLayout& layout(model::GroupRef group) const;
  /// Whether the node's ranks share θ's host master and each writes only
  /// its own slice of every arena.
  bool sliced() const { return placement_.share_host_master; }
  /// This rank's slice of a group's arena: the whole arena unless sliced();
  /// on GPU builds the edges (on each GPU) stay whole too.
  const GroupSlices& slices(model::GroupRef group) const;
  /// The largest block arena.
  std::size_t max_block_elements() const { return max_block_elements_; }

  /// How θ is stored (placement().storage).
  StorageDtype storage() const { return placement_.storage; }
  /// θ's tensors by id as stored, of every group on the device: the
  /// embeddings, the head and the device blocks. Entries of offloaded blocks
  /// are empty. A forward pass reads them through zo::FloatTheta.
  const ThetaTable& theta() const { return theta_; }
  /// The host master of an offloaded block, as stored.
  const PinnedStoredVec& host_arena(int block) const;

  /// Bytes of θ in the execution space / in host memory (padding included;
  /// 2 per element with a bf16 / fp16 storage).
  /// With a shared master these arenas are the node's one copy
  /// (shared_bytes), which Kokkos does not see allocated.
  std::size_t device_bytes() const;
  std::size_t host_bytes() const;
  /// Bytes of the node-shared allocation holding θ (0 without one).
  std::size_t shared_bytes() const { return shared_ ? shared_->bytes() : 0; }

  /// Copies parameter `id` (numel elements) to / from host memory.
  void read(std::uint32_t id, real* host_dst) const;
  void write(std::uint32_t id, const real* host_src);

  /// Loads every parameter in canonical order: `source(id, dst)` writes the
  /// numel elements of parameter id to dst (host memory). Collective over
  /// the node when the master is shared: its rank 0 fills it.
  void fill(const std::function<void(std::uint32_t id, real* dst)>& source);
  /// Hands every parameter in canonical order to `sink(id, data)` (host
  /// memory, float32 values: a 2-byte θ decoded).
  void visit(const std::function<void(std::uint32_t id, const real* data)>& sink) const;
  /// The same as stored: float32 values, or the words of a 2-byte θ (what
  /// a checkpoint writes).
  void visit_stored(const std::function<void(std::uint32_t id, StoredElements data)>& sink) const;

  /// A piece of one tensor: elements [first, first + count) of parameter id,
  /// as stored (floats, or words of a 2-byte θ).
  using PieceSink = std::function<void(std::uint32_t id, std::uint64_t first, std::size_t count,
                                       StoredElements data)>;
  using PieceSource =
      std::function<void(std::uint32_t id, std::uint64_t first, std::size_t count, real* dst)>;
  /// This rank's part of θ for a checkpoint written by the node's ranks
  /// together, in increasing id order: its slices of the sliced groups, and
  /// (node rank 0 only) the whole tensors of groups that are not sliced.
  /// Together the node's ranks cover every tensor once.
  void visit_own_slices(const PieceSink& sink) const;
  /// Loads this rank's slices (and every tensor of the groups that are not
  /// sliced, which each rank holds itself): each rank of the node reads its
  /// own part of the file. Collective over the node (a sliced store).
  void fill_own_slices(const PieceSource& source);

  /// The parameter digest (core/digest.hpp) of θ as it stands, over its
  /// stored bits (a 2-byte θ's words, tagged with the format), as a file
  /// holding θ in its storage digests. Computed where θ lives: device arenas
  /// reduced on `space`, host arenas on the host execution space; nothing is
  /// copied or decoded. Fences `space`. Writes to θ
  /// queued on other instances must be complete (the block streamer's
  /// end_pass fences its upload and write-back instances).
  std::string digest(const ExecSpace& space = ExecSpace()) const;

  /// The digest element sums (kernels/digest.hpp) of every tensor piece in
  /// this rank's slices, in group and piece order: what the guard compares
  /// to catch another rank writing into them (sliced store). Fences `space`.
  std::vector<std::uint64_t> own_slice_sums(const ExecSpace& space = ExecSpace()) const;

 private:
  /// Index of a group's arena: 0 embeddings, 1 + k block k, L + 1 head.
  std::size_t index(model::GroupRef group) const;
  std::size_t index_of_id(std::uint32_t id) const;
  /// Elements [offset, offset + count) of group g's arena, as stored, into
  /// host memory (count * bytes_per_element(storage()) bytes).
  void copy_stored(std::size_t g, std::size_t offset, std::size_t count, void* host_dst) const;
  /// The first byte of a sliced group's arena, in node-shared host memory.
  unsigned char* shared_elements_of(std::size_t g) const;

  /// The next `elements` of the node-shared allocation (shared master), in
  /// θ's storage (floats or 2-byte words).
  void* shared_arena(std::size_t elements);

  model::ParameterRegistry registry_;
  PlacementConfig placement_;
  SerialCommunicator one_rank_;  // `node` when none was given
  const Communicator& node_;
  std::shared_ptr<SharedMemory> shared_;  // the node's host master (shared master only)
  std::size_t shared_used_ = 0;           // elements of shared_ handed out
  std::vector<GroupSlices> slices_;       // per group, walk order
  int device_blocks_ = 0;
  std::size_t max_block_elements_ = 0;
  std::vector<ArenaLayout> layouts_;          // per group, walk order
  std::vector<StoredVec> device_arenas_;      // per group; empty for offloaded blocks
  std::vector<PinnedStoredVec> host_arenas_;  // per group; set for offloaded blocks only
  std::vector<bool> in_host_memory_;          // per group: an offloaded block
  std::vector<std::size_t> group_of_id_;
  ThetaTable theta_;
};

}  // namespace distzo::runtime
