#include "core/digest.hpp"

#include <cstdio>

namespace distzo {

ParameterDigest::ParameterDigest() { absorb(kDigestFirstWord); }

void ParameterDigest::add_tensor(const std::string& name, const std::vector<std::int64_t>& shape,
                                 std::uint64_t element_sum) {
  // Length-prefixed fields: the word sequence of a record parses one way only.
  absorb(name.size());
  for (const char c : name) absorb(static_cast<unsigned char>(c));
  absorb(shape.size());
  std::uint64_t count = 1;
  for (const std::int64_t d : shape) {
    absorb(static_cast<std::uint64_t>(d));
    count *= static_cast<std::uint64_t>(d);
  }
  absorb(count);
  absorb(element_sum);
  ++tensors_;
}

std::uint64_t ParameterDigest::value() const { return digest::mix(state_ ^ tensors_); }

std::string hex16(std::uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string ParameterDigest::hex() const { return hex16(value()); }

}  // namespace distzo
