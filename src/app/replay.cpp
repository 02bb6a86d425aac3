#include "app/replay.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "app/deck_config.hpp"
#include "app/options.hpp"
#include "app/seed_log_replay.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "io/model_file.hpp"
#include "runtime/parameter_store.hpp"
#include "zo/engine.hpp"
#include "zo/momentum.hpp"

namespace distzo::app {

namespace {

const char* const kUsage =
    "usage: distzo replay BASE.h5 SOURCE.h5 -o OUT.h5 [--steps N]\n"
    "  θ after step N (default: SOURCE's last) rebuilt from the base model BASE.h5 and the\n"
    "  seed log of SOURCE.h5, a checkpoint (ckpt-STEP.h5) or a log-only one (log-STEP.h5),\n"
    "  with no forward pass: every update is a function of (seed, steps, g, lr, weight\n"
    "  decay, momentum), whatever the estimator and the layout of the run\n"
    "  (docs/perturbation.md). OUT.h5 is a checkpoint of step N with\n"
    "  SOURCE's training state up to it; at SOURCE's own step its digest must equal the\n"
    "  one SOURCE recorded, and replay fails otherwise.";

using Clock = std::chrono::steady_clock;

/// The steps of `log` up to `steps` are 0, 1, ..., steps - 1, in order.
void check_log(const io::TrainingState& source, std::int64_t steps, const std::string& path) {
  DISTZO_INPUT_REQUIRE(static_cast<std::int64_t>(source.seed_log.size()) >= steps,
                       path << ": its seed log holds " << source.seed_log.size()
                            << " steps, not the " << steps << " to replay");
  for (std::int64_t i = 0; i < steps; ++i)
    DISTZO_INPUT_REQUIRE(source.seed_log[static_cast<std::size_t>(i)].step == i,
                         path << ": row " << i << " of its seed log is step "
                              << source.seed_log[static_cast<std::size_t>(i)].step
                              << "; a log to replay holds every step from 0 in order");
}

/// The non-finite steps that end the first `steps` of the log (skipped: no g).
int trailing_skipped(const io::TrainingState& source, std::int64_t steps) {
  int streak = 0;
  for (std::int64_t i = steps; i-- > 0 && source.seed_log[static_cast<std::size_t>(i)].g.empty();)
    ++streak;
  return streak;
}

/// SOURCE's tensors and architecture, when it is a checkpoint; a model is
/// refused (naming BASE when the two look swapped).
std::unique_ptr<io::ModelReader> open_source(const std::string& source_path,
                                             const std::string& base_path) {
  auto source = std::make_unique<io::ModelReader>(source_path);
  if (source->info().kind != "checkpoint") {
    const bool swapped = io::distzo_format(base_path) == "checkpoint" ||
                         io::distzo_format(base_path) == io::kSeedLogFormat;
    DISTZO_INPUT_FAIL("replay: " << source_path
                                 << " is a model, not a checkpoint: it has no seed log"
                                 << (swapped ? " (and " + base_path +
                                                   " is a checkpoint: BASE.h5 comes first, "
                                                   "then SOURCE.h5)"
                                             : std::string()));
  }
  return source;
}

}  // namespace

const char* replay_usage() { return kUsage; }

int replay(const std::vector<std::string>& args) {
  const Options o("replay", args, {"-o", "--steps"}, {}, kUsage);
  DISTZO_INPUT_REQUIRE(o.positional().size() == 2, "replay: BASE.h5 and SOURCE.h5 expected\n"
                                                       << kUsage);
  DISTZO_INPUT_REQUIRE(o.has("-o"), "replay: -o OUT.h5 missing\n" << kUsage);
  const std::string& base_path = o.positional()[0];
  const std::string& source_path = o.positional()[1];
  const std::string out_path = o.text("-o", "");

  // OUT must not be an input: the replay would destroy the file it reads
  // (a checkpoint's seed log past N, or the run's base model).
  for (const std::string& input : {base_path, source_path}) {
    std::error_code ec;
    DISTZO_INPUT_REQUIRE(!std::filesystem::equivalent(out_path, input, ec),
                         "replay: -o " << out_path << " is " << input
                                       << ", an input of the replay; write to another file");
  }
  // A checkpoint carries the architecture; a log-only checkpoint has only
  // the digest of its run's base model, which BASE must match.
  const bool log_only = io::distzo_format(source_path) == io::kSeedLogFormat;
  std::unique_ptr<io::ModelReader> source_file;
  if (!log_only) source_file = open_source(source_path, base_path);
  const io::TrainingState source = io::read_training_state(source_path);
  const std::int64_t steps = o.integer("--steps", source.step, 0);
  DISTZO_INPUT_REQUIRE(steps <= source.step, "replay: --steps " << steps << " is past "
                                                                << source_path << "'s step "
                                                                << source.step);
  check_log(source, steps, source_path);
  const io::ModelReader base(base_path);
  DISTZO_INPUT_REQUIRE(
      !source_file || base.info().config == source_file->info().config,
      "replay: " << base_path << " is another architecture than " << source_path << "'s");
  DISTZO_INPUT_REQUIRE(!log_only || !source.base_model_digest.empty(),
                       "replay: " << source_path
                                  << " records no base_model_digest: its base model cannot be "
                                     "checked");
  const std::string base_digest = base.digest();
  DISTZO_INPUT_REQUIRE(source.base_model_digest.empty() || base_digest == source.base_model_digest,
                       "replay: " << source_path << "'s run started from a model of digest "
                                  << source.base_model_digest << "; " << base_path << "'s is "
                                  << base_digest << ": not its base model");
  const io::Deck deck = io::parse_deck(source.deck_yaml, source_path + " (its deck)");
  // OUT is a checkpoint of SOURCE's model: a log-only SOURCE's is BASE.
  const io::ModelInfo& model = source_file ? source_file->info() : base.info();

  // θ as the run held it: its storage and rounding, loaded as a run loads its model.
  const model::ModelConfig& config = model.config;
  const model::ParameterRegistry& registry = model.registry;
  runtime::PlacementConfig placement;
  placement.storage = source.storage;
  placement.rounding = source.rounding;
  runtime::ParameterStore store(registry, placement);
  store.fill([&](std::uint32_t id, real* dst) { base.read(id, dst); });
  // The flush of a run: the same kernel and walk as the updates fused into its steps.
  zo::Engine engine(config, store, zo::EvaluationPlan::make(1, 1, 0),
                    model::BatchShape{model::Task::causal_lm, 1, 1, 0});

  const Clock::time_point t0 = Clock::now();
  Clock::time_point last_line = t0;
  // Every update as the trainer built it: from the log's last rows, with the
  // run's momentum (plain SGD: the step's own row).
  ZSpec z = source.z;
  z.blocks = block_choice(deck, registry.num_blocks());
  const std::int64_t updates = apply_seed_log(
      engine, z, {deck.optim.momentum, deck.optim.history}, source.queries, source.seed_log, 0,
      steps, deck.optim.weight_decay, [&](std::int64_t i) {
        if (Clock::now() - last_line > std::chrono::seconds(10)) {
          last_line = Clock::now();
          std::cout << "replay: step " << i + 1 << " of " << steps << "\n" << std::flush;
        }
      });
  const std::string digest = engine.parameter_digest();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  io::TrainingState state = source;
  state.step = steps;
  state.seed_log.resize(static_cast<std::size_t>(steps));
  state.parameter_digest = digest;
  state.pending = PendingUpdate();
  state.nonfinite_streak = trailing_skipped(source, steps);
  io::write_checkpoint(
      out_path, model, [&](const io::TensorSink& sink) { store.visit_stored(sink); }, state);
  const double parameters = static_cast<double>(registry.total_elements());
  char timing[96];
  std::snprintf(timing, sizeof(timing), "%.3f s (%.3g parameter-updates/s)", seconds,
                seconds > 0 ? static_cast<double>(updates) * parameters / seconds : 0.0);
  std::cout << "replay: " << steps << " steps of " << source_path << " (" << updates << " updates, "
            << steps - updates << " skipped) onto " << base_path << " in " << timing
            << ": θ digest " << digest << ", written to " << out_path << "\n";
  if (steps == source.step && !source.parameter_digest.empty()) {
    DISTZO_REQUIRE(digest == source.parameter_digest,
                   "replay: θ after step " << steps << " has digest " << digest << ", but "
                                           << source_path << " recorded " << source.parameter_digest
                                           << " (a run resumed with a changed optim.seed, "
                                              "optim.distribution or optim.weight_decay is not "
                                              "replayable: its checkpoint records the z of its "
                                              "last resume for every step, and the decay not "
                                              "at all)");
    std::cout << "replay: the digest equals the one " << source_path << " recorded\n";
  }
  return 0;
}

}  // namespace distzo::app
