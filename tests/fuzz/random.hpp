#pragma once
// The harness's one source of randomness: SplitMix64 (Steele, Lea, Flood
// 2014). Execution i of a run seeded S draws from Random(S, i) alone, so a
// fixed seed gives the same mutations whatever the time budget, the speed of
// the machine or the targets run before it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace distzo::fuzz {

class Random {
 public:
  Random(std::uint64_t seed, std::uint64_t stream)
      : state_(seed ^ (stream * 0xD1B54A32D192ED03ull)) {
    next();  // mixes the stream into the state before the first draw
  }

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, n); n > 0. (The modulo bias is irrelevant here.)
  std::uint64_t below(std::uint64_t n) { return next() % n; }

  /// True with probability percent / 100.
  bool chance(unsigned percent) { return below(100) < percent; }

  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }

 private:
  std::uint64_t state_;
};

}  // namespace distzo::fuzz
