#pragma once
// `distzo run DECK.yaml`: train (and evaluate) as the deck says.

#include <string>
#include <vector>

#include "app/run_faults.hpp"
#include "runtime/communicator.hpp"

namespace distzo::app {

struct RunOptions {
  std::string deck_path;
  /// Test-only (--debug-corrupt-rank=R, --debug-poison-slots,
  /// --debug-hang-after-step=N, --debug-slow-checkpoint-ms=MS): the faults
  /// the run installs, so its guards can be tested.
  RunFaults faults;
};

RunOptions parse_run_options(const std::vector<std::string>& args);

/// `distzo run --help`.
const char* run_usage();

/// Runs the deck on the ranks of `world`. Throws distzo::Error for bad input
/// before any output is written.
void run(const RunOptions& options, const runtime::Communicator& world);

}  // namespace distzo::app
