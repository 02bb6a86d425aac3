#include "core/block_choice.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/error.hpp"
#include "core/philox.hpp"

namespace distzo {

std::vector<int> BlockChoice::chosen_blocks(std::uint64_t seed, std::int64_t step) const {
  std::vector<int> perm(static_cast<std::size_t>(std::max(blocks, 0)));
  std::iota(perm.begin(), perm.end(), 0);
  if (dense()) return perm;
  DISTZO_REQUIRE(0 < chosen && chosen < blocks,
                 "block choice of " << chosen << " of " << blocks << " blocks a step");
  const PhiloxKey key{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
  const auto t = static_cast<std::uint64_t>(step);
  for (int i = 0; i < chosen; ++i) {
    const PhiloxBlock ctr{{static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(t >> 32),
                           static_cast<std::uint32_t>(i), kBlockChoiceTag}};
    const std::uint64_t w = philox4x32_10(ctr, key).v[0];
    const auto j = static_cast<std::size_t>(static_cast<std::uint64_t>(i) +
                                            ((w * static_cast<std::uint64_t>(blocks - i)) >> 32));
    std::swap(perm[static_cast<std::size_t>(i)], perm[j]);
  }
  perm.resize(static_cast<std::size_t>(chosen));
  std::sort(perm.begin(), perm.end());
  return perm;
}

bool BlockChoice::perturbs(std::uint64_t seed, std::int64_t step, int block) const {
  if (block < 0 || dense()) return true;
  const std::vector<int> s = chosen_blocks(seed, step);
  return std::binary_search(s.begin(), s.end(), block);
}

}  // namespace distzo
