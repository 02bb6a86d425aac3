#include "app/options.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.hpp"

namespace distzo::app {

namespace {
/// A command-line mistake is the user's: the message names the option, not
/// a line of distzo's source.
void require(bool ok, const std::string& message) {
  if (!ok) throw Error(message);
}
}  // namespace

void require_output_directory(const char* command, const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  require(
      parent.empty() || std::filesystem::is_directory(parent, ec),
      std::string(command) + ": no directory '" + parent.string() + "' to write " + path + " into");
}

Options::Options(std::string command, const std::vector<std::string>& args,
                 const std::vector<std::string>& valued, const std::vector<std::string>& flags,
                 std::string usage)
    : command_(std::move(command)), usage_(std::move(usage)) {
  const auto known = [](const std::vector<std::string>& list, const std::string& a) {
    return std::find(list.begin(), list.end(), a) != list.end();
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (known(valued, a)) {
      require(i + 1 < args.size(), command_ + ": " + a + " needs a value\n" + usage_);
      require(!values_.count(a), command_ + ": " + a + " given twice\n" + usage_);
      values_[a] = args[++i];
    } else if (known(flags, a)) {
      flags_.insert(a);
    } else if (!a.empty() && a[0] == '-') {
      require(false, command_ + ": unknown option '" + a + "'\n" + usage_);
    } else {
      positional_.push_back(a);
    }
  }
}

const std::string& Options::single(const char* what) const {
  require(positional_.size() == 1, command_ + ": expected one " + what + ", got " +
                                       std::to_string(positional_.size()) + "\n" + usage_);
  return positional_[0];
}

std::string Options::text(const std::string& key, const std::string& fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

std::int64_t Options::integer(const std::string& key, std::int64_t fallback,
                              std::int64_t min) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  try {
    std::size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= min) return v;
  } catch (const std::exception&) {
  }
  throw Error(command_ + ": " + key + " expects an integer >= " + std::to_string(min) + ", got '" +
              it->second + "'\n" + usage_);
}

std::int64_t Options::required_integer(const std::string& key, std::int64_t min) const {
  require(has(key), command_ + ": missing " + key + "\n" + usage_);
  return integer(key, 0, min);
}

int Options::int32(const std::string& key, int fallback, int min) const {
  const std::int64_t v = integer(key, fallback, min);
  if (v > std::numeric_limits<int>::max())
    throw Error(command_ + ": " + key + " expects an integer from " + std::to_string(min) +
                " to 2147483647, got " + std::to_string(v) + "\n" + usage_);
  return static_cast<int>(v);
}

int Options::required_int32(const std::string& key, int min) const {
  require(has(key), command_ + ": missing " + key + "\n" + usage_);
  return int32(key, 0, min);
}

namespace {

/// The finite number `text` spells out in full, or NaN.
double finite_number(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nan("");
}

}  // namespace

double Options::number(const std::string& key, double fallback) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const double v = finite_number(it->second);
  if (std::isfinite(v)) return v;
  throw Error(command_ + ": " + key + " expects a number, got '" + it->second + "'\n" + usage_);
}

double Options::positive(const std::string& key, double fallback) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const double v = finite_number(it->second);
  if (std::isfinite(v) && v > 0) return v;
  throw Error(command_ + ": " + key + " expects a number > 0, got '" + it->second + "'\n" + usage_);
}

}  // namespace distzo::app
