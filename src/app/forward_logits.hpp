#pragma once
// `distzo forward MODEL.h5 INPUT.h5 OUTPUT.h5 [--micro-batch M]`: the logits
// of a model on given token ids, for comparing distzo with another
// implementation on a real model (tools/real_model_check.py) and for
// looking at what a fine-tuned model predicts.

#include <string>
#include <vector>

namespace distzo::app {

/// `distzo forward`'s usage: arguments and options (distzo forward --help).
const char* forward_usage();

int forward_logits(const std::vector<std::string>& args);

}  // namespace distzo::app
