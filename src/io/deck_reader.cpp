#include "io/deck_reader.hpp"

#include <algorithm>
#include <charconv>
#include <regex>
#include <system_error>

namespace distzo::io::deck_detail {

namespace {

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

/// A plain scalar whose whole text has `form`: how a number must be written.
bool is_plain_scalar_of(const YAML::Node& node, const std::regex& form) {
  return node.IsScalar() && is_plain(node) && std::regex_match(node.Scalar(), form);
}

}  // namespace

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 1 : mark.line + 1;
}

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

void SectionReader::require(const char* key) const {
  if (!entries_.count(key))
    fail(origin_.source, section_line_, section_ + "." + key,
         "missing required key in the " + section_ + " section (which starts at line " +
             std::to_string(section_line_) + ")");
}

template <class Int>
void SectionReader::read_int(const char* key, Int& out, std::int64_t min, std::int64_t max) const {
  const YAML::Node* v = find(key);
  if (!v) return;
  const std::string allowed =
      max < std::numeric_limits<Int>::max()
          ? "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]"
          : "an integer >= " + std::to_string(min);
  if (!is_plain_scalar_of(*v, integer_form()))
    fail_value(key, "expected " + allowed + ", found " + describe(*v));
  std::string text = v->Scalar();
  if (text[0] == '+') text.erase(0, 1);
  std::int64_t value = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec == std::errc::result_out_of_range || value < min || value > max)
    fail_value(key, "out of range: expected an integer in [" + std::to_string(min) + ", " +
                        std::to_string(max) + "], found " + v->Scalar());
  out = static_cast<Int>(value);
}

// The integer types of the deck's fields.
template void SectionReader::read_int<int>(const char*, int&, std::int64_t, std::int64_t) const;
template void SectionReader::read_int<std::int64_t>(const char*, std::int64_t&, std::int64_t,
                                                    std::int64_t) const;

void SectionReader::read_uint64(const char* key, std::uint64_t& out) const {
  const YAML::Node* v = find(key);
  if (!v) return;
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::string range = "[0, " + std::to_string(max) + "]";
  if (!is_plain_scalar_of(*v, integer_form()))
    fail_value(key, "expected an integer in " + range + ", found " + describe(*v));
  std::string text = v->Scalar();
  bool negative = text[0] == '-';
  if (text[0] == '+' || text[0] == '-') text.erase(0, 1);
  std::uint64_t value = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec == std::errc::result_out_of_range || (negative && value != 0))
    fail_value(key, "out of range: expected an integer in " + range + ", found " + v->Scalar());
  out = value;
}

void SectionReader::read_double(const char* key, double& out, double min, bool exclusive,
                                double below) const {
  const YAML::Node* v = find(key);
  if (!v) return;
  const bool bounded = below < std::numeric_limits<double>::infinity();
  const std::string allowed = std::string("a number ") + (exclusive ? "> " : ">= ") +
                              format_double(min) +
                              (bounded ? " and < " + format_double(below) : std::string());
  if (!is_plain_scalar_of(*v, real_form()))
    fail_value(key, "expected " + allowed + ", found " + describe(*v));
  std::string text = v->Scalar();
  if (text[0] == '+') text.erase(0, 1);
  double value = 0.0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
  if (r.ec == std::errc::result_out_of_range)
    fail_value(key,
               "out of range: expected " + allowed + " that fits a double, found " + v->Scalar());
  if ((exclusive ? !(value > min) : !(value >= min)) || !(value < below))
    fail_value(key, "out of range: expected " + allowed + ", found " + v->Scalar());
  out = value;
}

void SectionReader::read_number_or_word(
    const char* key, double& out, const std::vector<std::pair<const char*, double>>& words) const {
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
  if (!is_plain_scalar_of(*v, real_form())) fail_value(key, allowed + ", found " + describe(*v));
  double value = 0;
  read_double(key, value, -std::numeric_limits<double>::infinity(), false);
  if (!(value > 0)) fail_value(key, "out of range: " + allowed + ", found " + v->Scalar());
  out = value;
}

void SectionReader::read_name_list(const char* key, std::vector<std::string>& out,
                                   const std::vector<std::string>& allowed) const {
  const YAML::Node* v = find(key);
  if (!v) return;
  out.clear();
  if (v->IsNull()) return;  // `allow_changes:` with nothing: none
  if (!v->IsSequence())
    fail_value(key, "expected a list of keys ([optim.lr, ...]), found " + describe(*v));
  for (const YAML::Node& item : *v) {
    const std::string name = item.IsScalar() ? item.Scalar() : "";
    if (std::find(run_constant_keys().begin(), run_constant_keys().end(), name) !=
        run_constant_keys().end())
      fail_value(key, name + " " + kRunConstantWhy);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string all;
      for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
      fail_value(key, "\"" + name + "\" is not a key a resume checks; allowed: " + all);
    }
    out.push_back(name);
  }
}

namespace {
/// Linux's limits (PATH_MAX 4096 with its NUL, NAME_MAX 255): a longer path
/// cannot be opened or made, and echoing it whole buries the message.
std::string path_length_problem(const std::string& path) {
  constexpr std::size_t kMaxPath = 4095, kMaxName = 255;
  if (path.size() > kMaxPath)
    return "a path of " + std::to_string(path.size()) + " bytes, longer than any the system " +
           "opens (" + std::to_string(kMaxPath) + "): " + quoted(path);
  std::size_t start = 0;
  for (std::size_t slash = path.find('/');; slash = path.find('/', start)) {
    const std::size_t end = slash == std::string::npos ? path.size() : slash;
    if (end - start > kMaxName)
      return "the path has a name of " + std::to_string(end - start) + " bytes, longer than " +
             "a file system allows (" + std::to_string(kMaxName) +
             "): " + quoted(path.substr(start, end - start));
    if (slash == std::string::npos) return "";
    start = slash + 1;
  }
}
}  // namespace

void SectionReader::read_path(const char* key, std::string& out, bool required) const {
  if (required) require(key);
  const YAML::Node* v = find(key);
  if (!v) return;
  if (!v->IsScalar()) fail_value(key, "expected a path (a string), found " + describe(*v));
  if (required && v->Scalar().empty())
    fail_value(key, "expected a non-empty path, found the empty string");
  if (v->Scalar().find('\0') != std::string::npos)
    fail_value(key,
               "the path holds a NUL byte (\\0), which no file name can: it would be cut there");
  if (const std::string problem = path_length_problem(v->Scalar()); !problem.empty())
    fail_value(key, problem);
  out = v->Scalar();
}

const YAML::Node* SectionReader::find(const char* key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void SectionReader::fail_value(const std::string& key, const std::string& what) const {
  const std::string dotted = section_ + "." + key;
  fail(origin_.source, origin_.lines.at(dotted), dotted, what);
}

}  // namespace distzo::io::deck_detail
