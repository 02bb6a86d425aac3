#include "app/progress.hpp"

#include <cstdlib>
#include <utility>

#include "core/error.hpp"

namespace distzo::app {

double progress_interval() {
  const char* text = std::getenv("DISTZO_PROGRESS_INTERVAL");
  if (text == nullptr || *text == '\0') return kProgressInterval;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  DISTZO_INPUT_REQUIRE(*end == '\0' && seconds >= 0,
                       "DISTZO_PROGRESS_INTERVAL: expected the seconds between two progress "
                       "lines (a number >= 0), got '"
                           << text << "'");
  return seconds;
}

ProgressMeter::ProgressMeter(Print print, Format format, double interval, Now now)
    : print_(std::move(print)),
      format_(std::move(format)),
      interval_(interval),
      now_(std::move(now)),
      start_(now_()),
      last_(start_) {}

void ProgressMeter::update(double done, double total) {
  if (finished_) return;
  const Clock::time_point t = now_();
  const bool last = done >= total;
  finished_ = last;
  const bool due = last ? (lines_ > 0 || interval_ <= 0)
                        : std::chrono::duration<double>(t - last_).count() >= interval_;
  if (!due) return;
  last_ = t;
  ++lines_;
  print_(format_({done, total, std::chrono::duration<double>(t - start_).count()}));
}

TensorBytes::TensorBytes(const model::ParameterRegistry& registry,
                         const std::function<std::size_t(std::uint32_t id)>& bytes_per_element) {
  before_.assign(registry.size() + 1, 0.0);
  element_bytes_.assign(registry.size(), 0.0);
  for (std::uint32_t id = 0; id < registry.size(); ++id) {
    element_bytes_[id] = static_cast<double>(bytes_per_element(id));
    before_[id + 1] = before_[id] + element_bytes_[id] * static_cast<double>(registry[id].numel());
  }
}

double TensorBytes::through(std::uint32_t id, std::uint64_t end) const {
  return before_.at(id) + element_bytes_.at(id) * static_cast<double>(end);
}

}  // namespace distzo::app
