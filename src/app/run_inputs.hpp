#pragma once
// What `distzo run` reads, validated before anything is written: the deck,
// the checkpoint it resumes (chosen and read back by rank 0), the model and
// the datasets.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/run_directory.hpp"
#include "core/perturbation.hpp"
#include "io/checkpoint.hpp"
#include "io/dataset.hpp"
#include "io/deck.hpp"
#include "io/model_file.hpp"
#include "model/batch_builder.hpp"
#include "model/model_config.hpp"
#include "runtime/communicator.hpp"
#include "zo/momentum.hpp"

namespace distzo::app {

/// Everything a run reads.
struct Inputs {
  io::Deck deck;
  std::string resume;              // checkpoint (or log-only one) to continue from, or empty
  std::vector<std::string> notes;  // for run.log (rank 0): a checkpoint passed over, ...
  // The model file, the checkpoint resumed, or for a log-only checkpoint
  // the file θ is rebuilt from (choice.theta_from).
  std::unique_ptr<io::ModelReader> model;
  // What the resume continues and where θ comes from; a log-only
  // checkpoint's θ is rebuilt with the z and weight decay its run drew its
  // rows with (app/log_checkpoints.hpp), whatever this deck says.
  ResumeChoice choice;
  ZSpec log_z;
  zo::MomentumSpec log_momentum;
  double log_weight_decay = 0;
  io::TrainingState state;
  io::Dataset train;
  std::unique_ptr<io::Dataset> eval;
};

/// Throws distzo::Error unless the sequences of the dataset `file`, of
/// `seq_len` tokens, fit `config` (model::ModelConfig::sequence_problem),
/// saying how to make them fit: what `distzo run` and `distzo plan DECK`
/// check of data.train and data.eval.
void check_sequences_fit(const std::string& file, std::int64_t seq_len,
                         const model::ModelConfig& config);

/// Loads and checks the deck at `deck_path` and all it names, on every rank
/// of `world` (collective: rank 0 chooses the checkpoint, the others hear
/// which). Throws distzo::Error.
Inputs load_inputs(const std::string& deck_path, const runtime::Communicator& world);

/// The micro-batches a run fills, train and (with an eval set) eval, at the
/// deck's batch width (after a resume: the checkpoint's).
struct Batches {
  Batches(const Inputs& in, int micro_batch)
      : train(in.train, micro_batch, in.deck.data.batch_width),
        eval(in.eval ? std::make_unique<model::BatchBuilder>(*in.eval, micro_batch,
                                                             in.deck.data.batch_width)
                     : nullptr) {}
  model::BatchBuilder train;
  std::unique_ptr<model::BatchBuilder> eval;
};

}  // namespace distzo::app
