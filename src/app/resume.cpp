#include "app/resume.hpp"

#include <algorithm>

namespace distzo::app {

ResumeChanges resume_changes(const io::Deck& saved_deck, const io::TrainingState& saved,
                             const io::Deck& deck, const std::vector<std::string>& allowed,
                             const ResumeDigests& now) {
  const bool constant_lr = saved_deck.optim.schedule == ScheduleKind::constant &&
                           deck.optim.schedule == ScheduleKind::constant;
  ResumeChanges changes;
  // `what` names the value (", the digest of train.h5"); equal values pass.
  const auto compare = [&](const std::string& key, const std::string& before,
                           const std::string& now, const std::string& what = "") {
    if (before == now) return;
    const std::string change =
        key + ": " + before + " in the checkpoint, " + now + " in the deck" + what;
    const auto& fixed = io::run_constant_keys();
    if (std::find(fixed.begin(), fixed.end(), key) != fixed.end()) {
      changes.refused.push_back(change + " (" + key + " " + io::kRunConstantWhy + ")");
      return;
    }
    const bool allow = std::find(allowed.begin(), allowed.end(), key) != allowed.end();
    (allow ? changes.allowed : changes.refused).push_back(change);
  };
  for (const std::string& key : io::resume_keys()) {
    if (key == "model") {
      if (!saved.base_model_digest.empty())
        compare(key, saved.base_model_digest, now.model,
                " (the parameter digest of the base model, " + deck.model.path + ")");
    } else if (key == "data.train") {
      if (!saved.train_digest.empty())
        compare(key, saved.train_digest, now.train,
                " (the digest of the training set, " + deck.data.train + ")");
    } else if (key == "optim.steps" && constant_lr) {
      continue;  // more steps at a constant lr continue the same trajectory
    } else if (key == "precision.rounding" && saved_deck.precision.storage == StorageDtype::fp32 &&
               deck.precision.storage == StorageDtype::fp32) {
      continue;  // a float32 θ stores every update exactly: rounding plays no part
    } else {
      compare(key, io::deck_value(saved_deck, key), io::deck_value(deck, key));
    }
  }
  return changes;
}

}  // namespace distzo::app
