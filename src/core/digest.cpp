#include "core/digest.hpp"

#include <cstdio>
#include <cstring>

namespace distzo {

namespace {
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;
}

void Digest::add_word(std::uint64_t word) {
  state_ ^= word;
  state_ *= kFnvPrime;
}

void Digest::add_bytes(const void* bytes, std::size_t count) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < count; ++i) add_word(p[i]);
}

void Digest::add_tensor(const std::string& name, const std::vector<std::int64_t>& shape,
                        const float* data, std::size_t count) {
  add_bytes(name.data(), name.size());
  add_word(shape.size());
  for (std::int64_t d : shape) add_word(static_cast<std::uint64_t>(d));
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &data[i], sizeof(bits));
    add_word(bits);
  }
}

std::string Digest::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(state_));
  return buf;
}

}  // namespace distzo
