#include "app/inspect.hpp"

#include <cstdio>
#include <iomanip>
#include <limits>
#include <sstream>
#include <vector>

#include "app/format.hpp"
#include "core/digest.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/dataset.hpp"
#include "io/deck.hpp"
#include "io/hdf5_file.hpp"
#include "io/model_file.hpp"

namespace distzo::app {

namespace {
const char* group_name(const model::ParameterInfo& p) {
  switch (p.group) {
    case model::ParameterGroup::embeddings:
      return "embeddings";
    case model::ParameterGroup::head:
      return "head";
    case model::ParameterGroup::block:
      break;
  }
  return "block";
}

/// A dataset file (docs/datasets.md): its task, sizes and label balance.
/// Token ids are checked against the largest vocabulary the format allows
/// (the model that will read it is not known here).
void inspect_dataset(const std::string& path, std::ostream& out) {
  const io::Dataset d = io::load_dataset(path, std::int64_t{1} << 31);
  std::int64_t tokens = 0;
  for (std::int32_t n : d.lengths) tokens += n;
  out << "file          " << path << " (dataset, format " << io::kDatasetFormatVersion << ")\n"
      << "task          " << io::to_string(d.task) << "\n"
      << "examples      " << d.num_examples << " of up to " << d.seq_len << " tokens (" << tokens
      << " tokens, " << std::fixed << std::setprecision(1)
      << static_cast<double>(tokens) / static_cast<double>(d.num_examples)
      << " per example; pad_token_id " << d.pad_token_id << ")\n";
  if (d.task == io::Task::classification) {
    std::vector<std::int64_t> per_label(static_cast<std::size_t>(d.num_candidates()), 0);
    for (std::int32_t label : d.labels) ++per_label[static_cast<std::size_t>(label)];
    out << "candidates    " << d.num_candidates() << " label words, token ids";
    for (std::int32_t id : d.candidates) out << " " << id;
    out << "\nlabels       ";
    for (std::size_t k = 0; k < per_label.size(); ++k)
      out << " " << k << ": " << per_label[k] << " (" << std::setprecision(1)
          << 100.0 * static_cast<double>(per_label[k]) / static_cast<double>(d.num_examples)
          << " %)";
    out << "\n";
  } else {
    std::int64_t targets = 0;
    for (std::int32_t t : d.target_mask) targets += t;
    out << "targets       " << targets << " tokens the loss counts\n";
  }
  if (!d.description.empty()) out << "description   " << d.description << "\n";
}

/// The HDF5 type of the datasets of one storage, as h5py users meet it.
const char* dataset_type(StorageDtype d) {
  switch (d) {
    case StorageDtype::fp32:
      return "float32";
    case StorageDtype::fp16:
      return "IEEE float16 (numpy float16)";
    case StorageDtype::bf16:
      return "bfloat16 (h5py reads float32; docs/formats.md)";
  }
  return "?";
}

/// What the datasets hold: "tensors       bf16: the datasets are bfloat16
/// (...)", or each dtype's share of a mixed file.
std::string tensors_line(const io::ModelReader& reader) {
  const StorageDtype main = reader.theta_dtype();
  if (reader.all_in(main))
    return std::string("tensors       ") + to_string(main) + ": every dataset is " +
           dataset_type(main) + "\n";
  return "tensors       " + reader.describe_dtypes() + "\n";
}

/// Whether the run's deck (embedded in the checkpoint) multiplied 2-byte
/// words (precision.gemm_inputs: storage); false when it cannot be read.
bool two_byte_gemm_inputs(const io::TrainingState& state) {
  try {
    return io::parse_deck(state.deck_yaml, "the checkpoint's deck").precision.gemm_inputs ==
           io::GemmInputs::storage;
  } catch (const Error&) {
    return false;
  }
}

/// How the run that wrote a checkpoint stored θ, and what its datasets hold
/// (`reader` null: a log-only checkpoint, which holds none).
std::string storage_line(const io::TrainingState& state, const io::ModelReader* reader) {
  std::string line = std::string("storage       θ held in ") + to_string(state.storage);
  if (state.storage != StorageDtype::fp32)
    line += std::string(", updates rounded ") +
            (state.rounding == Rounding::stochastic ? "stochastically" : "to nearest");
  if (two_byte_gemm_inputs(state))
    line += ", matrices multiplied as 2-byte words (precision.gemm_inputs: storage)";
  if (reader == nullptr) return line + "\n";
  if (reader->all_in(state.storage))
    return line + " (the datasets hold θ's " +
           (state.storage == StorageDtype::fp32 ? "values" : "words") + ")\n";
  // An older distzo wrote a 2-byte θ's values decoded to float32.
  if (reader->all_in(StorageDtype::fp32))
    return line +
           " (the datasets hold its values decoded to float32, as distzo wrote a 2-byte "
           "θ before its checkpoints held words)\n";
  return line + " (the datasets hold " + reader->describe_dtypes() + ")\n";
}

/// The tokenizer files the file carries for the way back to Hugging Face.
std::string tokenizer_line(const io::ModelInfo& m, const std::string& path) {
  std::ostringstream os;
  os << "tokenizer     ";
  const std::vector<io::TokenizerFile> files =
      io::tokenizer_files(m.hf_tokenizer_files.empty() ? "{}" : m.hf_tokenizer_files, path);
  if (files.empty()) {
    os << "none kept (an export by tools/hf_to_h5.py --to-hf gets no tokenizer files)\n";
    return os.str();
  }
  double bytes = 0;
  for (const io::TokenizerFile& f : files) {
    os << (&f == &files.front() ? "" : ", ") << f.name;
    bytes += static_cast<double>(f.json_bytes);
  }
  os << " (" << human_bytes(bytes) << " as stored), for tools/hf_to_h5.py --to-hf\n";
  return os.str();
}

/// Where a checkpoint stands: its step, run and z, its recorded digest, and
/// how θ was stored (`reader` null: a log-only checkpoint).
std::string checkpoint_lines(const io::TrainingState& state, const io::ModelReader* reader) {
  // The estimator and momentum are the deck's (a checkpoint from before
  // they existed: spsa, plain SGD).
  std::string estimator = "spsa", momentum;
  try {
    const io::Deck deck = io::parse_deck(state.deck_yaml, "its deck");
    estimator = to_string(deck.optim.estimator);
    if (deck.optim.momentum > 0)
      momentum = " with momentum " + io::deck_value(deck, "optim.momentum") +
                 " over h = " + std::to_string(deck.optim.history) + " steps";
    if (deck.optim.perturbed_blocks > 0)
      momentum += ", perturbing " + std::to_string(deck.optim.perturbed_blocks) + " of " +
                  (reader ? std::to_string(reader->info().registry.num_blocks())
                          : std::string("its model's")) +
                  " blocks a step";
  } catch (const Error&) {
    estimator = "(its deck does not parse)";
  }
  std::ostringstream os;
  os << "training      step " << state.step << " of run "
     << (state.run_id.empty() ? std::string("(not recorded)") : state.run_id) << "; seed "
     << state.z.seed << ", " << estimator << " q = " << state.queries << momentum << ", "
     << to_string(state.z.distribution) << " z (recipe " << to_int(state.z.recipe)
     << "), batches at " << model::to_string(state.batch_width)
     << " width; its deck: h5dump -a /deck_yaml FILE\n"
     << "written by    distzo "
     << (state.writer_version.empty()
             ? std::string("(version not recorded: written before December 2026)")
             : state.writer_version)
     << "\n"
     << "recorded      parameter digest "
     << (state.parameter_digest.empty() ? std::string("(none)") : state.parameter_digest)
     << "; base model "
     << (state.base_model_digest.empty() ? std::string("(not recorded)") : state.base_model_digest)
     << "\n"
     << storage_line(state, reader);
  return os.str();
}

/// A log-only checkpoint (docs/formats.md): the training state, no θ.
void inspect_log(const std::string& path, std::ostream& out) {
  const io::TrainingState state = io::read_training_state(path);
  std::int64_t skipped = 0;
  for (const io::SeedLogEntry& e : state.seed_log) skipped += e.g.empty() ? 1 : 0;
  out << "file          " << path << " (log-only checkpoint: distzo_format \"" << io::kSeedLogFormat
      << "\", format " << io::kModelFormatVersion << "; the training state without θ)\n"
      << checkpoint_lines(state, nullptr) << "seed log      " << state.seed_log.size() << " steps ("
      << skipped << " skipped), " << state.queries
      << " g per step: distzo/seed_log/{step,lr,loss,g}\n"
      << "θ             not in this file: a resume (checkpoint.resume) rebuilds it from the "
         "run's newest full checkpoint at or before step "
      << state.step << " or its base model, and `distzo replay BASE.h5 " << path
      << " -o OUT.h5` from the base model\n";
}

}  // namespace

void inspect(const std::string& path, bool digest_only, std::ostream& out) {
  {
    const io::Hdf5File file(path, io::Hdf5File::Mode::read);
    if (file.has_attribute("distzo_format") &&
        file.read_string_attribute("distzo_format") == "dataset") {
      DISTZO_INPUT_REQUIRE(!digest_only, path << " is a dataset file: --digest is a digest of a "
                                                 "model's or checkpoint's parameters");
      inspect_dataset(path, out);
      return;
    }
  }
  if (io::distzo_format(path) == io::kSeedLogFormat) {
    DISTZO_INPUT_REQUIRE(!digest_only,
                         path << " is a log-only checkpoint: it holds no tensors to digest (the "
                                 "digest it recorded of θ is on `distzo inspect "
                              << path << "`'s `recorded` line; `distzo replay BASE.h5 " << path
                              << " -o OUT.h5` rebuilds θ)");
    inspect_log(path, out);
    return;
  }
  // Tensors are read from the file on the host only: inspecting a model
  // never allocates in the execution space.
  const io::ModelReader reader(path);
  if (digest_only) {
    out << reader.digest() << "\n";
    return;
  }
  const io::ModelInfo& m = reader.info();
  const auto& c = m.config;
  const std::int64_t params = m.registry.total_elements();
  double stored_bytes = 0;
  for (const auto& p : m.registry.parameters())
    stored_bytes += static_cast<double>(bytes_per_element(reader.dtype(p.id)) * p.numel());
  out << "file          " << path << " (" << m.kind << ", format " << io::kModelFormatVersion
      << ")\n"
      << "architecture  " << model::describe(c, "\n              ") << "\n"
      << "parameters    " << params << " in " << m.registry.size() << " tensors, "
      << human_bytes(stored_bytes) << " as stored"
      << (reader.all_in(StorageDtype::fp32)
              ? std::string()
              : ", " + human_bytes(4.0 * static_cast<double>(params)) + " as float32")
      << "\n"
      << tensors_line(reader) << tokenizer_line(m, path)
      << (m.kind == "checkpoint" ? checkpoint_lines(io::read_training_state(path), &reader)
                                 : std::string())
      << "digest        version " << kDigestVersion << " (--digest"
      << (reader.all_in(StorageDtype::fp32) ? "; over float32 tensors the same as version 2" : "")
      << "); the writer recorded "
      << (m.digest_version > 0
              ? "version " + std::to_string(m.digest_version) +
                    (m.digest_version < kDigestVersion
                         ? " (the oldest version that gives this file's digest: docs/formats.md)"
                         : "")
              : std::string("none (an older distzo, or tools/distzo_tools)"))
      << "\n\n";
  out << std::left << std::setw(5) << "id" << std::setw(52) << "name" << std::setw(14) << "shape"
      << std::setw(12) << "elements" << std::setw(7) << "dtype"
      << "group\n";
  for (const auto& p : m.registry.parameters()) {
    out << std::left << std::setw(5) << p.id << std::setw(52) << p.name << std::setw(14)
        << model::format_shape(p.shape) << std::setw(12) << p.numel() << std::setw(7)
        << to_string(reader.dtype(p.id)) << group_name(p);
    if (p.block >= 0) out << " " << p.block;
    out << "\n";
  }
}

}  // namespace distzo::app
