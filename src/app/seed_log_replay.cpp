#include "app/seed_log_replay.hpp"

#include <algorithm>

namespace distzo::app {

zo::GradientHistory history_before(const std::vector<io::SeedLogEntry>& log, std::int64_t end,
                                   const zo::MomentumSpec& momentum) {
  zo::GradientHistory history(momentum.history);
  for (std::int64_t i = std::max<std::int64_t>(0, end - momentum.history); i < end; ++i)
    history.push(log[static_cast<std::size_t>(i)].step, log[static_cast<std::size_t>(i)].g);
  return history;
}

std::int64_t apply_seed_log(zo::Engine& engine, const ZSpec& z, const zo::MomentumSpec& momentum,
                            int queries, const std::vector<io::SeedLogEntry>& log,
                            std::int64_t from, std::int64_t to, double weight_decay,
                            const std::function<void(std::int64_t row)>& after_row) {
  // The rows a momentum of step `from` reads besides its own.
  zo::GradientHistory history = history_before(log, from, momentum);
  std::int64_t updates = 0;
  for (std::int64_t i = from; i < to; ++i) {
    const io::SeedLogEntry& e = log[static_cast<std::size_t>(i)];
    history.push(e.step, e.g);
    if (!e.g.empty()) {  // a skipped step changed nothing
      PendingUpdate u = zo::pending_update(momentum, history, e.step, e.lr, weight_decay, queries);
      engine.flush(z, u);
      ++updates;
    }
    after_row(i);
  }
  return updates;
}

}  // namespace distzo::app
