#include "corpus.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hdf5_mutate.hpp"
#include "mutate.hpp"

namespace distzo::fuzz {

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) {
    std::cerr << "distzo_fuzz: cannot write " << path << "\n";
    std::exit(2);
  }
}

// A deck of every section at values a 1-rank run of the tiny model accepts, so
// that mutations start from a run that goes all the way. A constant schedule:
// a resume may then ask for more steps than the checkpoint's run.
std::string deck_text(const std::string& train, const std::string& eval, int steps,
                      const std::string& dir, const std::string& resume) {
  std::ostringstream deck;
  deck << "model:\n  path: model.h5\n"
       << "data:\n  train: " << train << "\n"
       << (eval.empty() ? "" : "  eval: " + eval + "\n") << "  micro_batch: 8\n  shuffle_seed: 3\n"
       << "optim:\n  steps: " << steps
       << "\n  lr: 1.0e-3\n  schedule: constant\n  warmup_steps: 1\n"
       << "  eps: 1.0e-3\n  weight_decay: 0.0\n  queries: 1\n  distribution: gaussian\n  z_recipe: "
          "2\n"
       << "  seed: 7\n  max_nonfinite: 5\n"
       << "eval:\n  interval: 1\n  max_examples: 16\n"
       << "checkpoint:\n  interval: 1\n  keep: 2\n  resume: " << resume
       << "\n  allow_changes: [optim.steps]\n"
       << "output:\n  dir: " << dir << "\n  log_interval: 1\n"
       << "parallel:\n  perturbation: 1\n  data: 1\n  check_interval: 1\n  watchdog: 60\n"
       << "placement:\n  mode: offload\n  resident_blocks: 1\n  prefetch: 1\n"
       << "precision:\n  storage: fp32\n  rounding: nearest\n";
  return deck.str();
}

void run_or_exit(const std::string& distzo, const std::vector<std::string>& args,
                 const fs::path& dir, const Limits& limits) {
  const Outcome o = run_distzo(distzo, args, dir, limits, (dir.parent_path() / "corpus").string());
  if (o.signal != 0 || o.timed_out || o.exit_status != 0) {
    std::cerr << "distzo_fuzz: making the seed files, `distzo";
    for (const auto& a : args) std::cerr << " " << a;
    std::cerr << "` in " << dir << " failed (exit status " << o.exit_status << ", signal "
              << o.signal << (o.timed_out ? ", timed out" : "") << "):\n"
              << o.stderr_text << "\n";
    std::exit(2);
  }
}

// A deck given to `run` whose step count would make a healthy run outlast
// the timeout: `plan` reads it instead.
bool runs_long(const std::string& deck) {
  std::istringstream in(deck);
  for (std::string line; std::getline(in, line);) {
    const std::size_t key = line.find("steps:");
    if (key == std::string::npos || line.find_first_not_of(' ') != key) continue;
    const char* value = line.c_str() + key + 6;
    char* end = nullptr;
    const double steps = std::strtod(value, &end);
    if (end != value && steps > 100) return true;
  }
  return false;
}

}  // namespace

const std::vector<Target>& all_targets() {
  static const std::vector<Target> targets{Target::model, Target::dataset, Target::checkpoint,
                                           Target::deck};
  return targets;
}

std::string name(Target target) {
  switch (target) {
    case Target::model:
      return "model";
    case Target::dataset:
      return "dataset";
    case Target::checkpoint:
      return "checkpoint";
    case Target::deck:
      return "deck";
  }
  return "";
}

Target target_named(const std::string& wanted) {
  for (Target t : all_targets())
    if (name(t) == wanted) return t;
  std::cerr << "distzo_fuzz: unknown target '" << wanted
            << "'; allowed: model, dataset, checkpoint, deck\n";
  std::exit(2);
}

void copy_tree(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

Corpus make_corpus(const std::string& distzo, const fs::path& seeds_dir, const fs::path& dir,
                   const Limits& limits) {
  Corpus corpus;
  corpus.base = dir / "base";
  const fs::path models = dir / "models";
  fs::create_directories(corpus.base);
  fs::create_directories(models);
  for (const auto& entry : fs::directory_iterator(seeds_dir)) {
    const std::string file = entry.path().filename().string();
    const std::string suffix = ".model.h5";
    if (file.size() <= suffix.size() ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const fs::path ref = seeds_dir / (file.substr(0, file.size() - suffix.size()) + ".ref.h5");
    if (!fs::exists(ref)) continue;  // forward needs its inputs
    fs::copy_file(entry.path(), models / file, fs::copy_options::overwrite_existing);
    fs::copy_file(ref, models / ref.filename(), fs::copy_options::overwrite_existing);
    corpus.models.push_back(models / file);
  }
  std::sort(corpus.models.begin(),
            corpus.models.end());  // directory order differs between file systems
  const fs::path opt = seeds_dir / "opt_tiny_preln.model.h5";
  if (!fs::exists(opt) || !fs::exists(seeds_dir / "opt_tiny_preln.ref.h5")) {
    std::cerr << "distzo_fuzz: " << opt
              << " (and its .ref.h5) not found: --seeds-dir is tests/data\n";
    std::exit(2);
  }
  fs::copy_file(opt, corpus.base / "model.h5", fs::copy_options::overwrite_existing);
  fs::copy_file(seeds_dir / "opt_tiny_preln.ref.h5", corpus.base / "input.h5",
                fs::copy_options::overwrite_existing);

  // Vocabulary 64, the smallest of tests/data's models: every model reads them.
  const auto synthetic = [&](const std::string& file, const std::string& task,
                             const std::string& examples, const std::string& seed) {
    run_or_exit(distzo,
                {"make-synthetic", file, "--task", task, "--examples", examples, "--seq-len", "12",
                 "--vocab", "64", "--seed", seed},
                corpus.base, limits);
  };
  synthetic("train.h5", "classification", "64", "1");
  synthetic("eval.h5", "classification", "32", "2");
  synthetic("lm.h5", "causal_lm", "32", "3");
  write_file(corpus.base / "deck.yaml", deck_text("train.h5", "eval.h5", 2, "out", "latest"));
  write_file(corpus.base / "lm.yaml", deck_text("lm.h5", "", 2, "out_lm", "latest"));
  write_file(corpus.base / "resume.yaml", deck_text("train.h5", "eval.h5", 2, "run", "latest"));
  run_or_exit(distzo, {"run", "resume.yaml"}, corpus.base,
              limits);  // run/ckpt-000001.h5, run/ckpt-000002.h5
  write_file(corpus.base / "resume.yaml", deck_text("train.h5", "eval.h5", 3, "run", "latest"));
  write_file(corpus.base / "resume_named.yaml",
             deck_text("train.h5", "eval.h5", 3, "run", "run/ckpt-000002.h5"));

  for (const char* deck : {"deck.yaml", "lm.yaml", "resume.yaml", "resume_named.yaml"})
    corpus.decks.push_back(corpus.base / deck);
  if (fs::is_directory(seeds_dir / "decks")) {
    std::vector<fs::path> more;
    for (const auto& entry : fs::directory_iterator(seeds_dir / "decks"))
      if (entry.path().extension() == ".yaml") more.push_back(entry.path());
    std::sort(more.begin(), more.end());
    corpus.decks.insert(corpus.decks.end(), more.begin(), more.end());
  }
  return corpus;
}

Case make_case(Target target, const Corpus& corpus, const fs::path& dir, Random& rng) {
  copy_tree(corpus.base, dir);
  Case c;
  // Half the time through the HDF5 library (the file stays well-formed and
  // distzo's own checks are what is tested), else byte by byte (HDF5's
  // parsing is), now and then both.
  const auto mutate_file = [&](const fs::path& source, const std::string& as) {
    const fs::path path = dir / as;
    fs::copy_file(source, path, fs::copy_options::overwrite_existing);
    c.mutation = as + " (from " + source.filename().string() + "):\n";
    const auto how = rng.below(10);
    if (how < 5 || how == 9) c.mutation += mutate_hdf5_structure(path.string(), rng);
    if (how >= 5) {
      std::string bytes = read_file(path);
      c.mutation += mutate_bytes(bytes, rng);
      write_file(path, bytes);
    }
  };
  switch (target) {
    case Target::model: {
      const fs::path& model = rng.pick(corpus.models);
      const std::string stem =
          model.filename().string().substr(0, model.filename().string().find('.'));
      fs::copy_file(model.parent_path() / (stem + ".ref.h5"), dir / "input.h5",
                    fs::copy_options::overwrite_existing);
      mutate_file(model, "model.h5");
      const std::vector<std::vector<std::string>> commands = {
          {"inspect", "model.h5"},
          {"inspect", "model.h5", "--digest"},
          {"forward", "model.h5", "input.h5", "logits.h5"},
          {"run", "deck.yaml"}};
      c.args = rng.pick(commands);
      break;
    }
    case Target::dataset: {
      const std::string file =
          rng.pick(std::vector<std::string>{"train.h5", "eval.h5", "lm.h5", "input.h5"});
      mutate_file(corpus.base / file, file);
      const std::string deck = file == "lm.h5" ? "lm.yaml" : "deck.yaml";
      const auto r = rng.below(file == "input.h5" ? 2 : 3);
      c.args = r == 0   ? std::vector<std::string>{"inspect", file}
               : r == 1 ? std::vector<std::string>{"forward", "model.h5", file, "logits.h5"}
                        : std::vector<std::string>{"run", deck};
      break;
    }
    case Target::checkpoint: {
      // Mostly the newest: `resume: latest` must pass it over for step 1's.
      const std::string file = rng.chance(80) ? "run/ckpt-000002.h5" : "run/ckpt-000001.h5";
      mutate_file(corpus.base / file, file);
      const std::vector<std::vector<std::string>> commands = {
          {"inspect", file},
          {"inspect", file, "--digest"},
          {"forward", file, "input.h5", "logits.h5"},
          {"run", "resume.yaml"},
          {"run", "resume.yaml"},
          {"run", "resume_named.yaml"}};
      c.args = rng.pick(commands);
      if (file == "run/ckpt-000002.h5" && c.args.back() == "resume.yaml") c.must_pass_over = file;
      break;
    }
    case Target::deck: {
      const fs::path& seed = rng.chance(50) ? corpus.decks.front() : rng.pick(corpus.decks);
      std::string text = read_file(seed);
      c.mutation = "fuzz.yaml (from " + seed.filename().string() + "):\n" + mutate_deck(text, rng);
      write_file(dir / "fuzz.yaml", text);
      c.args = {rng.chance(70) && !runs_long(text) ? "run" : "plan", "fuzz.yaml"};
      break;
    }
  }
  // inspect and forward read only the files they name: their reproducers hold just those.
  if (c.args.front() == "inspect" || c.args.front() == "forward") {
    std::vector<fs::path> unused;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const std::string relative = fs::relative(entry.path(), dir).generic_string();
      if (entry.is_regular_file() &&
          std::find(c.args.begin(), c.args.end(), relative) == c.args.end())
        unused.push_back(entry.path());
    }
    for (const auto& path : unused) fs::remove(path);
    if (fs::exists(dir / "run") && fs::is_empty(dir / "run")) fs::remove(dir / "run");
  }
  return c;
}

std::vector<std::vector<std::string>> baseline_commands(Target target) {
  switch (target) {
    case Target::model:
      return {{"inspect", "model.h5"},
              {"inspect", "model.h5", "--digest"},
              {"forward", "model.h5", "input.h5", "logits.h5"},
              {"run", "deck.yaml"}};
    case Target::dataset:
      return {{"inspect", "train.h5"},
              {"inspect", "lm.h5"},
              {"forward", "model.h5", "train.h5", "logits.h5"},
              {"run", "lm.yaml"}};
    case Target::checkpoint:
      return {{"inspect", "run/ckpt-000002.h5", "--digest"},
              {"forward", "run/ckpt-000002.h5", "input.h5", "logits.h5"},
              {"run", "resume.yaml"},
              {"run", "resume_named.yaml"}};
    case Target::deck:
      return {{"plan", "deck.yaml"}, {"plan", "resume.yaml"}};
  }
  return {};
}

}  // namespace distzo::fuzz
