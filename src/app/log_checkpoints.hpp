#pragma once
// Resuming from a log-only checkpoint (log-STEP.h5: the training state and
// the seed log, no θ; docs/formats.md). θ at its step is rebuilt: loaded
// from the newest full checkpoint of the same run (run_id) at or before that
// step in the log's directory whose seed log the log continues, else from
// the run's base model (model.path, checked against base_model_digest),
// then the log's rows after that step are applied by the engine's flush
// (app/seed_log_replay.hpp) and the result checked against the log's
// parameter_digest before training goes on.

#include <functional>
#include <string>
#include <vector>

#include "app/run_directory.hpp"
#include "core/perturbation.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "zo/engine.hpp"
#include "zo/momentum.hpp"

namespace distzo::app {

/// Whether the log-only checkpoint at `path` reads back whole: its
/// attributes and seed log verify against their checksums and parse, and it
/// records θ's digest. "" if so, else what is wrong.
std::string log_checkpoint_problem(const std::string& path);

/// The resume of the log-only checkpoint `log`: where θ comes from (see
/// above; `verified`, when not "", is a full checkpoint already read back
/// whole). A full checkpoint passed over as damaged is noted in `notes`.
/// Throws distzo::InputError when `log` does not read back whole, and when
/// only the base model is left and model_path is not it (naming both digests).
ResumeChoice resume_log(const std::string& log, const std::string& model_path,
                        const std::string& verified, std::vector<std::string>& notes);

/// `resume: latest` among log-only checkpoints: the newest of the run
/// `owner` (another run's are skipped) whose step is past the full
/// checkpoint `latest_full` ("" when none) and that reads back whole, with
/// θ's source; path "" when there is none. Each broken one tried goes to
/// `passed_over` as "PATH: what is wrong".
ResumeChoice latest_log(const io::Deck& deck, const std::string& owner,
                        const std::string& latest_full, std::vector<std::string>& passed_over,
                        std::vector<std::string>& notes);

/// Brings θ, loaded from choice.theta_from, to the step of the log-only
/// checkpoint choice.path, whose training state (as read from it) is `log`:
/// its rows from choice.theta_step on, applied with the z, momentum and
/// weight decay its run drew them with (`z`, `momentum`, `weight_decay`: the
/// log's, not a resuming deck's), then θ's digest checked against the log's parameter_digest.
/// Collective over the engine's ranks; `print` receives the progress lines
/// of a long replay. Returns the run.log line saying where θ came from;
/// throws distzo::Error, on every rank alike, when the digest differs.
std::string rebuild_at_log_step(zo::Engine& engine, const ResumeChoice& choice,
                                const io::TrainingState& log, const ZSpec& z,
                                const zo::MomentumSpec& momentum, double weight_decay,
                                const std::function<void(const std::string&)>& print,
                                double progress_seconds);

}  // namespace distzo::app
