#pragma once
// What a run leaves in output.dir, written by rank 0 only:
//   metrics.csv  one row per step
//   eval.csv     one row per evaluation
//   run.log      the lines printed on stdout (and why a run ended), each
//                line of it stamped with the UTC time it was written:
//                "2026-12-06T22:41:07.123Z step 10/100 ..." (core/log_line.hpp)
// Steps are counted from 1 (row n = the n-th step completed). On resume, rows
// past the checkpoint's step are dropped so each file reads
// as one uninterrupted run. The lines of run.log are made below.

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "app/progress.hpp"
#include "core/block_choice.hpp"
#include "core/memory.hpp"
#include "io/dataset.hpp"
#include "io/deck.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/mesh.hpp"
#include "runtime/parameter_store.hpp"
#include "runtime/slice_exchange.hpp"

namespace distzo::app {

struct StepRow {
  std::int64_t step = 0;
  // Means over the step's directions; loss_minus only for two-sided steps
  // (a one-sided step writes it empty: its loss is L(θ) itself).
  double loss = 0, loss_plus = 0, g = 0, lr = 0;
  std::optional<double> loss_minus;
  std::int64_t tokens = 0;  // non-padding tokens in the global batch
  double step_seconds = 0;
  bool skipped = false;  // non-finite loss: no update
};

struct EvalRow {
  std::int64_t step = 0;
  double loss = 0;
  double accuracy = -1;  // < 0: not a classification set (written empty)
  std::int64_t examples = 0;
};

/// Lines printed before run.log opens (loading θ comes before the output
/// directory is claimed): on stdout at once, and held, stamped with the time
/// they were printed, for RunOutputs::log_held. Inactive (every rank but 0):
/// nothing is printed or held.
class HeldLines {
 public:
  explicit HeldLines(bool active) : active_(active) {}
  void print(const std::string& line);
  const std::string& stamped() const { return stamped_; }

 private:
  bool active_;
  std::string stamped_;
};

class RunOutputs {
 public:
  /// `active` is false on every rank but 0: then all calls but print() on
  /// rank 0 are no-ops. `resume_step` >= 0 (steps the checkpoint completed)
  /// keeps the rows of steps 1..resume_step. `progress_seconds`: the
  /// seconds between two progress lines of a long phase (app/progress.hpp).
  RunOutputs(const std::string& dir, bool active, std::int64_t resume_step,
             double progress_seconds);

  void step(const StepRow& row);
  void eval(const EvalRow& row);
  /// A progress line: stdout and run.log.
  void print(const std::string& line);
  /// A line for run.log only (the reason a run ended, which main prints on stderr).
  void log(const std::string& line);
  /// The lines `held` printed before run.log opened, with their times.
  void log_held(const HeldLines& held);
  bool active() const { return active_; }
  /// A meter of a long phase whose lines print() prints (rank 0 only; other
  /// ranks' meters print nothing) at most once per progress interval.
  ProgressMeter meter(ProgressMeter::Format format);

 private:
  bool active_;
  double progress_interval_;
  std::ofstream metrics_, eval_, log_;
};

// The lines of run.log, as rank 0 prints them.

/// The first line: the deck, the model's size, the mesh, the batch and the
/// estimator (and `blocks`, when a step perturbs only some); `resume` is the
/// checkpoint continued, or "".
std::string describe_run(const std::string& deck_path, const io::Deck& deck,
                         std::int64_t parameters, int ranks, const io::Dataset& train,
                         const BlockChoice& blocks, const std::string& resume);
/// Where the L blocks live under `p`, for run.log and `distzo plan`:
/// "resident, all 12 blocks in device memory", "offload, block 0 kept in
/// device memory, 11 streamed from host memory through 3 device slots
/// (prefetch 1)"; `resident_blocks_key` names K as the user set it.
std::string describe_blocks(const runtime::PlacementConfig& p, int L,
                            const std::string& resident_blocks_key);
/// Where θ lives; `exchange_or_null` exchanges the slices of a shared master.
std::string describe_placement(const runtime::ParameterStore& store, const io::Deck& deck,
                               const runtime::SliceExchange* exchange_or_null);
/// How θ is stored: "precision: θ stored in bf16 (2 bytes per parameter),
/// updates rounded stochastically; forward passes and updates compute in float32".
std::string describe_storage(const runtime::PlacementConfig& p);
/// The progress line of a finished step, `eta_seconds` before the last of `steps`.
std::string describe_progress(const StepRow& row, std::int64_t steps, double eta_seconds);
/// A step whose loss was not finite, the `streak`-th in a row.
/// `equal_losses`: the step's losses were finite but a one-sided step's N
/// perturbed losses all equal (σ = 0), so g was undefined.
std::string describe_skipped_step(std::int64_t step, int streak, bool equal_losses = false);
/// An evaluation; `when` is "start", "" or "end".
std::string describe_eval(const EvalRow& row, const char* when);
/// An evaluation under way: `p` counts examples; `batch` of `batches` done
/// (on several ranks, rank 0's position: the others evaluate beside it).
/// "evaluating (start) step 0: 96/872 examples (batch 12/109), 3.2 examples/s, ETA 00:04:10".
std::string describe_eval_progress(std::int64_t step, const char* when, const ProgressPoint& p,
                                   std::int64_t batch, std::int64_t batches);
/// `what` under way, `p` counting bytes: "loading θ from model.h5: 512 MiB/1.66 GiB (30 %),
/// 120 MiB/s, ETA 00:00:10".
std::string describe_byte_progress(const std::string& what, const ProgressPoint& p);
/// A checkpoint written; `parallel_writers` > 0: by that many ranks together.
std::string describe_checkpoint(const std::string& path, int parallel_writers);
/// A checkpoint not written after `step`: the last `streak` steps were non-finite.
std::string describe_checkpoint_skipped(std::int64_t step, int streak);
/// The last line of a run that trained `steps` steps in `seconds`, of which
/// `skipped` had a non-finite loss and `zero_g` a g of exactly 0; `digest`: θ's.
std::string describe_done(std::int64_t steps, double seconds, std::int64_t skipped,
                          std::int64_t zero_g, const std::string& digest);
/// The device high-water mark by role as Kokkos Tools saw the allocations,
/// the host and node-shared memory of `store` (and the slice exchange's
/// `exchange_bytes`), and θ's traffic in the last step.
std::string describe_memory(const MemoryUsage& usage, const runtime::ParameterStore& store,
                            std::size_t exchange_bytes, const runtime::TransferBytes& moved);
/// One node's host memory: its host name, its ranks, and their proportional
/// set sizes summed (shared pages counted once: what a node's memory limit sees).
struct NodeMemory {
  std::string host;
  int ranks = 0;
  double pss = 0;  // bytes
};
/// Collective over the world: every node's host memory, `rank_pss` being
/// this rank's proportional set size, nodes in the order of their lowest
/// world rank (rank 0's node first).
std::vector<NodeMemory> gather_node_memory(const runtime::Mesh& mesh, double rank_pss);
/// One run.log line per node (and the total over several nodes); `sliced`:
/// θ's master is one node-shared copy on each node.
std::string describe_node_memory(const std::vector<NodeMemory>& nodes, bool sliced);
/// Held-out accuracy before and after fine-tuning.
std::string describe_accuracy(double before, double after, std::int64_t examples);
/// Held-out accuracy of a run with optim.steps 0 (nothing trained).
std::string describe_evaluation_only(double accuracy, std::int64_t examples);

}  // namespace distzo::app
