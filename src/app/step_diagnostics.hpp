#pragma once
// What a run log warns about the estimator: an eps too small for float32
// weights (read from the deck, before the run), and steps whose projected
// gradient is exactly 0 (read from the trainer's step reports: the first one
// warns, the count goes on the run's last line).

#include <cstdint>
#include <string>

#include "zo/trainer.hpp"

namespace distzo::app {

/// The warning for optim.eps = `eps` near float32's resolution, or "".
std::string eps_warning(double eps);

/// Counts the steps whose every g was exactly 0 (an update that did nothing).
class ZeroGradientSteps {
 public:
  /// `eps`: optim.eps, which the warning names.
  explicit ZeroGradientSteps(double eps) : eps_(eps) {}
  /// Counts `report`; the warning to print for the first such step, else "".
  std::string step(const zo::StepReport& report);
  std::int64_t count() const { return count_; }

 private:
  double eps_;
  std::int64_t count_ = 0;
};

}  // namespace distzo::app
