#pragma once
// Parameter digest: one 64-bit value over names, shapes and the exact bits of
// every element, in canonical parameter order. It depends only on the logical
// tensors, not on how a file chunks or orders them, so a digest printed by
// `distzo inspect --digest` equals the one the runtime computes in memory.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace distzo {

class Digest {
 public:
  /// Adds one tensor: its name, its shape, then its elements in row-major order.
  void add_tensor(const std::string& name, const std::vector<std::int64_t>& shape,
                  const float* data, std::size_t count);

  std::uint64_t value() const { return state_; }
  /// 16 lowercase hex digits.
  std::string hex() const;

 private:
  void add_word(std::uint64_t word);
  void add_bytes(const void* bytes, std::size_t count);

  // FNV-1a 64-bit offset basis; words are mixed in 32 bits at a time.
  std::uint64_t state_ = 0xcbf29ce484222325ULL;
};

}  // namespace distzo
