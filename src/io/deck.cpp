#include "io/deck.hpp"

#include "kernels/perturb_update.hpp"

#include "core/error.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <functional>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <utility>

namespace distzo::io {

namespace {

namespace fs = std::filesystem;

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

/// A YAML double-quoted scalar: quotes and backslashes escaped, newline and
/// tab by name, other control characters as \xHH; at most `max_chars`
/// characters of `s`, then "..." inside the quotes.
std::string double_quoted(const std::string& s, std::size_t max_chars) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < max_chars; ++i) {
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
  if (s.size() > max_chars) out += "...";
  return out + "\"";
}

/// A string shown in a message: quoted, control characters escaped, long
/// values shortened.
std::string quoted(const std::string& s) { return double_quoted(s, 80); }

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
  // A shortened key ("resident" for "resident_blocks") is far in edits but
  // plainly meant: the one candidate it begins, if there is exactly one.
  if (!best && word.size() >= 4) {
    for (const char* c : candidates) {
      if (std::string(c).compare(0, word.size(), word) != 0) continue;
      if (best) return std::string();  // ambiguous
      best = c;
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

/// Every path and string of the resolved deck goes out double-quoted, so
/// that no value can be mistaken for a number, a boolean or null.
std::string yaml_string(const std::string& s) { return double_quoted(s, std::string::npos); }

std::string one_line(std::string s) {
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

// ---------------------------------------------------------------------------
// Reading the values of one section.

/// The keys of one section as written, and the typed readers that check
/// each value against its field's type and range.
class SectionReader {
 public:
  SectionReader(const DeckOrigin& origin, std::string section, int section_line,
                std::map<std::string, YAML::Node> entries)
      : origin_(origin),
        section_(std::move(section)),
        section_line_(section_line),
        entries_(std::move(entries)) {}

  void require(const char* key) const {
    if (!entries_.count(key))
      fail(origin_.source, section_line_, section_ + "." + key,
           "missing required key in the " + section_ + " section (which starts at line " +
               std::to_string(section_line_) + ")");
  }

  template <class Int>
  void read_int(const char* key, Int& out, std::int64_t min,
                std::int64_t max = std::numeric_limits<Int>::max()) const {
    const YAML::Node* v = find(key);
    if (!v) return;
    const std::string allowed = max < std::numeric_limits<Int>::max()
                                    ? "an integer in [" + std::to_string(min) + ", " +
                                          std::to_string(max) + "]"
                                    : "an integer >= " + std::to_string(min);
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

  void read_uint64(const char* key, std::uint64_t& out) const {
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

  void read_double(const char* key, double& out, double min, bool exclusive) const {
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
                 "out of range: expected " + allowed + " that fits a double, found " +
                     v->Scalar());
    if (exclusive ? !(value > min) : !(value >= min))
      fail_value(key, "out of range: expected " + allowed + ", found " + v->Scalar());
    out = value;
  }

  /// One of the `words` (each standing for a value), or a number > 0.
  void read_number_or_word(const char* key, double& out,
                           const std::vector<std::pair<const char*, double>>& words) const {
    const YAML::Node* v = find(key);
    if (!v) return;
    std::vector<const char*> names;
    for (const auto& w : words) {
      if (v->IsScalar() && v->Scalar() == w.first) {
        out = w.second;
        return;
      }
      names.push_back(w.first);
    }
    const std::string allowed = "expected " + join(names) + " or a number > 0";
    if (!v->IsScalar() || !is_plain(*v) || !std::regex_match(v->Scalar(), real_form()))
      fail_value(key, allowed + ", found " + describe(*v));
    double value = 0;
    read_double(key, value, -std::numeric_limits<double>::infinity(), false);
    if (!(value > 0)) fail_value(key, "out of range: " + allowed + ", found " + v->Scalar());
    out = value;
  }

  /// A YAML list of names, each one of `allowed`.
  void read_name_list(const char* key, std::vector<std::string>& out,
                      const std::vector<std::string>& allowed) const {
    const YAML::Node* v = find(key);
    if (!v) return;
    out.clear();
    if (v->IsNull()) return;  // `allow_changes:` with nothing: none
    if (!v->IsSequence()) fail_value(key, "expected a list of keys ([optim.lr, ...]), found " + describe(*v));
    for (const YAML::Node& item : *v) {
      const std::string name = item.IsScalar() ? item.Scalar() : "";
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string all;
        for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
        fail_value(key, "\"" + name + "\" is not a key a resume checks; allowed: " + all);
      }
      out.push_back(name);
    }
  }

  /// Any scalar is a string; a required one must not be empty.
  void read_path(const char* key, std::string& out, bool required) const {
    if (required) require(key);
    const YAML::Node* v = find(key);
    if (!v) return;
    if (!v->IsScalar()) fail_value(key, "expected a path (a string), found " + describe(*v));
    if (required && v->Scalar().empty())
      fail_value(key, "expected a non-empty path, found the empty string");
    if (v->Scalar().find('\0') != std::string::npos)
      fail_value(key, "the path holds a NUL byte (\\0), which no file name can: it would be cut there");
    out = v->Scalar();
  }

  template <class Enum>
  void read_enum(const char* key, Enum& out,
                 const std::vector<std::pair<const char*, Enum>>& choices) const {
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
               "unknown value " + quoted(s) + suggestion(s, names) + "; allowed: " + join(names));
  }

 private:
  const YAML::Node* find(const char* key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }

  /// Value errors point at the key's line: a null value has no useful mark,
  /// and a block value starts below its key.
  [[noreturn]] void fail_value(const std::string& key, const std::string& what) const {
    const std::string dotted = section_ + "." + key;
    fail(origin_.source, origin_.lines.at(dotted), dotted, what);
  }

  const DeckOrigin& origin_;
  std::string section_;
  int section_line_;
  std::map<std::string, YAML::Node> entries_;
};

// ---------------------------------------------------------------------------
// The field table: every deck key once. The reader, the resolved writer,
// operator==, deck_keys() and the docs tables all follow it, in its order.

struct Field {
  Field(const char* section_name, const char* key_name, bool is_required = false)
      : section(section_name), key(key_name), required(is_required) {}

  const char* section;
  const char* key;
  bool required;
  std::string type;     // docs: "integer", "number", "path", ...
  std::string allowed;  // docs: the values accepted
  std::string meaning;  // docs
  std::function<void(const SectionReader&, Deck&)> read;
  /// The value as a YAML scalar that reads back exactly; two decks are equal
  /// when every field writes the same text.
  std::function<std::string(const Deck&)> write;
};

struct SectionInfo {
  const char* name;
  bool required;
};

const std::vector<SectionInfo>& sections() {
  static const std::vector<SectionInfo> table = {
      {"model", true},       {"data", true},    {"optim", true},     {"eval", false},
      {"checkpoint", false}, {"output", true},  {"parallel", false}, {"placement", false},
  };
  return table;
}

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
  f.allowed = (max < std::numeric_limits<Int>::max()
                   ? std::to_string(min) + " to " + std::to_string(max)
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
Field number(const char* section, const char* key, Member<S, double> m, double min,
             bool exclusive, std::string meaning, bool required = false) {
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
             std::vector<std::pair<const char*, Enum>> choices, std::string meaning) {
  Field f(section, key);
  f.type = "enum";
  for (const auto& c : choices) f.allowed += (f.allowed.empty() ? "`" : ", `") + std::string(c.first) + "`";
  f.meaning = std::move(meaning);
  f.read = [key, m, choices](const SectionReader& r, Deck& d) { r.read_enum(key, m.of(d), choices); };
  f.write = [key, m, choices](const Deck& d) {
    for (const auto& c : choices)
      if (c.second == m.of(d)) return std::string(c.first);
    throw Error(std::string("deck: no name for the value of ") + key);  // a bug in this file
  };
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
    return std::vector<Field>{
        path("model", "path", member(m, &ModelSection::path), true, "an existing file",
             "HDF5 model file (docs/formats.md)"),

        path("data", "train", member(d, &D::train), true, "an existing file", "training set"),
        path("data", "eval", member(d, &D::eval), false, "empty or an existing file",
             "evaluation set; empty (or left out) = no evaluation"),
        integer("data", "micro_batch", member(d, &D::micro_batch), 1,
                "examples per replica and step; the global batch is `micro_batch` x "
                "`parallel.data`"),
        uint64("data", "shuffle_seed", member(d, &D::shuffle_seed), "seed of the example order"),

        required(integer("optim", "steps", member(o, &O::steps), 0,
                         "optimisation steps; 0 only evaluates")),
        number("optim", "lr", member(o, &O::lr), 0.0, true, "peak learning rate η", true),
        choice("optim", "schedule", member(o, &O::schedule),
               {{"constant", Schedule::constant},
                {"linear", Schedule::linear},
                {"cosine", Schedule::cosine}},
               "learning-rate schedule after warm-up (linear and cosine decay to 0 at `steps`)"),
        integer("optim", "warmup_steps", member(o, &O::warmup_steps), 0,
                "linear warm-up from 0 to `lr`", " and <= `optim.steps`"),
        number("optim", "eps", member(o, &O::eps), 0.0, true, "perturbation scale ε"),
        number("optim", "weight_decay", member(o, &O::weight_decay), 0.0, false,
               "decoupled weight decay λ"),
        integer("optim", "queries", member(o, &O::queries), 1,
                "SPSA queries q per step (2q forward evaluations)", "",
                kernels::kMaxQueries),
        choice("optim", "distribution", member(o, &O::distribution),
               {{"gaussian", Distribution::gaussian}, {"rademacher", Distribution::rademacher}},
               "distribution of the perturbation z"),
        integer("optim", "z_recipe", member(o, &O::z_recipe), 1,
                "how a Gaussian z is computed from its Philox words (docs/perturbation.md): 2 = "
                "binary32, the same bits on every backend; 1 = double with libm, as runs before "
                "recipe 2. A resumed run keeps its checkpoint's recipe",
                "", 2),
        uint64("optim", "seed", member(o, &O::seed),
               "run seed: z is a pure function of (seed, step, query, parameter, element)"),
        integer("optim", "max_nonfinite", member(o, &O::max_nonfinite), 1,
                "this many consecutive non-finite losses abort the run (counted across a resume; no "
                "checkpoint is written during such a streak)"),

        integer("eval", "interval", member(e, &EvalSection::interval), 0,
                "steps between evaluations; 0 = only before training and at the end"),
        integer("eval", "max_examples", member(e, &EvalSection::max_examples), 0,
                "examples used per evaluation; 0 = the whole eval set"),

        integer("checkpoint", "interval", member(c, &CheckpointSection::interval), 0,
                "steps between checkpoints; 0 = only at the end"),
        integer("checkpoint", "keep", member(c, &CheckpointSection::keep), 1,
                "newest checkpoints of this run kept in `output.dir` (another run's are never "
                "deleted)"),
        [&] {
          Field f("checkpoint", "allow_changes");
          f.type = "list";
          f.allowed = "keys of the trajectory (below)";
          f.meaning =
              "the keys a resume may change on purpose (each is logged); any other change from "
              "the checkpoint's deck is an error";
          f.read = [](const SectionReader& r, Deck& d) {
            r.read_name_list("allow_changes", d.checkpoint.allow_changes, resume_keys());
          };
          f.write = [](const Deck& d) {
            std::string out = "[";
            for (const auto& k : d.checkpoint.allow_changes) out += (out.size() > 1 ? ", " : "") + k;
            return out + "]";
          };
          return f;
        }(),
        path("checkpoint", "resume", member(c, &CheckpointSection::resume), false,
             "empty, `latest`, or an existing file",
             "empty = fresh start; a checkpoint file to continue from; `latest` = the newest "
             "`ckpt-STEP.h5` in `output.dir` of the run that owns it that reads back whole "
             "(a broken one is passed over with a warning), or a fresh start if there is none "
             "yet (so a requeued job script needs no edit)"),

        path("output", "dir", member(out, &OutputSection::dir), true,
             "a directory or a path to create",
             "metrics.csv, eval.csv, checkpoints, deck.resolved.yaml, the run log"),
        integer("output", "log_interval", member(out, &OutputSection::log_interval), 1,
                "steps between progress lines on rank 0"),

        integer("parallel", "perturbation", member(p, &ParallelSection::perturbation), 1,
                "P: ranks that share the 2q forward evaluations of one step",
                ", divides 2 x `optim.queries`"),
        integer("parallel", "data", member(p, &ParallelSection::data), 1,
                "D: data-parallel replicas, each with its own micro-batch"),
        integer("parallel", "check_interval", member(p, &ParallelSection::check_interval), 0,
                "steps between replica digest checks; 0 = never"),
        number_or_word("parallel", "watchdog", member(p, &ParallelSection::watchdog),
                       {{"auto", kWatchdogAuto}, {"off", kWatchdogOff}},
                       "seconds a rank may go without progress (a step, an evaluation batch, a "
                       "checkpoint tensor) before every rank is ended with exit status 76, "
                       "naming the ranks that stopped reporting; `auto` = 10 x the median step "
                       "time, at least 600 s and at least the time to write θ at 100 MB/s"),

        choice("placement", "mode", member(pl, &PlacementSection::mode),
               {{"resident", Placement::resident}, {"offload", Placement::offload}},
               "where θ lives: `resident` = every parameter in device memory; `offload` (ZO2) "
               "= transformer blocks in host memory, streamed through device slots one at a "
               "time (docs/placement.md)"),
        integer("placement", "resident_blocks", member(pl, &PlacementSection::resident_blocks),
                0,
                "offload: blocks 0..K-1 stay in device memory, the others stream; K at or above "
                "the model's block count means resident"),
        integer("placement", "prefetch", member(pl, &PlacementSection::prefetch), 1,
                "offload: block uploads in flight ahead of the block in use (device slots = "
                "prefetch + 2)"),
        choice("placement", "share_host_master", member(pl, &PlacementSection::share_host_master),
               {{"auto", ShareHostMaster::automatic},
                {"true", ShareHostMaster::on},
                {"false", ShareHostMaster::off}},
               "one θ master per node in shared memory, each rank updating and perturbing its "
               "slice (Placement II); `auto` = on when more than one rank of the run is on a "
               "node"),
        choice("placement", "exchange", member(pl, &PlacementSection::exchange),
               {{"auto", SliceExchange::automatic},
                {"shared_memory", SliceExchange::shared_memory},
                {"mpi", SliceExchange::mpi},
                {"nccl", SliceExchange::nccl}},
               "how a node's ranks exchange their slices of the perturbed weights: "
               "`shared_memory` (host backends), `nccl` (GPUs, built with NCCL), `mpi`; `auto` "
               "= the first of these the build can do"),
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

std::string section_list() {
  std::vector<const char*> names;
  for (const auto& s : sections()) names.push_back(s.name);
  return join(names);
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
    const std::string needed = "a deck needs at least the sections model, data, optim and output";
    if (documents.empty() || (documents.size() == 1 && documents[0].IsNull()))
      fail(origin_.source, 1, "empty deck", "no YAML content found; " + needed);
    if (documents.size() > 1)
      fail(origin_.source, line_of(documents[1]), "deck",
           "a deck is one YAML document, found a second one here");
    const YAML::Node& root = documents[0];
    if (!root.IsMap())
      fail(origin_.source, line_of(root), "deck",
           "must be a map of sections (" + section_list() + "), found " + describe(root));

    // Sections: check names and duplicates, then read each in table order.
    std::map<std::string, YAML::Node> found;
    std::vector<const char*> names;
    for (const auto& s : sections()) names.push_back(s.name);
    // yaml-cpp iterators hand out pairs by value: hold the pair, not a
    // reference into it->first.
    for (const auto& pair : root) {
      const YAML::Node& key = pair.first;
      if (!key.IsScalar())
        fail(origin_.source, line_of(key), "deck",
             "section names must be plain words, found " + describe(key));
      const std::string name = key.Scalar();
      if (std::find_if(names.begin(), names.end(), [&](const char* n) { return name == n; }) ==
          names.end())
        fail(origin_.source, line_of(key), display_key(name),
             "unknown section" + suggestion(name, names) + "; allowed sections: " +
                 section_list());
      if (found.count(name))
        fail(origin_.source, line_of(key), name,
             "duplicate section (first given at line " +
                 std::to_string(origin_.lines.at(name)) + "); each section may appear once");
      origin_.lines[name] = line_of(key);
      found[name] = pair.second;
    }
    for (const auto& s : sections())
      if (s.required && !found.count(s.name))
        fail(origin_.source, line_of(root), s.name, std::string("missing required section; ") + needed);

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
        fail(origin_.source, line_of(key), name, "keys must be plain words, found " + describe(key));
      const std::string k = key.Scalar();
      const std::string dotted = name + "." + k;
      if (std::find_if(keys.begin(), keys.end(), [&](const char* n) { return k == n; }) ==
          keys.end())
        fail(origin_.source, line_of(key), name + "." + display_key(k),
             "unknown key" + suggestion(k, keys) + "; allowed keys in " + name + ": " +
                 join(keys));
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
  return source + ":" + std::to_string(line(key)) + ": " + key + ": ";
}

const char* to_string(Placement placement) {
  switch (placement) {
    case Placement::resident: return "resident";
    case Placement::offload: return "offload";
  }
  return "?";
}

const char* to_string(Schedule schedule) {
  switch (schedule) {
    case Schedule::constant: return "constant";
    case Schedule::linear: return "linear";
    case Schedule::cosine: return "cosine";
  }
  return "?";
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
           std::to_string(world_size) + (world_size == 1 ? " MPI rank" : " MPI ranks") +
           " of this job; launch " +
           ranks(world) + " or choose P and D with P x D = " +
           std::to_string(world_size));
}

const std::vector<std::string>& resume_keys() {
  static const std::vector<std::string> keys = {
      "model",         "data.train",         "data.micro_batch", "data.shuffle_seed",
      "optim.steps",   "optim.lr",           "optim.schedule",   "optim.warmup_steps",
      "optim.eps",     "optim.weight_decay", "optim.queries",    "optim.distribution",
      "optim.seed",    "parallel.data"};
  return keys;
}

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
