#include "app/seed_log_replay.hpp"

namespace distzo::app {

std::int64_t apply_seed_log(zo::Engine& engine, const ZSpec& z,
                            const std::vector<io::SeedLogEntry>& log, std::int64_t from,
                            std::int64_t to, double weight_decay,
                            const std::function<void(std::int64_t row)>& after_row) {
  std::int64_t updates = 0;
  for (std::int64_t i = from; i < to; ++i) {
    const io::SeedLogEntry& e = log[static_cast<std::size_t>(i)];
    if (!e.g.empty()) {  // a skipped step changed nothing
      PendingUpdate u;
      u.active = true;
      u.step = e.step;
      u.lr = e.lr;
      u.weight_decay = weight_decay;
      u.g = e.g;
      engine.flush(z, u);
      ++updates;
    }
    after_row(i);
  }
  return updates;
}

}  // namespace distzo::app
