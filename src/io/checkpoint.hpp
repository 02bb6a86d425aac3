#pragma once
// Checkpoints: a model file (HF-named tensors, config attributes) whose
// distzo_format is "checkpoint", plus the training state:
//
//   root attributes  step (steps completed), seed, queries, distribution,
//                    z_recipe (how Gaussian z is computed; 1 when absent),
//                    deck_yaml (the resolved deck), parameter_digest (of θ
//                    as written; core/digest.hpp), pending_* (the update not
//                    yet applied to θ, as its step's own row pending_g;
//                    distzo flushes before writing, so pending_active is 0
//                    in files it writes)
//   distzo/seed_log/{step, lr, loss} (n,) and g (n, q): one row per completed
//                    step, enough to replay θ from the initial model
//
// Written atomically (temporary file, then rename), so a crash never leaves a
// half-written ckpt-STEP.h5; by one rank, or by the ranks of a node together
// (write_checkpoint_parallel), into the same layout.
//
// A log-only checkpoint (log-STEP.h5, distzo_format "seed_log") is the same
// training state without θ's tensors and without the model's attributes:
// kilobytes. θ at its step is rebuilt from a full checkpoint of its run or
// from the run's base model plus the seed log's rows (app/log_checkpoints.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "core/perturbation.hpp"
#include "core/step_state.hpp"
#include "core/storage_dtype.hpp"
#include "io/model_file.hpp"
#include "model/batch.hpp"

namespace distzo::runtime {
class MpiCommunicator;
}  // namespace distzo::runtime

namespace distzo::io {

/// One row of the seed log.
struct SeedLogEntry {
  std::int64_t step = 0;
  double lr = 0;
  double loss = 0;
  std::vector<double> g;  // per query; empty when the step was skipped
};

struct TrainingState {
  std::int64_t step = 0;  // steps completed
  // The run's z; checkpoints from before the z_recipe attribute existed
  // used recipe 1.
  ZSpec z{0, Distribution::gaussian, ZRecipe::v1};
  int queries = 1;
  // The width the run's batches ran at (data.batch_width); checkpoints from
  // before trimming existed ran every batch at the dataset's full width.
  model::BatchWidth batch_width = model::BatchWidth::full;
  std::string deck_yaml;
  // The parameter digest of θ as written (core/digest.hpp): a keyed sum per
  // tensor, so the ranks that write slices can compute it slice by slice;
  // empty in checkpoints written before it existed.
  std::string parameter_digest;
  int nonfinite_streak = 0;       // consecutive non-finite steps before `step`; 0 when absent
  std::string run_id;             // the run that wrote it (app/run_directory.hpp); "" when absent
  std::string base_model_digest;  // parameter digest of the model the run started from
  std::string train_digest;       // io::dataset_digest of the training set
  std::string writer_version;     // distzo's version that wrote it; "" when not recorded
                                  // (written as this distzo's, whatever the field holds)
  // How the run stored θ (precision.storage, .rounding); the tensors are
  // written in it (float32, or float16 / bfloat16 datasets of θ's words).
  // Absent in checkpoints written before 2-byte storage existed: fp32 (those
  // of a 2-byte run then held its values decoded to float32).
  StorageDtype storage = StorageDtype::fp32;
  Rounding rounding = Rounding::stochastic;
  // The update of the last finished step, not yet applied to θ; its z is
  // the run's (stored once, above).
  PendingUpdate pending;
  std::vector<SeedLogEntry> seed_log;
};

/// Writes θ (from `tensors`, in canonical order, each in its stored form)
/// and the training state.
void write_checkpoint(const std::string& path, const ModelInfo& model, const TensorSource& tensors,
                      const TrainingState& state);

/// The same file, written by the ranks of `comm` together through parallel
/// HDF5 (MPI-IO, collective writes): each writes the pieces of θ `slices`
/// gives it (Placement II: its slices of the shared master), in
/// state.storage, so a large model is not funnelled through one rank.
/// Collective over `comm` (its collectives are not counted by a watchdog:
/// MpiCommunicator::unwatched); the file is renamed into place only after
/// every rank's part is known to be written (a collective check of the close
/// status), else every rank throws and the previous checkpoint stays.
void write_checkpoint_parallel(const std::string& path, const ModelInfo& model,
                               const runtime::MpiCommunicator& comm, const SliceSource& slices,
                               const TrainingState& state);

/// distzo_format of a log-only checkpoint.
inline constexpr const char* kSeedLogFormat = "seed_log";

/// Writes `state` alone (no tensors) as a log-only checkpoint at `path`,
/// atomically, by one process (rank 0: a few kilobytes).
void write_log_checkpoint(const std::string& path, const TrainingState& state);

/// The distzo_format attribute of an HDF5 file ("model", "checkpoint",
/// "seed_log", "dataset"), "" when it has none or cannot be opened.
std::string distzo_format(const std::string& path);

/// Reads the training state of a checkpoint or of a log-only checkpoint
/// (the tensors of a checkpoint: ModelReader).
TrainingState read_training_state(const std::string& path);

/// The run_id attribute of a checkpoint, "" when absent or unreadable.
std::string checkpoint_run_id(const std::string& path);

/// "ckpt-000100.h5" for step 100.
std::string checkpoint_name(std::int64_t step);
/// "log-000100.h5" for step 100: a log-only checkpoint.
std::string log_checkpoint_name(std::int64_t step);
/// Checkpoints in `dir` as (step, path), oldest first: PREFIX<digits>.h5
/// ("ckpt-" full ones, "log-" log-only ones).
std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(
    const std::string& dir, const std::string& prefix = "ckpt-");

}  // namespace distzo::io
