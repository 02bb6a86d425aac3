#include "io/deck.hpp"

#include "io/checkpoint.hpp"

#include "core/error.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <system_error>
#include <utility>

namespace distzo::io {

namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// The schema: sections and their keys, in canonical order. The parser, the
// resolved writer and deck_keys() all follow this table.

struct SectionSchema {
  const char* name;
  bool required;
  std::vector<const char*> keys;
};

const std::vector<SectionSchema>& schema() {
  static const std::vector<SectionSchema> table = {
      {"model", true, {"path"}},
      {"data", true, {"train", "eval", "micro_batch", "shuffle_seed"}},
      {"optim",
       true,
       {"steps", "lr", "schedule", "warmup_steps", "eps", "weight_decay", "queries",
        "distribution", "seed", "max_nonfinite"}},
      {"eval", false, {"interval", "max_examples"}},
      {"checkpoint", false, {"interval", "keep", "resume"}},
      {"output", true, {"dir", "log_interval"}},
      {"parallel", false, {"perturbation", "data", "check_interval"}},
  };
  return table;
}

const SectionSchema& section_schema(const std::string& name) {
  for (const auto& s : schema())
    if (name == s.name) return s;
  throw Error("deck: no schema for section " + name);  // a bug in this file
}

// ---------------------------------------------------------------------------
// Small helpers.

[[noreturn]] void fail(const std::string& source, int line, const std::string& key,
                       const std::string& what) {
  // Deck errors are the user's input errors: they point at the deck, not at
  // this file, so they are thrown without DISTZO_REQUIRE's [src/...] suffix.
  std::ostringstream os;
  os << source << ":" << line << ": " << key << ": " << what;
  throw Error(os.str());
}

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 1 : mark.line + 1;
}

std::string join(const std::vector<const char*>& words) {
  std::string out;
  for (const char* w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

/// A string shown in a message: quoted, control characters escaped, long
/// values shortened.
std::string quoted(const std::string& s) {
  constexpr std::size_t kMax = 80;
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMax) out += "...";
  return out + "\"";
}

/// A key as written by the user, for the key slot of a message: plain words
/// as they are, anything else quoted so the message stays on one line.
std::string display_key(const std::string& k) {
  const bool plain = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '<';
  });
  return plain ? k : quoted(k);
}

std::string ranks(std::int64_t n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

/// Optimal string alignment distance (Levenshtein plus adjacent swaps), so
/// "setps" is one edit from "steps".
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

/// " (did you mean "x"?)" for the closest candidate within 2 edits, else "".
std::string suggestion(const std::string& word, const std::vector<const char*>& candidates) {
  const char* best = nullptr;
  std::size_t best_distance = 3;
  for (const char* c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best ? std::string(" (did you mean \"") + best + "\"?)" : std::string();
}

// Scalar forms. Only plain (unquoted) scalars are numbers; YAML's 1.1
// spellings of booleans are recognised so the message can say "a boolean".
const std::regex& integer_form() {
  static const std::regex re("[-+]?[0-9]+");
  return re;
}
const std::regex& real_form() {
  static const std::regex re("[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  return re;
}
const std::regex& nonfinite_form() {
  static const std::regex re("[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  return re;
}
const std::regex& boolean_form() {
  static const std::regex re(
      "y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF");
  return re;
}

bool is_plain(const YAML::Node& node) {
  // yaml-cpp tags a quoted or block scalar "!", a plain one "?"; an explicit
  // !!int / !!float tag is accepted as a number too.
  const std::string& tag = node.Tag();
  return tag == "?" || tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float";
}

/// What a node is, for "found ..." in messages.
std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing (an empty value)";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return "the quoted string " + quoted(s);
  if (!is_plain(node)) return "the string " + quoted(s);  // e.g. tagged !!str
  if (std::regex_match(s, boolean_form())) return "the boolean " + s;
  if (std::regex_match(s, integer_form())) return "the integer " + s;
  if (std::regex_match(s, real_form())) return "the number " + s;
  if (std::regex_match(s, nonfinite_form())) return "the non-finite number " + s;
  return "the string " + quoted(s);
}

std::string format_double(double v) {
  // Shortest text that reads back to the same double.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// ---------------------------------------------------------------------------
// The parser: one instance per deck text.

class DeckParser {
 public:
  explicit DeckParser(std::string source) { origin_.source = std::move(source); }

  Deck parse(const std::string& text) {
    std::vector<YAML::Node> documents;
    try {
      documents = YAML::LoadAll(text);
    } catch (const YAML::Exception& e) {
      std::ostringstream what;
      what << e.msg;
      if (!e.mark.is_null()) what << " (column " << e.mark.column + 1 << ")";
      fail(origin_.source, e.mark.is_null() ? 1 : e.mark.line + 1, "invalid YAML",
           what.str());
    }
    const std::string sections = "a deck needs at least the sections model, data, optim and output";
    if (documents.empty() || (documents.size() == 1 && documents[0].IsNull()))
      fail(origin_.source, 1, "empty deck", "no YAML content found; " + sections);
    if (documents.size() > 1)
      fail(origin_.source, line_of(documents[1]), "deck",
           "a deck is one YAML document, found a second one here");
    const YAML::Node& root = documents[0];
    if (!root.IsMap())
      fail(origin_.source, line_of(root), "deck",
           "must be a map of sections (" + section_list() + "), found " + describe(root));

    // Sections: check names and duplicates, then read each in schema order.
    std::map<std::string, std::pair<YAML::Node, YAML::Node>> found;
    // yaml-cpp iterators hand out pairs by value: hold the pair, not a
    // reference into it->first.
    for (const auto& pair : root) {
      const YAML::Node& key = pair.first;
      if (!key.IsScalar())
        fail(origin_.source, line_of(key), "deck",
             "section names must be plain words, found " + describe(key));
      const std::string name = key.Scalar();
      const std::string shown = display_key(name);
      std::vector<const char*> names;
      for (const auto& s : schema()) names.push_back(s.name);
      if (std::find_if(names.begin(), names.end(), [&](const char* n) { return name == n; }) ==
          names.end())
        fail(origin_.source, line_of(key), shown,
             "unknown section" + suggestion(name, names) + "; allowed sections: " +
                 section_list());
      if (found.count(name))
        fail(origin_.source, line_of(key), name,
             "duplicate section (first given at line " +
                 std::to_string(origin_.lines.at(name)) + "); each section may appear once");
      origin_.lines[name] = line_of(key);
      found[name] = {key, pair.second};
    }
    for (const auto& s : schema())
      if (s.required && !found.count(s.name))
        fail(origin_.source, line_of(root), s.name,
             std::string("missing required section; ") + sections);

    Deck deck;
    read_model(found, deck.model);
    read_data(found, deck.data);
    read_optim(found, deck.optim);
    read_eval(found, deck.eval);
    read_checkpoint(found, deck.checkpoint);
    read_output(found, deck.output);
    read_parallel(found, deck.parallel);
    deck.origin = origin_;
    check_cross_fields(deck);
    return deck;
  }

 private:
  using Found = std::map<std::string, std::pair<YAML::Node, YAML::Node>>;

  static std::string section_list() {
    std::vector<const char*> names;
    for (const auto& s : schema()) names.push_back(s.name);
    return join(names);
  }

  // --- sections -------------------------------------------------------------

  /// Makes `name` the current section: checks it is a map, that every key is
  /// known and given once, and records the key lines. Returns false when the
  /// (optional) section is absent.
  bool open(const Found& found, const std::string& name) {
    section_ = name;
    entries_.clear();
    const SectionSchema& s = section_schema(name);
    const auto f = found.find(name);
    if (f == found.end()) return false;
    const YAML::Node& map = f->second.second;
    section_line_ = origin_.lines.at(name);
    if (!map.IsMap())
      fail(origin_.source, section_line_, name,
           "must be a map of keys (" + join(s.keys) + "), found " + describe(map));
    for (const auto& pair : map) {
      const YAML::Node& key = pair.first;
      if (!key.IsScalar())
        fail(origin_.source, line_of(key), name,
             "keys must be plain words, found " + describe(key));
      const std::string k = key.Scalar();
      const std::string dotted = name + "." + k;
      const std::string shown = name + "." + display_key(k);
      if (std::find_if(s.keys.begin(), s.keys.end(), [&](const char* n) { return k == n; }) ==
          s.keys.end())
        fail(origin_.source, line_of(key), shown,
             "unknown key" + suggestion(k, s.keys) + "; allowed keys in " + name + ": " +
                 join(s.keys));
      if (entries_.count(k))
        fail(origin_.source, line_of(key), dotted,
             "duplicate key (first given at line " + std::to_string(origin_.lines.at(dotted)) +
                 "); each key may appear once");
      origin_.lines[dotted] = line_of(key);
      entries_[k] = pair.second;
    }
    return true;
  }

  void read_model(const Found& found, ModelSection& m) {
    open(found, "model");
    read_path("path", m.path, true);
  }

  void read_data(const Found& found, DataSection& d) {
    open(found, "data");
    read_path("train", d.train, true);
    read_path("eval", d.eval, false);
    read_int("micro_batch", d.micro_batch, 1);
    read_uint64("shuffle_seed", d.shuffle_seed);
  }

  void read_optim(const Found& found, OptimSection& o) {
    open(found, "optim");
    require("steps");
    require("lr");
    read_int("steps", o.steps, 0);
    read_double("lr", o.lr, 0.0, true);
    read_enum("schedule", o.schedule,
              {{"constant", Schedule::constant},
               {"linear", Schedule::linear},
               {"cosine", Schedule::cosine}});
    read_int("warmup_steps", o.warmup_steps, 0);
    read_double("eps", o.eps, 0.0, true);
    read_double("weight_decay", o.weight_decay, 0.0, false);
    read_int("queries", o.queries, 1);
    read_enum("distribution", o.distribution,
              {{"gaussian", Distribution::gaussian}, {"rademacher", Distribution::rademacher}});
    read_uint64("seed", o.seed);
    read_int("max_nonfinite", o.max_nonfinite, 1);
  }

  void read_eval(const Found& found, EvalSection& e) {
    if (!open(found, "eval")) return;
    read_int("interval", e.interval, 0);
    read_int("max_examples", e.max_examples, 0);
  }

  void read_checkpoint(const Found& found, CheckpointSection& c) {
    if (!open(found, "checkpoint")) return;
    read_int("interval", c.interval, 0);
    read_int("keep", c.keep, 1);
    read_path("resume", c.resume, false);
  }

  void read_output(const Found& found, OutputSection& o) {
    open(found, "output");
    read_path("dir", o.dir, true);
    read_int("log_interval", o.log_interval, 1);
  }

  void read_parallel(const Found& found, ParallelSection& p) {
    if (!open(found, "parallel")) return;
    read_int("perturbation", p.perturbation, 1);
    read_int("data", p.data, 1);
    read_int("check_interval", p.check_interval, 0);
  }

  // --- values ---------------------------------------------------------------

  /// Value errors point at the key's line: a null value has no useful mark,
  /// and a block value starts below its key.
  [[noreturn]] void fail_value(const std::string& key, const std::string& what) const {
    const std::string dotted = section_ + "." + key;
    fail(origin_.source, origin_.lines.at(dotted), dotted, what);
  }

  void require(const char* key) const {
    if (!entries_.count(key))
      fail(origin_.source, section_line_, section_ + "." + key,
           "missing required key in the " + section_ + " section (which starts at line " +
               std::to_string(section_line_) + ")");
  }

  const YAML::Node* find(const char* key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }

  template <class Int>
  void read_int(const char* key, Int& out, std::int64_t min) {
    const YAML::Node* v = find(key);
    if (!v) return;
    const std::int64_t max = std::numeric_limits<Int>::max();
    const std::string allowed = "an integer >= " + std::to_string(min);
    if (!v->IsScalar() || !is_plain(*v) || !std::regex_match(v->Scalar(), integer_form()))
      fail_value(key, "expected " + allowed + ", found " + describe(*v));
    std::string text = v->Scalar();
    if (text[0] == '+') text.erase(0, 1);
    std::int64_t value = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec == std::errc::result_out_of_range || value < min || value > max)
      fail_value(key,
                 "out of range: expected an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], found " + v->Scalar());
    out = static_cast<Int>(value);
  }

  void read_uint64(const char* key, std::uint64_t& out) {
    const YAML::Node* v = find(key);
    if (!v) return;
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::string range = "[0, " + std::to_string(max) + "]";
    if (!v->IsScalar() || !is_plain(*v) || !std::regex_match(v->Scalar(), integer_form()))
      fail_value(key, "expected an integer in " + range + ", found " + describe(*v));
    std::string text = v->Scalar();
    bool negative = text[0] == '-';
    if (text[0] == '+' || text[0] == '-') text.erase(0, 1);
    std::uint64_t value = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec == std::errc::result_out_of_range || (negative && value != 0))
      fail_value(key,
                 "out of range: expected an integer in " + range + ", found " + v->Scalar());
    out = value;
  }

  void read_double(const char* key, double& out, double min, bool exclusive) {
    const YAML::Node* v = find(key);
    if (!v) return;
    const std::string allowed =
        std::string("a number ") + (exclusive ? "> " : ">= ") + format_double(min);
    if (!v->IsScalar() || !is_plain(*v) || !std::regex_match(v->Scalar(), real_form()))
      fail_value(key, "expected " + allowed + ", found " + describe(*v));
    std::string text = v->Scalar();
    if (text[0] == '+') text.erase(0, 1);
    double value = 0.0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec == std::errc::result_out_of_range)
      fail_value(key,
                 "out of range: expected " + allowed +
                     " that fits a double, found " + v->Scalar());
    if (exclusive ? !(value > min) : !(value >= min))
      fail_value(key, "out of range: expected " + allowed + ", found " + v->Scalar());
    out = value;
  }

  /// Any scalar is a string; a required one must not be empty.
  void read_path(const char* key, std::string& out, bool required) {
    if (required) require(key);
    const YAML::Node* v = find(key);
    if (!v) return;
    if (!v->IsScalar())
      fail_value(key, "expected a path (a string), found " + describe(*v));
    if (required && v->Scalar().empty())
      fail_value(key, "expected a non-empty path, found the empty string");
    out = v->Scalar();
  }

  template <class Enum>
  void read_enum(const char* key, Enum& out,
                 const std::vector<std::pair<const char*, Enum>>& choices) {
    const YAML::Node* v = find(key);
    if (!v) return;
    std::vector<const char*> names;
    for (const auto& c : choices) names.push_back(c.first);
    if (!v->IsScalar())
      fail_value(key, "expected one of " + join(names) + ", found " + describe(*v));
    const std::string& s = v->Scalar();
    for (const auto& c : choices) {
      if (s == c.first) {
        out = c.second;
        return;
      }
    }
    fail_value(key,
               "unknown value " + quoted(s) + suggestion(s, names) + "; allowed: " +
                   join(names));
  }

  // --- rules across keys ----------------------------------------------------

  void check_cross_fields(const Deck& deck) const {
    const DeckOrigin& o = deck.origin;
    if (deck.optim.warmup_steps > deck.optim.steps)
      fail(o.source, o.line("optim.warmup_steps"), "optim.warmup_steps",
           "out of range: must be <= optim.steps (" + std::to_string(deck.optim.steps) +
               "), found " + std::to_string(deck.optim.warmup_steps));
    const std::int64_t evaluations = 2 * static_cast<std::int64_t>(deck.optim.queries);
    const std::int64_t p = deck.parallel.perturbation;
    if (evaluations % p != 0) {
      std::string divisors;
      for (std::int64_t d = 1; d <= evaluations; ++d) {
        if (evaluations % d != 0) continue;
        if (!divisors.empty()) divisors += ", ";
        divisors += std::to_string(d);
      }
      fail(o.source, o.line("parallel.perturbation"), "parallel.perturbation",
           "P must divide the 2q evaluations of a step: 2 * optim.queries = 2 * " +
               std::to_string(deck.optim.queries) + " = " + std::to_string(evaluations) +
               " is not a multiple of P = " + std::to_string(p) + "; allowed P: " + divisors);
    }
  }

  DeckOrigin origin_;
  std::string section_;
  int section_line_ = 1;
  std::map<std::string, YAML::Node> entries_;
};

// ---------------------------------------------------------------------------
// Writing.

/// A YAML double-quoted scalar; every path and string goes out this way so
/// that no value can be mistaken for a number, a boolean or null.
std::string yaml_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string one_line(std::string s) {
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------


int DeckOrigin::line(const std::string& key) const {
  auto it = lines.find(key);
  if (it != lines.end()) return it->second;
  it = lines.find(key.substr(0, key.find('.')));
  return it != lines.end() ? it->second : 1;
}

std::string DeckOrigin::where(const std::string& key) const {
  return source + ":" + std::to_string(line(key)) + ": " + key + ": ";
}

bool operator==(const Deck& a, const Deck& b) {
  const auto& am = a.model;
  const auto& bm = b.model;
  const auto& ad = a.data;
  const auto& bd = b.data;
  const auto& ao = a.optim;
  const auto& bo = b.optim;
  const auto& ae = a.eval;
  const auto& be = b.eval;
  const auto& ac = a.checkpoint;
  const auto& bc = b.checkpoint;
  const auto& aout = a.output;
  const auto& bout = b.output;
  const auto& ap = a.parallel;
  const auto& bp = b.parallel;
  return am.path == bm.path &&                                                           //
         ad.train == bd.train && ad.eval == bd.eval && ad.micro_batch == bd.micro_batch &&  //
         ad.shuffle_seed == bd.shuffle_seed &&                                            //
         ao.steps == bo.steps && ao.lr == bo.lr && ao.schedule == bo.schedule &&          //
         ao.warmup_steps == bo.warmup_steps && ao.eps == bo.eps &&                        //
         ao.weight_decay == bo.weight_decay && ao.queries == bo.queries &&                //
         ao.distribution == bo.distribution && ao.seed == bo.seed &&                      //
         ao.max_nonfinite == bo.max_nonfinite &&                                          //
         ae.interval == be.interval && ae.max_examples == be.max_examples &&              //
         ac.interval == bc.interval && ac.keep == bc.keep && ac.resume == bc.resume &&    //
         aout.dir == bout.dir && aout.log_interval == bout.log_interval &&                //
         ap.perturbation == bp.perturbation && ap.data == bp.data &&                      //
         ap.check_interval == bp.check_interval;
}

std::vector<std::string> deck_keys() {
  std::vector<std::string> keys;
  for (const auto& s : schema())
    for (const char* k : s.keys) keys.push_back(std::string(s.name) + "." + k);
  return keys;
}

Deck parse_deck(const std::string& yaml_text, const std::string& source_name) {
  return DeckParser(source_name).parse(yaml_text);
}

void validate_files(const Deck& deck) {
  const DeckOrigin& o = deck.origin;
  const auto cwd_note = [] {
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    return std::string(" (relative paths are taken from the working directory") +
           (ec ? std::string() : " " + cwd.string()) + ")";
  };
  const auto require_file = [&](const std::string& key, const std::string& path) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st))
      fail(o.source, o.line(key), key, "no such file " + quoted(path) + cwd_note());
    if (!fs::is_regular_file(st))
      fail(o.source, o.line(key), key,
           "expected a regular file, found " +
               std::string(fs::is_directory(st) ? "a directory" : "something else") + " at " +
               quoted(path));
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
         "expected a directory (or a path to create), found a file at " +
             quoted(deck.output.dir));
}

Deck load_deck(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw Error(path + ": cannot read the deck: " +
                (fs::exists(path, ec) ? "not a regular file" : "no such file"));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!(text << in.rdbuf()) && fs::file_size(path, ec) != 0)
    throw Error(path + ": cannot read the deck");
  Deck deck = parse_deck(text.str(), path);
  validate_files(deck);
  return deck;
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
  const std::string key =
      o.written("parallel.perturbation") || !o.written("parallel.data") ? "parallel.perturbation"
                                                                        : "parallel.data";
  fail(o.source, o.line(key), "parallel.perturbation, parallel.data",
       "the mesh P x D = " + std::to_string(p.perturbation) + " x " + std::to_string(p.data) +
           " = " + ranks(world) + " (" + given("parallel.perturbation", p.perturbation) +
           ", " + given("parallel.data", p.data) + ") does not match the " +
           std::to_string(world_size) + " MPI ranks of this job; launch " +
           ranks(world) + " or choose P and D with P x D = " +
           std::to_string(world_size));
}

std::string resume_checkpoint_path(const Deck& deck) {
  const std::string& resume = deck.checkpoint.resume;
  if (resume != "latest") return resume;
  const auto found = list_checkpoints(deck.output.dir);  // oldest first
  return found.empty() ? "" : found.back().second;
}

std::string resolved_yaml(const Deck& deck) {
  std::ostringstream os;
  os << "# distzo deck resolved from " << one_line(deck.origin.source)
     << ": every key, defaults filled in.\n";
  const auto& d = deck;
  os << "model:\n"
     << "  path: " << yaml_string(d.model.path) << "\n";
  os << "data:\n"
     << "  train: " << yaml_string(d.data.train) << "\n"
     << "  eval: " << yaml_string(d.data.eval) << "\n"
     << "  micro_batch: " << d.data.micro_batch << "\n"
     << "  shuffle_seed: " << d.data.shuffle_seed << "\n";
  os << "optim:\n"
     << "  steps: " << d.optim.steps << "\n"
     << "  lr: " << format_double(d.optim.lr) << "\n"
     << "  schedule: " << to_string(d.optim.schedule) << "\n"
     << "  warmup_steps: " << d.optim.warmup_steps << "\n"
     << "  eps: " << format_double(d.optim.eps) << "\n"
     << "  weight_decay: " << format_double(d.optim.weight_decay) << "\n"
     << "  queries: " << d.optim.queries << "\n"
     << "  distribution: " << to_string(d.optim.distribution) << "\n"
     << "  seed: " << d.optim.seed << "\n"
     << "  max_nonfinite: " << d.optim.max_nonfinite << "\n";
  os << "eval:\n"
     << "  interval: " << d.eval.interval << "\n"
     << "  max_examples: " << d.eval.max_examples << "\n";
  os << "checkpoint:\n"
     << "  interval: " << d.checkpoint.interval << "\n"
     << "  keep: " << d.checkpoint.keep << "\n"
     << "  resume: " << yaml_string(d.checkpoint.resume) << "\n";
  os << "output:\n"
     << "  dir: " << yaml_string(d.output.dir) << "\n"
     << "  log_interval: " << d.output.log_interval << "\n";
  os << "parallel:\n"
     << "  perturbation: " << d.parallel.perturbation << "\n"
     << "  data: " << d.parallel.data << "\n"
     << "  check_interval: " << d.parallel.check_interval << "\n";
  return os.str();
}

}  // namespace distzo::io
