#include "app/make_model.hpp"

#include <iostream>
#include <vector>

#include "app/format.hpp"
#include "app/options.hpp"
#include "core/error.hpp"
#include "io/hf_config.hpp"
#include "io/model_file.hpp"
#include "model/architecture.hpp"
#include "model/init.hpp"

namespace distzo::app {

namespace {
const char* const kUsage =
    "usage: distzo make-model OUT.h5 --config config.json [--seed S] [--std X]\n"
    "       distzo make-model OUT.h5 --layers L --hidden C --heads H --ffn F --vocab V\n"
    "                         [--positions P] [--proj E] [--post-ln] [--seed S] [--std X]\n"
    "  a model file with random weights (std: 0.02 by default): the architecture of\n"
    "  config.json (OPT, Llama, Qwen2, Qwen3, Mistral, OLMo 2, Phi-3, Gemma 3), or an OPT model\n"
    "  of the shape given";
}  // namespace

const char* make_model_usage() { return kUsage; }

int make_model(const std::vector<std::string>& args) {
  const Options o("make-model", args,
                  {"--config", "--layers", "--hidden", "--heads", "--ffn", "--vocab", "--positions",
                   "--proj", "--seed", "--std"},
                  {"--post-ln"}, kUsage);
  const std::string out = o.single("output file");
  require_output_directory("make-model", out);
  model::ModelConfig c;
  if (o.has("--config")) {
    for (const char* shape :
         {"--layers", "--hidden", "--heads", "--ffn", "--vocab", "--positions", "--proj"})
      DISTZO_INPUT_REQUIRE(!o.has(shape), "make-model: " << shape
                                                         << " and --config exclude each other\n"
                                                         << kUsage);
    c = io::read_hf_config(o.text("--config", ""));
  } else {
    DISTZO_INPUT_REQUIRE(o.has("--layers"),
                         "make-model: give --config config.json (OPT, Llama, Qwen2, Qwen3, "
                         "Mistral, OLMo 2, Phi-3, Gemma 3), or the shape of "
                         "an OPT model (--layers L --hidden C --heads H --ffn F --vocab V)\n"
                             << kUsage);
    c.num_hidden_layers = o.required_integer("--layers", 1);
    c.hidden_size = o.required_integer("--hidden", 1);
    c.num_attention_heads = o.required_integer("--heads", 1);
    c.ffn_dim = o.required_integer("--ffn", 1);
    c.vocab_size = o.required_integer("--vocab", 1);
    c.max_position_embeddings = o.integer("--positions", 2048, 1);
    c.word_embed_proj_dim = o.integer("--proj", c.hidden_size, 1);
    c.do_layer_norm_before = !o.flag("--post-ln");
    model::complete_opt(c);
    try {
      c.validate();
    } catch (const Error& e) {
      throw Error(std::string("make-model: ") + e.what());
    }
  }
  const auto seed = static_cast<std::uint64_t>(o.integer("--seed", 0));
  const double std = o.positive("--std", 0.02);

  io::ModelInfo info;
  info.config = c;
  info.registry = model::ParameterRegistry::for_model(c);
  info.kind = "model";
  info.hf_config_json = io::hf_config_json(c);
  // One tensor at a time: a model of any size is written without being
  // whole in device or host memory.
  io::write_atomically(out, [&](io::Hdf5File& file) {
    io::write_model_tensors(file, info, [&](const io::TensorSink& sink) {
      std::vector<real> tensor;
      for (const auto& p : info.registry.parameters()) {
        tensor.resize(static_cast<std::size_t>(p.numel()));
        model::random_parameter(p, seed, std, tensor.data());
        sink(p.id, tensor.data());
      }
    });
  });
  const double params = static_cast<double>(info.registry.total_elements());
  std::cout << "wrote " << out << ": " << model::architecture_spec(c.architecture).display_name
            << ", " << c.num_hidden_layers << " layers, hidden " << c.hidden_size << ", "
            << static_cast<long long>(params) << " parameters (" << human_bytes(4 * params)
            << " as float32), seed " << seed << ", std " << std << "\n";
  return 0;
}

}  // namespace distzo::app
