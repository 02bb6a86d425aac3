#include "io/deck.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "core/error.hpp"
#include "core/file_system.hpp"
#include "io/deck_fields.hpp"
#include "io/deck_reader.hpp"
#include "io/deck_text.hpp"
#include "kernels/perturb_update.hpp"

namespace distzo::io {

using namespace deck_detail;

namespace {

namespace fs = std::filesystem;

std::string ranks(std::int64_t n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

// ---------------------------------------------------------------------------
// The parser: one instance per deck text.

/// Whether `word` is one of `names`.
bool is_one_of(const std::string& word, const std::vector<const char*>& names) {
  return std::find_if(names.begin(), names.end(), [&](const char* n) { return word == n; }) !=
         names.end();
}

const char* const kSectionsNeeded =
    "a deck needs at least the sections model, data, optim and output";

class DeckParser {
 public:
  explicit DeckParser(std::string source) { origin_.source = std::move(source); }

  Deck parse(const std::string& text) {
    const YAML::Node root = read_root(text);
    const std::map<std::string, YAML::Node> found = find_sections(root);
    Deck deck;
    for (const auto& s : sections()) {
      const auto it = found.find(s.name);
      if (it == found.end()) continue;  // an optional section left out: every default
      const SectionReader reader = open(s.name, it->second);
      for (const Field& f : fields())
        if (std::string(f.section) == s.name) f.read(reader, deck);
    }
    deck.origin = origin_;
    check_cross_fields(deck);
    return deck;
  }

 private:
  /// The deck's one YAML document, a map.
  YAML::Node read_root(const std::string& text) const {
    std::vector<YAML::Node> documents;
    try {
      documents = YAML::LoadAll(text);
    } catch (const YAML::Exception& e) {
      std::ostringstream what;
      what << e.msg;
      if (!e.mark.is_null()) what << " (column " << e.mark.column + 1 << ")";
      fail(origin_.source, e.mark.is_null() ? 1 : e.mark.line + 1, "invalid YAML", what.str());
    }
    if (documents.empty() || (documents.size() == 1 && documents[0].IsNull()))
      fail(origin_.source, 1, "empty deck",
           std::string("no YAML content found; ") + kSectionsNeeded);
    if (documents.size() > 1)
      fail(origin_.source, line_of(documents[1]), "deck",
           "a deck is one YAML document, found a second one here");
    const YAML::Node& root = documents[0];
    if (!root.IsMap())
      fail(origin_.source, line_of(root), "deck",
           "must be a map of sections (" + section_list() + "), found " + describe(root));
    return root;
  }

  /// The sections written, by name: checks names and duplicates and that
  /// every required section is there, and records the section lines.
  std::map<std::string, YAML::Node> find_sections(const YAML::Node& root) {
    std::map<std::string, YAML::Node> found;
    const std::vector<const char*> names = section_names();
    // yaml-cpp iterators hand out pairs by value: hold the pair, not a
    // reference into it->first.
    for (const auto& pair : root) {
      const YAML::Node& key = pair.first;
      if (!key.IsScalar())
        fail(origin_.source, line_of(key), "deck",
             "section names must be plain words, found " + describe(key));
      const std::string name = key.Scalar();
      if (name == "model_type")  // every Hugging Face config.json has it
        fail(origin_.source, line_of(key), name,
             "this is a Hugging Face config.json, not a deck: `distzo plan` takes it as it is, "
             "`distzo make-model OUT.h5 --config` makes a model of it, and a deck names a "
             "converted model (tools/hf_to_h5.py) under model.path");
      if (!is_one_of(name, names))
        fail(origin_.source, line_of(key), display_key(name),
             "unknown section" + suggestion(name, names) + "; allowed sections: " + section_list());
      if (found.count(name))
        fail(origin_.source, line_of(key), name,
             "duplicate section (first given at line " + std::to_string(origin_.lines.at(name)) +
                 "); each section may appear once");
      origin_.lines[name] = line_of(key);
      found[name] = pair.second;
    }
    for (const auto& s : sections())
      if (s.required && !found.count(s.name))
        fail(origin_.source, line_of(root), s.name,
             std::string("missing required section; ") + kSectionsNeeded);
    return found;
  }

  /// Checks that section `name` is a map whose keys are all known and given
  /// once, and records the key lines.
  SectionReader open(const std::string& name, const YAML::Node& map) {
    const int section_line = origin_.lines.at(name);
    const std::vector<const char*> keys = keys_of(name);
    if (!map.IsMap())
      fail(origin_.source, section_line, name,
           "must be a map of keys (" + join(keys) + "), found " + describe(map));
    std::map<std::string, YAML::Node> entries;
    for (const auto& pair : map) {
      const YAML::Node& key = pair.first;
      if (!key.IsScalar())
        fail(origin_.source, line_of(key), name,
             "keys must be plain words, found " + describe(key));
      const std::string k = key.Scalar();
      const std::string dotted = name + "." + k;
      if (!is_one_of(k, keys))
        fail(origin_.source, line_of(key), name + "." + display_key(k),
             "unknown key" + suggestion(k, keys) + "; allowed keys in " + name + ": " + join(keys));
      if (entries.count(k))
        fail(origin_.source, line_of(key), dotted,
             "duplicate key (first given at line " + std::to_string(origin_.lines.at(dotted)) +
                 "); each key may appear once");
      origin_.lines[dotted] = line_of(key);
      entries[k] = pair.second;
    }
    return SectionReader(origin_, name, section_line, std::move(entries));
  }

  // --- rules across keys ----------------------------------------------------

  void check_cross_fields(const Deck& deck) const {
    const DeckOrigin& o = deck.origin;
    if (deck.optim.warmup_steps > deck.optim.steps)
      fail(o.source, o.line("optim.warmup_steps"), "optim.warmup_steps",
           "out of range: must be <= optim.steps (" + std::to_string(deck.optim.steps) +
               "), found " + std::to_string(deck.optim.warmup_steps));
    const std::string directions = o.written("optim.queries") ? "optim.queries" : "optim.estimator";
    if (deck.optim.estimator == EstimatorKind::one_sided && deck.optim.queries < 2)
      fail(o.source, o.line(directions), directions,
           "optim.estimator: one_sided divides each step by the spread of its N = optim.queries "
           "one-sided losses: N = " +
               std::to_string(deck.optim.queries) + " has none; use N >= 2 (FZOO uses 8)");
    const std::string split = perturbation_problem(deck.optim.estimator, deck.optim.queries,
                                                   deck.parallel.perturbation, "optim.queries");
    if (!split.empty())
      fail(o.source, o.line("parallel.perturbation"), "parallel.perturbation", split);
    check_momentum(deck);
  }

  /// optim.momentum β and optim.history h: h = 1 without momentum, h >= 2
  /// with it, and h × q z streams within what the fused kernel regenerates.
  static void check_momentum(const Deck& deck) {
    const DeckOrigin& o = deck.origin;
    const OptimSection& opt = deck.optim;
    const std::string beta = format_double(opt.momentum), h = std::to_string(opt.history);
    const int most = kernels::kMaxQueries / opt.queries;  // the largest h for q
    if (opt.momentum == 0 && opt.history != 1)
      fail(o.source, o.line("optim.history"), "optim.history",
           h + " rows with optim.momentum 0" +
               (o.written("optim.momentum") ? "" : " (the default)") +
               ": plain SGD uses only the step's own row; set optim.momentum (e.g. 0.9) or leave "
               "optim.history out");
    if (opt.momentum > 0 && opt.history < 2)
      fail(o.source, o.line("optim.momentum"), "optim.momentum",
           beta + " with optim.history 1" + (o.written("optim.history") ? "" : " (the default)") +
               " uses only the step's own row, which is plain SGD: set optim.history to the rows "
               "the momentum spans, 2 to " +
               std::to_string(most) + " with optim.queries " + std::to_string(opt.queries));
    const std::int64_t streams = static_cast<std::int64_t>(opt.history) * opt.queries;
    if (streams > kernels::kMaxQueries)
      fail(o.source, o.line("optim.history"), "optim.history",
           "momentum " + beta + " with history " + h + " and queries " +
               std::to_string(opt.queries) + " needs " + std::to_string(streams) +
               " z streams a step; the fused kernel regenerates at most " +
               std::to_string(kernels::kMaxQueries) +
               (most >= 2 ? ": lower optim.history to " + std::to_string(most)
                          : ": a momentum needs history >= 2, so optim.queries <= " +
                                std::to_string(kernels::kMaxQueries / 2)));
  }

  DeckOrigin origin_;
};

}  // namespace

// ---------------------------------------------------------------------------

int DeckOrigin::line(const std::string& key) const {
  auto it = lines.find(key);
  if (it != lines.end()) return it->second;
  it = lines.find(key.substr(0, key.find('.')));
  return it != lines.end() ? it->second : 1;
}

std::string DeckOrigin::where(const std::string& key) const {
  return error_prefix(source, line(key), key);
}

bool operator==(const Deck& a, const Deck& b) {
  for (const Field& f : fields())
    if (f.write(a) != f.write(b)) return false;
  return true;
}

std::vector<std::string> deck_keys() {
  std::vector<std::string> keys;
  for (const Field& f : fields()) keys.push_back(std::string(f.section) + "." + f.key);
  return keys;
}

std::string deck_reference_markdown() {
  const Deck defaults;
  std::ostringstream os;
  for (const auto& s : sections()) {
    os << "### `" << s.name << "`" << (s.required ? "" : " (optional section)") << "\n\n"
       << "| key | type | default | allowed | meaning |\n"
       << "|---|---|---|---|---|\n";
    for (const Field& f : fields()) {
      if (std::string(f.section) != s.name) continue;
      std::string shown = f.write(defaults);
      if (f.required)
        shown = "**required**";
      else if (shown == "\"\"")
        shown = "empty";
      else if (f.type == "enum")
        shown = "`" + shown + "`";
      os << "| `" << f.section << "." << f.key << "` | " << f.type << " | " << shown << " | "
         << f.allowed << " | " << f.meaning << " |\n";
    }
    os << "\n";
  }
  return os.str();
}

Deck parse_deck(const std::string& yaml_text, const std::string& source_name) {
  return DeckParser(source_name).parse(yaml_text);
}

void validate_files(const Deck& deck) {
  const DeckOrigin& o = deck.origin;
  // Where a relative path was looked for; an absolute one needs no note.
  const auto cwd_note = [](const std::string& path) {
    if (fs::path(path).is_absolute()) return std::string();
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    return std::string(" (relative paths are taken from the working directory") +
           (ec ? std::string() : " " + cwd.string()) + ")";
  };
  const auto require_file = [&](const std::string& key, const std::string& path) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st))
      fail(o.source, o.line(key), key, "no such file " + quoted(path) + cwd_note(path));
    if (!fs::is_regular_file(st))
      fail(o.source, o.line(key), key,
           "expected a regular file, found " + file_kind(path) + " at " + quoted(path));
  };
  require_file("model.path", deck.model.path);
  require_file("data.train", deck.data.train);
  if (!deck.data.eval.empty()) require_file("data.eval", deck.data.eval);
  if (!deck.checkpoint.resume.empty() && deck.checkpoint.resume != "latest")
    require_file("checkpoint.resume", deck.checkpoint.resume);
  std::error_code ec;
  const fs::file_status st = fs::status(deck.output.dir, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    fail(o.source, o.line("output.dir"), "output.dir",
         "expected a directory (or a path to create), found a file at " + quoted(deck.output.dir));
}

Deck load_deck(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw Error(path + ": cannot read the deck: " +
                (fs::exists(path, ec) ? "not a regular file" : "no such file"));
  // A model or dataset given by mistake is said to be one, whatever its size.
  {
    constexpr char kHdf5Signature[] = "\x89HDF\r\n\x1a\n";
    std::ifstream head(path, std::ios::binary);
    char first[8] = {};
    if (head.read(first, sizeof(first)) && std::memcmp(first, kHdf5Signature, 8) == 0)
      throw Error(path +
                  ": cannot read the deck: a binary file, not YAML text (an HDF5 file: a model, "
                  "checkpoint or dataset? A deck names those under model.path and data.train)");
  }
  // A deck is a page of YAML: refuse a huge file before the YAML parser
  // spends minutes and gigabytes on it.
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxDeckBytes)
    throw Error(path + ": cannot read the deck: " + std::to_string(size) +
                " bytes, more than a deck's " + std::to_string(kMaxDeckBytes) +
                " (1 MiB); is it a deck?");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!(text << in.rdbuf()) && size != 0) throw Error(path + ": cannot read the deck");
  // YAML is text: a NUL byte means a binary file (a model or dataset given
  // by mistake), which the YAML parser would report as a stray escape.
  if (text.str().find('\0') != std::string::npos)
    throw Error(path + ": cannot read the deck: a binary file, not YAML text");
  Deck deck = parse_deck(text.str(), path);
  validate_files(deck);
  return deck;
}

std::string perturbation_problem(EstimatorKind estimator, int queries, int perturbation,
                                 const std::string& queries_name) {
  const std::int64_t evaluations = step_evaluations(estimator, queries);
  if (perturbation >= 1 && evaluations % perturbation == 0) return "";
  std::string divisors;
  for (std::int64_t d = 1; d <= evaluations; ++d) {
    if (evaluations % d != 0) continue;
    if (!divisors.empty()) divisors += ", ";
    divisors += std::to_string(d);
  }
  const std::string count = estimator == EstimatorKind::spsa
                                ? "the 2q evaluations of a step: 2 * " + queries_name + " = 2 * " +
                                      std::to_string(queries)
                                : "the N + 1 evaluations of a one_sided step: " + queries_name +
                                      " + 1 = " + std::to_string(queries) + " + 1";
  return "P must divide " + count + " = " + std::to_string(evaluations) +
         " is not a multiple of P = " + std::to_string(perturbation) + "; allowed P: " + divisors;
}

void check_mesh(const Deck& deck, int world_size) {
  const DeckOrigin& o = deck.origin;
  const ParallelSection& p = deck.parallel;
  const std::int64_t world = static_cast<std::int64_t>(p.perturbation) * p.data;
  if (world == world_size) return;
  const auto given = [&](const std::string& key, int value) {
    return key + " = " + std::to_string(value) +
           (o.written(key) ? " at line " + std::to_string(o.line(key)) : " (default)");
  };
  const std::string key = o.written("parallel.perturbation") || !o.written("parallel.data")
                              ? "parallel.perturbation"
                              : "parallel.data";
  fail(o.source, o.line(key), "parallel.perturbation, parallel.data",
       "the mesh P x D = " + std::to_string(p.perturbation) + " x " + std::to_string(p.data) +
           " = " + ranks(world) + " (" + given("parallel.perturbation", p.perturbation) + ", " +
           given("parallel.data", p.data) + ") does not match the " + std::to_string(world_size) +
           (world_size == 1 ? " MPI rank" : " MPI ranks") + " of this job; launch " + ranks(world) +
           " or choose P and D with P x D = " + std::to_string(world_size));
}

namespace {

/// The resume keys of the fields `keep` takes, in deck order.
std::vector<std::string> resume_keys_of(bool (*keep)(const Field&)) {
  std::vector<std::string> names;
  for (const Field& f : fields())
    if (!f.resume_key.empty() && keep(f)) names.push_back(f.resume_key);
  return names;
}

}  // namespace

const std::vector<std::string>& resume_keys() {
  static const std::vector<std::string> keys = resume_keys_of([](const Field&) { return true; });
  return keys;
}

const std::vector<std::string>& run_constant_keys() {
  static const std::vector<std::string> keys =
      resume_keys_of([](const Field& f) { return f.run_constant; });
  return keys;
}

const std::vector<std::string>& changeable_keys() {
  static const std::vector<std::string> keys =
      resume_keys_of([](const Field& f) { return !f.run_constant; });
  return keys;
}

const char* const kRunConstantWhy =
    "never changes within a run, even when checkpoint.allow_changes lists it: the seed log holds "
    "one estimator's row of q scalars a step for the whole run, and every update is rebuilt from "
    "its rows with one momentum, history and choice of perturbed blocks; to go on with another, "
    "start a new run whose "
    "model.path is the checkpoint";

std::string deck_value(const Deck& deck, const std::string& key) {
  for (const Field& f : fields())
    if (std::string(f.section) + "." + f.key == key) return f.write(deck);
  DISTZO_FAIL("deck_value: no key " << key);
}

std::string resolved_yaml(const Deck& deck) {
  std::ostringstream os;
  os << "# distzo deck resolved from " << one_line(deck.origin.source)
     << ": every key, defaults filled in.\n";
  for (const auto& s : sections()) {
    os << s.name << ":\n";
    for (const Field& f : fields())
      if (std::string(f.section) == s.name) os << "  " << f.key << ": " << f.write(deck) << "\n";
  }
  return os.str();
}

}  // namespace distzo::io
