#include "app/run_inputs.hpp"

#include <algorithm>

#include "app/deck_config.hpp"
#include "app/resume.hpp"
#include "app/run_directory.hpp"
#include "app/step_diagnostics.hpp"
#include "core/error.hpp"

namespace distzo::app {

namespace {

/// checkpoint.resume as rank 0 chooses it (run_directory.hpp), on every
/// rank; rank 0's failure must not leave the others waiting in the broadcast.
ResumeChoice resume_choice(const io::Deck& deck, const runtime::Communicator& world,
                           std::vector<std::string>& notes) {
  std::string text;
  if (world.rank() == 0) {
    try {
      const ResumeChoice c = choose_resume(deck, notes);
      // Four fields, NUL-separated: no path holds a NUL.
      text = "=" + c.path + '\0' + c.theta_from + '\0' + std::to_string(c.theta_step) + '\0' +
             c.base_digest;
    } catch (const Error& e) {
      text = "!" + std::string(e.what());
    }
  }
  text = runtime::broadcast_string(world, text);
  DISTZO_INPUT_REQUIRE(text[0] == '=', text.substr(1));
  std::vector<std::string> parts(1);
  for (std::size_t i = 1; i < text.size(); ++i) {
    if (text[i] == '\0')
      parts.emplace_back();
    else
      parts.back().push_back(text[i]);
  }
  parts.resize(4);
  return {parts[0], parts[1], parts[2].empty() ? 0 : std::stoll(parts[2]), parts[3]};
}

/// The resume continues the run of its checkpoint (resume.hpp), or throws.
void check_resume(Inputs& in, const runtime::Communicator& world) {
  const io::Deck& deck = in.deck;
  const io::Deck saved = io::parse_deck(in.state.deck_yaml, in.resume + " (its deck)");
  ResumeDigests now;
  // The base model: rank 0 reads the deck's model once and digests it
  // (unless choosing a log-only checkpoint's θ did, comparing the same).
  if (!in.state.base_model_digest.empty() && world.rank() == 0) {
    if (!in.choice.base_digest.empty()) {
      now.model = in.choice.base_digest;
    } else {
      const io::ModelReader base(deck.model.path);
      now.model =
          base.info().config == in.model->info().config ? base.digest() : "another architecture";
    }
  }
  now.model = runtime::broadcast_string(world, now.model);
  if (!in.state.train_digest.empty()) now.train = io::dataset_digest(in.train);
  const ResumeChanges changes =
      resume_changes(saved, in.state, deck, deck.checkpoint.allow_changes, now);
  for (const std::string& change : changes.allowed)
    in.notes.push_back("resumed with " + change + " (checkpoint.allow_changes)");
  std::string list, storage_hint;
  bool listable = false;  // some refused key may be listed in allow_changes
  for (const std::string& r : changes.refused) {
    list += "\n  " + r;
    const auto& fixed = io::run_constant_keys();
    listable |= std::none_of(fixed.begin(), fixed.end(),
                             [&](const std::string& k) { return r.rfind(k + ":", 0) == 0; });
    if (r.rfind("precision.storage:", 0) == 0)
      storage_hint =
          "\n(precision.storage: with allow_changes: [precision.storage] θ is converted as it is "
          "loaded — exactly into fp32, rounded to nearest once into bf16 or fp16 — and run.log "
          "says so; leave precision.storage out of the deck to keep the checkpoint's storage)";
  }
  DISTZO_INPUT_REQUIRE(changes.refused.empty(),
                       deck.origin.source << ": resuming " << in.resume
                                          << " with changes that alter the run it continues:"
                                          << list << "\nSet them back"
                                          << (listable ? ", or list the keys changed on purpose in "
                                                         "checkpoint.allow_changes"
                                                       : "")
                                          << storage_hint);
}

/// A log-only checkpoint resumed: θ is rebuilt with the z and weight decay
/// of its run (its file's, before the deck's replace them), and in its
/// storage, which the rows were rounded to; a resume that changes the
/// storage or a 2-byte θ's rounding goes from a full checkpoint.
void check_log_resume(Inputs& in) {
  const io::Deck& deck = in.deck;
  in.log_z = in.state.z;
  const io::Deck log_deck = io::parse_deck(in.state.deck_yaml, in.resume + " (its deck)");
  in.log_momentum = {log_deck.optim.momentum, log_deck.optim.history};
  in.log_z.blocks = block_choice(log_deck, in.model->info().registry.num_blocks());
  in.log_weight_decay = log_deck.optim.weight_decay;
  const bool storage =
      deck.origin.written("precision.storage") && deck.precision.storage != in.state.storage;
  const bool rounding =
      in.state.storage != StorageDtype::fp32 && deck.precision.rounding != in.state.rounding;
  DISTZO_INPUT_REQUIRE(!storage && !rounding,
                       deck.origin.where(storage ? "precision.storage" : "precision.rounding")
                           << "the log-only checkpoint " << in.resume << " rebuilds θ in its run's "
                           << to_string(in.state.storage) << " with "
                           << to_string(in.state.rounding)
                           << " rounding, the deck asks for another; resume it as it ran, then "
                              "change the precision at a full checkpoint (checkpoint.resume: "
                              "ckpt-STEP.h5 with checkpoint.allow_changes)");
}

/// precision.storage left out of the deck: the storage of the file θ is
/// loaded from — a checkpoint's (the storage its run had), else the one that
/// holds most of the model file's elements — so a bf16 model is trained in
/// bf16 and a resume keeps its run's storage. An explicit value wins.
void resolve_storage(Inputs& in) {
  if (in.deck.origin.written("precision.storage")) return;
  in.deck.precision.storage = in.resume.empty() ? in.model->theta_dtype() : in.state.storage;
  if (in.deck.precision.storage != StorageDtype::fp32)
    in.notes.push_back(std::string("precision.storage is not set: θ is stored in ") +
                       to_string(in.deck.precision.storage) + ", as " +
                       (in.resume.empty() ? "the model file " + in.model->path() + " holds it"
                                          : "the run of " + in.resume + " stored it") +
                       " (set precision.storage to choose)");
}

/// What converting θ into `to` does: float32 holds every bf16 and fp16
/// value; a 2-byte format rounds what it does not hold to nearest.
std::string conversion_effect(StorageDtype to) {
  return to == StorageDtype::fp32 ? "exact" : "rounded to nearest once";
}

/// run.log says when θ is loaded into another storage than its file's.
void note_conversion(Inputs& in) {
  const StorageDtype to = in.deck.precision.storage;
  if (!in.resume.empty()) {
    // A checkpoint of an older distzo held a 2-byte θ as float32 values:
    // what counts is the storage its run had.
    if (in.state.storage != to)
      in.notes.push_back(std::string("θ from ") + in.resume + ", stored in " +
                         to_string(in.state.storage) + ", is stored in " + to_string(to) +
                         " from here on (" + conversion_effect(to) + ")");
    return;
  }
  if (!in.model->all_in(to))
    in.notes.push_back("θ from " + in.model->path() + ", held there in " +
                       in.model->describe_dtypes() + ", is stored in " + to_string(to) + " (" +
                       conversion_effect(to) + ")");
}

}  // namespace

void check_sequences_fit(const std::string& file, std::int64_t seq_len,
                         const model::ModelConfig& config) {
  const std::string too_long = config.sequence_problem(seq_len);
  DISTZO_INPUT_REQUIRE(too_long.empty(), file << ": " << too_long
                                              << " (tokenize the dataset with "
                                                 "tools/make_dataset.py --max-len "
                                              << config.longest_sequence() << " or less)");
}

Inputs load_inputs(const std::string& deck_path, const runtime::Communicator& world) {
  Inputs in;
  in.deck = io::load_deck(deck_path);
  const io::Deck& deck = in.deck;
  io::check_mesh(deck, world.size());
  const auto& opt = deck.optim;
  in.choice = resume_choice(deck, world, in.notes);
  in.resume = in.choice.path;
  in.model =
      std::make_unique<io::ModelReader>(in.resume.empty() ? deck.model.path : in.choice.theta_from);
  ZRecipe recipe = z_recipe_from_int(opt.z_recipe);
  in.state.queries = opt.queries;
  in.state.batch_width = deck.data.batch_width;
  if (!in.resume.empty()) {
    in.state = io::read_training_state(in.resume);
    if (in.choice.log_only()) check_log_resume(in);
    // The recipe of z is the checkpoint's: a run in progress is never
    // stranded by a new default. Only an explicit, different choice is an error.
    DISTZO_INPUT_REQUIRE(
        !deck.origin.written("optim.z_recipe") || opt.z_recipe == to_int(in.state.z.recipe),
        deck.origin.where("optim.z_recipe")
            << "the checkpoint " << in.resume << " was written with z recipe "
            << to_int(in.state.z.recipe) << ", the deck asks for " << opt.z_recipe
            << "; a run continues with the z it started with (leave the key out "
               "to resume, or start a new run for recipe "
            << opt.z_recipe << ")");
    // The same for the batch width: a checkpoint from before trimming
    // continues at the full width it ran at.
    DISTZO_INPUT_REQUIRE(
        !deck.origin.written("data.batch_width") || deck.data.batch_width == in.state.batch_width,
        deck.origin.where("data.batch_width")
            << "the checkpoint " << in.resume << " ran its batches at width '"
            << model::to_string(in.state.batch_width) << "', the deck asks for '"
            << model::to_string(deck.data.batch_width)
            << "'; a run continues at the width it started with (leave the key "
               "out to resume, or start a new run)");
    // The deck as run: deck.resolved.yaml and the checkpoints record it.
    recipe = in.state.z.recipe;
    in.deck.optim.z_recipe = to_int(recipe);
    in.deck.data.batch_width = in.state.batch_width;
    DISTZO_INPUT_REQUIRE(in.state.step <= opt.steps,
                         deck.origin.where("optim.steps")
                             << "the checkpoint " << in.resume << " is at step " << in.state.step
                             << ", beyond optim.steps = " << opt.steps
                             << ": there is nothing to continue (raise optim.steps)");
  }
  // The run's z, built here once: the deck's seed and distribution (a
  // resume may change them on purpose, checkpoint.allow_changes) with the
  // recipe of the run it continues. The trainer draws it; the checkpoints
  // record it.
  const int blocks = in.model->info().registry.num_blocks();
  in.state.z = {opt.seed, opt.distribution, recipe, block_choice(deck, blocks)};
  resolve_storage(in);
  const model::ModelConfig& config = in.model->info().config;
  const std::int64_t vocab = config.vocab_size;
  in.train = io::load_dataset(deck.data.train, vocab);
  if (!deck.data.eval.empty())
    in.eval = std::make_unique<io::Dataset>(io::load_dataset(deck.data.eval, vocab));
  for (const io::Dataset* d : {static_cast<const io::Dataset*>(&in.train),
                               static_cast<const io::Dataset*>(in.eval.get())}) {
    if (!d) continue;
    const std::string& file = d == &in.train ? deck.data.train : deck.data.eval;
    check_sequences_fit(file, d->seq_len, config);
    DISTZO_REQUIRE(d->task == in.train.task && d->candidates == in.train.candidates &&
                       d->seq_len == in.train.seq_len,
                   "data.eval must have the task, candidates and sequence length of data.train");
  }
  if (in.resume.empty())
    in.state.train_digest = io::dataset_digest(in.train);
  else
    check_resume(in, world);
  // How this run stores θ, which its checkpoints record; a resume into
  // another storage (allowed by check_resume) converts θ as the store loads it.
  note_conversion(in);
  in.state.storage = deck.precision.storage;
  in.state.rounding = deck.precision.rounding;
  if (const std::string warning = eps_warning(opt.eps); !warning.empty())
    in.notes.push_back(warning);
  return in;
}

}  // namespace distzo::app
