#pragma once
// Learning-rate schedules, the same formulas as Hugging Face's
// get_{constant,linear,cosine}_schedule_with_warmup, so decks port over.

#include <cstdint>

#include "core/lr_schedule_kind.hpp"

namespace distzo::zo {

using distzo::ScheduleKind;

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::constant;
  double peak_lr = 0;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 0;

  /// Learning rate of step `step` (0-based): linear warm-up from 0 over
  /// warmup_steps, then constant, linear decay to 0, or half-cosine to 0.
  double at(std::int64_t step) const;
};

}  // namespace distzo::zo
