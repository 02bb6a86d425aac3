#pragma once
// The learning-rate schedules a deck names (optim.schedule) and zo/
// implements (zo/lr_schedule.hpp): here, below both, so that io's deck
// structs and zo's schedule hold the same enum.

namespace distzo {

/// The schedule after warm-up: constant, or a linear or half-cosine decay to 0.
enum class ScheduleKind { constant, linear, cosine };

/// "constant" | "linear" | "cosine" (the spelling of decks).
inline const char* to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::constant:
      return "constant";
    case ScheduleKind::linear:
      return "linear";
    case ScheduleKind::cosine:
      return "cosine";
  }
  return "?";
}

}  // namespace distzo
