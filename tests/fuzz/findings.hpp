#pragma once
// Findings kept as reproducers, and the replay of committed ones.
//
// A reproducer is a directory:
//   input/     the files of the case, the mutated one among them
//   args       distzo's arguments, one per line, run inside a copy of input/
//   reason     why it is a finding (child.hpp's finding())
//   mutation   what was changed in which file
//   stderr     distzo's stderr (its first 64 KiB and last 192 KiB)
//   hang_backtrace  for a hang, where each thread was (gdb), when gdb is there
//   must_pass_over  for `resume: latest`, the damaged checkpoint it must pass over
//   repro.sh   runs it again: repro.sh [DISTZO]
// tests/data/fuzz_regressions/ holds such directories (input/, args and
// must_pass_over are what the replay reads); replay_regressions() runs each.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "child.hpp"
#include "corpus.hpp"

namespace distzo::fuzz {

/// Why running `c` ended in a finding, or "": child.hpp's finding(), and for
/// a case with must_pass_over, a run that stopped with an error naming it.
std::string finding(const Case& c, const Outcome& outcome, const Limits& limits);

class Findings {
 public:
  /// Keeps reproducers in `dir` (numbered after any already there), at most
  /// `per_kind` per kind of finding and `max_kept` in all.
  Findings(fs::path dir, std::string distzo, Limits limits, std::size_t max_kept,
           std::size_t per_kind = 3);

  /// Counts a finding and keeps its case as a reproducer unless enough of
  /// its kind are kept; returns the reproducer's directory, or "".
  fs::path record(const fs::path& case_dir, const Case& c, const Outcome& outcome,
                  const std::string& reason);

  std::size_t count() const { return count_; }
  /// Each kind of finding (its reason and the line of stderr that names it) and how often it came.
  const std::map<std::string, std::size_t>& kinds() const { return kinds_; }

 private:
  fs::path dir_;
  std::string distzo_;
  Limits limits_;
  std::size_t max_kept_, per_kind_, next_number_ = 1, kept_ = 0, count_ = 0;
  std::map<std::string, std::size_t> kinds_;
};

/// Runs every reproducer directory under `dir` in a copy of its input/
/// (inside `work`) and prints one line each; returns how many still fail.
std::size_t replay_regressions(const std::string& distzo, const fs::path& dir, const fs::path& work,
                               const Limits& limits);

}  // namespace distzo::fuzz
