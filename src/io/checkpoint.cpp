#include "io/checkpoint.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/error.hpp"
#include "core/unlinked_on_signal.hpp"
#include "core/version.hpp"
#include "io/deck.hpp"
#include "runtime/mpi_communicator.hpp"

namespace distzo::io {

std::string checkpoint_name(std::int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "ckpt-%06lld.h5", static_cast<long long>(step));
  return buf;
}

std::string log_checkpoint_name(std::int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "log-%06lld.h5", static_cast<long long>(step));
  return buf;
}

std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(const std::string& dir,
                                                                   const std::string& prefix) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  DIR* d = opendir(dir.c_str());
  if (!d) return found;
  // "ckpt-<digits>.h5", padded (as distzo writes them) or not; temporary
  // files ("ckpt-000100.h5.tmp.PID") and another run's kept aside
  // ("ckpt-000100.run-ID.h5") do not match.
  const std::string suffix = ".h5";
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() + suffix.size() ||
        name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoll(digits), dir + "/" + name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

/// The root attributes and distzo/ datasets of the training state.
void write_training_state(Hdf5File& file, const TrainingState& state) {
  file.write_int_attribute("step", state.step);
  file.write_string_attribute("seed", std::to_string(state.z.seed));  // uint64: exact as text
  file.write_int_attribute("queries", state.queries);
  file.write_string_attribute("distribution", to_string(state.z.distribution));
  file.write_int_attribute("z_recipe", to_int(state.z.recipe));
  file.write_string_attribute("batch_width", model::to_string(state.batch_width));
  file.write_string_attribute("deck_yaml", state.deck_yaml);
  if (!state.parameter_digest.empty())
    file.write_string_attribute("parameter_digest", state.parameter_digest);
  file.write_int_attribute("nonfinite_streak", state.nonfinite_streak);
  if (!state.run_id.empty()) file.write_string_attribute("run_id", state.run_id);
  if (!state.base_model_digest.empty())
    file.write_string_attribute("base_model_digest", state.base_model_digest);
  if (!state.train_digest.empty()) file.write_string_attribute("train_digest", state.train_digest);
  file.write_string_attribute("storage", to_string(state.storage));
  file.write_string_attribute("rounding", to_string(state.rounding));
  file.write_string_attribute("distzo_version", distzo_version());

  const PendingUpdate& p = state.pending;
  file.write_int_attribute("pending_active", p.active ? 1 : 0);
  file.write_int_attribute("pending_step", p.step);
  file.write_double_attribute("pending_lr", p.lr);
  file.write_double_attribute("pending_weight_decay", p.weight_decay);
  // A pending update is recorded as its step's own row (pending_g): the
  // trainer flushes before every checkpoint, and one over several steps'
  // rows (momentum) is rebuilt from the seed log (zo/momentum.hpp).
  const std::vector<double> pending_g = p.own_row();
  DISTZO_REQUIRE(!p.active || !pending_g.empty(),
                 "checkpoint: a pending update over several steps' rows is not written; flush "
                 "it first");
  if (!pending_g.empty())
    file.write_doubles("distzo/pending_g", {static_cast<std::int64_t>(pending_g.size())},
                       pending_g.data());

  const auto n = static_cast<std::int64_t>(state.seed_log.size());
  std::vector<std::int64_t> steps;
  std::vector<double> lr, loss, g;
  for (const auto& e : state.seed_log) {
    steps.push_back(e.step);
    lr.push_back(e.lr);
    loss.push_back(e.loss);
    // A skipped step updates nothing: its g row is zeros.
    for (int q = 0; q < state.queries; ++q)
      g.push_back(e.g.empty() ? 0.0 : e.g.at(static_cast<std::size_t>(q)));
  }
  file.write_int64s("distzo/seed_log/step", {n}, steps.data());
  file.write_doubles("distzo/seed_log/lr", {n}, lr.data());
  file.write_doubles("distzo/seed_log/loss", {n}, loss.data());
  file.write_doubles("distzo/seed_log/g", {n, state.queries}, g.data());
}

/// Bytes a checkpoint file takes: θ, the seed log, the tokenizer files, and
/// room for metadata.
double checkpoint_bytes(const ModelInfo& model, const TrainingState& state) {
  const double log_row = 3 * 8.0 + 8.0 * state.queries;
  return 1.02 * (static_cast<double>(bytes_per_element(state.storage)) *
                     static_cast<double>(model.registry.total_elements()) +
                 log_row * static_cast<double>(state.seed_log.size()) +
                 static_cast<double>(model.hf_tokenizer_files.size())) +
         64.0 * 1024.0;
}

ModelInfo as_checkpoint(const ModelInfo& model) {
  ModelInfo info = model;
  info.kind = "checkpoint";
  return info;
}

}  // namespace

void write_checkpoint(const std::string& path, const ModelInfo& model, const TensorSource& tensors,
                      const TrainingState& state) {
  require_free_space(path, checkpoint_bytes(model, state), "checkpoint");
  try {
    write_atomically(path, [&](Hdf5File& file) {
      write_model_tensors(file, as_checkpoint(model), tensors, state.storage);
      write_training_state(file, state);
    });
  } catch (const Error& e) {
    throw Error("checkpoint " + path + " was not written (" + e.what() +
                "); earlier checkpoints, if any, are untouched");
  }
}

void write_checkpoint_parallel(const std::string& path, const ModelInfo& model,
                               const runtime::MpiCommunicator& comm, const SliceSource& slices,
                               const TrainingState& state) {
  // Only the writers make these collectives (rank 0's node, not the other
  // nodes): a watchdog counting every rank's collectives must not see them.
  const std::unique_ptr<runtime::MpiCommunicator> writers = comm.unwatched();
  // Every rank sees the same file system: they refuse together.
  require_free_space(path, checkpoint_bytes(model, state), "checkpoint");
  // One temporary name for all: rank 0's.
  const std::string tmp = runtime::broadcast_string(*writers, temporary_path_for(path));

  const UnlinkedOnSignal in_flight(tmp);  // on every writer: any may be signalled
  Hdf5File file(tmp, *writers);
  try {
    write_model_slices(file, as_checkpoint(model), state.storage, slices);
    write_training_state(file, state);
  } catch (const Error& e) {
    // This rank failed alone (a full disk met by its own writes): the others
    // are inside collective writes it will not join, so it leaves the file
    // unclosed and removes it (any rank may: one file system) before main
    // aborts the job.
    file.abandon();
    std::remove(tmp.c_str());
    throw Error("checkpoint " + path + " was not written: " + e.what() +
                "; earlier checkpoints, if any, are untouched");
  }
  // Closing flushes every rank's data; a full disk fails here, on any rank.
  std::string problem;
  try {
    file.close();
  } catch (const Error& e) {
    problem = e.what();
  }
  if (writers->all_true(problem.empty())) {
    if (writers->rank() == 0) commit_temporary(tmp, path);
    writers->barrier();  // the file is in place before anyone reports it
    return;
  }
  if (writers->rank() == 0) discard_temporary(tmp);
  throw Error("checkpoint " + path + " was not written" +
              (problem.empty()
                   ? std::string(": another rank of the node failed to write its slices")
                   : ": " + problem) +
              "; earlier checkpoints, if any, are untouched");
}

void write_log_checkpoint(const std::string& path, const TrainingState& state) {
  // θ is not in it: the seed log, the deck and 64 KiB of metadata.
  const double bytes =
      (3 * 8.0 + 8.0 * state.queries) * static_cast<double>(state.seed_log.size()) +
      static_cast<double>(state.deck_yaml.size()) + 64.0 * 1024.0;
  require_free_space(path, bytes, "log-only checkpoint");
  try {
    write_atomically(path, [&](Hdf5File& file) {
      file.write_string_attribute("distzo_format", kSeedLogFormat);
      file.write_int_attribute("format_version", kModelFormatVersion);
      write_training_state(file, state);
    });
  } catch (const Error& e) {
    throw Error("log-only checkpoint " + path + " was not written (" + e.what() +
                "); earlier checkpoints, if any, are untouched");
  }
}

std::string distzo_format(const std::string& path) {
  try {
    const Hdf5File file(path, Hdf5File::Mode::read);
    return file.has_attribute("distzo_format") ? file.read_string_attribute("distzo_format") : "";
  } catch (const Error&) {
    return "";
  }
}

std::string checkpoint_run_id(const std::string& path) {
  try {
    const Hdf5File file(path, Hdf5File::Mode::read);
    // A damaged id must not pass for another run's: that checkpoint would be
    // kept aside under a name made from it (the fuzzer's 1000-byte id made
    // that name too long to create, and the run stop).
    file.verify_attributes();
    const std::string id = file.has_attribute("run_id") ? file.read_string_attribute("run_id") : "";
    // distzo's ids are 16 hex digits; anything that cannot be part of a
    // file name (too long, a '/', a control character) is damage.
    const bool well_formed = id.size() <= 64 && std::none_of(id.begin(), id.end(), [](char c) {
                               return c == '/' || static_cast<unsigned char>(c) < 0x20;
                             });
    return well_formed ? id : "";
  } catch (const Error&) {
    return "";
  }
}

namespace {

/// What the seed log and the deck copy imply of a checkpoint's attributes
/// holds: the checksums catch damage, not an edit whose checksum was made
/// again (a `step` one ahead of its log resumed into a run with a step
/// missing from its log and a different digest).
void check_consistency(const TrainingState& s, const std::string& path) {
  const std::vector<SeedLogEntry>& log = s.seed_log;
  for (std::size_t i = 0; i < log.size(); ++i)
    DISTZO_INPUT_REQUIRE(log[i].step == static_cast<std::int64_t>(i),
                         path << ": the seed log's entry " << i << " is for step " << log[i].step
                              << "; a log holds steps 0, 1, 2, ... in order (the file was "
                                 "altered or damaged)");
  DISTZO_INPUT_REQUIRE(static_cast<std::int64_t>(log.size()) == s.step,
                       path << ": attribute 'step' is " << s.step << " but its seed log holds "
                            << log.size() << " step(s) (the file was altered or damaged)");
  if (s.pending.active) {
    DISTZO_INPUT_REQUIRE(!log.empty() && s.pending.step == log.back().step &&
                             s.pending.lr == log.back().lr && s.pending.own_row() == log.back().g,
                         path << ": the pending update (step " << s.pending.step
                              << ") is not the seed log's last step (the file was altered or "
                                 "damaged)");
  }
  // A deck copy that does not parse is the resume's to report (check_resume).
  Deck deck;
  try {
    deck = parse_deck(s.deck_yaml, path + " (its deck)");
  } catch (const Error&) {
    return;
  }
  DISTZO_INPUT_REQUIRE(deck.optim.seed == s.z.seed && deck.optim.queries == s.queries &&
                           deck.optim.distribution == s.z.distribution,
                       path << ": attributes seed " << s.z.seed << ", queries " << s.queries
                            << ", distribution " << to_string(s.z.distribution)
                            << " are not its deck's (" << deck.optim.seed << ", "
                            << deck.optim.queries << ", " << to_string(deck.optim.distribution)
                            << "): the file was altered or damaged");
}

}  // namespace

TrainingState read_training_state(const std::string& path) {
  Hdf5File file(path, Hdf5File::Mode::read);
  const std::string format =
      file.has_attribute("distzo_format") ? file.read_string_attribute("distzo_format") : "";
  DISTZO_INPUT_REQUIRE(format == "checkpoint" || format == kSeedLogFormat,
                       path << " is not a distzo checkpoint (distzo_format is \"" << format
                            << "\", not \"checkpoint\" or \"" << kSeedLogFormat << "\")");
  file.verify_attributes();  // a damaged step or deck is passed over by resume: latest
  TrainingState s;
  s.step = file.read_int_attribute("step");
  {
    const std::string seed = file.read_string_attribute("seed");
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(seed.c_str(), &end, 10);
    DISTZO_INPUT_REQUIRE(!seed.empty() &&
                             seed.find_first_not_of("0123456789") == std::string::npos &&
                             errno == 0 && end == seed.c_str() + seed.size(),
                         path << ": attribute 'seed' is \"" << seed
                              << "\", not an unsigned 64-bit integer in decimal");
    s.z.seed = value;
  }
  s.queries = static_cast<int>(file.read_int_attribute("queries"));
  s.z.distribution = parse_distribution(file.read_string_attribute("distribution"));
  const std::int64_t recipe =
      file.has_attribute("z_recipe") ? file.read_int_attribute("z_recipe") : 1;
  DISTZO_INPUT_REQUIRE(
      recipe == 1 || recipe == 2,
      path << ": z_recipe " << recipe << " is not a recipe this distzo knows (1, 2)");
  s.z.recipe = z_recipe_from_int(recipe);
  if (file.has_attribute("batch_width")) {
    const std::string width = file.read_string_attribute("batch_width");
    DISTZO_INPUT_REQUIRE(width == "full" || width == "trimmed",
                         path << ": batch_width \"" << width
                              << "\" is not a width this distzo knows (full, trimmed)");
    s.batch_width = width == "full" ? model::BatchWidth::full : model::BatchWidth::trimmed;
  }
  s.deck_yaml = file.read_string_attribute("deck_yaml");
  if (file.has_attribute("parameter_digest"))
    s.parameter_digest = file.read_string_attribute("parameter_digest");
  if (file.has_attribute("run_id")) s.run_id = file.read_string_attribute("run_id");
  if (file.has_attribute("base_model_digest"))
    s.base_model_digest = file.read_string_attribute("base_model_digest");
  if (file.has_attribute("train_digest"))
    s.train_digest = file.read_string_attribute("train_digest");
  if (file.has_attribute("storage"))
    s.storage = parse_storage_dtype(file.read_string_attribute("storage"));
  if (file.has_attribute("rounding"))
    s.rounding = parse_rounding(file.read_string_attribute("rounding"));
  if (file.has_attribute("distzo_version"))
    s.writer_version = file.read_string_attribute("distzo_version");
  if (file.has_attribute("nonfinite_streak"))
    s.nonfinite_streak = static_cast<int>(file.read_int_attribute("nonfinite_streak"));

  s.pending.active = file.read_int_attribute("pending_active") != 0;
  s.pending.step = file.read_int_attribute("pending_step");
  s.pending.lr = file.read_double_attribute("pending_lr");
  s.pending.weight_decay = file.read_double_attribute("pending_weight_decay");
  if (file.has_dataset("distzo/pending_g")) {
    const std::vector<double> g = file.read_doubles("distzo/pending_g");
    const PendingUpdate own =
        PendingUpdate::after({s.z, s.pending.step, 0}, g, s.pending.lr, s.pending.weight_decay);
    s.pending.queries = own.queries;
    s.pending.terms = own.terms;
  }

  const std::vector<std::int64_t> steps = file.read_int64s("distzo/seed_log/step");
  const std::vector<double> lr = file.read_doubles("distzo/seed_log/lr");
  const std::vector<double> loss = file.read_doubles("distzo/seed_log/loss");
  const std::vector<double> g = file.read_doubles("distzo/seed_log/g");
  DISTZO_INPUT_REQUIRE(lr.size() == steps.size() && loss.size() == steps.size() &&
                           g.size() == steps.size() * static_cast<std::size_t>(s.queries),
                       path << ": inconsistent seed log");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    SeedLogEntry e;
    e.step = steps[i];
    e.lr = lr[i];
    e.loss = loss[i];
    e.g.assign(g.begin() + static_cast<std::ptrdiff_t>(i * s.queries),
               g.begin() + static_cast<std::ptrdiff_t>((i + 1) * s.queries));
    s.seed_log.push_back(std::move(e));
  }
  check_consistency(s, path);
  return s;
}

}  // namespace distzo::io
