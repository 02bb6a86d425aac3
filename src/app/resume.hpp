#pragma once
// Whether a resume continues the run its checkpoint comes from: every key
// that changes the trajectory (io::resume_keys) must be as the checkpoint's
// deck had it, the base model and the training set the same (by digest),
// unless the deck lists the key in checkpoint.allow_changes.
// parallel.perturbation and placement may change: results do not depend on
// them. A pure function of values, so tests need neither MPI nor files.

#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/deck.hpp"

namespace distzo::app {

/// What a resume compares that no deck holds, as the deck's files give it now.
struct ResumeDigests {
  /// Parameter digest of model.path, "another architecture" when its config
  /// is not the checkpoint's; unused when the checkpoint records none.
  std::string model;
  /// io::dataset_digest of data.train; unused when the checkpoint records none.
  std::string train;
};

/// The changes a resume makes to the run it continues, one line per key:
/// "KEY: BEFORE in the checkpoint, NOW in the deck" (+ what a digest is of).
struct ResumeChanges {
  std::vector<std::string> allowed;  // listed in `allowed`: noted in run.log
  std::vector<std::string> refused;  // the others: the resume must not go on
};

/// Compares the deck `deck` with `saved_deck` (the deck of the checkpoint,
/// parsed from saved.deck_yaml) key by key, and the digests `saved` records
/// (a checkpoint from before they existed records none: not compared) with
/// `now`. More optim.steps at a constant lr continue the same trajectory.
ResumeChanges resume_changes(const io::Deck& saved_deck, const io::TrainingState& saved,
                             const io::Deck& deck, const std::vector<std::string>& allowed,
                             const ResumeDigests& now);

}  // namespace distzo::app
