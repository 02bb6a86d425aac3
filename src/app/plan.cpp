#include "app/plan.hpp"

#include "app/deck_config.hpp"
#include "app/format.hpp"
#include "app/options.hpp"
#include "core/error.hpp"
#include "io/dataset.hpp"
#include "io/deck.hpp"
#include "io/hf_config.hpp"
#include "io/model_file.hpp"
#include "model/parameter_registry.hpp"
#include "runtime/parameter_store.hpp"

#include <iostream>
#include <sstream>

namespace distzo::app {

namespace {

const char* const kUsage =
    "usage: distzo plan DECK.yaml\n"
    "       distzo plan config.json [--batch B] [--seq T] [--task causal_lm|classification]\n"
    "                   [--candidates K] [--queries q] [--perturbation P] [--eval]\n"
    "                   [--placement resident|offload] [--resident-blocks K] [--prefetch N]\n"
    "                   [--device-gib G]\n"
    "  predicted device memory per rank by role, host memory for θ, and bytes moved per\n"
    "  step, for a deck or for a Hugging Face OPT config.json (defaults: batch 1, seq\n"
    "  2048 or the model's positions, causal_lm, q 1, P 1, resident, prefetch 1);\n"
    "  --device-gib G also says whether the run fits a device of G GiB and the largest\n"
    "  resident_blocks K that does";

constexpr std::uint64_t kFloat = sizeof(float), kInt = sizeof(int), kDouble = sizeof(double);

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

}  // namespace

MemoryPlan plan_memory(const PlanInputs& in) {
  const model::OptConfig& c = in.config;
  const model::ParameterRegistry r = model::ParameterRegistry::for_opt(c);
  DISTZO_REQUIRE(in.perturbation >= 1 && (2 * in.queries) % in.perturbation == 0,
                 "plan: P = " << in.perturbation << " does not divide 2q = " << 2 * in.queries);
  MemoryPlan p;
  const int L = r.num_blocks();
  p.device_blocks = in.placement.device_blocks(L);
  p.slots = in.placement.mode == runtime::PlacementMode::offload ? in.placement.stream_slots(L) : 0;
  p.evaluations = 2 * in.queries / in.perturbation;
  const std::uint64_t e = u(p.evaluations);

  // Weights: one arena per group (runtime/parameter_store.hpp), padded to 64 bytes per tensor.
  p.edge_arena = runtime::ArenaLayout::of(r, r.embedding_ids()).bytes() +
                 runtime::ArenaLayout::of(r, r.head_ids()).bytes();
  p.block_arena = L > 0 ? runtime::ArenaLayout::of(r, r.block_ids(0)).bytes() : 0;
  p.weights = p.edge_arena + u(p.device_blocks + p.slots) * p.block_arena;

  // Scratch: w+ and w- of the block in use (block arenas), the embeddings'
  // and head's w± for each owned evaluation (unpadded tensors), and with a
  // classification head the row marks of embed_tokens (one int per row).
  std::uint64_t edge_elements = 0;
  for (const auto* ids : {&r.embedding_ids(), &r.head_ids()})
    for (std::uint32_t id : *ids) edge_elements += u(r[id].numel());
  p.scratch = (L > 0 ? 2 * p.block_arena : 0) + e * edge_elements * kFloat +
              (in.task == model::Task::classification ? u(c.vocab_size) * kInt : 0);

  // Activations for N = B*T rows: the forward's scratch (normed, q, k, v,
  // attended, projected: N x C each; ffn: N x F; positions: B x T ints;
  // with project_in/out two N x E more), one hidden state per evaluation,
  // the head, the loss sums, and the batches (train, and eval if any).
  const std::uint64_t B = u(in.micro_batch), T = u(in.seq_len), N = B * T;
  const std::uint64_t C = u(c.hidden_size), F = u(c.ffn_dim), E = u(c.word_embed_proj_dim),
                      V = u(c.vocab_size), K = u(in.candidates);
  const std::uint64_t forward = B * T * kInt + (6 * N * C + N * F) * kFloat +
                                (c.has_projection() ? 2 * N * E * kFloat : 0);
  const std::uint64_t hidden = e * N * C * kFloat;
  const bool lm = in.task == model::Task::causal_lm;
  const std::uint64_t head = lm ? N * V * kFloat : (B * E + B * K) * kFloat + B * kInt;
  const std::uint64_t sums = e * 2 * kDouble;
  const std::uint64_t batch = (2 * B * T + (lm ? B * T : 2 * B + K)) * kInt;
  p.activations = forward + hidden + head + sums + (in.eval_set ? 2 : 1) * batch;

  // θ of the streamed blocks lives in host memory, goes up once per step,
  // and comes back once it was updated (every step after the first).
  const std::uint64_t streamed = u(L - p.device_blocks);
  p.host_master = streamed * p.block_arena;
  p.to_device_per_step = streamed * p.block_arena;
  p.to_host_per_step = streamed * p.block_arena;
  return p;
}

std::string describe_plan(const PlanInputs& in, const MemoryPlan& p) {
  const model::OptConfig& c = in.config;
  const model::ParameterRegistry r = model::ParameterRegistry::for_opt(c);
  const int L = r.num_blocks();
  const double params = static_cast<double>(r.total_elements());
  const auto b = [](std::uint64_t v) { return exact_bytes(static_cast<double>(v)); };
  std::ostringstream os;
  os << "model        OPT, " << L << " layers, hidden " << c.hidden_size << ", "
     << c.num_attention_heads << " heads, ffn " << c.ffn_dim << ", vocab " << c.vocab_size
     << ": " << static_cast<long long>(params) << " parameters\n"
     << "storage      float32: θ is " << human_bytes(4 * params)
     << "; transfers and w± are float32 too (fp16 storage would halve weights, scratch and "
        "traffic; not implemented)\n"
     << "placement    ";
  if (in.placement.mode == runtime::PlacementMode::resident || p.device_blocks >= L)
    os << "resident: all " << L << " blocks in device memory\n";
  else
    os << "offload: " << p.device_blocks << " of " << L << " blocks in device memory, "
       << L - p.device_blocks << " streamed through " << p.slots << " slots (prefetch "
       << in.placement.prefetch << ")\n";
  os << "workload     " << (in.task == model::Task::causal_lm ? "causal_lm" : "classification")
     << ", micro-batch " << in.micro_batch << " x " << in.seq_len << " tokens, q = " << in.queries
     << ", P = " << in.perturbation << ": " << p.evaluations << " evaluations per rank"
     << (in.eval_set ? ", with an eval set" : "") << "\n\n"
     << "device memory per rank (predicted)\n"
     << "  weights      " << b(p.weights) << ": embeddings + head " << human_bytes(p.edge_arena)
     << ", " << p.device_blocks << " resident + " << p.slots << " slot blocks x "
     << human_bytes(p.block_arena) << "\n"
     << "  scratch      " << b(p.scratch) << ": w+ and w- of one block, the edges' w± for "
     << p.evaluations << " evaluations\n"
     << "  activations  " << b(p.activations) << ": forward scratch, " << p.evaluations
     << " hidden states, head, batches\n"
     << "  total        " << b(p.device_total()) << "\n"
     << "host memory    " << b(p.host_master) << " for θ of the streamed blocks (pinned under CUDA)\n"
     << "moved per step " << b(p.to_device_per_step) << " to the device, "
     << b(p.to_host_per_step) << " to the host (θ of the streamed blocks; the first step "
     << "writes nothing back)\n";
  return os.str();
}

std::string fit_on_device(const PlanInputs& in, double device_bytes) {
  const MemoryPlan p = plan_memory(in);
  const int L = static_cast<int>(in.config.num_hidden_layers);
  std::ostringstream os;
  os << "device of " << human_bytes(device_bytes) << ": this placement "
     << (static_cast<double>(p.device_total()) <= device_bytes ? "fits" : "does NOT fit");
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
    os << "; not even with every block offloaded (K = 0): " << human_bytes(static_cast<double>(
              [&] { k.placement.resident_blocks = 0; return plan_memory(k).device_total(); }()))
       << " needed\n";
  else if (best >= L)
    os << "; so does the whole model resident (resident_blocks >= " << L << ")\n";
  else
    os << "; the largest resident_blocks that fits is K = " << best << " (moves "
       << human_bytes(static_cast<double>(
              [&] { k.placement.resident_blocks = best; return plan_memory(k).to_device_per_step; }()))
       << " up per step)\n";
  return os.str();
}

namespace {

/// `distzo plan DECK.yaml`: everything from the deck, its model file (the
/// attributes only) and its datasets.
PlanInputs inputs_from_deck(const std::string& path) {
  const io::Deck deck = io::load_deck(path);
  PlanInputs in;
  {
    const io::Hdf5File model(deck.model.path, io::Hdf5File::Mode::read);
    in.config = io::read_opt_config(model);
  }
  const io::Dataset train = io::load_dataset(deck.data.train, in.config.vocab_size);
  in.task = train.task;
  in.micro_batch = deck.data.micro_batch;
  in.seq_len = static_cast<int>(train.seq_len);
  in.candidates = static_cast<int>(train.num_candidates());
  in.queries = deck.optim.queries;
  in.perturbation = deck.parallel.perturbation;
  in.eval_set = !deck.data.eval.empty();
  in.placement = placement_config(deck);
  return in;
}

PlanInputs inputs_from_config(const std::string& path, const Options& o) {
  PlanInputs in;
  in.config = io::read_hf_opt_config(path);
  in.micro_batch = static_cast<int>(o.integer("--batch", 1, 1));
  const std::int64_t positions = in.config.max_position_embeddings;
  in.seq_len = static_cast<int>(o.integer("--seq", std::min<std::int64_t>(2048, positions), 1));
  DISTZO_REQUIRE(in.seq_len <= positions, "plan: --seq " << in.seq_len << " exceeds the model's "
                                                         << positions << " positions");
  const std::string task = o.text("--task", "causal_lm");
  DISTZO_REQUIRE(task == "causal_lm" || task == "classification",
                 "plan: --task must be causal_lm or classification, got '" << task << "'");
  in.task = task == "causal_lm" ? model::Task::causal_lm : model::Task::classification;
  in.candidates = in.task == model::Task::classification
                      ? static_cast<int>(o.integer("--candidates", 2, 1))
                      : 0;
  in.queries = static_cast<int>(o.integer("--queries", 1, 1));
  in.perturbation = static_cast<int>(o.integer("--perturbation", 1, 1));
  in.eval_set = o.flag("--eval");
  const std::string mode = o.text("--placement", "resident");
  DISTZO_REQUIRE(mode == "resident" || mode == "offload",
                 "plan: --placement must be resident or offload, got '" << mode << "'");
  in.placement.mode =
      mode == "offload" ? runtime::PlacementMode::offload : runtime::PlacementMode::resident;
  in.placement.resident_blocks = static_cast<int>(o.integer("--resident-blocks", 0, 0));
  in.placement.prefetch = static_cast<int>(o.integer("--prefetch", 1, 1));
  return in;
}

}  // namespace

int plan(const std::vector<std::string>& args) {
  const Options o("plan", args,
                  {"--batch", "--seq", "--task", "--candidates", "--queries", "--perturbation",
                   "--placement", "--resident-blocks", "--prefetch", "--device-gib"},
                  {"--eval"}, kUsage);
  const std::string path = o.single("DECK.yaml or config.json");
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  DISTZO_REQUIRE(json || args.size() == 1 || (args.size() == 3 && o.has("--device-gib")),
                 "plan: options other than --device-gib go with a config.json; a deck says "
                 "everything else itself\n" << kUsage);
  const PlanInputs in = json ? inputs_from_config(path, o) : inputs_from_deck(path);
  const MemoryPlan p = plan_memory(in);
  std::cout << "distzo plan " << path << "\n" << describe_plan(in, p);
  if (o.has("--device-gib")) {
    const double device = o.positive("--device-gib", 0) * 1024.0 * 1024.0 * 1024.0;
    std::cout << "\n" << fit_on_device(in, device);
  }
  return 0;
}

}  // namespace distzo::app
