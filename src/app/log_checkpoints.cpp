#include "app/log_checkpoints.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <new>

#include "app/format.hpp"
#include "app/progress.hpp"
#include "app/seed_log_replay.hpp"
#include "core/error.hpp"
#include "core/file_system.hpp"
#include "io/model_file.hpp"

namespace distzo::app {

namespace {

/// Why the full checkpoint of state `full` is not where the run of the
/// log-only checkpoint `log` stood at full.step ("" when it is): another
/// run, a pending update, another storage, or a seed log the log does not
/// continue row for row (the run was resumed from an older file and went
/// another way).
std::string not_continued(const io::TrainingState& full, const io::TrainingState& log) {
  if (full.run_id != log.run_id) return "it is another run's";
  if (full.step > log.step) return "it is past the log's step";
  if (full.pending.active) return "it holds a pending update";
  if (full.storage != log.storage)
    return std::string("it holds θ in ") + to_string(full.storage) + ", the log's run in " +
           to_string(log.storage);
  for (std::int64_t i = 0; i < full.step; ++i) {
    const io::SeedLogEntry& a = full.seed_log[static_cast<std::size_t>(i)];
    const io::SeedLogEntry& b = log.seed_log[static_cast<std::size_t>(i)];
    if (a.step != b.step || a.lr != b.lr || a.loss != b.loss || a.g != b.g)
      return "its seed log differs from the log's at step " + std::to_string(i + 1) +
             " (the run went another way after a resume from an older file)";
  }
  return "";
}

}  // namespace

std::string log_checkpoint_problem(const std::string& path) {
  try {
    // Reading the seed log whole checks each dataset against its checksum,
    // and the attributes against theirs.
    const io::TrainingState state = io::read_training_state(path);
    if (state.parameter_digest.empty())
      return "it records no parameter_digest, against which θ rebuilt at its step is checked";
    return "";
  } catch (const Error& e) {
    return e.what();
  } catch (const std::bad_alloc&) {  // sizes in damaged metadata
    return "reading it needs more memory than this machine has (its sizes are damaged?)";
  }
}

ResumeChoice resume_log(const std::string& log, const std::string& model_path,
                        const std::string& verified, std::vector<std::string>& notes) {
  const std::string problem = log_checkpoint_problem(log);
  DISTZO_INPUT_REQUIRE(problem.empty(), "the log-only checkpoint "
                                            << log << " does not read back whole (" << problem
                                            << ")");
  const io::TrainingState state = io::read_training_state(log);
  const std::string dir = directory_of(log);
  const auto full = io::list_checkpoints(dir);  // oldest first
  for (auto it = full.rbegin(); it != full.rend(); ++it) {
    if (it->first > state.step || state.run_id.empty() ||
        io::checkpoint_run_id(it->second) != state.run_id)
      continue;
    std::string why;
    std::int64_t step = 0;
    try {
      const io::TrainingState saved = io::read_training_state(it->second);
      step = saved.step;
      why = not_continued(saved, state);
    } catch (const Error& e) {
      why = e.what();
    }
    // Every tensor read and checked, unless the caller just did.
    if (why.empty() && it->second != verified) why = checkpoint_problem(it->second);
    if (why.empty()) return {log, it->second, step, ""};
    notes.push_back("warning: " + it->second + " is not θ's source for " + log + ": " + why);
  }
  // No full checkpoint: θ from the run's base model.
  DISTZO_INPUT_REQUIRE(!state.base_model_digest.empty(),
                       log << " records no base_model_digest, and no full checkpoint of its run at "
                              "or before step "
                           << state.step << " in " << dir
                           << " reads back whole: θ at its step cannot be rebuilt");
  const std::string found = io::ModelReader(model_path).digest();
  DISTZO_INPUT_REQUIRE(
      found == state.base_model_digest,
      "θ at step " << state.step << " of the log-only checkpoint " << log
                   << " is rebuilt from its run's base model, of parameter digest "
                   << state.base_model_digest << " (no full checkpoint of run " << state.run_id
                   << " at or before step " << state.step << " in " << dir
                   << " reads back whole), but model.path " << model_path << " has digest " << found
                   << ": not that model. Set model.path to the model the run started from, or "
                      "resume from a full checkpoint (checkpoint.resume: PATH)");
  return {log, model_path, 0, found};
}

ResumeChoice latest_log(const io::Deck& deck, const std::string& owner,
                        const std::string& latest_full, std::vector<std::string>& passed_over,
                        std::vector<std::string>& notes) {
  // Only log-only checkpoints past the newest full one: at the same step
  // the full one is the quicker resume of the same state.
  const std::int64_t after = latest_full.empty() ? -1 : io::read_training_state(latest_full).step;
  const auto logs = io::list_checkpoints(deck.output.dir, "log-");  // oldest first
  for (auto it = logs.rbegin(); it != logs.rend() && it->first > after; ++it) {
    const std::string id = io::checkpoint_run_id(it->second);
    if (!owner.empty() && !id.empty() && id != owner) continue;
    const std::string problem = log_checkpoint_problem(it->second);
    if (!problem.empty()) {
      passed_over.push_back(it->second + ": " + problem);
      continue;
    }
    return resume_log(it->second, deck.model.path, latest_full, notes);
  }
  return {};
}

std::string rebuild_at_log_step(zo::Engine& engine, const ResumeChoice& choice,
                                const io::TrainingState& log, const ZSpec& z,
                                const zo::MomentumSpec& momentum, double weight_decay,
                                const std::function<void(const std::string&)>& print,
                                double progress_seconds) {
  using Clock = std::chrono::steady_clock;
  // A pending update (not in files distzo writes) is the log's last row, not
  // yet in θ nor in its digest: the run applies it with its next step.
  const std::int64_t to = log.step - (log.pending.active ? 1 : 0);
  const std::int64_t from = choice.theta_step;
  DISTZO_INPUT_REQUIRE(from <= to, choice.theta_from << " is at step " << from << ", past "
                                                     << choice.path << "'s step " << to);
  ProgressMeter meter(
      print,
      [&](const ProgressPoint& p) {
        char line[256];
        std::snprintf(line, sizeof(line), "%.0f/%.0f steps, %.1f steps/s, ETA %s", p.done, p.total,
                      p.rate(), format_duration(p.eta_seconds()).c_str());
        return "replaying the seed log of " + choice.path + ": " + line;
      },
      progress_seconds);
  const Clock::time_point t0 = Clock::now();
  const std::int64_t updates = apply_seed_log(engine, z, momentum, log.queries, log.seed_log, from,
                                              to, weight_decay, [&](std::int64_t row) {
                                                meter.update(static_cast<double>(row + 1 - from),
                                                             static_cast<double>(to - from));
                                              });
  const std::string digest = engine.parameter_digest();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  DISTZO_INPUT_REQUIRE(digest == log.parameter_digest,
                       "θ rebuilt for "
                           << choice.path << " — loaded from " << choice.theta_from << " (step "
                           << from << ") with its seed log's steps " << from + 1 << " to " << to
                           << " applied — has digest " << digest << ", but " << choice.path
                           << " recorded " << log.parameter_digest
                           << ": not resumed. (A run resumed with a changed optim.seed, "
                              "optim.distribution or optim.weight_decay after step "
                           << from
                           << " does not replay: its files record the z and decay of its last "
                              "resume for every step. Resume from a full checkpoint of the run "
                              "instead, checkpoint.resume: PATH.)");
  char timing[64];
  std::snprintf(timing, sizeof(timing), "%.3f s", seconds);
  const std::string source = !choice.base_digest.empty()
                                 ? "the run's base model " + choice.theta_from
                                 : choice.theta_from + " (step " + std::to_string(from) + ")";
  return "θ rebuilt for " + choice.path + ": " + source + ", then " +
         (to > from ? (to == from + 1
                           ? "step " + std::to_string(to)
                           : "steps " + std::to_string(from + 1) + " to " + std::to_string(to)) +
                          " of its seed log replayed (" + std::to_string(updates) + " updates, " +
                          std::to_string(to - from - updates) + " skipped) in " + timing
                    : std::string("no step of its seed log to replay")) +
         ": digest " + digest + ", as recorded";
}

}  // namespace distzo::app
