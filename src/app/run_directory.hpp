#pragma once
// The output directory of a run (rank 0's business): who may write it, which
// run it belongs to, which of its checkpoints are this run's.
//
//   LOCK     "host <name> pid <pid> job <SLURM_JOB_ID or ->": one writer at a
//            time. A second run into a locked directory stops; a lock left by
//            a dead process of this host, or by this very SLURM job (a
//            requeued job, maybe on another host), is taken over with a note.
//   run_id   16 hex digits naming the run that owns the directory; a fresh
//            run makes a new one, a resumed run keeps its checkpoint's. Every
//            checkpoint carries it (attribute run_id), so rotation deletes
//            only this run's checkpoints and `resume: latest` picks this
//            run's newest.

#include <cstdint>
#include <string>
#include <vector>

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

  /// Records `run_id` as the owner of the directory.
  void claim(const std::string& run_id);

 private:
  std::string dir_;
  std::string lock_;
};

/// A new run id: 16 hex digits from the system's random source.
std::string new_run_id();

/// The run that owns `dir` (its run_id file), or "" when none.
std::string owner_of(const std::string& dir);

}  // namespace distzo::app
