#pragma once
// Command-line options of a subcommand: "--key value" pairs, "--flag"s and
// positional arguments, with errors that name the command and repeat its
// usage.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace distzo::app {

/// Throws naming `command` unless the directory `path` would be written
/// into exists: checked before any work, not after it.
void require_output_directory(const char* command, const std::string& path);

class Options {
 public:
  /// `valued`: options that take a value; `flags`: options that do not.
  Options(std::string command, const std::vector<std::string>& args,
          const std::vector<std::string>& valued, const std::vector<std::string>& flags,
          std::string usage);

  const std::vector<std::string>& positional() const { return positional_; }
  /// The one positional argument, named `what` in the error when missing or doubled.
  const std::string& single(const char* what) const;

  bool has(const std::string& key) const { return values_.count(key) != 0; }
  bool flag(const std::string& key) const { return flags_.count(key) != 0; }
  std::string text(const std::string& key, const std::string& fallback) const;
  /// An integer >= min; `fallback` when absent.
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t min = 0) const;
  /// An integer >= min that must be given.
  std::int64_t required_integer(const std::string& key, std::int64_t min = 0) const;
  /// An integer in [min, 2147483647] (a size that becomes an int), given or
  /// `fallback`; out of range is an error naming the option and the range,
  /// never a narrowed value.
  int int32(const std::string& key, int fallback, int min) const;
  int required_int32(const std::string& key, int min) const;
  /// A finite number; `fallback` when absent.
  double number(const std::string& key, double fallback) const;
  /// A finite number > 0; `fallback` when absent.
  double positive(const std::string& key, double fallback) const;

 private:
  std::string command_;
  std::string usage_;
  std::vector<std::string> positional_;
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
};

}  // namespace distzo::app
