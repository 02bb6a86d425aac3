#pragma once
// Reading deck YAML: where a node stands (its line), what it is (for
// "found ..." in messages), and the typed readers of one section's values,
// each of which checks the value against its field's type and range and
// throws at the key's line. Internal to src/io/deck*.cpp.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/deck.hpp"
#include "io/deck_text.hpp"

namespace distzo::io::deck_detail {

/// 1-based line of a node; 1 when yaml-cpp gives it no position.
int line_of(const YAML::Node& node);

/// What a node is, for "found ..." in messages.
std::string describe(const YAML::Node& node);

/// The keys of one section as written, and the typed readers that check
/// each value against its field's type and range. A reader leaves `out`
/// alone when the key is not written (the field keeps its default).
class SectionReader {
 public:
  SectionReader(const DeckOrigin& origin, std::string section, int section_line,
                std::map<std::string, YAML::Node> entries)
      : origin_(origin),
        section_(std::move(section)),
        section_line_(section_line),
        entries_(std::move(entries)) {}

  /// Throws unless `key` is written in this section.
  void require(const char* key) const;

  /// An integer in [min, max]; instantiated for int and std::int64_t.
  template <class Int>
  void read_int(const char* key, Int& out, std::int64_t min,
                std::int64_t max = std::numeric_limits<Int>::max()) const;

  void read_uint64(const char* key, std::uint64_t& out) const;

  /// A number > min (`exclusive`) or >= min, and < `below`.
  void read_double(const char* key, double& out, double min, bool exclusive,
                   double below = std::numeric_limits<double>::infinity()) const;

  /// One of the `words` (each standing for a value), or a number > 0.
  void read_number_or_word(const char* key, double& out,
                           const std::vector<std::pair<const char*, double>>& words) const;

  /// A YAML list of names, each one of `allowed`.
  void read_name_list(const char* key, std::vector<std::string>& out,
                      const std::vector<std::string>& allowed) const;

  /// Any scalar is a string; a required one must not be empty.
  void read_path(const char* key, std::string& out, bool required) const;

  /// `hints`: (another name a user may write, as as_name() spells it; what
  /// to tell them).
  template <class Enum>
  void read_enum(const char* key, Enum& out,
                 const std::vector<std::pair<const char*, Enum>>& choices,
                 const std::vector<std::pair<const char*, const char*>>& hints = {}) const {
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
    std::string hint = suggestion(s, names);
    for (const auto& h : hints)
      if (as_name(s) == h.first) hint = std::string(" (") + h.second + ")";
    fail_value(key, "unknown value " + quoted(s) + hint + "; allowed: " + join(names));
  }

 private:
  const YAML::Node* find(const char* key) const;

  /// Value errors point at the key's line: a null value has no useful mark,
  /// and a block value starts below its key.
  [[noreturn]] void fail_value(const std::string& key, const std::string& what) const;

  const DeckOrigin& origin_;
  std::string section_;
  int section_line_;
  std::map<std::string, YAML::Node> entries_;
};

}  // namespace distzo::io::deck_detail
