#include "app/make_synthetic.hpp"

#include "core/error.hpp"
#include "io/synthetic.hpp"

#include <iostream>
#include <map>

namespace distzo::app {

namespace {
const char* const kUsage =
    "usage: distzo make-synthetic OUT.h5 --task classification|causal_lm --examples N\n"
    "                             --seq-len T --vocab V [--seed S]";

std::int64_t to_int(const std::string& key, const std::string& value) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  DISTZO_FAIL("make-synthetic: " << key << " expects a non-negative integer, got '" << value
                                 << "'\n" << kUsage);
}
}  // namespace

int make_synthetic(const std::vector<std::string>& args) {
  std::string out;
  std::map<std::string, std::string> opts{{"--seed", "0"}};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--task" || a == "--examples" || a == "--seq-len" || a == "--vocab" || a == "--seed") {
      DISTZO_REQUIRE(i + 1 < args.size(), "make-synthetic: " << a << " needs a value\n" << kUsage);
      opts[a] = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      DISTZO_FAIL("make-synthetic: unknown option '" << a << "'\n" << kUsage);
    } else {
      DISTZO_REQUIRE(out.empty(), "make-synthetic: one output file expected\n" << kUsage);
      out = a;
    }
  }
  DISTZO_REQUIRE(!out.empty(), "make-synthetic: missing OUT.h5\n" << kUsage);
  for (const char* key : {"--task", "--examples", "--seq-len", "--vocab"})
    DISTZO_REQUIRE(opts.count(key), "make-synthetic: missing " << key << "\n" << kUsage);
  const std::string task = opts["--task"];
  const int examples = static_cast<int>(to_int("--examples", opts["--examples"]));
  const int seq_len = static_cast<int>(to_int("--seq-len", opts["--seq-len"]));
  const std::int64_t vocab = to_int("--vocab", opts["--vocab"]);
  const auto seed = static_cast<std::uint64_t>(to_int("--seed", opts["--seed"]));
  io::Dataset d;
  if (task == "classification")
    d = io::make_synthetic_classification(examples, seq_len, vocab, seed);
  else if (task == "causal_lm")
    d = io::make_synthetic_causal_lm(examples, seq_len, vocab, seed);
  else
    DISTZO_FAIL("make-synthetic: --task must be classification or causal_lm, got '" << task << "'");
  io::write_dataset(out, d);
  std::cout << "wrote " << out << ": " << examples << " " << task << " examples of up to "
            << seq_len << " tokens (vocab " << vocab << ", seed " << seed << ")\n";
  return 0;
}

}  // namespace distzo::app
