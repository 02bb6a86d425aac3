#include "zo/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace distzo::zo {

double LrSchedule::at(std::int64_t step) const {
  if (step < warmup_steps)
    return peak_lr * static_cast<double>(step) /
           static_cast<double>(std::max<std::int64_t>(1, warmup_steps));
  if (kind == ScheduleKind::constant) return peak_lr;
  const double progress =
      static_cast<double>(step - warmup_steps) /
      static_cast<double>(std::max<std::int64_t>(1, total_steps - warmup_steps));
  if (kind == ScheduleKind::linear) return peak_lr * std::max(0.0, 1.0 - progress);
  const double pi = 3.14159265358979323846;
  return peak_lr * std::max(0.0, 0.5 * (1.0 + std::cos(pi * progress)));
}

}  // namespace distzo::zo
