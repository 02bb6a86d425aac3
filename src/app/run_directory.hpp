#pragma once
// The output directory of a run (rank 0's business): who may write it, which
// run it belongs to, which of its checkpoints are this run's.
//
//   LOCK     "host <name> pid <pid> job <SLURM_JOB_ID or ->": one writer at a
//            time. A second run into a locked directory stops; a lock left by
//            a dead process of this host, or by this very SLURM job (a
//            requeued job, maybe on another host), is taken over with a note,
//            and the temporary checkpoints (ckpt-*.h5.tmp.PID) of a killed
//            run are removed. A run a second signal ends removes its own
//            lock (app/stop_signal.hpp).
//   run_id   16 hex digits naming the run that owns the directory; a fresh
//            run makes a new one, a resumed run keeps its checkpoint's. Every
//            checkpoint carries it (attribute run_id), so rotation deletes
//            only this run's checkpoints and `resume: latest` picks this
//            run's newest.
//
// RunCheckpoints (torchtitan's CheckpointManager) owns the checkpoints in
// it, full (ckpt-STEP.h5) and log-only (log-STEP.h5): writing one, rotating
// the older ones; choose_resume says which one a resume continues.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/unlinked_on_signal.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"
#include "io/model_file.hpp"
#include "runtime/mesh.hpp"
#include "runtime/mpi_communicator.hpp"
#include "runtime/parameter_store.hpp"

namespace distzo::app {

class RunDirectory {
 public:
  /// Creates `dir` if needed and locks it; throws distzo::Error when another
  /// live run holds it. `notes` receives what run.log should say (a lock
  /// taken over, leftover temporary checkpoints removed).
  RunDirectory(const std::string& dir, std::vector<std::string>& notes);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  /// Records `run_id` as the owner of the directory. The logs of a
  /// previous owner (metrics.csv, eval.csv, run.log, deck.resolved.yaml) are moved aside to
  /// NAME.run-<its id>.EXT first, with a note: a run never truncates another's.
  void claim(const std::string& run_id, std::vector<std::string>& notes);

 private:
  std::string dir_;
  std::string lock_;
  std::optional<UnlinkedOnSignal> lock_on_signal_;  // a second signal removes the lock too
};

/// A new run id: 16 hex digits from the system's random source.
std::string new_run_id();

/// The run that owns `dir` (its run_id file), or "" when none.
std::string owner_of(const std::string& dir);

/// Whether the checkpoint at `path` reads back whole: its tensors open, its
/// training state parses, and their digest equals the one it records. "" if
/// so, else what is wrong.
std::string checkpoint_problem(const std::string& path);

/// What a run continues, and where its θ comes from.
struct ResumeChoice {
  std::string path;  // the checkpoint or log-only checkpoint continued; "" = a fresh start
  // The file θ is loaded from: `path` for a checkpoint; for a log-only one a
  // full checkpoint of its run at or before its step, or the run's base
  // model (model.path); "" for a fresh start.
  std::string theta_from;
  std::int64_t theta_step = 0;  // the steps theta_from holds (0: the base model)
  std::string base_digest;      // model.path's parameter digest, when choosing computed it
  bool log_only() const { return !path.empty() && theta_from != path; }
};

/// checkpoint.resume (rank 0): an explicit path (verified), or with `latest`
/// the newest checkpoint or log-only checkpoint of the run that owns
/// output.dir that reads back whole (older ones are tried when the newest
/// is truncated or corrupt, each one passed over a note; a log-only one
/// with θ's source, app/log_checkpoints.hpp); path "" for a fresh start.
/// Throws distzo::Error.
ResumeChoice choose_resume(const io::Deck& deck, std::vector<std::string>& notes);

/// Who writes a run's checkpoints: with a sliced master shared by the ranks
/// of a node and parallel HDF5, the ranks of rank 0's node together (each its
/// own slices); else rank 0 alone. The other nodes hold the same θ.
struct CheckpointWriters {
  bool root = true;                                // this rank is world rank 0
  const runtime::MpiCommunicator* node = nullptr;  // rank 0's node, when it writes together
  /// The ranks that write together, 0 when rank 0 writes alone.
  int parallel_size() const { return node != nullptr ? node->size() : 0; }
  /// Collective over the mesh.
  static CheckpointWriters choose(const runtime::Mesh& mesh, const runtime::ParameterStore& store);
};

/// The checkpoints ckpt-STEP.h5 in a run's output directory.
class RunCheckpoints {
 public:
  /// `keep`: how many of the run's newest stay after a write.
  RunCheckpoints(std::string dir, int keep, CheckpointWriters writers = {});

  /// The newest checkpoint of the run `owner` that reads back whole ("" when
  /// none does); another run's are skipped, one whose id cannot be read or
  /// any with no `owner` is tried. `passed_over` receives each broken one
  /// tried, newest first, as "PATH: what is wrong".
  std::string latest_good(const std::string& owner, std::vector<std::string>& passed_over) const;

  /// Where the checkpoint of `step` is written: DIR/ckpt-STEP.h5.
  std::string path(std::int64_t step) const;
  /// Where the log-only checkpoint of `step` is written: DIR/log-STEP.h5.
  std::string log_path(std::int64_t step) const;

  /// Where a write put the checkpoint, and where another run's checkpoint
  /// of the same step went ("" when there was none).
  struct Written {
    std::string path, kept_aside;
  };
  /// Writes θ (from `store`) and `state` as the checkpoint of step
  /// state.step. Collective over the writers; `before_piece(id, first)` is
  /// called before each tensor or slice (elements from `first` of tensor id)
  /// this rank writes. Another run's checkpoint of that step is first moved
  /// aside to ckpt-STEP.run-<its id>.h5. Then rank 0 reads the new one back
  /// whole (else throws distzo::Error, the older ones kept) and removes all
  /// but the `keep` newest of the run state.run_id: another run's files are
  /// not ours.
  Written write(
      const io::ModelInfo& model, const runtime::ParameterStore& store,
      const io::TrainingState& state,
      const std::function<void(std::uint32_t id, std::uint64_t first)>& before_piece) const;

  /// Rank 0 alone: writes `state` (θ's digest in state.parameter_digest,
  /// no tensors) as the log-only checkpoint of step state.step, moving
  /// another run's file of that step aside as write() does, reads it back
  /// (else throws distzo::Error, the older ones kept) and removes all but
  /// the `keep` newest log-only checkpoints of the run state.run_id.
  Written write_log(const io::TrainingState& state) const;

  const CheckpointWriters& writers() const { return writers_; }

 private:
  void verify_and_rotate(const std::string& path, const std::string& run_id) const;
  /// Another run's file at `path` (two runs, one directory) moved aside to
  /// STEM.run-<its id>.h5, where resume and rotation do not take it for
  /// ours; the new name, or "" when there was none (or its run cannot be
  /// read: damaged, replaced as before).
  std::string keep_aside(const std::string& path, const std::string& run_id) const;
  /// Removes all but the `keep` newest files PREFIX<step>.h5 of `run_id`.
  void rotate(const std::string& prefix, const std::string& run_id) const;

  std::string dir_;
  int keep_;
  CheckpointWriters writers_;
};

}  // namespace distzo::app
