#pragma once
// The seed files and the four targets: how a case (a directory distzo runs
// in) is made from the seeds with one file mutated, and which distzo command
// runs on it.

#include <filesystem>
#include <string>
#include <vector>

#include "child.hpp"
#include "random.hpp"

namespace distzo::fuzz {

namespace fs = std::filesystem;

/// What is mutated: a model file, a dataset file, a checkpoint, a deck.
enum class Target { model, dataset, checkpoint, deck };
const std::vector<Target>& all_targets();
std::string name(Target target);
Target target_named(const std::string& name);  // exits with the allowed names on an unknown one

struct Corpus {
  // The files every case starts from: model.h5 (tests/data's tiny pre-LN OPT)
  // and input.h5 (its golden inputs, for `forward`), train.h5 and eval.h5
  // (classification), lm.h5 (causal_lm), the decks deck.yaml, lm.yaml,
  // resume.yaml and resume_named.yaml, and run/ with the checkpoints of a
  // 2-step run (ckpt-000001.h5, ckpt-000002.h5).
  fs::path base;
  std::vector<fs::path>
      models;  // every tests/data/*.model.h5; NAME.ref.h5 beside each is its input.h5
  std::vector<fs::path> decks;  // the base decks and tests/data/decks/*.yaml
};

/// Writes the corpus under `dir` from `seeds_dir` (tests/data), running
/// `distzo make-synthetic` and a 2-step checkpointed run; exits with the
/// reason when distzo fails on them.
Corpus make_corpus(const std::string& distzo, const fs::path& seeds_dir, const fs::path& dir,
                   const Limits& limits);

struct Case {
  std::vector<std::string> args;  // distzo's arguments; paths relative to the case directory
  std::string mutation;           // what was changed, one line per change
  // With only the newest checkpoint damaged, `resume: latest` must pass it
  // over for the older one: a run that stops with an error naming it (this
  // path) is a finding. "" for every other case.
  std::string must_pass_over;
};

/// Fills the empty directory `dir` with the base files, one of them (of
/// `target`'s kind) mutated, and says which command to run there.
Case make_case(Target target, const Corpus& corpus, const fs::path& dir, Random& rng);

/// The commands of `target` on the unmutated base: each must exit 0, or the
/// harness (or the distzo it was given) is broken, not the input.
std::vector<std::vector<std::string>> baseline_commands(Target target);

/// Copies the regular files and directories under `from` into `to`.
void copy_tree(const fs::path& from, const fs::path& to);

}  // namespace distzo::fuzz
