#pragma once
// Block-sparse perturbation (optim.perturbed_blocks; LeZO, Wang et al. 2024,
// arXiv 2410.09823): step t perturbs K of the B decoder blocks, S_t, and
// z = 0 on every parameter of the other B − K. The embeddings, the final
// norm and the head are outside the blocks and perturbed every step.
// Like z, S_t is a pure function of (seed, step): every rank, slice and
// replay derives the same blocks without a word on the wire.
//
// Recipe (docs/perturbation.md), a partial Fisher–Yates shuffle of
// perm = (0, 1, …, B − 1) driven by Philox-4x32-10 (core/philox.hpp):
//   for i = 0 .. K − 1:
//     w = philox(ctr = (lo(step), hi(step), i, 0x5A53454C /* "ZSEL" */),
//                key = (lo(seed), hi(seed))).v[0]
//     j = i + ((w · (B − i)) >> 32)           // 64-bit product: j in [i, B)
//     swap(perm[i], perm[j])
//   S_t = {perm[0], …, perm[K − 1]}
// (the multiply-shift maps w to [0, B − i) with a bias below B / 2^32).
// K = 0: every block, every step — the dense estimators, bit for bit (no
// word of this recipe is drawn).

#include <cstdint>
#include <vector>

namespace distzo {

constexpr std::uint32_t kBlockChoiceTag = 0x5A53454Cu;  // "ZSEL"

struct BlockChoice {
  int chosen = 0;  // K: blocks perturbed a step; 0: every block
  int blocks = 0;  // B: the model's decoder blocks

  /// Every block, every step (K = 0). A K >= B is refused where it is
  /// chosen (app::block_choice), so that a choice whose B was never filled
  /// in fails loudly instead of turning dense.
  bool dense() const { return chosen == 0; }
  /// S_t of the run with `seed` at `step`, in increasing order (every block when dense).
  std::vector<int> chosen_blocks(std::uint64_t seed, std::int64_t step) const;
  /// Whether `block` is in S_t; a parameter outside the blocks (block < 0) always is.
  bool perturbs(std::uint64_t seed, std::int64_t step, int block) const;

  bool operator==(const BlockChoice& o) const {
    return chosen == o.chosen && (dense() || blocks == o.blocks);
  }
};

}  // namespace distzo
