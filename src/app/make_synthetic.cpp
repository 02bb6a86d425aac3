#include "app/make_synthetic.hpp"

#include <iostream>

#include "app/options.hpp"
#include "core/error.hpp"
#include "io/synthetic.hpp"

namespace distzo::app {

namespace {
const char* const kUsage =
    "usage: distzo make-synthetic OUT.h5 --task classification|causal_lm --examples N\n"
    "                             --seq-len T --vocab V [--seed S]";

}  // namespace

const char* make_synthetic_usage() { return kUsage; }

int make_synthetic(const std::vector<std::string>& args) {
  const Options o("make-synthetic", args,
                  {"--task", "--examples", "--seq-len", "--vocab", "--seed"}, {}, kUsage);
  const std::string out = o.single("output file");
  DISTZO_INPUT_REQUIRE(o.has("--task"), "make-synthetic: missing --task\n" << kUsage);
  const std::string task = o.text("--task", "");
  const int examples = o.required_int32("--examples", 0);
  const int seq_len = o.required_int32("--seq-len", 0);
  const std::int64_t vocab = o.required_integer("--vocab");
  const auto seed = static_cast<std::uint64_t>(o.integer("--seed", 0));
  io::Dataset d;
  if (task == "classification")
    d = io::make_synthetic_classification(examples, seq_len, vocab, seed);
  else if (task == "causal_lm")
    d = io::make_synthetic_causal_lm(examples, seq_len, vocab, seed);
  else
    DISTZO_INPUT_FAIL("make-synthetic: --task must be classification or causal_lm, got '" << task
                                                                                          << "'");
  io::write_dataset(out, d);
  std::cout << "wrote " << out << ": " << examples << " " << task << " examples of up to "
            << seq_len << " tokens (vocab " << vocab << ", seed " << seed << ")\n";
  return 0;
}

}  // namespace distzo::app
