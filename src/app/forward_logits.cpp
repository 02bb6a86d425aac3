#include "app/forward_logits.hpp"

#include <algorithm>
#include <iostream>

#include "app/blas_threads.hpp"
#include "app/memory_limit.hpp"
#include "app/options.hpp"
#include "core/error.hpp"
#include "io/hdf5_file.hpp"
#include "io/model_file.hpp"
#include "kernels/host_gemm.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/parameter_store.hpp"
#include "zo/model_walk.hpp"

namespace distzo::app {

namespace {

const char* const kUsage =
    "usage: distzo forward MODEL.h5 INPUT.h5 OUTPUT.h5 [--micro-batch M]\n"
    "  INPUT.h5: input_ids (B, T) integers and, optionally, attention_mask (B, T) of\n"
    "  0/1 (all ones when absent); OUTPUT.h5 gets logits (B, T, V) float32, the\n"
    "  model's prediction for the token after each position. Positions come from\n"
    "  the mask (cumsum - 1), as in training. M rows at a time (default 8).";

/// (B, T) integers of `name`, checked against the shape of input_ids.
std::vector<std::int32_t> read_matrix(const io::Hdf5File& file, const std::string& name,
                                      std::int64_t& rows, std::int64_t& cols) {
  const auto shape = file.dataset_info(name).shape;
  DISTZO_INPUT_REQUIRE(shape.size() == 2 && shape[0] > 0 && shape[1] > 0,
                       file.path() << ": " << name << " must be a non-empty (B, T) matrix, got "
                                   << shape.size() << " dimensions");
  DISTZO_INPUT_REQUIRE((rows < 0 || (rows == shape[0] && cols == shape[1])),
                       file.path() << ": " << name << " is (" << shape[0] << ", " << shape[1]
                                   << "), input_ids is (" << rows << ", " << cols << ")");
  rows = shape[0];
  cols = shape[1];
  return file.read_ints(name);
}

}  // namespace

const char* forward_usage() { return kUsage; }

int forward_logits(const std::vector<std::string>& args) {
  const Options o("forward", args, {"--micro-batch"}, {}, kUsage);
  DISTZO_INPUT_REQUIRE(o.positional().size() == 3, "forward: expected MODEL.h5 INPUT.h5 OUTPUT.h5\n"
                                                       << kUsage);
  const std::string& model_path = o.positional()[0];
  const std::string& input_path = o.positional()[1];
  const std::string& output_path = o.positional()[2];
  const int micro = o.int32("--micro-batch", 8, 1);
  require_output_directory("forward", output_path);
  // One process: the machine's cores (or OPENBLAS_NUM_THREADS), started
  // once the memory check below has passed.
  const BlasThreads gemm = choose_blas_threads(1);

  if (const std::string shortfall = reading_shortfall(
          "the model and the input", "the forward pass needs more (its GEMM threads' buffers)");
      !shortfall.empty())
    DISTZO_INPUT_FAIL("forward: " << shortfall);
  const io::ModelReader reader(model_path);
  const io::ModelInfo& m = reader.info();
  const io::Hdf5File input(input_path, io::Hdf5File::Mode::read);
  DISTZO_INPUT_REQUIRE(input.has_dataset("input_ids"), input_path << ": no input_ids dataset\n"
                                                                  << kUsage);
  std::int64_t B = -1, T = -1;
  const std::vector<std::int32_t> ids = read_matrix(input, "input_ids", B, T);
  const std::vector<std::int32_t> mask = input.has_dataset("attention_mask")
                                             ? read_matrix(input, "attention_mask", B, T)
                                             : std::vector<std::int32_t>(ids.size(), 1);
  const std::int64_t V = m.config.vocab_size;
  DISTZO_INPUT_REQUIRE(T <= m.config.max_position_embeddings,
                       input_path << ": sequences of " << T << " tokens exceed the model's "
                                  << m.config.max_position_embeddings << " positions");
  for (std::size_t i = 0; i < ids.size(); ++i) {
    DISTZO_INPUT_REQUIRE(ids[i] >= 0 && ids[i] < V,
                         input_path << ": input_ids[" << i / T << ", " << i % T << "] = " << ids[i]
                                    << " is outside the vocabulary [0, " << V << ")");
    DISTZO_INPUT_REQUIRE(mask[i] == 0 || mask[i] == 1,
                         input_path << ": attention_mask[" << i / T << ", " << i % T
                                    << "] = " << mask[i] << " is not 0 or 1");
  }

  runtime::ParameterStore store(m.registry, runtime::PlacementConfig());
  store.fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
  const ExecSpace space;
  const int rows = static_cast<int>(std::min<std::int64_t>(micro, B));
  model::DecoderForward forward(m.config, rows, static_cast<int>(T));
  Mat h("distzo::forward::h", static_cast<std::size_t>(forward.rows()), m.config.hidden_size);
  Mat logits("distzo::forward::logits", static_cast<std::size_t>(forward.rows()), V);
  IntMat tokens("distzo::forward::tokens", rows, T), attention("distzo::forward::mask", rows, T);
  auto h_tokens = Kokkos::create_mirror_view(tokens);
  auto h_mask = Kokkos::create_mirror_view(attention);
  std::vector<float> out(static_cast<std::size_t>(B * T * V));
  const auto host = Kokkos::create_mirror_view(logits);
  runtime::BlockStreamer streamer(store, space);
  zo::FloatTheta theta(store);
  // Everything is allocated but the BLAS's buffers, which a failed
  // allocation would make it retry forever.
  if (const std::string shortfall = blas_buffers_shortfall(gemm.threads); !shortfall.empty())
    DISTZO_INPUT_FAIL("forward: " << shortfall);
  start_blas_threads(gemm);

  for (std::int64_t first = 0; first < B; first += rows) {
    // The last micro-batch is padded with copies of its first row, whose
    // logits are not kept.
    for (int b = 0; b < rows; ++b)
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t src = std::min(first + b, B - 1) * T + t;
        h_tokens(b, t) = ids[static_cast<std::size_t>(src)];
        h_mask(b, t) = mask[static_cast<std::size_t>(src)];
      }
    Kokkos::deep_copy(space, tokens, h_tokens);
    Kokkos::deep_copy(space, attention, h_mask);
    zo::ForwardPass pass(forward, theta, h, tokens, attention);
    zo::walk(streamer, pass);
    forward.logits(space, model::make_edge_view(m.registry, pass.edges()), pass.final_hidden(),
                   logits);
    Kokkos::deep_copy(space, host, logits);
    space.fence();
    const std::int64_t kept = std::min<std::int64_t>(rows, B - first);
    std::copy(host.data(), host.data() + kept * T * V, out.data() + first * T * V);
    std::cerr << "forward: rows " << first + kept << " of " << B << "\n";
  }

  io::Hdf5File output(output_path, io::Hdf5File::Mode::create);
  output.write_floats("logits", {B, T, V}, out.data());
  output.close();
  std::cout << "forward: logits (" << B << ", " << T << ", " << V << ") of " << model_path
            << " written to " << output_path << "\n";
  return 0;
}

}  // namespace distzo::app
