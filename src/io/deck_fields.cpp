#include "io/deck_fields.hpp"

#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "io/deck_reader.hpp"
#include "io/deck_text.hpp"
#include "kernels/perturb_update.hpp"

namespace distzo::io::deck_detail {

const std::vector<SectionInfo>& sections() {
  static const std::vector<SectionInfo> table = {
      {"model", true},     {"data", true},        {"optim", true},
      {"eval", false},     {"checkpoint", false}, {"output", true},
      {"parallel", false}, {"placement", false},  {"precision", false},
  };
  return table;
}

namespace {

/// The most device slots a streamed ring may have (placement.slots, and
/// prefetch + 2): more than any model's blocks (OPT-175B has 96), and far
/// from where slot arithmetic overflows an int.
constexpr std::int64_t kMaxRingSlots = 4096;

/// The member `m` of section `s` of a deck.
template <class S, class T>
struct Member {
  // Aliases, not `S Deck::*section;`: nvcc's front end rewrites such
  // declarations with parentheses that g++ then warns about.
  using SectionPointer = S Deck::*;
  using ValuePointer = T S::*;
  SectionPointer section;
  ValuePointer member;
  T& of(Deck& d) const { return d.*section.*member; }
  const T& of(const Deck& d) const { return d.*section.*member; }
};

template <class S, class T>
Member<S, T> member(S Deck::*section, T S::*member) {
  return {section, member};
}

template <class S, class Int>
Field integer(const char* section, const char* key, Member<S, Int> m, std::int64_t min,
              std::string meaning, std::string also_allowed = "",
              std::int64_t max = std::numeric_limits<Int>::max()) {
  static_assert(std::is_integral<Int>::value && std::is_signed<Int>::value, "signed integers");
  Field f(section, key);
  f.type = sizeof(Int) == 8 ? "integer (int64)" : "integer";
  f.allowed =
      (max < std::numeric_limits<Int>::max() ? std::to_string(min) + " to " + std::to_string(max)
                                             : ">= " + std::to_string(min)) +
      also_allowed;
  f.meaning = std::move(meaning);
  f.read = [key, m, min, max](const SectionReader& r, Deck& d) {
    r.read_int(key, m.of(d), min, max);
  };
  f.write = [m](const Deck& d) { return std::to_string(m.of(d)); };
  return f;
}

template <class S>
Field uint64(const char* section, const char* key, Member<S, std::uint64_t> m,
             std::string meaning) {
  Field f(section, key);
  f.type = "uint64";
  f.allowed = "any";
  f.meaning = std::move(meaning);
  f.read = [key, m](const SectionReader& r, Deck& d) { r.read_uint64(key, m.of(d)); };
  f.write = [m](const Deck& d) { return std::to_string(m.of(d)); };
  return f;
}

template <class S>
Field number(const char* section, const char* key, Member<S, double> m, double min, bool exclusive,
             std::string meaning, bool required = false) {
  Field f(section, key, required);
  f.type = "number";
  f.allowed = (exclusive ? "> " : ">= ") + format_double(min);
  f.meaning = std::move(meaning);
  f.read = [key, m, min, exclusive, required](const SectionReader& r, Deck& d) {
    if (required) r.require(key);
    r.read_double(key, m.of(d), min, exclusive);
  };
  f.write = [m](const Deck& d) { return format_double(m.of(d)); };
  return f;
}

template <class S>
Field path(const char* section, const char* key, Member<S, std::string> m, bool required,
           std::string allowed, std::string meaning) {
  Field f(section, key, required);
  f.type = "path";
  f.allowed = std::move(allowed);
  f.meaning = std::move(meaning);
  f.read = [key, m, required](const SectionReader& r, Deck& d) {
    r.read_path(key, m.of(d), required);
  };
  f.write = [m](const Deck& d) { return yaml_string(m.of(d)); };
  return f;
}

template <class S, class Enum>
Field choice(const char* section, const char* key, Member<S, Enum> m,
             std::vector<std::pair<const char*, Enum>> choices, std::string meaning,
             std::vector<std::pair<const char*, const char*>> hints = {}) {
  Field f(section, key);
  f.type = "enum";
  for (const auto& c : choices)
    f.allowed += (f.allowed.empty() ? "`" : ", `") + std::string(c.first) + "`";
  f.meaning = std::move(meaning);
  f.read = [key, m, choices, hints](const SectionReader& r, Deck& d) {
    r.read_enum(key, m.of(d), choices, hints);
  };
  f.write = [key, m, choices](const Deck& d) {
    for (const auto& c : choices)
      if (c.second == m.of(d)) return std::string(c.first);
    throw Error(std::string("deck: no name for the value of ") + key);  // a bug in this file
  };
  return f;
}

/// A number in [min, below): a fraction such as a momentum's β.
template <class S>
Field fraction(const char* section, const char* key, Member<S, double> m, double min, double below,
               std::string meaning) {
  Field f(section, key);
  f.type = "number";
  f.allowed = ">= " + format_double(min) + " and < " + format_double(below);
  f.meaning = std::move(meaning);
  f.read = [key, m, min, below](const SectionReader& r, Deck& d) {
    r.read_double(key, m.of(d), min, false, below);
  };
  f.write = [m](const Deck& d) { return format_double(m.of(d)); };
  return f;
}

/// A number > 0, or one of `words`, each standing for a value of its own.
template <class S>
Field number_or_word(const char* section, const char* key, Member<S, double> m,
                     std::vector<std::pair<const char*, double>> words, std::string meaning) {
  Field f(section, key);
  f.type = "number";
  for (const auto& w : words) f.allowed += "`" + std::string(w.first) + "`, ";
  f.allowed += "or > 0";
  f.meaning = std::move(meaning);
  f.read = [key, m, words](const SectionReader& r, Deck& d) {
    r.read_number_or_word(key, m.of(d), words);
  };
  f.write = [m, words](const Deck& d) {
    for (const auto& w : words)
      if (w.second == m.of(d)) return std::string(w.first);
    return format_double(m.of(d));
  };
  return f;
}

/// A list of names, each one of `names()`: asked for when a deck is read,
/// so that the names may be derived from this very table (resume_keys()).
template <class S>
Field key_list(const char* section, const char* key, Member<S, std::vector<std::string>> m,
               const std::vector<std::string>& (*names)(), std::string allowed,
               std::string meaning) {
  Field f(section, key);
  f.type = "list";
  f.allowed = std::move(allowed);
  f.meaning = std::move(meaning);
  f.read = [key, m, names](const SectionReader& r, Deck& d) {
    r.read_name_list(key, m.of(d), names());
  };
  f.write = [m](const Deck& d) {
    std::string out = "[";
    for (const auto& k : m.of(d)) out += (out.size() > 1 ? ", " : "") + k;
    return out + "]";
  };
  return f;
}

/// `f` with the docs' "allowed" column saying `allowed`: where the reader's
/// own bound is not the whole rule (another key's value limits it too).
Field allowing(std::string allowed, Field f) {
  f.allowed = std::move(allowed);
  return f;
}

/// `f` as a key of the run's trajectory: a resume compares its value with the
/// checkpoint's deck (resume_keys()), under `name` when the comparison is of
/// something the value names (the base model's digest), else "section.key".
Field trajectory(Field f, std::string name = "") {
  f.resume_key = name.empty() ? std::string(f.section) + "." + f.key : std::move(name);
  return f;
}

/// `f` as a trajectory key fixed for a whole run (run_constant_keys()).
Field run_constant(Field f) {
  f = trajectory(std::move(f));
  f.run_constant = true;
  return f;
}

/// A field whose value the deck cannot leave out (integers are never required).
Field required(Field f) {
  f.required = true;
  auto read = f.read;
  const char* key = f.key;
  f.read = [read, key](const SectionReader& r, Deck& d) {
    r.require(key);
    read(r, d);
  };
  return f;
}

}  // namespace

// NOLINTNEXTLINE(readability-function-size): the field table, one entry per deck key.
const std::vector<Field>& fields() {
  static const std::vector<Field> table = [] {
    using D = DataSection;
    using O = OptimSection;
    const auto m = &Deck::model;
    const auto d = &Deck::data;
    const auto o = &Deck::optim;
    const auto e = &Deck::eval;
    const auto c = &Deck::checkpoint;
    const auto out = &Deck::output;
    const auto p = &Deck::parallel;
    const auto pl = &Deck::placement;
    const auto pr = &Deck::precision;
    return std::vector<Field>{
        trajectory(path("model", "path", member(m, &ModelSection::path), true, "an existing file",
                        "HDF5 model file (docs/formats.md)"),
                   "model"),

        trajectory(
            path("data", "train", member(d, &D::train), true, "an existing file", "training set")),
        path("data", "eval", member(d, &D::eval), false, "empty or an existing file",
             "evaluation set; empty (or left out) = no evaluation"),
        trajectory(integer("data", "micro_batch", member(d, &D::micro_batch), 1,
                           "examples per replica and step; the global batch is `micro_batch` x "
                           "`parallel.data`")),
        trajectory(uint64("data", "shuffle_seed", member(d, &D::shuffle_seed),
                          "seed of the example order")),
        choice("data", "batch_width", member(d, &D::batch_width),
               {{"trimmed", model::BatchWidth::trimmed}, {"full", model::BatchWidth::full}},
               "positions a micro-batch runs at: `trimmed` = its longest example, `full` = the "
               "dataset's length "
               "(as before trimming existed; the same losses up to rounding, other bits). A "
               "resumed run keeps its checkpoint's width"),

        trajectory(required(
            integer("optim", "steps", member(o, &O::steps), 0,
                    "optimisation steps; 0 only evaluates (once, writing no checkpoint)"))),
        trajectory(
            number("optim", "lr", member(o, &O::lr), 0.0, true, "peak learning rate η", true)),
        trajectory(choice(
            "optim", "schedule", member(o, &O::schedule),
            {{"constant", ScheduleKind::constant},
             {"linear", ScheduleKind::linear},
             {"cosine", ScheduleKind::cosine}},
            "learning-rate schedule after warm-up (linear and cosine decay to 0 at `steps`)")),
        trajectory(integer("optim", "warmup_steps", member(o, &O::warmup_steps), 0,
                           "linear warm-up from 0 to `lr`", " and <= `optim.steps`")),
        trajectory(number("optim", "eps", member(o, &O::eps), 0.0, true, "perturbation scale ε")),
        trajectory(number("optim", "weight_decay", member(o, &O::weight_decay), 0.0, false,
                          "decoupled weight decay λ")),
        run_constant(
            choice("optim", "estimator", member(o, &O::estimator),
                   {{"spsa", EstimatorKind::spsa}, {"one_sided", EstimatorKind::one_sided}},
                   "how a step estimates the update from forward losses: `spsa` = MeZO's "
                   "two-sided L(θ ± εz_q), 2q evaluations; `one_sided` = FZOO's L(θ) and N "
                   "one-sided L(θ + εz_i), N + 1 evaluations, the step divided by the "
                   "spread of the N losses (docs/perturbation.md)",
                   {{"fzoo", "FZOO's estimator is \"one_sided\""},
                    {"mezo", "MeZO's estimator is \"spsa\""}})),
        run_constant(integer("optim", "queries", member(o, &O::queries), 1,
                             "directions z per step: SPSA's q (2q forward evaluations) or "
                             "one_sided's N (N + 1)",
                             "", kernels::kMaxQueries)),
        trajectory(
            choice("optim", "distribution", member(o, &O::distribution),
                   {{"gaussian", Distribution::gaussian}, {"rademacher", Distribution::rademacher}},
                   "distribution of the perturbation z")),
        integer("optim", "z_recipe", member(o, &O::z_recipe), 1,
                "how a Gaussian z is computed from its Philox words (docs/perturbation.md): 2 = "
                "binary32, the same bits on every backend; 1 = double with libm, as runs before "
                "recipe 2. A resumed run keeps its checkpoint's recipe",
                "", 2),
        trajectory(
            uint64("optim", "seed", member(o, &O::seed),
                   "run seed: z is a pure function of (seed, step, query, parameter, element)")),
        integer(
            "optim", "max_nonfinite", member(o, &O::max_nonfinite), 1,
            "this many consecutive non-finite losses abort the run (counted across a resume; no "
            "checkpoint is written during such a streak)"),
        run_constant(fraction(
            "optim", "momentum", member(o, &O::momentum), 0.0, 1.0,
            "β of a momentum rebuilt from the seed log's last `optim.history` rows: the step "
            "follows Σ_j c_j ĝ_{t−j} z_{t−j}, c_j ∝ β^j summing to 1 (no optimizer state; "
            "docs/perturbation.md); 0 = the step's own row only (MeZO's SGD)")),
        run_constant(allowing(
            "1 when `momentum` is 0; 2 to 32 / `optim.queries` otherwise",
            integer("optim", "history", member(o, &O::history), 1,
                    "h: the log rows (steps) a momentum update uses; each regenerates its q z "
                    "in the fused update, h x q at most 32"))),
        run_constant(allowing(
            "0, or 1 to the model's decoder blocks − 1",
            integer("optim", "perturbed_blocks", member(o, &O::perturbed_blocks), 0,
                    "K: decoder blocks each step perturbs, chosen afresh every step from "
                    "(seed, step) (LeZO's layer-wise sparsity; docs/perturbation.md); z is 0 on "
                    "the others, which get no w± pass and no update from that step; embeddings "
                    "and head are perturbed every step; 0 = every block"))),

        integer("eval", "interval", member(e, &EvalSection::interval), 0,
                "steps between evaluations; 0 = only before training and at the end"),
        integer("eval", "max_examples", member(e, &EvalSection::max_examples), 0,
                "examples used per evaluation; 0 = the whole eval set"),

        integer("checkpoint", "interval", member(c, &CheckpointSection::interval), 0,
                "steps between checkpoints; 0 = only at the end"),
        integer("checkpoint", "log_interval", member(c, &CheckpointSection::log_interval), 0,
                "steps between log-only checkpoints `log-STEP.h5` between the full ones: the "
                "training state and seed log without θ (kilobytes); a resume rebuilds θ from the "
                "run's newest full checkpoint at or before it, or from its base model "
                "(`model.path`), and the logged steps (docs/formats.md); 0 = none"),
        integer("checkpoint", "keep", member(c, &CheckpointSection::keep), 1,
                "newest checkpoints of this run kept in `output.dir`, and as many log-only ones "
                "(another run's are never deleted)"),
        key_list("checkpoint", "allow_changes", member(c, &CheckpointSection::allow_changes),
                 &changeable_keys, "trajectory keys (below) but the five named here",
                 "the keys a resume may change on purpose (each is logged); any other change "
                 "from the checkpoint's deck is an error; `optim.estimator`, `optim.queries`, "
                 "`optim.momentum`, `optim.history` and `optim.perturbed_blocks` never change "
                 "within a run (how the seed log's rows are read)"),
        path("checkpoint", "resume", member(c, &CheckpointSection::resume), false,
             "empty, `latest`, or an existing file",
             "empty = fresh start; a checkpoint file (or log-only `log-STEP.h5`) to continue "
             "from; `latest` = the newest `ckpt-STEP.h5` or `log-STEP.h5` in `output.dir` of "
             "the run that owns it that reads back whole "
             "(a broken one is passed over with a warning), or a fresh start if there is none "
             "yet (so a requeued job script needs no edit)"),

        path("output", "dir", member(out, &OutputSection::dir), true,
             "a directory or a path to create",
             "metrics.csv, eval.csv, checkpoints, deck.resolved.yaml, the run log"),
        integer("output", "log_interval", member(out, &OutputSection::log_interval), 1,
                "steps between progress lines on rank 0"),

        integer("parallel", "perturbation", member(p, &ParallelSection::perturbation), 1,
                "P: ranks that share the forward evaluations of one step",
                ", divides the step's evaluations (2 x `optim.queries`; one_sided: "
                "`optim.queries` + 1)"),
        trajectory(integer("parallel", "data", member(p, &ParallelSection::data), 1,
                           "D: data-parallel replicas, each with its own micro-batch")),
        integer("parallel", "check_interval", member(p, &ParallelSection::check_interval), 0,
                "steps between replica digest checks; 0 = never"),
        number_or_word("parallel", "watchdog", member(p, &ParallelSection::watchdog),
                       {{"auto", kWatchdogAuto}, {"off", kWatchdogOff}},
                       "seconds a rank may go without progress (a step, an evaluation batch, a "
                       "checkpoint tensor) before every rank is ended with exit status 76, "
                       "naming the ranks that stopped reporting; `auto` = 10 x the median step "
                       "time, at least 600 s and at least the time to write θ at 100 MB/s"),

        choice("placement", "mode", member(pl, &PlacementSection::mode),
               {{"resident", PlacementMode::resident}, {"offload", PlacementMode::offload}},
               "where θ lives: `resident` = every parameter in device memory; `offload` (ZO2) "
               "= transformer blocks in host memory, streamed through device slots one at a "
               "time (docs/placement.md)"),
        integer("placement", "resident_blocks", member(pl, &PlacementSection::resident_blocks), 0,
                "offload: blocks 0..K-1 stay in device memory, the others stream; K at or above "
                "the model's block count means resident"),
        integer("placement", "prefetch", member(pl, &PlacementSection::prefetch), 1,
                "offload: block uploads in flight ahead of the block in use (device slots = "
                "prefetch + 2 unless `placement.slots` says; more than the streamed blocks "
                "change nothing)",
                "", kMaxRingSlots - 2),
        allowing("0, or >= prefetch + 1",
                 integer("placement", "slots", member(pl, &PlacementSection::slots), 0,
                         "offload: device slots of the ring; 0 = prefetch + 2 (the block in use, "
                         "the uploads ahead and a write-back in flight); prefetch + 1 saves a "
                         "block of device memory, each upload then waiting for the write-back of "
                         "the block that left its slot",
                         "", kMaxRingSlots)),
        choice("placement", "share_host_master", member(pl, &PlacementSection::share_host_master),
               {{"auto", ShareHostMaster::automatic},
                {"true", ShareHostMaster::on},
                {"false", ShareHostMaster::off}},
               "one θ master per node in shared memory, each rank updating and perturbing its "
               "slice (Placement II); `auto` = on when more than one rank of the run is on a "
               "node"),
        choice("placement", "exchange", member(pl, &PlacementSection::exchange),
               {{"auto", ExchangeKind::automatic},
                {"shared_memory", ExchangeKind::shared_memory},
                {"mpi", ExchangeKind::mpi},
                {"nccl", ExchangeKind::nccl}},
               "how a node's ranks exchange their slices of the perturbed weights: "
               "`shared_memory` (host backends), `nccl` (GPUs, built with NCCL), `mpi`; `auto` "
               "= the first of these the build can do"),

        choice("placement", "perturbed_weights", member(pl, &PlacementSection::perturbed_weights),
               {{"together", PerturbedWeightsSchedule::together},
                {"one_at_a_time", PerturbedWeightsSchedule::one_at_a_time}},
               "how a rank holds w = θ ± εz: `together` = w+ and w- of a block and the edges' w "
               "of each of its evaluations at once (z once per query); `one_at_a_time` = one "
               "block arena and one copy of the edges, each evaluation's w in turn: less device "
               "memory for z computed once per evaluation, and again for the head "
               "(docs/placement.md). The same results either way"),

        trajectory(choice(
            "precision", "storage", member(pr, &PrecisionSection::storage),
            {{"fp32", StorageDtype::fp32},
             {"bf16", StorageDtype::bf16},
             {"fp16", StorageDtype::fp16}},
            "how θ's master copy is stored: `fp32` = 4 bytes per parameter; `bf16`, `fp16` = 2 "
            "(a model in another dtype is rounded to nearest once when loaded; the forward pass "
            "and the update compute in float32; tested on host backends; docs/perturbation.md); "
            "checkpoints hold θ in it. Left out: the dtype of the file θ is loaded from — the "
            "one holding most of the model file's elements (fp32 for a float32 file, bf16 for a "
            "bf16 import), a resumed checkpoint's storage — said in run.log")),
        trajectory(choice(
            "precision", "rounding", member(pr, &PrecisionSection::rounding),
            {{"stochastic", Rounding::stochastic}, {"nearest", Rounding::nearest}},
            "how an updated θ is stored in 2 bytes: `stochastic` keeps updates below half an "
            "ulp in expectation, `nearest` loses them; ignored with `storage: fp32`")),
        trajectory(choice(
            "precision", "gemm_inputs", member(pr, &PrecisionSection::gemm_inputs),
            {{"fp32", GemmInputs::fp32}, {"storage", GemmInputs::storage}},
            "what the dense layers multiply: `fp32` = float32 weights and activations; "
            "`storage` = every matrix's w± as 2-byte words of θ's storage dtype (rounded to "
            "nearest) and the GEMM inputs rounded to it, float32 accumulation — half the "
            "device memory of w± (with `perturbed_weights: one_at_a_time` a block's matrices "
            "a tensor at a time), the tensor-core path under CUDA (cublasGemmEx), a slow naive "
            "reference kernel on host backends. Needs `storage: bf16` or `fp16` and a rank's "
            "own θ (no node-shared master); changes the numerics (docs/perturbation.md)")),
    };
  }();
  return table;
}

std::vector<const char*> keys_of(const std::string& section) {
  std::vector<const char*> keys;
  for (const Field& f : fields())
    if (section == f.section) keys.push_back(f.key);
  return keys;
}

std::vector<const char*> section_names() {
  std::vector<const char*> names;
  for (const auto& s : sections()) names.push_back(s.name);
  return names;
}

std::string section_list() { return join(section_names()); }

}  // namespace distzo::io::deck_detail
