#pragma once
// Shared by the checkpoint tests: a checkpoint file holding a model file's
// own tensors, with a given training state.

#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/model_file.hpp"

namespace distzo::test_support {

/// Writes `state` to `path` as a checkpoint of `model`'s tensors, as read.
inline void write_model_checkpoint(const std::string& path, const io::ModelReader& model,
                                   const io::TrainingState& state) {
  io::write_checkpoint(
      path, model.info(),
      [&](const io::TensorSink& sink) {
        for (const auto& p : model.info().registry.parameters()) {
          std::vector<real> data(static_cast<std::size_t>(p.numel()));
          model.read(p.id, data.data());
          sink(p.id, data.data());
        }
      },
      state);
}

}  // namespace distzo::test_support
