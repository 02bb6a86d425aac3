// Resume compatibility (app/resume.hpp) as a pure function of two decks and
// the digests: what a resume may change, what it refuses, what it notes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/resume.hpp"
#include "io/checkpoint.hpp"
#include "io/deck.hpp"

namespace {

using namespace distzo;

/// A deck of 10 steps with `optim` lines (the rest of its optim section) and
/// `more` sections after it.
io::Deck deck(const std::string& optim = "  lr: 1e-3\n", const std::string& more = "") {
  return io::parse_deck(
      "model:\n  path: m.h5\ndata:\n  train: t.h5\n  micro_batch: 16\n"
      "output:\n  dir: out\noptim:\n  steps: 10\n" +
          optim + more,
      "deck.yaml");
}

/// A checkpoint's training state that records both digests.
io::TrainingState saved_state() {
  io::TrainingState s;
  s.base_model_digest = "00000000000000aa";
  s.train_digest = "00000000000000bb";
  return s;
}

const app::ResumeDigests kSame{"00000000000000aa", "00000000000000bb"};

TEST(Resume, TheSameDeckAndFilesChangeNothing) {
  const io::Deck d = deck("  lr: 1e-3\n");
  const app::ResumeChanges c = app::resume_changes(d, saved_state(), d, {}, kSame);
  EXPECT_TRUE(c.allowed.empty());
  EXPECT_TRUE(c.refused.empty());
}

TEST(Resume, AChangedTrajectoryKeyIsRefusedWithBothValues) {
  const app::ResumeChanges c =
      app::resume_changes(deck("  lr: 1e-3\n"), saved_state(), deck("  lr: 5e-4\n"), {}, kSame);
  ASSERT_EQ(c.refused.size(), 1u);
  EXPECT_EQ(c.refused[0], "optim.lr: 0.001 in the checkpoint, 5e-04 in the deck");
  EXPECT_TRUE(c.allowed.empty());
}

TEST(Resume, AKeyInAllowChangesIsNotedInstead) {
  const app::ResumeChanges c =
      app::resume_changes(deck("  lr: 1e-3\n  seed: 1\n"), saved_state(),
                          deck("  lr: 5e-4\n  seed: 2\n"), {"optim.lr"}, kSame);
  EXPECT_EQ(c.allowed,
            std::vector<std::string>{"optim.lr: 0.001 in the checkpoint, 5e-04 in the deck"});
  EXPECT_EQ(c.refused, std::vector<std::string>{"optim.seed: 1 in the checkpoint, 2 in the deck"});
}

TEST(Resume, KeysThatDoNotChangeTheTrajectoryMayChange) {
  const io::Deck before = deck("  lr: 1e-3\n", "parallel:\n  perturbation: 1\n");
  const io::Deck after = deck("  lr: 1e-3\n  eps: 1e-2\n", "parallel:\n  perturbation: 2\n");
  const app::ResumeChanges c = app::resume_changes(before, saved_state(), after, {}, kSame);
  // optim.eps is the trajectory's, parallel.perturbation is not.
  EXPECT_EQ(c.refused,
            std::vector<std::string>{"optim.eps: 0.001 in the checkpoint, 0.01 in the deck"});
}

TEST(Resume, HowTheSeedLogIsReadIsFixedForTheRunEvenWhenAllowed) {
  // The seed log is one table of a row of `queries` scalars a step, read with
  // the run's estimator, and every update is rebuilt from its last h rows
  // with weights of β (by the resume that continues the run and by replay,
  // from the checkpoint's deck): none of the four may change.
  const auto expect_refused = [](const io::Deck& before, std::vector<const char*> changed) {
    for (const char* optim : changed) {
      const app::ResumeChanges c =
          app::resume_changes(before, saved_state(), deck(optim), io::run_constant_keys(), kSame);
      EXPECT_TRUE(c.allowed.empty()) << optim;
      ASSERT_FALSE(c.refused.empty()) << optim;
      for (const std::string& r : c.refused)
        EXPECT_NE(r.find("never changes within a run, even when checkpoint.allow_changes lists it"),
                  std::string::npos)
            << r;
    }
    EXPECT_TRUE(app::resume_changes(before, saved_state(), before, {}, kSame).refused.empty());
  };
  expect_refused(deck("  lr: 1e-3\n"), {"  lr: 1e-3\n  queries: 2\n",
                                        "  lr: 1e-3\n  estimator: one_sided\n  queries: 2\n"});
  expect_refused(deck("  lr: 1e-3\n  momentum: 0.9\n  history: 4\n"),
                 {"  lr: 1e-3\n  momentum: 0.8\n  history: 4\n",
                  "  lr: 1e-3\n  momentum: 0.9\n  history: 3\n", "  lr: 1e-3\n"});
}

TEST(Resume, HowThetaIsStoredIsPartOfTheTrajectory) {
  const io::Deck f32 = deck();
  const io::Deck bf16_sr = deck("  lr: 1e-3\n", "precision:\n  storage: bf16\n");
  const io::Deck bf16_rn =
      deck("  lr: 1e-3\n", "precision:\n  storage: bf16\n  rounding: nearest\n");
  EXPECT_EQ(
      app::resume_changes(bf16_sr, saved_state(), f32, {}, kSame).refused,
      std::vector<std::string>{"precision.storage: bf16 in the checkpoint, fp32 in the deck"});
  EXPECT_EQ(
      app::resume_changes(f32, saved_state(), bf16_sr, {"precision.storage"}, kSame).allowed,
      std::vector<std::string>{"precision.storage: fp32 in the checkpoint, bf16 in the deck"});
  EXPECT_EQ(app::resume_changes(bf16_sr, saved_state(), bf16_rn, {}, kSame).refused,
            std::vector<std::string>{
                "precision.rounding: stochastic in the checkpoint, nearest in the deck"});
  // A float32 θ stores every update exactly: its rounding key plays no part.
  const io::Deck f32_rn = deck("  lr: 1e-3\n", "precision:\n  rounding: nearest\n");
  EXPECT_TRUE(app::resume_changes(f32, saved_state(), f32_rn, {}, kSame).refused.empty());
}

TEST(Resume, MoreStepsContinueAConstantLrOnly) {
  const io::Deck constant = deck("  lr: 1e-3\n  schedule: constant\n");
  io::Deck longer = constant;
  longer.optim.steps = 20;
  EXPECT_TRUE(app::resume_changes(constant, saved_state(), longer, {}, kSame).refused.empty());
  const io::Deck cosine = deck("  lr: 1e-3\n  schedule: cosine\n");
  io::Deck longer_cosine = cosine;
  longer_cosine.optim.steps = 20;
  EXPECT_EQ(app::resume_changes(cosine, saved_state(), longer_cosine, {}, kSame).refused,
            std::vector<std::string>{"optim.steps: 10 in the checkpoint, 20 in the deck"});
}

TEST(Resume, TheBaseModelAndTrainingSetAreComparedByDigest) {
  const io::Deck d = deck();
  const app::ResumeChanges c = app::resume_changes(d, saved_state(), d, {"data.train"},
                                                   {"another architecture", "00000000000000cc"});
  EXPECT_EQ(c.refused, std::vector<std::string>{
                           "model: 00000000000000aa in the checkpoint, another architecture in the "
                           "deck (the parameter digest of the base model, m.h5)"});
  EXPECT_EQ(c.allowed,
            std::vector<std::string>{
                "data.train: 00000000000000bb in the checkpoint, 00000000000000cc in the "
                "deck (the digest of the training set, t.h5)"});
}

TEST(Resume, ACheckpointWithoutDigestsIsNotComparedByThem) {
  const io::Deck d = deck();
  const app::ResumeChanges c =
      app::resume_changes(d, io::TrainingState(), d, {}, {"0000000000000001", "0000000000000002"});
  EXPECT_TRUE(c.refused.empty());
  EXPECT_TRUE(c.allowed.empty());
}

}  // namespace
