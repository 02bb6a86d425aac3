#pragma once
// `distzo make-synthetic`: writes a small learnable dataset (io/synthetic.hpp),
// e.g. to smoke-test an installation or a SLURM setup without real data.

#include <string>
#include <vector>

namespace distzo::app {

/// `distzo make-synthetic`'s usage (distzo make-synthetic --help).
const char* make_synthetic_usage();

int make_synthetic(const std::vector<std::string>& args);

}  // namespace distzo::app
