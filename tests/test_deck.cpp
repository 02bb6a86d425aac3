// Input decks: values and defaults, the resolved round trip, and one test per
// kind of malformed deck, each checked for its "<source>:<line>: <key>: "
// prefix and the fragment that tells the user what to fix.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"

namespace distzo_test_deck {

namespace fs = std::filesystem;
using distzo::ScheduleKind;
using distzo::io::check_mesh;
using distzo::io::Deck;
using distzo::io::deck_keys;
using distzo::io::Distribution;
using distzo::io::load_deck;
using distzo::io::parse_deck;
using distzo::io::resolved_yaml;
using distzo::io::validate_files;

const std::string kData = DISTZO_TEST_DATA;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

/// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("distzo_test_deck_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// The message of the distzo::Error that parsing throws, or "(no error)".
std::string parse_error(const std::string& text) {
  try {
    parse_deck(text, "deck.yaml");
  } catch (const distzo::Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_STARTS_WITH(message, prefix) \
  EXPECT_EQ((message).rfind((prefix), 0), 0u) << "message: " << (message)
#define EXPECT_CONTAINS(message, fragment) \
  EXPECT_NE((message).find(fragment), std::string::npos) << "message: " << (message)
#define EXPECT_LACKS(message, fragment) \
  EXPECT_EQ((message).find(fragment), std::string::npos) << "message: " << (message)

/// Parsing `text` fails with a message starting `prefix` and holding `fragment`.
#define EXPECT_DECK_ERROR(text, prefix, fragment)   \
  do {                                              \
    const std::string message_ = parse_error(text); \
    EXPECT_STARTS_WITH(message_, prefix);           \
    EXPECT_CONTAINS(message_, fragment);            \
  } while (0)

// Lines 1-6 of most decks below, so their own lines start at 7.
const std::string kHead =
    "model:\n"         // 1
    "  path: m.h5\n"   // 2
    "data:\n"          // 3
    "  train: t.h5\n"  // 4
    "output:\n"        // 5
    "  dir: out\n";    // 6

/// kHead plus an optim section (lines 7-9) and `tail` from line 10 on.
std::string deck_with(const std::string& tail) {
  return kHead +
         "optim:\n"       // 7
         "  steps: 10\n"  // 8
         "  lr: 1e-5\n"   // 9
         + tail;
}

// ---------------------------------------------------------------------------
// Valid decks

TEST(Deck, FullDeckParsesEveryValue) {
  const Deck d = parse_deck(read_text(kData + "/decks/full.yaml"), "full.yaml");
  EXPECT_EQ(d.model.path, "models/opt-125m.h5");
  EXPECT_EQ(d.data.train, "data/sst2.train.h5");
  EXPECT_EQ(d.data.eval, "data/sst2.eval.h5");
  EXPECT_EQ(d.data.micro_batch, 16);
  EXPECT_EQ(d.data.shuffle_seed, 7u);
  EXPECT_EQ(d.data.batch_width, distzo::model::BatchWidth::full);
  EXPECT_EQ(d.optim.steps, 20000);
  EXPECT_EQ(d.optim.lr, 1.0e-6);
  EXPECT_EQ(d.optim.schedule, ScheduleKind::cosine);
  EXPECT_EQ(d.optim.warmup_steps, 500);
  EXPECT_EQ(d.optim.eps, 2.0e-3);
  EXPECT_EQ(d.optim.weight_decay, 0.01);
  EXPECT_EQ(d.optim.estimator, distzo::EstimatorKind::one_sided);
  EXPECT_EQ(d.optim.queries, 2);
  EXPECT_EQ(d.optim.distribution, Distribution::rademacher);
  EXPECT_EQ(d.optim.z_recipe, 1);
  EXPECT_EQ(d.optim.seed, 18446744073709551615ull);
  EXPECT_EQ(d.optim.max_nonfinite, 9);
  EXPECT_EQ(d.optim.momentum, 0.5);
  EXPECT_EQ(d.optim.history, 16);
  EXPECT_EQ(d.optim.perturbed_blocks, 6);
  EXPECT_EQ(d.eval.interval, 1000);
  EXPECT_EQ(d.eval.max_examples, 872);
  EXPECT_EQ(d.checkpoint.interval, 2000);
  EXPECT_EQ(d.checkpoint.log_interval, 250);
  EXPECT_EQ(d.checkpoint.keep, 4);
  EXPECT_EQ(d.checkpoint.resume, "latest");
  EXPECT_EQ(d.checkpoint.allow_changes, (std::vector<std::string>{"optim.lr", "data.train"}));
  EXPECT_EQ(d.output.dir, "runs/sst2-125m");
  EXPECT_EQ(d.output.log_interval, 50);
  EXPECT_EQ(d.parallel.perturbation, 3);
  EXPECT_EQ(d.parallel.data, 2);
  EXPECT_EQ(d.parallel.check_interval, 0);
  EXPECT_EQ(d.parallel.watchdog, 1800);
  EXPECT_EQ(d.placement.mode, distzo::PlacementMode::offload);
  EXPECT_EQ(d.placement.resident_blocks, 4);
  EXPECT_EQ(d.placement.prefetch, 2);
  EXPECT_EQ(d.placement.slots, 3);
  EXPECT_EQ(d.placement.share_host_master, distzo::io::ShareHostMaster::off);
  EXPECT_EQ(d.placement.exchange, distzo::ExchangeKind::mpi);
  EXPECT_EQ(d.placement.perturbed_weights, distzo::io::PerturbedWeightsSchedule::one_at_a_time);
  EXPECT_EQ(d.precision.storage, distzo::StorageDtype::bf16);
  EXPECT_EQ(d.precision.rounding, distzo::Rounding::nearest);
  EXPECT_EQ(d.precision.gemm_inputs, distzo::io::GemmInputs::storage);

  EXPECT_EQ(d.origin.source, "full.yaml");
  EXPECT_EQ(d.origin.line("model"), 3);
  EXPECT_EQ(d.origin.line("optim.lr"), 13);
  EXPECT_EQ(d.origin.line("parallel"), 39);
  EXPECT_EQ(d.origin.line("parallel.perturbation"), 40);
  EXPECT_EQ(d.origin.line("parallel.data"), 41);
  EXPECT_EQ(d.origin.line("parallel.check_interval"), 42);
  EXPECT_EQ(d.origin.where("parallel.data"), "full.yaml:41: parallel.data: ");
  for (const std::string& key : deck_keys()) EXPECT_TRUE(d.origin.written(key)) << key;
}

TEST(Deck, MinimalDeckGetsDefaults) {
  const Deck d = parse_deck(deck_with(""), "min.yaml");
  EXPECT_EQ(d.model.path, "m.h5");
  EXPECT_EQ(d.data.train, "t.h5");
  EXPECT_EQ(d.data.eval, "");
  EXPECT_EQ(d.data.micro_batch, 8);
  EXPECT_EQ(d.data.shuffle_seed, 0u);
  EXPECT_EQ(d.data.batch_width, distzo::model::BatchWidth::trimmed);
  EXPECT_EQ(d.optim.steps, 10);
  EXPECT_EQ(d.optim.lr, 1e-5);
  EXPECT_EQ(d.optim.schedule, ScheduleKind::constant);
  EXPECT_EQ(d.optim.warmup_steps, 0);
  EXPECT_EQ(d.optim.eps, 1e-3);
  EXPECT_EQ(d.optim.weight_decay, 0.0);
  EXPECT_EQ(d.optim.queries, 1);
  EXPECT_EQ(d.optim.distribution, Distribution::gaussian);
  EXPECT_EQ(d.optim.z_recipe, 2);
  EXPECT_EQ(d.optim.seed, 0u);
  EXPECT_EQ(d.optim.max_nonfinite, 5);
  EXPECT_EQ(d.eval.interval, 0);
  EXPECT_EQ(d.eval.max_examples, 0);
  EXPECT_EQ(d.checkpoint.interval, 0);
  EXPECT_EQ(d.checkpoint.keep, 2);
  EXPECT_EQ(d.checkpoint.resume, "");
  EXPECT_EQ(d.output.dir, "out");
  EXPECT_EQ(d.output.log_interval, 10);
  EXPECT_EQ(d.parallel.perturbation, 1);
  EXPECT_EQ(d.parallel.data, 1);
  EXPECT_EQ(d.parallel.check_interval, 100);
  EXPECT_EQ(d.parallel.watchdog, distzo::io::kWatchdogAuto);
  EXPECT_EQ(d.placement.mode, distzo::PlacementMode::resident);
  EXPECT_EQ(d.placement.resident_blocks, 0);
  EXPECT_EQ(d.placement.prefetch, 1);
  EXPECT_EQ(d.placement.share_host_master, distzo::io::ShareHostMaster::automatic);
  EXPECT_EQ(d.placement.exchange, distzo::ExchangeKind::automatic);
  EXPECT_EQ(d.precision.storage, distzo::StorageDtype::fp32);
  EXPECT_EQ(d.precision.rounding, distzo::Rounding::stochastic);

  // Defaults are not "written"; their line falls back to the section, then 1.
  EXPECT_TRUE(d.origin.written("optim.lr"));
  EXPECT_FALSE(d.origin.written("optim.eps"));
  EXPECT_EQ(d.origin.line("optim.eps"), 7);
  EXPECT_EQ(d.origin.line("parallel.data"), 1);
}

TEST(Deck, NumberSpellings) {
  const Deck d = parse_deck(deck_with("  eps: 5E-4\n"
                                      "  weight_decay: 0\n"
                                      "  seed: +12\n"
                                      "  queries: !!int 2\n"
                                      "  warmup_steps: 0010\n"),
                            "deck.yaml");
  EXPECT_EQ(d.optim.eps, 5e-4);
  EXPECT_EQ(d.optim.weight_decay, 0.0);
  EXPECT_EQ(d.optim.seed, 12u);
  EXPECT_EQ(d.optim.queries, 2);
  EXPECT_EQ(d.optim.warmup_steps, 10);
  // Flow style is YAML too; an empty optional section takes every default.
  const Deck f = parse_deck(
      "{model: {path: m.h5}, data: {train: t.h5}, optim: {steps: 0, lr: .5},"
      " output: {dir: o}, eval: {}}",
      "flow.yaml");
  EXPECT_EQ(f.optim.steps, 0);
  EXPECT_EQ(f.optim.lr, 0.5);
  EXPECT_EQ(f.eval.interval, 0);
}

TEST(Deck, ResolvedYamlRoundTrips) {
  const Deck decks[] = {
      parse_deck(read_text(kData + "/decks/full.yaml"), "full.yaml"),
      parse_deck(deck_with(""), "min.yaml"),
      // Strings that need quoting and doubles that print with 17 digits.
      parse_deck("model:\n  path: \"dir with: colon/#hash 'q' \\\"dq\\\" \\\\ näme.h5\"\n"
                 "data:\n  train: ' leading space'\n  eval: \"123\"\n"
                 "optim:\n  steps: 3\n  lr: 0.30000000000000004\n  eps: 1e-300\n"
                 "  weight_decay: 1.7976931348623157e308\n"
                 "checkpoint:\n  resume: 'null'\n"
                 "output:\n  dir: \"true\"\n",
                 "odd.yaml"),
  };
  for (const Deck& d : decks) {
    const std::string text = resolved_yaml(d);
    SCOPED_TRACE(text);
    const Deck back = parse_deck(text, "resolved.yaml");
    EXPECT_TRUE(back == d);
    // Every key is written, in the canonical order.
    std::size_t at = 0;
    for (const std::string& key : deck_keys()) {
      EXPECT_TRUE(back.origin.written(key)) << key;
      const std::string leaf = "  " + key.substr(key.find('.') + 1) + ": ";
      const std::size_t found = text.find(leaf, at);
      EXPECT_NE(found, std::string::npos) << key;
      at = found;
    }
    // Resolving is idempotent.
    EXPECT_EQ(resolved_yaml(parse_deck(text, d.origin.source)), text);
  }
  EXPECT_EQ(decks[2].model.path, "dir with: colon/#hash 'q' \"dq\" \\ näme.h5");
  EXPECT_EQ(decks[2].data.eval, "123");
  EXPECT_EQ(decks[2].checkpoint.resume, "null");
  EXPECT_EQ(decks[2].output.dir, "true");
  EXPECT_EQ(decks[2].optim.lr, 0.30000000000000004);

  Deck changed = decks[1];
  changed.parallel.check_interval = 5;
  EXPECT_TRUE(changed != decks[1]);
}

TEST(Deck, LoadDeckChecksFilesRelativeToTheWorkingDirectory) {
  TempDir tmp;
  write_text(tmp.path() / "train.h5", "not really hdf5");
  const std::string model = kData + "/opt_tiny_preln.model.h5";
  const fs::path deck = tmp.path() / "run.yaml";
  write_text(deck, "model:\n  path: " + model +
                       "\ndata:\n  train: train.h5\noptim:\n  steps: 1\n  lr: 1e-4\n"
                       "output:\n  dir: out\n");

  const fs::path old_cwd = fs::current_path();
  fs::current_path(tmp.path());
  EXPECT_NO_THROW({
    const Deck d = load_deck(deck.string());
    EXPECT_EQ(d.origin.source, deck.string());
    EXPECT_EQ(d.data.train, "train.h5");  // kept as written
  });
  fs::current_path(old_cwd);

  // From elsewhere the relative path no longer resolves.
  try {
    load_deck(deck.string());
    ADD_FAILURE() << "expected an error";
  } catch (const distzo::Error& e) {
    const std::string m = e.what();
    EXPECT_STARTS_WITH(m, deck.string() + ":4: data.train: ");
    EXPECT_CONTAINS(m, "no such file \"train.h5\"");
    EXPECT_CONTAINS(m, "working directory");
  }
}

// `resume: latest` starts from these (app/run.cpp then keeps the run's own
// newest that reads back whole; tests/cli/run_directory.sh).
TEST(Deck, CheckpointsAreListedByStep) {
  TempDir tmp;
  const std::string dir = (tmp.path() / "run").string();
  EXPECT_TRUE(distzo::io::list_checkpoints(dir).empty());  // not there yet
  fs::create_directories(dir);
  for (const char* name : {"ckpt-9.h5", "ckpt-10.h5", "ckpt-2.h5", "ckpt-99.h5.tmp", "x.h5"})
    write_text(fs::path(dir) / name, "");
  const auto found = distzo::io::list_checkpoints(dir);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].first, 2);
  EXPECT_EQ(found[2].second, (fs::path(dir) / "ckpt-10.h5").string());
}

TEST(Deck, DocsExampleParsesAndNamesEveryKey) {
  const std::string docs = read_text(kData + "/../../docs/decks.md");
  const std::size_t begin = docs.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  const std::size_t end = docs.find("```", begin + 8);
  ASSERT_NE(end, std::string::npos);
  EXPECT_NO_THROW(parse_deck(docs.substr(begin + 8, end - begin - 8), "docs/decks.md"));
  for (const std::string& key : deck_keys()) EXPECT_CONTAINS(docs, "`" + key + "`");
}

TEST(Deck, DocsKeyTablesAreTheFieldTable) {
  // docs/decks.md carries the output of `distzo help deck` between two
  // markers; when a key changes, paste the new output there.
  const std::string docs = read_text(kData + "/../../docs/decks.md");
  const std::string begin_marker = "<!-- deck-keys: generated";
  const std::string end_marker = "<!-- deck-keys: end -->";
  const std::size_t begin = docs.find(begin_marker);
  ASSERT_NE(begin, std::string::npos) << "docs/decks.md lost its deck-keys marker";
  const std::size_t first = docs.find('\n', begin) + 1;
  const std::size_t end = docs.find(end_marker, first);
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(docs.substr(first, end - first), distzo::io::deck_reference_markdown())
      << "docs/decks.md's key tables differ from `distzo help deck`";
}

TEST(Deck, TrajectoryKeysAreTheFieldTablesColumn) {
  // The keys a resume compares (docs/decks.md, "Resuming checks the deck"),
  // in deck order, "model" standing for the base model's digest.
  EXPECT_EQ(distzo::io::resume_keys(), (std::vector<std::string>{"model",
                                                                 "data.train",
                                                                 "data.micro_batch",
                                                                 "data.shuffle_seed",
                                                                 "optim.steps",
                                                                 "optim.lr",
                                                                 "optim.schedule",
                                                                 "optim.warmup_steps",
                                                                 "optim.eps",
                                                                 "optim.weight_decay",
                                                                 "optim.estimator",
                                                                 "optim.queries",
                                                                 "optim.distribution",
                                                                 "optim.seed",
                                                                 "optim.momentum",
                                                                 "optim.history",
                                                                 "optim.perturbed_blocks",
                                                                 "parallel.data",
                                                                 "precision.storage",
                                                                 "precision.rounding",
                                                                 "precision.gemm_inputs"}));
  // allow_changes takes exactly these names but the run-constant ones.
  for (const std::string& key : distzo::io::changeable_keys())
    EXPECT_NO_THROW(
        parse_deck(deck_with("checkpoint:\n  allow_changes: [" + key + "]\n"), "d.yaml"))
        << key;
  EXPECT_EQ(distzo::io::changeable_keys().size() + distzo::io::run_constant_keys().size(),
            distzo::io::resume_keys().size());
  EXPECT_DECK_ERROR(deck_with("checkpoint:\n  allow_changes: [optim.z_recipe]\n"),
                    "deck.yaml:11: checkpoint.allow_changes: ", "optim.z_recipe");
}

TEST(Deck, MomentumAndHistory) {
  const Deck plain = parse_deck(deck_with(""), "d.yaml");
  EXPECT_EQ(plain.optim.momentum, 0.0);
  EXPECT_EQ(plain.optim.history, 1);
  const Deck m = parse_deck(deck_with("  queries: 4\n  momentum: 0.9\n  history: 8\n"), "d.yaml");
  EXPECT_EQ(m.optim.momentum, 0.9);
  EXPECT_EQ(m.optim.history, 8);  // 8 x 4 = 32 z streams: the kernel's limit, allowed
  EXPECT_EQ(parse_deck(resolved_yaml(m), "r.yaml").optim.history, 8);
  // Lines: steps 8, lr 9, the tail from 10.
  EXPECT_DECK_ERROR(deck_with("  momentum: -0.1\n  history: 2\n"), "deck.yaml:10: optim.momentum: ",
                    "out of range: expected a number >= 0 and < 1, found -0.1");
  EXPECT_DECK_ERROR(deck_with("  momentum: 1\n  history: 2\n"), "deck.yaml:10: optim.momentum: ",
                    "out of range: expected a number >= 0 and < 1, found 1");
  EXPECT_DECK_ERROR(deck_with("  history: 2\n"), "deck.yaml:10: optim.history: ",
                    "2 rows with optim.momentum 0 (the default): plain SGD uses only the step's "
                    "own row");
  EXPECT_DECK_ERROR(deck_with("  momentum: 0.5\n"), "deck.yaml:10: optim.momentum: ",
                    "0.5 with optim.history 1 (the default) uses only the step's own row");
  EXPECT_DECK_ERROR(deck_with("  queries: 5\n  momentum: 0.9\n  history: 7\n"),
                    "deck.yaml:12: optim.history: ",
                    "momentum 0.9 with history 7 and queries 5 needs 35 z streams a step; the "
                    "fused kernel regenerates at most 32: lower optim.history to 6");
  EXPECT_DECK_ERROR(deck_with("  queries: 20\n  momentum: 0.9\n  history: 2\n"),
                    "deck.yaml:12: optim.history: ", "so optim.queries <= 16");
}

// ---------------------------------------------------------------------------
// Malformed decks

TEST(DeckError, DuplicateKey) {
  EXPECT_DECK_ERROR(deck_with("  steps: 20\n"),
                    "deck.yaml:10: optim.steps: ", "duplicate key (first given at line 8)");
}

TEST(DeckError, DuplicateSection) {
  EXPECT_DECK_ERROR(deck_with("model:\n  path: other.h5\n"),
                    "deck.yaml:10: model: ", "duplicate section (first given at line 1)");
}

TEST(DeckError, UnknownKeySuggestsTheClosest) {
  const std::string m = parse_error(deck_with("  setps: 5\n"));
  EXPECT_STARTS_WITH(m, "deck.yaml:10: optim.setps: ");
  EXPECT_CONTAINS(m, "unknown key (did you mean \"steps\"?)");
  EXPECT_CONTAINS(m,
                  "allowed keys in optim: steps, lr, schedule, warmup_steps, eps, "
                  "weight_decay, estimator, queries, distribution, z_recipe, seed, max_nonfinite");
  EXPECT_DECK_ERROR(deck_with("parallel:\n  perturbations: 2\n"),
                    "deck.yaml:11: parallel.perturbations: ", "did you mean \"perturbation\"?");
}

TEST(DeckError, UnknownKeyFarFromAllHasNoSuggestion) {
  const std::string m = parse_error(deck_with("  nesterov: true\n"));
  EXPECT_STARTS_WITH(m, "deck.yaml:10: optim.nesterov: unknown key; allowed keys in optim: ");
  EXPECT_LACKS(m, "did you mean");
}

TEST(DeckError, UnknownSection) {
  EXPECT_DECK_ERROR(deck_with("paralel:\n  data: 2\n"), "deck.yaml:10: paralel: ",
                    "unknown section (did you mean \"parallel\"?); allowed sections: model, "
                    "data, optim, eval, checkpoint, output, parallel, placement");
}

TEST(DeckError, WrongTypes) {
  EXPECT_DECK_ERROR(deck_with("  queries: abc\n"), "deck.yaml:10: optim.queries: ",
                    "expected an integer in [1, 32], found the string \"abc\"");
  EXPECT_DECK_ERROR(deck_with("  queries: 1.5\n"), "deck.yaml:10: optim.queries: ",
                    "expected an integer in [1, 32], found the number 1.5");
  EXPECT_DECK_ERROR(deck_with("  queries: true\n"),
                    "deck.yaml:10: optim.queries: ", "found the boolean true");
  EXPECT_DECK_ERROR(deck_with("  queries: [1, 2]\n"),
                    "deck.yaml:10: optim.queries: ", "found a list");
  EXPECT_DECK_ERROR(deck_with("  queries: \"2\"\n"),
                    "deck.yaml:10: optim.queries: ", "found the quoted string \"2\"");
  EXPECT_DECK_ERROR(deck_with("  queries:\n"),
                    "deck.yaml:10: optim.queries: ", "found nothing (an empty value)");
  EXPECT_DECK_ERROR(deck_with("  eps: yes\n"),
                    "deck.yaml:10: optim.eps: ", "expected a number > 0, found the boolean yes");
  EXPECT_DECK_ERROR(deck_with("  eps: .inf\n"),
                    "deck.yaml:10: optim.eps: ", "found the non-finite number .inf");
  EXPECT_DECK_ERROR(deck_with("  seed: 0x10\n"), "deck.yaml:10: optim.seed: ",
                    "expected an integer in [0, 18446744073709551615], found the string \"0x10\"");
  EXPECT_DECK_ERROR(deck_with("  schedule: {kind: cosine}\n"), "deck.yaml:10: optim.schedule: ",
                    "expected one of constant, linear, cosine, found a map");
  EXPECT_DECK_ERROR(
      "model:\n  path: [a.h5, b.h5]\ndata:\n  train: t\noptim:\n  steps: 1\n  lr: 1\n"
      "output:\n  dir: o\n",
      "deck.yaml:2: model.path: ", "expected a path (a string), found a list");
}

TEST(DeckError, WatchdogIsSecondsAutoOrOff) {
  EXPECT_DECK_ERROR(deck_with("parallel:\n  watchdog: soon\n"), "deck.yaml:11: parallel.watchdog: ",
                    "expected auto, off or a number > 0, found the string \"soon\"");
  EXPECT_DECK_ERROR(deck_with("parallel:\n  watchdog: 0\n"), "deck.yaml:11: parallel.watchdog: ",
                    "out of range: expected auto, off or a number > 0, found 0");
  EXPECT_EQ(parse_deck(deck_with("parallel:\n  watchdog: off\n"), "d").parallel.watchdog,
            distzo::io::kWatchdogOff);
  EXPECT_EQ(parse_deck(deck_with("parallel:\n  watchdog: 2.5\n"), "d").parallel.watchdog, 2.5);
}

TEST(DeckError, OutOfRange) {
  EXPECT_DECK_ERROR(
      "model:\n  path: m\ndata:\n  train: t\n  micro_batch: 0\noptim:\n  steps: 1\n  lr: 1\n"
      "output:\n  dir: o\n",
      "deck.yaml:5: data.micro_batch: ",
      "out of range: expected an integer in [1, 2147483647], found 0");
  EXPECT_DECK_ERROR(deck_with("  queries: 0\n"), "deck.yaml:10: optim.queries: ",
                    "out of range: expected an integer in [1, 32], found 0");
  EXPECT_DECK_ERROR(deck_with("  z_recipe: 3\n"), "deck.yaml:10: optim.z_recipe: ",
                    "out of range: expected an integer in [1, 2], found 3");
  // The fused kernel carries at most 32 queries' update terms.
  EXPECT_DECK_ERROR(deck_with("  queries: 33\n"), "deck.yaml:10: optim.queries: ",
                    "out of range: expected an integer in [1, 32], found 33");
  EXPECT_DECK_ERROR(deck_with("  queries: 3000000000\n"),
                    "deck.yaml:10: optim.queries: ", "out of range");
  EXPECT_DECK_ERROR(deck_with("  warmup_steps: -1\n"), "deck.yaml:10: optim.warmup_steps: ",
                    "out of range: expected an integer in [0, 9223372036854775807], found -1");
  EXPECT_DECK_ERROR(deck_with("  seed: -1\n"), "deck.yaml:10: optim.seed: ",
                    "out of range: expected an integer in [0, 18446744073709551615], found -1");
  EXPECT_DECK_ERROR(deck_with("  seed: 18446744073709551616\n"),
                    "deck.yaml:10: optim.seed: ", "out of range");
  EXPECT_DECK_ERROR(deck_with("  eps: 0\n"),
                    "deck.yaml:10: optim.eps: ", "out of range: expected a number > 0, found 0");
  EXPECT_DECK_ERROR(deck_with("  weight_decay: -0.1\n"), "deck.yaml:10: optim.weight_decay: ",
                    "out of range: expected a number >= 0, found -0.1");
  EXPECT_DECK_ERROR(deck_with("  eps: 1e400\n"), "deck.yaml:10: optim.eps: ", "out of range");
  EXPECT_DECK_ERROR(deck_with("checkpoint:\n  keep: 0\n"), "deck.yaml:11: checkpoint.keep: ",
                    "out of range: expected an integer in [1, 2147483647], found 0");
  EXPECT_DECK_ERROR(kHead + "optim:\n  steps: 10\n  lr: -1e-5\n",
                    "deck.yaml:9: optim.lr: ", "out of range: expected a number > 0, found -1e-5");
  EXPECT_DECK_ERROR(
      "model:\n  path: ''\ndata:\n  train: t\noptim:\n  steps: 1\n  lr: 1\noutput:\n  dir: o\n",
      "deck.yaml:2: model.path: ", "expected a non-empty path, found the empty string");
  EXPECT_DECK_ERROR(
      "model:\n  path: \"m\\0.h5\"\ndata:\n  train: t\noptim:\n  steps: 1\n  lr: 1\noutput:\n  "
      "dir: o\n",
      "deck.yaml:2: model.path: ", "the path holds a NUL byte");
}

TEST(DeckError, Placement) {
  EXPECT_DECK_ERROR(deck_with("placement:\n  mode: offlaod\n"), "deck.yaml:11: placement.mode: ",
                    "unknown value \"offlaod\" (did you mean \"offload\"?); allowed: resident, "
                    "offload");
  EXPECT_DECK_ERROR(deck_with("placement:\n  mode: offload\n  resident_blocks: -1\n"),
                    "deck.yaml:12: placement.resident_blocks: ",
                    "out of range: expected an integer in [0, 2147483647], found -1");
  EXPECT_DECK_ERROR(deck_with("placement:\n  mode: offload\n  prefetch: 0\n"),
                    "deck.yaml:12: placement.prefetch: ",
                    "out of range: expected an integer in [1, 4094], found 0");
  // Issue 24's fuzzer: prefetch 2^31 - 1 made prefetch + 2 wrap and the run die of SIGFPE.
  EXPECT_DECK_ERROR(deck_with("placement:\n  mode: offload\n  prefetch: 2147483647\n"),
                    "deck.yaml:12: placement.prefetch: ",
                    "out of range: expected an integer in [1, 4094], found 2147483647");
  EXPECT_DECK_ERROR(deck_with("placement:\n  mode: offload\n  slots: 5000\n"),
                    "deck.yaml:12: placement.slots: ",
                    "out of range: expected an integer in [0, 4096], found 5000");
  EXPECT_DECK_ERROR(deck_with("placement:\n  prefech: 2\n"), "deck.yaml:11: placement.prefech: ",
                    "unknown key (did you mean \"prefetch\"?)");
  EXPECT_DECK_ERROR(deck_with("checkpoint:\n  allow_changes: [optim.lrr]\n"),
                    "deck.yaml:11: checkpoint.allow_changes: ",
                    "\"optim.lrr\" is not a key a resume checks; allowed: model, data.train");
  EXPECT_DECK_ERROR(deck_with("checkpoint:\n  allow_changes: [optim.lr, optim.queries]\n"),
                    "deck.yaml:11: checkpoint.allow_changes: ",
                    "optim.queries never changes within a run, even when checkpoint.allow_changes "
                    "lists it: the seed log holds one estimator's row of q scalars a step");
  EXPECT_EQ(distzo::io::run_constant_keys(),
            (std::vector<std::string>{"optim.estimator", "optim.queries", "optim.momentum",
                                      "optim.history", "optim.perturbed_blocks"}));
  EXPECT_TRUE(parse_deck(deck_with("checkpoint:\n  allow_changes:\n"), "d.yaml")
                  .checkpoint.allow_changes.empty());
  EXPECT_DECK_ERROR(deck_with("checkpoint:\n  allow_changes: optim.lr\n"),
                    "deck.yaml:11: checkpoint.allow_changes: ", "expected a list of keys");
  EXPECT_DECK_ERROR(deck_with("placement:\n  share_host_master: yes\n"),
                    "deck.yaml:11: placement.share_host_master: ", "unknown value \"yes\"");
  EXPECT_DECK_ERROR(
      deck_with("placement:\n  exchange: nvlink\n"),
      "deck.yaml:11: placement.exchange: ", "allowed: auto, shared_memory, mpi, nccl");
  EXPECT_DECK_ERROR(deck_with("placement:\n  resident: 2\n"), "deck.yaml:11: placement.resident: ",
                    "unknown key (did you mean \"resident_blocks\"?)");
  // A K beyond the model's blocks is not a deck error: it means resident.
  EXPECT_NO_THROW(
      parse_deck(deck_with("placement:\n  mode: offload\n  resident_blocks: 1000\n"), "ok"));
}

TEST(DeckError, WarmupLongerThanTraining) {
  EXPECT_DECK_ERROR(deck_with("  warmup_steps: 11\n"),
                    "deck.yaml:10: optim.warmup_steps: ", "must be <= optim.steps (10), found 11");
}

TEST(DeckError, UnknownEnumValue) {
  EXPECT_DECK_ERROR(deck_with("  schedule: cosin\n"), "deck.yaml:10: optim.schedule: ",
                    "unknown value \"cosin\" (did you mean \"cosine\"?); allowed: constant, "
                    "linear, cosine");
  const std::string m = parse_error(deck_with("  distribution: uniform\n"));
  EXPECT_STARTS_WITH(m,
                     "deck.yaml:10: optim.distribution: unknown value \"uniform\"; "
                     "allowed: gaussian, rademacher");
}

TEST(DeckError, MissingRequiredKey) {
  EXPECT_DECK_ERROR(kHead + "optim:\n  steps: 10\n", "deck.yaml:7: optim.lr: ",
                    "missing required key in the optim section (which starts at line 7)");
  EXPECT_DECK_ERROR(
      "model:\n  path: m\ndata:\n  eval: e\noptim:\n  steps: 1\n  lr: 1\n"
      "output:\n  dir: o\n",
      "deck.yaml:3: data.train: ", "missing required key");
}

TEST(DeckError, MissingRequiredSection) {
  EXPECT_DECK_ERROR("model:\n  path: m\ndata:\n  train: t\noptim:\n  steps: 1\n  lr: 1\n",
                    "deck.yaml:1: output: ",
                    "missing required section; a deck needs at least the sections model, data, "
                    "optim and output");
}

TEST(DeckError, MissingFile) {
  TempDir tmp;
  const std::string model = kData + "/opt_tiny_preln.model.h5";
  Deck d = parse_deck(deck_with("  eps: 1e-3\n"), "deck.yaml");
  d.model.path = model;
  d.data.train = model;
  d.data.eval = (tmp.path() / "missing.eval.h5").string();
  d.output.dir = (tmp.path() / "out").string();
  try {
    validate_files(d);
    ADD_FAILURE() << "expected an error";
  } catch (const distzo::Error& e) {
    const std::string m = e.what();
    // data.eval is not in the deck text: its line is that of the data section.
    EXPECT_STARTS_WITH(m, "deck.yaml:3: data.eval: no such file \"" + d.data.eval + "\"");
  }
  d.data.eval = "";
  d.model.path = "no/such/model.h5";
  try {
    validate_files(d);
    ADD_FAILURE() << "expected an error";
  } catch (const distzo::Error& e) {
    EXPECT_STARTS_WITH(std::string(e.what()),
                       "deck.yaml:2: model.path: no such file \"no/such/model.h5\"");
  }
  d.model.path = tmp.path().string();
  try {
    validate_files(d);
    ADD_FAILURE() << "expected an error";
  } catch (const distzo::Error& e) {
    EXPECT_STARTS_WITH(std::string(e.what()),
                       "deck.yaml:2: model.path: expected a regular "
                       "file, found a directory");
  }
  d.model.path = model;
  d.output.dir = model;
  try {
    validate_files(d);
    ADD_FAILURE() << "expected an error";
  } catch (const distzo::Error& e) {
    EXPECT_STARTS_WITH(std::string(e.what()), "deck.yaml:6: output.dir: expected a directory");
  }
  d.output.dir = (tmp.path() / "out").string();
  d.checkpoint.resume = "latest";  // not a file: resolved later from output.dir
  EXPECT_NO_THROW(validate_files(d));
  d.checkpoint.resume = (tmp.path() / "ckpt-5.h5").string();
  EXPECT_THROW(validate_files(d), distzo::Error);

  // A deck file that is not there at all.
  try {
    load_deck((tmp.path() / "nope.yaml").string());
    ADD_FAILURE() << "expected an error";
  } catch (const distzo::Error& e) {
    EXPECT_STARTS_WITH(std::string(e.what()), (tmp.path() / "nope.yaml").string() +
                                                  ": cannot read the deck: no such file");
  }
}

TEST(DeckError, SyntaxError) {
  EXPECT_DECK_ERROR(deck_with("  queries: [1, 2\nparallel:\n  data: 1\n"),
                    "deck.yaml:11: invalid YAML: ", "end of sequence flow not found");
  EXPECT_DECK_ERROR(deck_with("  eps: 1e-3\n\tseed: 1\n"), "deck.yaml:11: invalid YAML: ", "tab");
}

TEST(DeckError, PerturbationMustDivideTwoQ) {
  EXPECT_DECK_ERROR(deck_with("  queries: 3\nparallel:\n  data: 2\n  perturbation: 4\n"),
                    "deck.yaml:13: parallel.perturbation: ",
                    "P must divide the 2q evaluations of a step: 2 * optim.queries = 2 * 3 = 6 "
                    "is not a multiple of P = 4; allowed P: 1, 2, 3, 6");
  EXPECT_NO_THROW(parse_deck(deck_with("  queries: 3\nparallel:\n  perturbation: 6\n"), "ok"));
}

TEST(DeckError, OneSidedNeedsTwoDirectionsAndPDividingNPlusOne) {
  EXPECT_DECK_ERROR(deck_with("  estimator: one_sided\n"),
                    "deck.yaml:10: optim.estimator: ", "N = 1 has none; use N >= 2 (FZOO uses 8)");
  EXPECT_DECK_ERROR(
      deck_with("  estimator: one_sided\n  queries: 8\nparallel:\n  perturbation: 2\n"),
      "deck.yaml:13: parallel.perturbation: ",
      "P must divide the N + 1 evaluations of a one_sided step: optim.queries + 1 = 8 + 1 = 9 is "
      "not a multiple of P = 2; allowed P: 1, 3, 9");
  EXPECT_NO_THROW(parse_deck(
      deck_with("  estimator: one_sided\n  queries: 8\nparallel:\n  perturbation: 3\n"), "ok"));
}

TEST(DeckError, MeshMismatch) {
  const Deck d =
      parse_deck(deck_with("  queries: 3\nparallel:\n  perturbation: 2\n  data: 3\n"), "deck.yaml");
  EXPECT_NO_THROW(check_mesh(d, 6));
  try {
    check_mesh(d, 4);
    ADD_FAILURE() << "expected an error";
  } catch (const distzo::Error& e) {
    const std::string m = e.what();
    EXPECT_STARTS_WITH(m, "deck.yaml:12: parallel.perturbation, parallel.data: ");
    EXPECT_CONTAINS(m, "P x D = 2 x 3 = 6 ranks");
    EXPECT_CONTAINS(m, "parallel.perturbation = 2 at line 12, parallel.data = 3 at line 13");
    EXPECT_CONTAINS(m, "does not match the 4 MPI ranks of this job");
  }
  // Defaults say so.
  const Deck single = parse_deck(deck_with(""), "deck.yaml");
  try {
    check_mesh(single, 2);
    ADD_FAILURE() << "expected an error";
  } catch (const distzo::Error& e) {
    const std::string m = e.what();
    EXPECT_STARTS_WITH(m, "deck.yaml:1: parallel.perturbation, parallel.data: ");
    EXPECT_CONTAINS(m, "parallel.perturbation = 1 (default), parallel.data = 1 (default)");
    EXPECT_CONTAINS(m, "2 MPI ranks");
  }
}

TEST(DeckError, SectionMustBeAMap) {
  EXPECT_DECK_ERROR(deck_with("eval: 5\n"), "deck.yaml:10: eval: ",
                    "must be a map of keys (interval, max_examples), found the integer 5");
  EXPECT_DECK_ERROR(deck_with("parallel:\n  - 2\n  - 3\n"),
                    "deck.yaml:10: parallel: ", "found a list");
  EXPECT_DECK_ERROR(deck_with("checkpoint:\n"),
                    "deck.yaml:10: checkpoint: ", "found nothing (an empty value)");
}

TEST(DeckError, EmptyDocument) {
  EXPECT_DECK_ERROR("", "deck.yaml:1: empty deck: ", "no YAML content found");
  EXPECT_DECK_ERROR("# just a comment\n\n", "deck.yaml:1: empty deck: ", "no YAML content");
  EXPECT_DECK_ERROR("---\n", "deck.yaml:1: empty deck: ", "model, data, optim and output");
}

TEST(DeckError, DocumentMustBeOneMap) {
  EXPECT_DECK_ERROR("- model\n- data\n", "deck.yaml:1: deck: ",
                    "must be a map of sections (model, data, optim, eval, checkpoint, output, "
                    "parallel, placement, precision), found a list");
  EXPECT_DECK_ERROR(deck_with("---\nmodel:\n  path: x\n"),
                    "deck.yaml:11: deck: ", "a deck is one YAML document, found a second one");
  EXPECT_DECK_ERROR(deck_with("[a, b]: 1\n"),
                    "deck.yaml:10: deck: ", "section names must be plain words, found a list");
}

TEST(DeckError, ErrorsAreDistzoErrors) {
  EXPECT_THROW(parse_deck("model: [", "x.yaml"), distzo::Error);
  EXPECT_THROW(load_deck("/nonexistent/deck.yaml"), distzo::Error);
}

}  // namespace distzo_test_deck
