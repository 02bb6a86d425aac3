#pragma once
// What a run leaves in output.dir, written by rank 0 only:
//   metrics.csv  one row per step
//   eval.csv     one row per evaluation
//   run.log      the progress lines printed on stdout
// Steps are counted from 1 (row n = the n-th step completed). On resume, rows
// past the checkpoint's step are dropped so each file reads
// as one uninterrupted run.

#include <cstdint>
#include <fstream>
#include <string>

namespace distzo::app {

struct StepRow {
  std::int64_t step = 0;
  double loss = 0, loss_plus = 0, loss_minus = 0, g = 0, lr = 0;
  std::int64_t tokens = 0;  // non-padding tokens in the global batch
  double step_seconds = 0;
  bool skipped = false;     // non-finite loss: no update
};

struct EvalRow {
  std::int64_t step = 0;
  double loss = 0;
  double accuracy = -1;  // < 0: not a classification set (written empty)
  std::int64_t examples = 0;
};

class RunOutputs {
 public:
  /// `active` is false on every rank but 0: then all calls but print() on
  /// rank 0 are no-ops. `resume_step` >= 0 (steps the checkpoint completed)
  /// keeps the rows of steps 1..resume_step.
  RunOutputs(const std::string& dir, bool active, std::int64_t resume_step);

  void step(const StepRow& row);
  void eval(const EvalRow& row);
  /// A progress line: stdout and run.log.
  void print(const std::string& line);
  /// A line for run.log only (the reason a run ended, which main prints on stderr).
  void log(const std::string& line);
  bool active() const { return active_; }

 private:
  bool active_;
  std::ofstream metrics_, eval_, log_;
};

}  // namespace distzo::app
