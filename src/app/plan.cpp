#include "app/plan.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>

#include "app/deck_config.hpp"
#include "app/format.hpp"
#include "app/options.hpp"
#include "app/run_inputs.hpp"
#include "app/run_outputs.hpp"
#include "app/sliced_schedule.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "io/dataset.hpp"
#include "io/deck.hpp"
#include "io/hf_config.hpp"
#include "io/model_file.hpp"
#include "kernels/perturb_update.hpp"
#include "model/forward.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/parameter_store.hpp"
#include "zo/evaluation_plan.hpp"

namespace distzo::app {

namespace {

const char* const kUsage =
    "usage: distzo plan DECK.yaml [--device-gib G]\n"
    "       distzo plan config.json [--batch B] [--seq T] [--task causal_lm|classification]\n"
    "                   [--candidates K] [--estimator spsa|one_sided] [--queries q]\n"
    "                   [--momentum β [--history h]] [--perturbed-blocks K]\n"
    "                   [--perturbation P] [--eval]\n"
    "                   [--placement resident|offload] [--resident-blocks K] [--prefetch N] "
    "[--slots S]\n"
    "                   [--storage fp32|bf16|fp16] [--perturbed-weights together|one_at_a_time]\n"
    "                   [--gemm-inputs fp32|storage]\n"
    "                   [--device-gib G] [--gpus-per-node n [--pcie-gbs 55] [--nvlink-gbs 370]\n"
    "                   [--hbm-tbs 4.3] [--gemm-tflops 700]]\n"
    "  predicted device memory per rank by role, host memory for θ, and bytes moved per\n"
    "  step, for a deck or for a Hugging Face config.json of OPT, Llama, Qwen2, Qwen3,\n"
    "  Mistral, OLMo 2, Phi-3 or Gemma 3 (defaults: batch 1, seq 2048 or the model's\n"
    "  positions if fewer), causal_lm, 2 candidates for classification, spsa, q 1, P 1, resident, "
    "K 0,\n"
    "  prefetch 1, slots prefetch + 2, the config's dtype (torch_dtype) else fp32, together,\n"
    "  gemm inputs fp32). --device-gib G\n"
    "  also says whether the run fits a device of G GiB and the largest resident_blocks K\n"
    "  that does; the exit status is 1 when it does not fit. --gpus-per-node n adds the\n"
    "  sliced schedule of Placement II (every block offloaded, sliced over n GPUs): bytes\n"
    "  over PCIe and NVLink per GPU and the predicted step time next to ZO2's on one GPU\n"
    "  at the same global batch.";

constexpr std::uint64_t kFloat = sizeof(float), kInt = sizeof(int), kDouble = sizeof(double);

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

}  // namespace

void check_plan_inputs(const PlanInputs& in) {
  const auto fail = [](const std::string& what) { throw Error("plan: " + what); };
  if (in.batch.micro_batch < 1 || in.batch.seq_len < 1)
    fail("the micro-batch and sequence length must be >= 1");
  if (static_cast<std::int64_t>(in.batch.micro_batch) * in.batch.seq_len >
      std::numeric_limits<int>::max())
    fail("micro-batch x sequence length = " + std::to_string(in.batch.micro_batch) + " x " +
         std::to_string(in.batch.seq_len) + " exceeds the 2147483647 rows a batch may have");
  const std::string too_long = in.config.sequence_problem(in.batch.seq_len);
  if (!too_long.empty())
    fail(too_long + " (pass --seq " + std::to_string(in.config.longest_sequence()) + " or less)");
  if (in.queries < 1 || in.queries > kernels::kMaxQueries)
    fail("q = " + std::to_string(in.queries) + " queries: allowed 1 to " +
         std::to_string(kernels::kMaxQueries));
  const std::string split =
      io::perturbation_problem(in.estimator, in.queries, in.perturbation, "q");
  if (!split.empty()) fail("--perturbation: " + split);
  if (in.batch.task == model::Task::classification && in.batch.candidates < 1)
    fail("a classification head needs at least one candidate word");
  if (in.momentum < 0 || in.momentum >= 1) fail("momentum β must be in [0, 1)");
  if (in.history < 1 || (in.momentum == 0) != (in.history == 1) ||
      static_cast<std::int64_t>(in.history) * in.queries > kernels::kMaxQueries)
    fail("history h = " + std::to_string(in.history) +
         ": 1 without momentum, 2 or more with it, and h x q at most " +
         std::to_string(kernels::kMaxQueries));
  const int blocks = static_cast<int>(in.config.num_hidden_layers);
  if (in.perturbed_blocks < 0 || (in.perturbed_blocks >= blocks && in.perturbed_blocks != 0))
    fail("perturbed blocks K = " + std::to_string(in.perturbed_blocks) +
         ": 0 (every block) or 1 to " + std::to_string(blocks - 1) + " of the model's " +
         std::to_string(blocks) + " blocks");
}

namespace {

/// The probability that a step's pending update reaches a given block:
/// one of its h rows chose it (1 when every step perturbs every block).
double update_reach(const PlanInputs& in) {
  const int blocks = static_cast<int>(in.config.num_hidden_layers);
  if (in.perturbed_blocks == 0 || blocks == 0) return 1.0;
  return 1.0 - std::pow(1.0 - static_cast<double>(in.perturbed_blocks) / blocks, in.history);
}

/// The z a step regenerates per element (never stored): the update's h × q
/// terms over all of θ, and the perturbation's directions of the rank
/// that draws the most.
std::string describe_z_streams(const PlanInputs& in) {
  const zo::EstimatorSpec spec = zo::EstimatorSpec::make(in.estimator, in.queries);
  std::size_t drawn = 0;
  for (int rank = 0; rank < in.perturbation; ++rank) {
    std::vector<zo::Evaluation> perturbed;
    for (const zo::Evaluation& e : zo::EvaluationPlan::make(spec, in.perturbation, rank).owned)
      if (e.sign != 0) perturbed.push_back(e);  // the unperturbed θ draws no z
    drawn = std::max(drawn, zo::queries_of(perturbed).size());
  }
  std::ostringstream os;
  os << "z a step     " << in.history * in.queries
     << " per element of θ for the update (h x q = " << in.history << " x " << in.queries << ": ";
  if (in.momentum > 0)
    os << "momentum " << in.momentum << " over the last " << in.history << " steps' directions";
  else
    os << "the step's own directions";
  os << ") + " << drawn << " for the perturbation (per rank, at most), regenerated in the fused "
     << "pass; none is stored\n";
  if (in.perturbed_blocks > 0) {
    // Block-sparse: z is drawn on the edges and the step's K blocks only,
    // and an update term reaches a block only if its step chose it.
    const model::ParameterRegistry r = model::ParameterRegistry::for_model(in.config);
    const int L = r.num_blocks();
    const double total = static_cast<double>(r.total_elements());
    double in_blocks = 0;
    for (int k = 0; k < L; ++k)
      for (std::uint32_t id : r.block_ids(k)) in_blocks += static_cast<double>(r[id].numel());
    const double k_of_l = static_cast<double>(in.perturbed_blocks) / L;
    const double drawn_share = (total - in_blocks + k_of_l * in_blocks) / total;
    char line[400];
    std::snprintf(line, sizeof(line),
                  "block-sparse %d of %d blocks a step (optim.perturbed_blocks): this step's z "
                  "on the edges and those blocks, %.0f %% of θ; an update term reaches a block "
                  "with probability %.3g (K/L), the update with %.3g (1 - (1 - K/L)^h); a block "
                  "it does not reach is not written back (offload)\n",
                  in.perturbed_blocks, L, 100 * drawn_share, k_of_l, update_reach(in));
    os << line;
  }
  return os.str();
}

}  // namespace

MemoryPlan plan_memory(const PlanInputs& in) {
  check_plan_inputs(in);
  const model::ModelConfig& c = in.config;
  const model::ParameterRegistry r = model::ParameterRegistry::for_model(c);
  MemoryPlan p;
  const int L = r.num_blocks();
  p.device_blocks = in.placement.device_blocks(L);
  p.slots = in.placement.mode == runtime::PlacementMode::offload ? in.placement.stream_slots(L) : 0;
  p.evaluations = in.evaluations() / in.perturbation;
  const std::uint64_t e = u(p.evaluations);

  // Weights: one arena per group (runtime/parameter_store.hpp), padded to 64
  // bytes per tensor, in θ's storage: a 2-byte θ (precision.storage bf16,
  // fp16) holds the same arenas, slots and host master in half the bytes,
  // and moves half the bytes.
  const StorageDtype stored = in.placement.storage;
  const runtime::ArenaLayout block0 =
      L > 0 ? runtime::ArenaLayout::of(r, r.block_ids(0)) : runtime::ArenaLayout();
  p.edge_arena = runtime::ArenaLayout::of(r, r.embedding_ids()).bytes(stored) +
                 runtime::ArenaLayout::of(r, r.head_ids()).bytes(stored);
  p.block_arena = block0.bytes(stored);
  p.weights = p.edge_arena + u(p.device_blocks + p.slots) * p.block_arena;

  // Scratch: w+ and w- of the block in use (block arenas), the embeddings'
  // and head's w± for each owned evaluation (a View per tensor), and with a
  // classification head the row marks of embed_tokens (one int per row).
  // Every View's bytes as Kokkos allocates them (core/memory.hpp view_bytes).
  // One at a time (placement.perturbed_weights): one block arena and one
  // copy of the edges serve every evaluation in turn.
  const bool one = in.placement.perturb_one_at_a_time;
  // With 2-byte GEMM inputs every matrix's w is words (the edges' too).
  const bool words = in.placement.two_byte_gemm_inputs;
  std::uint64_t edge_w = 0;
  for (const auto* ids : {&r.embedding_ids(), &r.head_ids()})
    for (std::uint32_t id : *ids)
      edge_w += view_bytes(u(r[id].numel()),
                           words && r[id].shape.size() == 2 ? sizeof(std::uint16_t) : kFloat);
  // A block's w is then its matrices' words (a word arena in the block's
  // layout) and its vectors' floats (a packed arena). One at a time, a
  // block's matrices are made a tensor at a time as the forward reads them:
  // the largest matrix in w's format and the vectors packed.
  const std::uint64_t vectors = view_bytes(u(runtime::max_block_vector_elements(r)), kFloat);
  const std::uint64_t block_w =
      one ? view_bytes(u(runtime::max_block_matrix_elements(r)),
                       bytes_per_element(in.placement.gemm_inputs())) +
                vectors
      : words ? view_bytes(u(block0.elements), sizeof(std::uint16_t)) + vectors
              : block0.bytes(StorageDtype::fp32);
  // One at a time without 2-byte GEMM inputs that scratch is too small to
  // decode a 2-byte θ's block into: the decoder has a block arena of its own.
  const bool own_decode_block = one && !words && in.placement.storage != StorageDtype::fp32;
  p.scratch =
      (one ? 1 : 2) * block_w + (one ? 1 : e) * edge_w +
      (own_decode_block ? view_bytes(u(block0.elements), kFloat) : 0) +
      (in.batch.task == model::Task::classification ? view_bytes(u(c.vocab_size), kInt) : 0);
  // A 2-byte θ is read as float32 for an evaluation's forward by decoding it
  // into that same scratch, idle between steps (zo/float_theta.hpp); the
  // digest reduces its words where they are (no copy).

  // Activations for N = B*T rows: the forward's scratch
  // (model::DecoderForward::scratch_bytes), one hidden state per evaluation,
  // the head, the loss sums, and the batches (train, and eval if any).
  const std::uint64_t B = u(in.batch.micro_batch), T = u(in.batch.seq_len), N = B * T;
  const std::uint64_t C = u(c.hidden_size), E = u(c.embedding_dim()), V = u(c.vocab_size),
                      K = u(in.batch.candidates);
  const std::uint64_t forward = model::DecoderForward::scratch_bytes(
      c, in.batch.micro_batch, in.batch.seq_len, in.placement.gemm_inputs());
  const std::uint64_t hidden = e * view_bytes(N * C, kFloat);
  const bool lm = in.batch.task == model::Task::causal_lm;
  const std::uint64_t head =
      lm ? view_bytes(N * V, kFloat)
         : view_bytes(B * E, kFloat) + view_bytes(B * K, kFloat) + view_bytes(B, kInt);
  const std::uint64_t sums = view_bytes(e * 2, kDouble);
  const std::uint64_t batch =
      2 * view_bytes(B * T, kInt) +
      (lm ? view_bytes(B * T, kInt) : 2 * view_bytes(B, kInt) + view_bytes(K, kInt));
  p.activations = forward + hidden + head + sums + (in.eval_set ? 2 : 1) * batch;

  // θ of the streamed blocks lives in host memory, goes up once per step,
  // and comes back once it was updated (every step after the first; with
  // block-sparse steps, the blocks the update reaches: on average).
  const std::uint64_t streamed = u(L - p.device_blocks);
  p.host_master = streamed * p.block_arena;
  p.to_device_per_step = streamed * p.block_arena;
  p.to_host_per_step = static_cast<std::uint64_t>(
      std::llround(update_reach(in) * static_cast<double>(streamed * p.block_arena)));
  return p;
}

namespace {

/// What attention costs per layer at T tokens: causal over every earlier
/// key, or within a sliding window (the keys a query reads, and how many
/// layers do) — windowed layers skip the keys past their window.
std::string describe_attention(const model::ModelConfig& c, std::int64_t seq_len) {
  std::int64_t windowed = 0, window = 0;
  for (std::int64_t k = 0; k < c.num_hidden_layers; ++k)
    if (c.attention_window(k) > 0 && c.attention_window(k) < seq_len) {
      ++windowed;
      window = c.attention_window(k);
    }
  std::ostringstream os;
  os << "causal over up to " << seq_len << " keys per query";
  if (windowed == 0) {
    if (c.sliding_window > 0)
      os << " (the sliding window of " << c.sliding_window << " hides nothing at this length)";
    return os.str();
  }
  os << "; " << windowed << " of " << c.num_hidden_layers << " layers within a sliding window of "
     << window << " keys"
     << (2 * window <= seq_len
             ? ", the keys past it skipped (each chunk of " + std::to_string(window) +
                   " queries scores the " + std::to_string(2 * window - 1) +
                   " keys its windows reach, not " + std::to_string(seq_len) + ")"
             : ", masked in the full scores (the window exceeds T/2)");
  return os.str();
}

}  // namespace

std::string describe_plan(const PlanInputs& in, const MemoryPlan& p) {
  const model::ModelConfig& c = in.config;
  const model::ParameterRegistry r = model::ParameterRegistry::for_model(c);
  const int L = r.num_blocks();
  const double params = static_cast<double>(r.total_elements());
  const auto b = [](std::uint64_t v) { return exact_bytes(static_cast<double>(v)); };
  std::ostringstream os;
  os << "model        " << model::describe(c, "\n             ") << "\n"
     << "parameters   " << static_cast<long long>(params) << " (" << L
     << " blocks, the embeddings and the head)\n"
     << "storage      " << to_string(in.placement.storage) << ": θ is "
     << human_bytes(static_cast<double>(bytes_per_element(in.placement.storage)) * params)
     << (in.placement.storage == StorageDtype::fp32
             ? "; transfers and w± are float32 too (bf16 halves θ: precision.storage in a deck, "
               "--storage for a config)\n"
             : std::string(in.placement.mode == runtime::PlacementMode::offload
                               ? "; transfers are 2 bytes per element too"
                               : "") +
                   (in.placement.two_byte_gemm_inputs
                        ? "; the matrices are multiplied as 2-byte words (w± of them in 2 "
                          "bytes, GEMM inputs rounded to it; precision.gemm_inputs: storage), "
                          "w± of norms and biases and the activations stay float32\n"
                        : "; w± and activations stay float32 (an evaluation decodes θ into w's "
                          "scratch)\n"))
     << "placement    ";
  os << describe_blocks(in.placement, L, "resident_blocks") << "\n";
  os << "workload     "
     << (in.batch.task == model::Task::causal_lm ? "causal_lm" : "classification")
     << ", micro-batch " << in.batch.micro_batch << " x " << in.batch.seq_len << " tokens, "
     << to_string(in.estimator) << " q = " << in.queries << ", P = " << in.perturbation << ": "
     << count(p.evaluations, "evaluation", "evaluations") << " per rank"
     << (in.eval_set ? ", with an eval set" : "") << "\n"
     << "attention    " << describe_attention(c, in.batch.seq_len) << "\n"
     << describe_z_streams(in) << "\n"
     << "device memory per rank (predicted)\n"
     << "  weights      " << b(p.weights) << ": embeddings + head " << human_bytes(p.edge_arena)
     << ", " << p.device_blocks << " resident + " << count(p.slots, "slot", "slots") << " x "
     << human_bytes(p.block_arena) << " per block\n"
     << "  scratch      " << b(p.scratch)
     << (in.placement.perturb_one_at_a_time
             ? (in.placement.two_byte_gemm_inputs
                    ? ": w of the edges and of one block's largest matrix (a tensor at a time), "
                      "one evaluation at a time\n"
                    : ": w of one block and of the edges, one evaluation at a time\n")
             : std::string(in.estimator == EstimatorKind::spsa
                               ? ": w+ and w- of one block, the edges' w for "
                               : ": w+ and the unperturbed w of one block, the edges' w for ") +
                   count(p.evaluations, "evaluation", "evaluations") + "\n")
     << "  activations  " << b(p.activations) << ": forward scratch, "
     << count(p.evaluations, "hidden state", "hidden states") << ", head, batches\n"
     << "  total        " << b(p.device_total()) << "\n"
     << "host memory    " << b(p.host_master)
     << " for θ of the streamed blocks (pinned under CUDA)\n"
     << "moved per step " << b(p.to_device_per_step) << " to the device, " << b(p.to_host_per_step)
     << " to the host (θ of the streamed blocks; the first step "
     << "writes nothing back)\n";
  return os.str();
}

std::string fit_on_device(const PlanInputs& in, double device_bytes, bool* fits) {
  const MemoryPlan p = plan_memory(in);
  const int L = static_cast<int>(in.config.num_hidden_layers);
  const bool ok = static_cast<double>(p.device_total()) <= device_bytes;
  if (fits) *fits = ok;
  std::ostringstream os;
  os << "device of " << human_bytes(device_bytes) << ": this placement "
     << (ok ? "fits" : "does NOT fit");
  // Every resident block adds one block arena and removes its traffic; the
  // slots shrink once fewer blocks stream than there are slots.
  int best = -1;
  PlanInputs k = in;
  k.placement.mode = runtime::PlacementMode::offload;
  for (int K = 0; K <= L; ++K) {
    k.placement.resident_blocks = K;
    if (static_cast<double>(plan_memory(k).device_total()) <= device_bytes) best = K;
  }
  if (best < 0)
    os << "; not even with every block offloaded (K = 0): " << human_bytes(static_cast<double>([&] {
      k.placement.resident_blocks = 0;
      return plan_memory(k).device_total();
    }()))
       << " needed\n";
  else if (best >= L)
    os << "; so does the whole model resident (resident_blocks >= " << L << ")\n";
  else
    os << "; the largest resident_blocks that fits is K = " << best << " (moves "
       << human_bytes(static_cast<double>([&] {
            k.placement.resident_blocks = best;
            return plan_memory(k).to_device_per_step;
          }()))
       << " up per step)\n";
  return os.str();
}

PlanInputs plan_inputs(const io::Deck& deck, const model::ModelConfig& config,
                       const io::Dataset& train) {
  PlanInputs in;
  in.config = config;
  in.batch = train.batch_shape(deck.data.micro_batch);
  in.estimator = deck.optim.estimator;
  in.queries = deck.optim.queries;
  in.momentum = deck.optim.momentum;
  in.history = deck.optim.history;
  in.perturbed_blocks = deck.optim.perturbed_blocks;
  in.perturbation = deck.parallel.perturbation;
  in.eval_set = !deck.data.eval.empty();
  in.placement = placement_config(deck);
  return in;
}

namespace {

/// `distzo plan DECK.yaml`: everything from the deck, its model file (the
/// attributes only) and its datasets.
PlanInputs inputs_from_deck(const std::string& path, std::vector<std::string>& notes) {
  io::Deck deck = io::load_deck(path);
  model::ModelConfig config;
  {
    const io::ModelReader model(deck.model.path);
    config = model.info().config;
    // As a run resolves it: left out, precision.storage is the model file's.
    if (!deck.origin.written("precision.storage")) deck.precision.storage = model.theta_dtype();
  }
  const io::Dataset train = io::load_dataset(deck.data.train, config.vocab_size);
  check_sequences_fit(deck.data.train, train.seq_len, config);
  const PlanInputs in = plan_inputs(deck, config, train);
  // (With 2-byte GEMM inputs auto shares nothing, and true is refused.)
  if (deck.parallel.perturbation * deck.parallel.data > 1 &&
      deck.placement.share_host_master != io::ShareHostMaster::off &&
      !in.placement.two_byte_gemm_inputs)
    notes.push_back(
        "the figures are per rank with its own θ; where several ranks share a node, "
        "placement.share_host_master (" +
        std::string(deck.placement.share_host_master == io::ShareHostMaster::on ? "true" : "auto") +
        ") keeps one θ per node in shared memory instead (docs/placement.md, Placement II), so "
        "a rank holds less than this");
  const std::string ignored = ignored_placement_keys(deck);
  if (!ignored.empty()) notes.push_back(ignored);
  return in;
}

PlanInputs inputs_from_config(const std::string& path, const Options& o,
                              std::vector<std::string>& notes) {
  PlanInputs in;
  in.config = io::read_hf_config(path);
  in.batch.micro_batch =
      static_cast<int>(std::min<std::int64_t>(o.integer("--batch", 1, 1), INT32_MAX));
  in.batch.seq_len = static_cast<int>(std::min<std::int64_t>(
      o.integer("--seq", std::min<std::int64_t>(2048, in.config.longest_sequence()), 1),
      INT32_MAX));
  if (o.integer("--batch", 1, 1) > INT32_MAX || o.integer("--seq", 1, 1) > INT32_MAX)
    throw Error("plan: --batch and --seq go up to 2147483647");
  const std::string task = o.text("--task", "causal_lm");
  if (task != "causal_lm" && task != "classification")
    throw Error("plan: --task must be causal_lm or classification, got '" + task + "'");
  in.batch.task = task == "causal_lm" ? model::Task::causal_lm : model::Task::classification;
  in.batch.candidates =
      in.batch.task == model::Task::classification
          ? static_cast<int>(std::min<std::int64_t>(o.integer("--candidates", 2, 1), INT32_MAX))
          : 0;
  if (in.batch.task == model::Task::causal_lm && o.has("--candidates"))
    notes.push_back("--candidates applies to --task classification; ignored");
  const std::string estimator = o.text("--estimator", "spsa");
  if (estimator != "spsa" && estimator != "one_sided")
    throw Error("plan: --estimator must be spsa or one_sided, got '" + estimator + "'");
  in.estimator = estimator == "spsa" ? EstimatorKind::spsa : EstimatorKind::one_sided;
  in.queries = static_cast<int>(std::min<std::int64_t>(o.integer("--queries", 1, 1), INT32_MAX));
  in.momentum = o.number("--momentum", 0.0);
  in.history = static_cast<int>(
      std::min<std::int64_t>(o.integer("--history", in.momentum > 0 ? 2 : 1, 1), INT32_MAX));
  in.perturbed_blocks =
      static_cast<int>(std::min<std::int64_t>(o.integer("--perturbed-blocks", 0, 0), INT32_MAX));
  in.perturbation =
      static_cast<int>(std::min<std::int64_t>(o.integer("--perturbation", 1, 1), INT32_MAX));
  in.eval_set = o.flag("--eval");
  in.placement.mode =
      runtime::placement_mode(o.text("--placement", "resident"), "plan: --placement");
  in.placement.resident_blocks =
      static_cast<int>(std::min<std::int64_t>(o.integer("--resident-blocks", 0, 0), INT32_MAX));
  in.placement.prefetch =
      static_cast<int>(std::min<std::int64_t>(o.integer("--prefetch", 1, 1), INT32_MAX));
  in.placement.slots =
      static_cast<int>(std::min<std::int64_t>(o.integer("--slots", 0, 0), INT32_MAX));
  const std::string slots = in.placement.slots_problem();
  if (!slots.empty()) throw Error("plan: --" + slots);
  // θ is stored as the weights are (a bf16 checkpoint imports as bf16 and
  // runs in it), unless --storage says otherwise.
  const std::string dtype = io::hf_config_dtype(path);
  const char* as_stored = dtype == "bfloat16" ? "bf16" : dtype == "float16" ? "fp16" : "fp32";
  try {
    in.placement.storage = parse_storage_dtype(o.text("--storage", as_stored));
  } catch (const Error& e) {
    throw Error(std::string("plan: --storage: ") + e.what());
  }
  if (!o.has("--storage") && std::string(as_stored) != "fp32")
    notes.push_back(std::string("θ is stored in ") + as_stored + ", as the config's dtype (" +
                    dtype +
                    ") says and as a run of the imported model stores it (--storage fp32 to plan "
                    "in fp32)");
  in.placement.perturb_one_at_a_time = runtime::perturbs_one_at_a_time(
      o.text("--perturbed-weights", "together"), "plan: --perturbed-weights");
  const std::string gemm_inputs = o.text("--gemm-inputs", "fp32");
  if (gemm_inputs != "fp32" && gemm_inputs != "storage")
    throw Error("plan: --gemm-inputs must be fp32 or storage, got '" + gemm_inputs + "'");
  in.placement.two_byte_gemm_inputs = gemm_inputs == "storage";
  if (in.placement.two_byte_gemm_inputs && in.placement.storage == StorageDtype::fp32)
    throw Error(
        "plan: --gemm-inputs storage multiplies 2-byte words of θ: it needs --storage bf16 "
        "or fp16");
  if (in.placement.mode == runtime::PlacementMode::resident &&
      (o.has("--resident-blocks") || o.has("--prefetch") || o.has("--slots")))
    notes.push_back(
        "--resident-blocks, --prefetch and --slots apply to --placement offload; ignored");
  return in;
}

}  // namespace

const char* plan_usage() { return kUsage; }

int plan(const std::vector<std::string>& args) {
  const Options o("plan", args,
                  {"--batch",
                   "--seq",
                   "--task",
                   "--candidates",
                   "--estimator",
                   "--queries",
                   "--momentum",
                   "--history",
                   "--perturbed-blocks",
                   "--perturbation",
                   "--placement",
                   "--resident-blocks",
                   "--prefetch",
                   "--slots",
                   "--storage",
                   "--perturbed-weights",
                   "--gemm-inputs",
                   "--device-gib",
                   "--gpus-per-node",
                   "--pcie-gbs",
                   "--nvlink-gbs",
                   "--hbm-tbs",
                   "--gemm-tflops"},
                  {"--eval"}, kUsage);
  const std::string path = o.single("DECK.yaml or config.json");
  std::error_code ec;
  DISTZO_INPUT_REQUIRE(std::filesystem::is_regular_file(path, ec),
                       "plan: no such file '" << path << "' (a deck or a config.json)");
  // A .json file is a config even when it does not parse: the JSON reader
  // says what is wrong with it (a deck's YAML reader would not).
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  const bool config = json || io::is_hf_config_file(path);
  if (!config && !(args.size() == 1 || (args.size() == 3 && o.has("--device-gib"))))
    throw Error("plan: " + path +
                " is a deck: it says everything but --device-gib itself (the "
                "sliced schedule, --gpus-per-node, takes a config.json)\n" +
                kUsage);
  const double device_gib = o.has("--device-gib") ? o.positive("--device-gib", 0) : 0;
  std::vector<std::string> notes;
  const PlanInputs in = config ? inputs_from_config(path, o, notes) : inputs_from_deck(path, notes);
  const MemoryPlan p = plan_memory(in);
  // Every input error before any output.
  Bandwidths bw;
  std::string sliced;
  if (o.has("--gpus-per-node")) {
    DISTZO_INPUT_REQUIRE(!in.placement.two_byte_gemm_inputs,
                         "plan: --gpus-per-node predicts Placement II's node-shared sliced master, "
                         "which --gemm-inputs storage cannot use (it exchanges float32 w± "
                         "slices); leave one of them out");
    bw.pcie = o.positive("--pcie-gbs", 55) * 1e9;
    bw.nvlink = o.positive("--nvlink-gbs", 370) * 1e9;
    bw.hbm = o.positive("--hbm-tbs", 4.3) * 1e12;
    bw.gemm_flops = o.positive("--gemm-tflops", 700) * 1e12;
    const int gpus =
        static_cast<int>(std::min<std::int64_t>(o.integer("--gpus-per-node", 1, 1), 4096));
    sliced = describe_sliced_schedule(in, sliced_schedule(in, gpus, bw), bw);
  } else {
    for (const char* key : {"--pcie-gbs", "--nvlink-gbs", "--hbm-tbs", "--gemm-tflops"})
      DISTZO_INPUT_REQUIRE(!o.has(key), "plan: " << key << " applies with --gpus-per-node");
  }
  std::cout << "distzo plan " << path << "\n";
  for (const std::string& n : notes) std::cout << "note: " << n << "\n";
  std::cout << describe_plan(in, p);
  bool fits = true;
  if (device_gib > 0)
    std::cout << "\n" << fit_on_device(in, device_gib * 1024.0 * 1024.0 * 1024.0, &fits);
  if (!sliced.empty()) std::cout << "\n" << sliced;
  return fits ? 0 : 1;
}

}  // namespace distzo::app
