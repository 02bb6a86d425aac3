#pragma once
// The progress points of a run, which every rank passes in the same order:
// the trainer beats, a watchdog (runtime/watchdog.hpp) listens and tells
// which rank stopped beating.

#include <cstdint>

namespace distzo::runtime {

class Heartbeat {
 public:
  virtual ~Heartbeat() = default;
  /// A phase begins, the same on every rank: `what` (a string literal,
  /// "the start of step") and `step` (when >= 0) name it.
  virtual void phase(const char* what, std::int64_t step = -1) = 0;
  /// A phase that ends a step.
  virtual void step_finished(const char* what, std::int64_t step) = 0;
  /// Liveness within a long phase (an evaluation batch, a checkpoint tensor).
  virtual void alive() = 0;
};

}  // namespace distzo::runtime
