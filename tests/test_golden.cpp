// The forward pass of every architecture against Hugging Face transformers.
//
// tests/data/*.ref.h5 were written by tools/make_reference.py from tiny random
// models on a padded batch with right- and left-padded rows: OPT (pre-LN,
// post-LN, with project_in/out) and Llama (grouped-query attention, an untied
// lm_head with a non-default rope_theta, attention and MLP biases with
// head_dim * heads != hidden). This test needs no Python.
//
// Tolerances: fp32 end to end on both sides; the differences come from
// summation order in GEMMs, softmax and LayerNorm (~1e-6 relative per op),
// which stay far below 1e-4 absolute on these O(1) logits. Losses are
// accumulated in double, so 1e-5 relative is a generous bound. Padded query
// positions are not compared: Hugging Face fills them with values that carry
// no meaning (fully masked softmax rows).

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "app/forward_logits.hpp"
#include "io/hdf5_file.hpp"
#include "io/model_file.hpp"
#include "kernels/embedding.hpp"
#include "kernels/losses.hpp"
#include "model/forward.hpp"
#include "runtime/block_streamer.hpp"
#include "runtime/faults.hpp"
#include "runtime/parameter_store.hpp"
#include "support/expect_error.hpp"
#include "zo/model_walk.hpp"

namespace {

using namespace distzo;

std::vector<std::string> reference_names() {
  std::vector<std::string> names;
  const std::string suffix = ".ref.h5";
  if (DIR* dir = opendir(DISTZO_TEST_DATA)) {
    while (dirent* e = readdir(dir)) {
      std::string n = e->d_name;
      if (n.size() > suffix.size() &&
          n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        names.push_back(n.substr(0, n.size() - suffix.size()));
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Comparison {
  double max_abs = 0;
  std::size_t compared = 0;
};

/// Compares a (B*T, D) device matrix with a (B, T, D) reference at real tokens.
Comparison compare_rows(const Mat& got, const std::vector<float>& want,
                        const std::vector<std::int32_t>& mask) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got);
  Comparison c;
  const std::size_t D = host.extent(1);
  EXPECT_EQ(want.size(), host.extent(0) * D);
  for (std::size_t r = 0; r < host.extent(0); ++r) {
    if (!mask[r]) continue;
    for (std::size_t j = 0; j < D; ++j) {
      c.max_abs = std::max(c.max_abs, std::fabs(double(host(r, j)) - double(want[r * D + j])));
      ++c.compared;
    }
  }
  return c;
}

/// Each fixture, with θ resident and with every block offloaded (streamed
/// through device slots that are poisoned with NaN when released).
class Golden : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(Golden, MatchesHuggingFace) {
  const std::string base = std::string(DISTZO_TEST_DATA) + "/" + std::get<0>(GetParam());
  const io::ModelReader reader(base + ".model.h5");
  const io::ModelInfo& m = reader.info();
  runtime::PlacementConfig placement;
  if (std::get<1>(GetParam())) placement.mode = runtime::PlacementMode::offload;
  runtime::ParameterStore store(m.registry, placement);
  store.fill([&](std::uint32_t id, real* dst) { reader.read(id, dst); });
  const io::Hdf5File ref(base + ".ref.h5", io::Hdf5File::Mode::read);

  const auto shape = ref.dataset_info("input_ids").shape;
  const int B = static_cast<int>(shape.at(0));
  const int T = static_cast<int>(shape.at(1));
  const int L = static_cast<int>(m.config.num_hidden_layers);
  const int V = static_cast<int>(m.config.vocab_size);
  const std::vector<std::int32_t> ids = ref.read_ints("input_ids");
  const std::vector<std::int32_t> mask = ref.read_ints("attention_mask");

  IntMat tokens("tokens", B, T), attention_mask("mask", B, T);
  auto h_tokens = Kokkos::create_mirror_view(tokens);
  auto h_mask = Kokkos::create_mirror_view(attention_mask);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      h_tokens(b, t) = ids[b * T + t];
      h_mask(b, t) = mask[b * T + t];
    }
  Kokkos::deep_copy(tokens, h_tokens);
  Kokkos::deep_copy(attention_mask, h_mask);

  ExecSpace space;
  model::DecoderForward forward(m.config, B, T);
  Mat h("h", forward.rows(), m.config.hidden_size);

  // Hidden states: HF's tuple holds the embeddings, the output of every layer
  // but the last, and finally the output after the final norm (/ project_out).
  // The observer compares each stage as the walk passes it.
  int stages = 0;
  auto observe = [&](int stage, const Mat& x) {
    ++stages;
    if (stage == L - 1) return;  // HF's tuple skips the last layer's raw output
    const std::string name = "hidden_states_" + std::to_string(stage < L ? stage + 1 : L);
    const Comparison c = compare_rows(x, ref.read_floats(name), mask);
    EXPECT_LT(c.max_abs, 1e-4) << name << " (stage " << stage << ")";
  };
  runtime::BlockStreamer streamer(store, space);
  if (std::get<1>(GetParam())) runtime::poison_released_slots(streamer);
  zo::FloatTheta theta(store);
  zo::ForwardPass pass(forward, theta, h, tokens, attention_mask, observe);
  zo::walk(streamer, pass);
  EXPECT_EQ(stages, L + 2) << "the observer saw the embeddings, every block and the head";
  const Mat hidden = pass.final_hidden();
  const model::WeightView edge = model::make_edge_view(m.registry, pass.edges());
  Comparison c;

  Mat logits("logits", forward.rows(), V);
  forward.logits(space, edge, hidden, logits);
  c = compare_rows(logits, ref.read_floats("logits"), mask);
  EXPECT_GT(c.compared, 0u);
  EXPECT_LT(c.max_abs, 1e-4) << "logits, " << c.compared << " values compared";

  // Causal-LM loss: position t predicts labels[t + 1] (HF shifts inside the loss).
  const std::vector<std::int32_t> labels = ref.read_ints("labels");
  IntVec targets("targets", forward.rows());
  auto h_targets = Kokkos::create_mirror_view(targets);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) h_targets(b * T + t) = t + 1 < T ? labels[b * T + t + 1] : -100;
  Kokkos::deep_copy(targets, h_targets);
  kernels::LossSums sums("sums", 2);
  kernels::causal_lm_loss(space, sums, logits, targets);
  auto h_sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sums);
  const double lm_loss = ref.read_doubles("lm_loss").at(0);
  EXPECT_NEAR(h_sums(0) / h_sums(1), lm_loss, 1e-5 * std::fabs(lm_loss));
  EXPECT_EQ(h_sums(1), ref.read_doubles("lm_token_count").at(0));

  // Classification over candidate tokens at one position per row (MeZO).
  const std::vector<std::int32_t> candidates = ref.read_ints("candidates");
  const std::vector<std::int32_t> position = ref.read_ints("cls_position");
  const std::vector<std::int32_t> gold = ref.read_ints("cls_gold");
  const int K = static_cast<int>(candidates.size());
  IntVec rows("rows", B), cand("candidates", K), gold_d("gold", B), predictions("pred", B);
  auto h_rows = Kokkos::create_mirror_view(rows);
  auto h_cand = Kokkos::create_mirror_view(cand);
  auto h_gold = Kokkos::create_mirror_view(gold_d);
  for (int b = 0; b < B; ++b) {
    h_rows(b) = b * T + position[b];
    h_gold(b) = gold[b];
  }
  for (int k = 0; k < K; ++k) h_cand(k) = candidates[k];
  Kokkos::deep_copy(rows, h_rows);
  Kokkos::deep_copy(cand, h_cand);
  Kokkos::deep_copy(gold_d, h_gold);
  Mat selected("selected", B, hidden.extent(1)), cand_logits("cand_logits", B, K);
  kernels::gather_rows(space, selected, hidden, rows);
  kernels::candidate_logits(space, cand_logits, selected, edge.lm_head(), cand);
  kernels::classification_loss(space, sums, predictions, cand_logits, gold_d);
  h_sums = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sums);
  const double cls_loss = ref.read_doubles("cls_loss").at(0);
  EXPECT_NEAR(h_sums(0) / h_sums(1), cls_loss, 1e-5 * std::fabs(cls_loss));
  auto h_pred = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), predictions);
  const std::vector<std::int32_t> want_pred = ref.read_ints("cls_predictions");
  for (int b = 0; b < B; ++b) EXPECT_EQ(h_pred(b), want_pred[b]) << "row " << b;
}

INSTANTIATE_TEST_SUITE_P(TinyModels, Golden,
                         ::testing::Combine(::testing::ValuesIn(reference_names()),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           // gtest allows [A-Za-z0-9_] only
                           std::string name = std::get<0>(info.param);
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name + (std::get<1>(info.param) ? "_offload" : "_resident");
                         });

/// `distzo forward` on each fixture's batch, 3 rows at a time (so its last
/// micro-batch is partial): the logits file holds transformers' logits.
class ForwardCommand : public ::testing::TestWithParam<std::string> {};

TEST_P(ForwardCommand, WritesTransformersLogits) {
  const std::string base = std::string(DISTZO_TEST_DATA) + "/" + GetParam();
  const std::string out =
      "/tmp/distzo_test_forward_" + std::to_string(getpid()) + "_" + GetParam() + ".h5";
  ASSERT_EQ(app::forward_logits({base + ".model.h5", base + ".ref.h5", out, "--micro-batch", "3"}),
            0);
  const io::Hdf5File ref(base + ".ref.h5", io::Hdf5File::Mode::read);
  const io::Hdf5File got(out, io::Hdf5File::Mode::read);
  const auto shape = got.dataset_info("logits").shape;
  ASSERT_EQ(shape.size(), 3u);
  const std::vector<float> logits = got.read_floats("logits");
  const std::vector<float> want = ref.read_floats("logits");
  const std::vector<std::int32_t> mask = ref.read_ints("attention_mask");
  ASSERT_EQ(logits.size(), want.size());
  const std::size_t V = static_cast<std::size_t>(shape[2]);
  double max_abs = 0;
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (mask[i / V]) max_abs = std::max(max_abs, std::fabs(double(logits[i]) - double(want[i])));
  EXPECT_LT(max_abs, 1e-4);
  std::remove(out.c_str());
}

INSTANTIATE_TEST_SUITE_P(TinyModels, ForwardCommand, ::testing::ValuesIn(reference_names()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(ForwardCommand, RefusesBadInput) {
  const std::string base = std::string(DISTZO_TEST_DATA) + "/llama_tiny_gqa";
  const std::string in = "/tmp/distzo_test_forward_in_" + std::to_string(getpid()) + ".h5";
  const std::string out = "/tmp/distzo_test_forward_out_" + std::to_string(getpid()) + ".h5";
  {
    io::Hdf5File f(in, io::Hdf5File::Mode::create);
    const std::int32_t ids[] = {1, 5, 96, 3};  // 96 is outside the vocabulary of 96
    f.write_ints("input_ids", {2, 2}, ids);
    f.close();
  }
  EXPECT_ERROR_CONTAINS("input_ids[1, 0] = 96 is outside the vocabulary [0, 96)",
                        app::forward_logits({base + ".model.h5", in, out}));
  EXPECT_ERROR_CONTAINS("expected MODEL.h5", app::forward_logits({base + ".model.h5", in}));
  std::remove(in.c_str());
}

TEST(GoldenFixtures, PresentForEveryArchitecture) {
  // Guards against a silently empty parameterised suite, and an
  // architecture of the table without a transformers reference.
  std::map<model::Architecture, int> count;
  for (const std::string& name : reference_names()) {
    const io::ModelReader reader(std::string(DISTZO_TEST_DATA) + "/" + name + ".model.h5");
    count[reader.info().config.architecture] += 1;
  }
  EXPECT_GE(count[model::Architecture::opt], 4)
      << "expected pre-LN, post-LN and projected OPT fixtures in " << DISTZO_TEST_DATA;
  EXPECT_GE(count[model::Architecture::llama], 3)
      << "expected GQA, untied and biased Llama fixtures in " << DISTZO_TEST_DATA;
  for (const model::Architecture a :
       {model::Architecture::qwen2, model::Architecture::qwen3, model::Architecture::mistral,
        model::Architecture::gemma3, model::Architecture::olmo2, model::Architecture::phi3})
    EXPECT_GE(count[a], 1) << "no " << model::architecture_name(a) << " fixture in "
                           << DISTZO_TEST_DATA << " (tools/make_reference.py writes one)";
}

}  // namespace
