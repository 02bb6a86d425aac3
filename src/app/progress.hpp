#pragma once
// Progress of a long phase — an evaluation, loading θ, writing a checkpoint —
// at a bounded rate: a line once `interval` seconds have passed since the
// phase began or since its last line, and the last one (the phase complete)
// when any came before it. A phase shorter than the interval prints nothing.
// Progress is output only: nothing computed reads it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/parameter_registry.hpp"

namespace distzo::app {

/// Where a phase stands.
struct ProgressPoint {
  double done = 0, total = 0;  // in the phase's unit (examples, bytes)
  double seconds = 0;          // since the phase began (steady clock)
  /// Units per second so far; 0 before any time has passed.
  double rate() const { return seconds > 0 ? done / seconds : 0; }
  /// Seconds left at the rate so far; 0 before anything is done.
  double eta_seconds() const { return done > 0 ? seconds * (total - done) / done : 0; }
};

/// The default seconds between two progress lines.
constexpr double kProgressInterval = 10;
/// Seconds between two progress lines: kProgressInterval, or the
/// environment's DISTZO_PROGRESS_INTERVAL (an internal knob: 0 prints every
/// update, which the command-line tests use). Throws Error when it is not a
/// number >= 0. Read once per run, before its first collective phase.
double progress_interval();

class ProgressMeter {
 public:
  using Clock = std::chrono::steady_clock;
  using Print = std::function<void(const std::string& line)>;
  using Format = std::function<std::string(const ProgressPoint&)>;
  using Now = std::function<Clock::time_point()>;

  /// The phase begins now; `print` receives the lines `format` makes, at
  /// most one per `interval` seconds (progress_interval()) and the last.
  /// `now` is the clock (a test's own).
  ProgressMeter(Print print, Format format, double interval, Now now = Clock::now);

  /// `done` of `total` units: a line when one is due (done >= total: the
  /// last, printed when a line came before it or the interval is 0).
  void update(double done, double total);
  /// Lines printed so far.
  int lines() const { return lines_; }

 private:
  Print print_;
  Format format_;
  double interval_;
  Now now_;
  Clock::time_point start_, last_;
  int lines_ = 0;
  bool finished_ = false;
};

/// How far a pass over θ's tensors in id order has come, in bytes (the
/// elements at `bytes_per_element` of their id): through element `end` of
/// tensor `id`. On a node whose ranks go through their slices of each
/// tensor side by side, rank 0's position stands for the node's.
class TensorBytes {
 public:
  TensorBytes(const model::ParameterRegistry& registry,
              const std::function<std::size_t(std::uint32_t id)>& bytes_per_element);
  double through(std::uint32_t id, std::uint64_t end) const;
  double total() const { return before_.back(); }

 private:
  std::vector<double> before_;         // bytes of the tensors before id; [size]: all
  std::vector<double> element_bytes_;  // by id
};

}  // namespace distzo::app
