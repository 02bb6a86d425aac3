#pragma once
// `distzo replay BASE.h5 SOURCE.h5 -o OUT.h5 [--steps N]`: θ after step N
// rebuilt from the base model and the seed log of a checkpoint alone.

#include <string>
#include <vector>

namespace distzo::app {

const char* replay_usage();

/// Runs the command; returns the exit status. Throws InputError for bad
/// input (a base model that is not the run's, N past the log).
int replay(const std::vector<std::string>& args);

}  // namespace distzo::app
