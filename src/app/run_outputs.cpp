#include "app/run_outputs.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <utility>
#include <vector>

#include "app/deck_config.hpp"
#include "app/format.hpp"
#include "core/error.hpp"
#include "core/log_line.hpp"

namespace distzo::app {

namespace {

/// Why the open just made failed, as errno tells it (", Too many open files
/// (the limit, ulimit -n, is 20)").
std::string open_failure() {
  const int error = errno;
  if (error == 0) return "";
  std::string why = std::string(": ") + std::strerror(error);
  if (error == EMFILE) {
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) == 0)
      why += " (the open-files limit, ulimit -n, is " + std::to_string(files.rlim_cur) + ")";
  }
  return why;
}

/// Opens `path` for appending after keeping its header and the rows whose
/// first column (the step) is <= keep_through; a fresh run (-1) truncates.
std::ofstream open_csv(const std::string& path, const std::string& header,
                       std::int64_t keep_through) {
  std::vector<std::string> kept;
  if (keep_through >= 0) {
    std::ifstream in(path);
    std::string line;
    std::int64_t number = 0;
    while (std::getline(in, line)) {
      if (++number == 1 || line.empty()) continue;  // the header; blank lines carry nothing
      const std::string step = line.substr(0, line.find(','));
      char* end = nullptr;
      const long long value = std::strtoll(step.c_str(), &end, 10);
      DISTZO_INPUT_REQUIRE(!step.empty() && end == step.c_str() + step.size(),
                           path << ":" << number
                                << ": expected a row starting with its step, found \""
                                << line.substr(0, 60)
                                << "\" (fix or remove the line; the run appends to this file)");
      if (value <= keep_through) kept.push_back(line);
    }
  }
  errno = 0;
  std::ofstream out(path, std::ios::trunc);
  DISTZO_INPUT_REQUIRE(out.good(), "cannot write '" << path << "'" << open_failure());
  out << header << "\n";
  for (const auto& l : kept) out << l << "\n";
  out.flush();
  return out;
}

/// "1 block", "3 blocks".
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

void HeldLines::print(const std::string& line) {
  if (!active_) return;
  std::cout << line << std::endl;
  stamped_ += stamp_lines(line, utc_timestamp());
}

RunOutputs::RunOutputs(const std::string& dir, bool active, std::int64_t resume_step,
                       double progress_seconds)
    : active_(active), progress_interval_(progress_seconds) {
  if (!active_) return;
  metrics_ = open_csv(
      dir + "/metrics.csv",
      "step,loss,loss_plus,loss_minus,g,lr,tokens,step_seconds,tokens_per_s,skipped", resume_step);
  eval_ = open_csv(dir + "/eval.csv", "step,eval_loss,accuracy,examples", resume_step);
  errno = 0;
  log_.open(dir + "/run.log", resume_step >= 0 ? std::ios::app : std::ios::trunc);
  DISTZO_INPUT_REQUIRE(log_.good(), "cannot write '" << dir << "/run.log'" << open_failure());
}

void RunOutputs::step(const StepRow& r) {
  if (!active_) return;
  const double tps = r.step_seconds > 0 ? static_cast<double>(r.tokens) / r.step_seconds : 0.0;
  metrics_ << r.step << "," << fmt(r.loss) << "," << fmt(r.loss_plus) << ","
           << (r.loss_minus ? fmt(*r.loss_minus) : "") << "," << fmt(r.g) << "," << fmt(r.lr) << ","
           << r.tokens << "," << fmt(r.step_seconds) << "," << fmt(tps) << ","
           << (r.skipped ? 1 : 0) << "\n";
  metrics_.flush();  // a killed job keeps every finished step
}

void RunOutputs::eval(const EvalRow& r) {
  if (!active_) return;
  eval_ << r.step << "," << fmt(r.loss) << "," << (r.accuracy >= 0 ? fmt(r.accuracy) : "") << ","
        << r.examples << "\n";
  eval_.flush();
}

void RunOutputs::print(const std::string& line) {
  if (!active_) return;
  std::cout << line << std::endl;
  log(line);
}

void RunOutputs::log(const std::string& line) {
  if (!active_) return;
  log_ << stamp_lines(line, utc_timestamp());
  log_.flush();
}

void RunOutputs::log_held(const HeldLines& held) {
  if (!active_) return;
  log_ << held.stamped();
  log_.flush();
}

ProgressMeter RunOutputs::meter(ProgressMeter::Format format) {
  if (!active_)  // formats nothing, prints nothing
    return ProgressMeter([](const std::string&) {},
                         [](const ProgressPoint&) { return std::string(); }, progress_interval_);
  return ProgressMeter([this](const std::string& line) { print(line); }, std::move(format),
                       progress_interval_);
}

std::string describe_run(const std::string& deck_path, const io::Deck& deck,
                         std::int64_t parameters, int ranks, const io::Dataset& train,
                         const BlockChoice& blocks, const std::string& resume) {
  const auto& opt = deck.optim;
  const int P = deck.parallel.perturbation, D = deck.parallel.data;
  // A momentum or block-sparse run says so beside its estimator (plain SGD: nothing).
  char momentum[128] = "";
  if (opt.momentum > 0)
    std::snprintf(momentum, sizeof(momentum), " with momentum %g over h=%d steps", opt.momentum,
                  opt.history);
  if (!blocks.dense())
    std::snprintf(momentum + std::strlen(momentum), sizeof(momentum) - std::strlen(momentum),
                  ", perturbing %d of %d blocks a step", blocks.chosen, blocks.blocks);
  char line[512];
  std::snprintf(line, sizeof(line),
                "distzo run %s: %lld parameters, %d rank%s (P=%d x D=%d), global batch %d x %s%lld "
                "tokens, %s, %s q=%d%s, %s z (recipe %d), eps=%g, lr=%g (%s)%s",
                deck_path.c_str(), static_cast<long long>(parameters), ranks, ranks == 1 ? "" : "s",
                P, D, deck.data.micro_batch * D,
                deck.data.batch_width == model::BatchWidth::trimmed
                    ? "up to "  // each micro-batch at its longest example (data.batch_width)
                    : "",
                static_cast<long long>(train.seq_len), io::to_string(train.task),
                to_string(opt.estimator), opt.queries, momentum, to_string(opt.distribution),
                opt.z_recipe, opt.eps, opt.lr, to_string(opt.schedule),
                resume.empty() ? "" : (", resuming from " + resume).c_str());
  return line;
}

std::string describe_blocks(const runtime::PlacementConfig& p, int L,
                            const std::string& resident_blocks_key) {
  const int K = p.device_blocks(L);
  if (p.mode == runtime::PlacementMode::resident)
    return "resident, all " + count(L, "block", "blocks") + " in device memory";
  if (K >= L)
    return "offload with " + resident_blocks_key + " = " + std::to_string(p.resident_blocks) +
           " >= the model's " + count(L, "block", "blocks") +
           ": every block stays in device memory (as resident)";
  const std::string kept = K == 0   ? std::string("no block")
                           : K == 1 ? std::string("block 0")
                                    : "blocks 0.." + std::to_string(K - 1);
  return "offload, " + kept + " kept in device memory, " + std::to_string(L - K) +
         " streamed from host memory through " +
         count(p.stream_slots(L), "device slot", "device slots") + " (prefetch " +
         std::to_string(p.prefetch) + ")";
}

std::string describe_placement(const runtime::ParameterStore& store, const io::Deck& deck,
                               const runtime::SliceExchange* exchange_or_null) {
  const runtime::PlacementConfig& p = store.placement();
  const int L = store.num_blocks();
  std::ostringstream os;
  os << "placement: " << describe_blocks(p, L, "placement.resident_blocks");
  const std::string ignored = ignored_placement_keys(deck);
  if (!ignored.empty()) os << " (" << ignored << ")";
  // A shared master's arenas are views of the node's one allocation: its
  // bytes are said once, where they are (as the end of run.log says them).
  if (store.shared_bytes() > 0)
    os << "; θ's master copy: " << exact_bytes(static_cast<double>(store.shared_bytes()))
       << " in node-shared memory";
  else
    os << "; θ's master copy: " << exact_bytes(static_cast<double>(store.device_bytes()))
       << " in device memory, " << exact_bytes(static_cast<double>(store.host_bytes()))
       << " in host memory";
  if (exchange_or_null != nullptr) {
    const runtime::SliceExchange& exchange = *exchange_or_null;
    const bool edges_sliced = store.slices(model::GroupRef::embeddings()).slices > 1;
    os << "; shared by the node's " << count(exchange.slices(), "rank", "ranks")
       << " (one copy per node)";
    if (exchange.slices() > 1)
      os << ", each updating and perturbing 1/" << exchange.slices() << " of every "
         << (edges_sliced ? "group" : "block") << ", slices exchanged by "
         << to_string(exchange.kind());
  } else if (deck.origin.written("placement.exchange")) {
    os << " (placement.exchange applies to a shared master: ignored)";
  }
  if (exchange_or_null == nullptr && p.two_byte_gemm_inputs &&
      deck.placement.share_host_master == io::ShareHostMaster::automatic &&
      deck.parallel.perturbation * deck.parallel.data > 1)
    os << "; each rank holds its own θ (share_host_master auto shares none with "
          "precision.gemm_inputs: storage)";
  if (p.perturb_one_at_a_time)
    os << (p.two_byte_gemm_inputs
               ? "; perturbed weights one evaluation at a time, a block's matrices a tensor at a "
                 "time (one arena of its largest matrix, one copy of the edges)"
               : "; perturbed weights one evaluation at a time (one block arena, one copy of the "
                 "edges)");
  return os.str();
}

std::string describe_storage(const runtime::PlacementConfig& p) {
  if (p.storage == StorageDtype::fp32)
    return "precision: θ stored in fp32 (4 bytes per parameter; precision.rounding does not apply)";
  return std::string("precision: θ stored in ") + to_string(p.storage) +
         " (2 bytes per parameter), updates rounded " +
         (p.rounding == Rounding::stochastic ? "stochastically" : "to nearest") +
         (p.two_byte_gemm_inputs
              ? std::string("; the matrices are multiplied as 2-byte ") + to_string(p.storage) +
                    " words, their inputs rounded to nearest (float32 sums; "
                    "precision.gemm_inputs: storage; on host backends by the naive reference "
                    "kernel, not the BLAS GEMM of the lines below); the rest computes in float32"
              : std::string("; forward passes and updates compute in float32"));
}

std::string describe_progress(const StepRow& row, std::int64_t steps, double eta_seconds) {
  char line[256];
  std::snprintf(
      line, sizeof(line), "step %lld/%lld  loss %.4f  g %+.3e  lr %.2e  %.0f tok/s  ETA %s",
      static_cast<long long>(row.step), static_cast<long long>(steps), row.loss, row.g, row.lr,
      static_cast<double>(row.tokens) / row.step_seconds, format_duration(eta_seconds).c_str());
  return line;
}

std::string describe_skipped_step(std::int64_t step, int streak, bool equal_losses) {
  return "step " + std::to_string(step) +
         (equal_losses ? ": the one-sided losses were all equal (σ = 0, g undefined)"
                       : ": non-finite loss") +
         ", update skipped (" + std::to_string(streak) + " in a row)";
}

std::string describe_eval(const EvalRow& row, const char* when) {
  char line[256];
  if (row.accuracy >= 0)
    std::snprintf(line, sizeof(line),
                  "eval %-6s step %lld: loss %.4f, accuracy %.4f (%lld examples)", when,
                  static_cast<long long>(row.step), row.loss, row.accuracy,
                  static_cast<long long>(row.examples));
  else
    std::snprintf(line, sizeof(line), "eval %-6s step %lld: loss %.4f (%lld examples)", when,
                  static_cast<long long>(row.step), row.loss, static_cast<long long>(row.examples));
  return line;
}

std::string describe_eval_progress(std::int64_t step, const char* when, const ProgressPoint& p,
                                   std::int64_t batch, std::int64_t batches) {
  const std::string phase = *when != '\0' ? std::string(" (") + when + ")" : std::string();
  char line[256];
  std::snprintf(line, sizeof(line),
                "evaluating%s step %lld: %.0f/%.0f examples (batch %lld/%lld), %.1f examples/s, "
                "ETA %s",
                phase.c_str(), static_cast<long long>(step), p.done, p.total,
                static_cast<long long>(batch), static_cast<long long>(batches), p.rate(),
                format_duration(p.eta_seconds()).c_str());
  return line;
}

std::string describe_byte_progress(const std::string& what, const ProgressPoint& p) {
  char percent[32];
  // Floored: 100 % only once everything is done.
  std::snprintf(percent, sizeof(percent), " (%.0f %%), ",
                p.total > 0 ? std::floor(100 * p.done / p.total) : 100.0);
  return what + ": " + human_bytes(p.done) + "/" + human_bytes(p.total) + percent +
         human_bytes(p.rate()) + "/s, ETA " + format_duration(p.eta_seconds());
}

std::string describe_checkpoint(const std::string& path, int parallel_writers) {
  return "checkpoint " + path +
         (parallel_writers > 0 ? " (written by the node's " + std::to_string(parallel_writers) +
                                     " ranks together, parallel HDF5)"
                               : "");
}

std::string describe_checkpoint_skipped(std::int64_t step, int streak) {
  return "checkpoint after step " + std::to_string(step) + " not written: the last " +
         std::to_string(streak) + " step" + (streak == 1 ? " was" : "s were") +
         " non-finite (the newest checkpoint stays the last good one)";
}

std::string describe_done(std::int64_t steps, double seconds, std::int64_t skipped,
                          std::int64_t zero_g, const std::string& digest) {
  const std::string zero_g_steps = zero_g > 0 ? ", " + std::to_string(zero_g) + " with g = 0" : "";
  char line[512];
  std::snprintf(line, sizeof(line), "done: %lld steps in %s (%lld skipped%s), digest %s",
                static_cast<long long>(steps), format_duration(seconds).c_str(),
                static_cast<long long>(skipped), zero_g_steps.c_str(), digest.c_str());
  return line;
}

std::string describe_memory(const MemoryUsage& u, const runtime::ParameterStore& store,
                            std::size_t exchange_bytes, const runtime::TransferBytes& moved) {
  std::ostringstream os;
  os << "memory: device peak " << exact_bytes(static_cast<double>(u.device_peak)) << " = weights "
     << exact_bytes(static_cast<double>(u.peak_of(MemoryRole::weights))) << " + scratch "
     << exact_bytes(static_cast<double>(u.peak_of(MemoryRole::scratch))) << " + activations "
     << exact_bytes(static_cast<double>(u.peak_of(MemoryRole::activations)));
  if (u.peak_of(MemoryRole::other) != 0)
    os << " (+ " << exact_bytes(static_cast<double>(u.peak_of(MemoryRole::other)))
       << " allocated outside distzo)";
  os << "; host master " << exact_bytes(static_cast<double>(store.host_bytes()));
  if (store.sliced())
    os << "; node-shared (one copy per node, not in the figures above): θ "
       << exact_bytes(static_cast<double>(store.shared_bytes())) << " + exchange buffers "
       << exact_bytes(static_cast<double>(exchange_bytes));
  os << "; last step moved " << exact_bytes(static_cast<double>(moved.to_device))
     << " to the device, " << exact_bytes(static_cast<double>(moved.to_host)) << " to the host";
  return os.str();
}

std::vector<NodeMemory> gather_node_memory(const runtime::Mesh& mesh, double rank_pss) {
  double node_pss = rank_pss;
  mesh.node().allreduce_sum(&node_pss, 1);
  // Every rank's record as words: whether it is its node's rank 0, the
  // node's ranks, the node's sum (a double's bits) and the host name (at
  // most kHostWords * 8 bytes, NUL-padded; longer names are cut).
  constexpr int kHostWords = 8, kWords = 3 + kHostWords;
  std::uint64_t mine[kWords] = {};
  mine[0] = mesh.node().rank() == 0;
  mine[1] = static_cast<std::uint64_t>(mesh.node().size());
  std::memcpy(&mine[2], &node_pss, sizeof node_pss);
  char host[kHostWords * 8 + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "?");
  std::memcpy(&mine[3], host, kHostWords * 8);
  const runtime::Communicator& world = mesh.world();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world.size()) * kWords);
  world.allgather(mine, kWords, all.data());
  std::vector<NodeMemory> nodes;
  for (int r = 0; r < world.size(); ++r) {
    const std::uint64_t* record = &all[static_cast<std::size_t>(r) * kWords];
    if (record[0] == 0) continue;
    NodeMemory node;
    node.ranks = static_cast<int>(record[1]);
    std::memcpy(&node.pss, &record[2], sizeof node.pss);
    char name[kHostWords * 8 + 1] = {};
    std::memcpy(name, &record[3], kHostWords * 8);
    node.host = name;
    nodes.push_back(node);
  }
  return nodes;
}

std::string describe_node_memory(const std::vector<NodeMemory>& nodes, bool sliced) {
  std::ostringstream os;
  double total = 0;
  int ranks = 0;
  for (const NodeMemory& node : nodes) {
    if (!os.str().empty()) os << "\n";
    os << "host memory of node " << node.host << " (" << count(node.ranks, "rank", "ranks")
       << "): " << exact_bytes(node.pss) << " (proportional set sizes summed"
       << (sliced ? "; θ's master is one node-shared copy" : "") << ")";
    total += node.pss;
    ranks += node.ranks;
  }
  if (nodes.size() > 1)
    os << "\nhost memory of the " << nodes.size() << " nodes (" << count(ranks, "rank", "ranks")
       << "): " << exact_bytes(total);
  return os.str();
}

std::string describe_accuracy(double before, double after, std::int64_t examples) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "accuracy: %.4f before, %.4f after fine-tuning (%lld held-out examples)", before,
                after, static_cast<long long>(examples));
  return line;
}

std::string describe_evaluation_only(double accuracy, std::int64_t examples) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "accuracy: %.4f (%lld held-out examples; optim.steps 0: evaluated only, no step "
                "and no checkpoint)",
                accuracy, static_cast<long long>(examples));
  return line;
}

}  // namespace distzo::app
