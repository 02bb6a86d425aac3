#pragma once
// `distzo make-model`: writes an OPT model file with random weights (the
// initialisation of Hugging Face's OPT: normal(0, std) matrices, zero biases,
// unit LayerNorm weights), from a config.json or from the shape given on the
// command line. For tests, benchmarks and planning checks at shapes no
// checkpoint is needed for; the file is a valid `model.path`.

#include <string>
#include <vector>

namespace distzo::app {

/// `distzo make-model`'s usage (distzo make-model --help).
const char* make_model_usage();

int make_model(const std::vector<std::string>& args);

}  // namespace distzo::app
