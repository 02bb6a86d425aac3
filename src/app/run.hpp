#pragma once
// `distzo run DECK.yaml`: train (and evaluate) as the deck says.

#include "runtime/communicator.hpp"

#include <string>
#include <vector>

namespace distzo::app {

struct RunOptions {
  std::string deck_path;
  /// Test-only: this world rank nudges one weight before the first replica
  /// check, so the divergence guard can be tested. -1 = off.
  int debug_corrupt_rank = -1;
  /// Test-only: fill every device slot with NaN when the streamer releases
  /// it, so a use after release shows up as a non-finite loss.
  bool debug_poison_slots = false;
};

RunOptions parse_run_options(const std::vector<std::string>& args);

/// Runs the deck on the ranks of `world`. Throws distzo::Error for bad input
/// before any output is written.
void run(const RunOptions& options, const runtime::Communicator& world);

}  // namespace distzo::app
