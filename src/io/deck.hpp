#pragma once
// Input decks (docs/decks.md): the YAML file a user hands to `distzo run`,
// read into plain structs with every default filled in.
//
// Decks are strict. yaml-cpp accepts unknown and duplicate keys silently, so
// the loader walks every map itself: an unknown key, a duplicate key, a wrong
// type, an out-of-range value, an unknown enum value, a missing required key
// or file, a YAML syntax error, or a mesh that does not fit the job is a
// distzo::Error whose message starts with `<source>:<line>: <section.key>: `
// and says what is allowed and what was found.
//
// Paths in a deck are used as written: a relative path is relative to the
// working directory of the process (as in most HPC codes), not to the deck.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/estimator_kind.hpp"
#include "core/lr_schedule_kind.hpp"
#include "core/perturbation.hpp"
#include "core/placement_kinds.hpp"
#include "core/storage_dtype.hpp"
#include "model/batch.hpp"

namespace distzo::io {

/// Values that the layers above io implement are those layers' own enums,
/// defined in core/ where io sees them too: Distribution
/// (core/perturbation.hpp), ScheduleKind (core/lr_schedule_kind.hpp),
/// PlacementMode and ExchangeKind (core/placement_kinds.hpp).
using distzo::Distribution;
using distzo::EstimatorKind;
using distzo::ExchangeKind;
using distzo::PlacementMode;
using distzo::ScheduleKind;

struct ModelSection {
  std::string path;  // HDF5 model file (required)
};

struct DataSection {
  std::string train;               // training set (required)
  std::string eval;                // evaluation set; empty = no evaluation
  int micro_batch = 8;             // examples per rank and step, >= 1
  std::uint64_t shuffle_seed = 0;  // seed of the example order
  model::BatchWidth batch_width = model::BatchWidth::trimmed;  // positions a batch runs at
};

struct OptimSection {
  std::int64_t steps = 0;  // required, >= 0
  double lr = 0.0;         // required, > 0
  ScheduleKind schedule = ScheduleKind::constant;
  std::int64_t warmup_steps = 0;  // >= 0 and <= steps
  double eps = 1e-3;              // perturbation scale, > 0
  double weight_decay = 0.0;      // >= 0
  EstimatorKind estimator = EstimatorKind::spsa;
  int queries = 1;  // directions per step, >= 1: q (spsa: 2q evaluations), N (one_sided: N + 1)
  Distribution distribution = Distribution::gaussian;
  int z_recipe = 2;          // the Gaussian's recipe (core/perturbation.hpp): 2, or 1 for old runs
  std::uint64_t seed = 0;    // run seed of z
  int max_nonfinite = 5;     // abort after this many consecutive non-finite losses
  double momentum = 0.0;     // β in [0, 1): weight of the older log rows (zo/momentum.hpp)
  int history = 1;           // h: log rows an update uses; 1 when momentum is 0, >= 2 otherwise
  int perturbed_blocks = 0;  // K: decoder blocks a step perturbs (core/block_choice.hpp); 0 = all
};

struct EvalSection {
  std::int64_t interval = 0;      // steps between evals; 0 = before training and at the end only
  std::int64_t max_examples = 0;  // 0 = the whole eval set
};

struct CheckpointSection {
  std::int64_t interval = 0;               // steps between checkpoints; 0 = at the end only
  std::int64_t log_interval = 0;           // steps between log-only checkpoints; 0 = none
  int keep = 2;                            // newest checkpoints kept (and log-only ones), >= 1
  std::string resume;                      // "" = fresh start, a ckpt path, or "latest"
  std::vector<std::string> allow_changes;  // trajectory keys a resume may change (resume_keys())
};

struct OutputSection {
  std::string dir;                 // required; created by the runner
  std::int64_t log_interval = 10;  // steps between progress lines, >= 1
};

struct ParallelSection {
  int perturbation = 1;               // P: ranks sharing the 2q evaluations of a step
  int data = 1;                       // D: data-parallel replicas
  std::int64_t check_interval = 100;  // steps between replica digest checks; 0 = never
  double watchdog = 0;                // seconds without progress before the job ends; or:
};
/// parallel.watchdog's `auto` (10 x the median step, at least 600 s and θ's write time) and `off`.
constexpr double kWatchdogAuto = 0;
constexpr double kWatchdogOff = -1;

/// Placement II: one θ master per node, sliced across the node's ranks
/// (`automatic`: when the node has more than one rank of the run; the app
/// resolves it into runtime::PlacementConfig::share_host_master).
enum class ShareHostMaster { automatic, on, off };
/// Whether a rank's perturbed weights are held for all its evaluations at
/// once or one evaluation at a time (runtime::PlacementConfig::perturb_one_at_a_time).
enum class PerturbedWeightsSchedule { together, one_at_a_time };

struct PlacementSection {
  PlacementMode mode = PlacementMode::resident;
  int resident_blocks = 0;  // offload: blocks 0..K-1 stay on the device; K >= L means resident
  int prefetch = 1;         // offload: block uploads in flight ahead of the block in use
  int slots = 0;            // offload: device slots, 0 = prefetch + 2
  ShareHostMaster share_host_master = ShareHostMaster::automatic;  // auto: > 1 rank on a node
  ExchangeKind exchange = ExchangeKind::automatic;
  PerturbedWeightsSchedule perturbed_weights = PerturbedWeightsSchedule::together;
};

/// How θ's master copy is stored (core/storage_dtype.hpp's own types).
using distzo::Rounding;
using distzo::StorageDtype;

/// What the blocks' GEMMs take as inputs: float32, or 2-byte words in θ's
/// storage dtype (w± of the block matrices and the activations rounded to
/// it; float32 accumulation).
enum class GemmInputs { fp32, storage };

struct PrecisionSection {
  StorageDtype storage = StorageDtype::fp32;  // bytes per element of θ: 4, or 2 (bf16, fp16)
  Rounding rounding = Rounding::stochastic;   // how an update is stored in 2 bytes (fp32: exact)
  GemmInputs gemm_inputs = GemmInputs::fp32;
};

/// Where a deck came from, for error messages raised after parsing
/// (a mesh mismatch, a file that vanished, ...).
struct DeckOrigin {
  std::string source;  // the name given to parse_deck (the path, for load_deck)
  /// 1-based line of every section ("optim") and key ("optim.lr") written in
  /// the deck; keys left to their default are absent.
  std::map<std::string, int> lines;

  bool written(const std::string& key) const { return lines.count(key) != 0; }
  /// The key's line, else its section's line, else 1.
  int line(const std::string& key) const;
  /// "<source>:<line>: <key>: " — the prefix every deck error starts with.
  std::string where(const std::string& key) const;
};

struct Deck {
  ModelSection model;
  DataSection data;
  OptimSection optim;
  EvalSection eval;
  CheckpointSection checkpoint;
  OutputSection output;
  ParallelSection parallel;
  PlacementSection placement;
  PrecisionSection precision;
  DeckOrigin origin;  // not part of the value: operator== ignores it
};

/// The keys whose change alters a run's trajectory, in deck order: a resume
/// compares them with the checkpoint's deck ("model" and "data.train" stand
/// for the digests of the base model and the training set). The field
/// table's trajectory column (io/deck_fields.cpp), read once.
const std::vector<std::string>& resume_keys();
/// The trajectory keys no resume can change, not even one listed in
/// checkpoint.allow_changes: how the seed log's rows are read (the
/// estimator, its queries a row, the momentum and its history); the field
/// table's run_constant column.
const std::vector<std::string>& run_constant_keys();
/// resume_keys() less run_constant_keys(): what checkpoint.allow_changes may list.
const std::vector<std::string>& changeable_keys();
/// Why (the end of a sentence that names such a key).
extern const char* const kRunConstantWhy;

/// The value of `section.key` as the resolved deck writes it.
std::string deck_value(const Deck& deck, const std::string& key);

/// Compares the values of two decks (every section), not where they came from.
bool operator==(const Deck& a, const Deck& b);
inline bool operator!=(const Deck& a, const Deck& b) { return !(a == b); }

/// Every key a deck may hold, as "section.key", in the canonical order that
/// resolved_yaml writes.
std::vector<std::string> deck_keys();

/// The key tables of docs/decks.md (type, default, allowed values, meaning of
/// every key, section by section), generated from the same field table that
/// the reader, the resolved writer and operator== use. `distzo help deck`
/// prints it; a test keeps docs/decks.md equal to it.
std::string deck_reference_markdown();

/// Parses and validates deck text: syntax, keys, types, ranges, enums and
/// the cross-field rules (optim.warmup_steps <= optim.steps,
/// parallel.perturbation divides the evaluations of a step: perturbation_problem). Touches no
/// files: `source_name` is only used in messages. Throws distzo::Error.
Deck parse_deck(const std::string& yaml_text, const std::string& source_name);

/// Checks the files a deck names, relative to the current working directory:
/// model.path, data.train, data.eval (when set) and checkpoint.resume (when a
/// path, not "latest") must be existing regular files; output.dir, if it
/// exists, must be a directory. Throws distzo::Error at the key's line.
void validate_files(const Deck& deck);

/// The largest deck load_deck reads (1 MiB): decks are a page of YAML.
constexpr std::uintmax_t kMaxDeckBytes = 1 << 20;

/// Reads the file, parse_deck()s it with the path as the source name, then
/// validate_files(). What `distzo run` calls on every rank. A file above
/// kMaxDeckBytes is refused unread.
Deck load_deck(const std::string& path);

/// "" when P = `perturbation` ranks can share the evaluations of a step of
/// `estimator` with `queries` directions (P divides 2q for spsa, N + 1 for
/// one_sided), else why not and the P that can. The one statement of the
/// rule: parse_deck checks parallel.perturbation with it, `distzo plan` its
/// --perturbation. `queries_name` is what the reader calls q
/// ("optim.queries" in a deck).
std::string perturbation_problem(EstimatorKind estimator, int queries, int perturbation,
                                 const std::string& queries_name);

/// Throws unless parallel.perturbation * parallel.data == world_size; the
/// message names both keys, their lines, the product and the rank count.
void check_mesh(const Deck& deck, int world_size);

/// The deck as YAML with every key written and defaults filled in, in the
/// canonical key order, so that parse_deck(resolved_yaml(d), ...) == d. The
/// runner writes it to output.dir/deck.resolved.yaml.
std::string resolved_yaml(const Deck& deck);

}  // namespace distzo::io
