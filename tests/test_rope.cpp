// Rotary scaling (model/rope.hpp): each rope type's inverse frequencies
// against a naive double-precision statement of transformers' formulas, the
// properties the types are made for, and how configs name them (both
// transformers forms, defaults, refusals, round trips through config.json
// and the model file). The end-to-end match with transformers is the golden
// fixtures' (test_golden: llama_tiny_llama3, qwen2_tiny_yarn).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_file.hpp"
#include "io/hf_config.hpp"
#include "io/model_file.hpp"
#include "model/model_config.hpp"
#include "model/rope.hpp"
#include "support/expect_error.hpp"

namespace {

using namespace distzo;
using model::RopeScaling;
using model::RopeType;

constexpr double kPi = 3.14159265358979323846;

RopeScaling llama3(double factor, double low, double high, std::int64_t original) {
  RopeScaling r;
  r.type = RopeType::llama3;
  r.factor = factor;
  r.low_freq_factor = low;
  r.high_freq_factor = high;
  r.original_max_position_embeddings = original;
  return r;
}

RopeScaling yarn(double factor, std::int64_t original) {
  RopeScaling r;
  r.type = RopeType::yarn;
  r.factor = factor;
  r.original_max_position_embeddings = original;
  return r;
}

double plain(double base, std::int64_t dim, std::size_t i) {
  return 1.0 / std::pow(base, double(2 * i) / double(dim));
}

/// Float32 frequencies agree with the double statement to a few float
/// roundings (pow's, the quotients', the blend's).
void expect_close(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 8 * 6e-8 * want[i]) << "frequency " << i;
}

TEST(RotaryFrequencies, PlainAndLinearAreTransformersFloatFormula) {
  const model::RotaryFrequencies p = model::rotary_frequencies({}, 500000.0, 16, 64);
  ASSERT_EQ(p.inverse.size(), 8u);
  EXPECT_EQ(p.sets, 1);
  EXPECT_EQ(p.attention_factor, 1.0f);
  for (std::size_t i = 0; i < 8; ++i)  // float32, as transformers (and the old kernel) computes
    EXPECT_EQ(p.inverse[i], 1.0f / std::pow(500000.0f, static_cast<float>(2 * i) / 16.0f));
  RopeScaling linear;
  linear.type = RopeType::linear;
  linear.factor = 4;
  const model::RotaryFrequencies l = model::rotary_frequencies(linear, 500000.0, 16, 64);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(l.inverse[i], p.inverse[i] / 4.0f);
}

TEST(RotaryFrequencies, Llama3KeepsShortWavelengthsDividesLongOnesAndBlendsBetween) {
  // head_dim 64, base 500000, original context 64: wavelengths run from 2π
  // to ~2π·500000^(62/64), so the three bands all occur.
  const RopeScaling r = llama3(8, 1, 4, 64);
  const std::int64_t dim = 64;
  const model::RotaryFrequencies got = model::rotary_frequencies(r, 500000.0, dim, 4096);
  const model::RotaryFrequencies base = model::rotary_frequencies({}, 500000.0, dim, 4096);
  std::vector<double> want;
  int kept = 0, divided = 0, blended = 0;
  for (std::size_t i = 0; i < 32; ++i) {
    const double inv = plain(500000.0, dim, i), wavelength = 2 * kPi / inv;
    if (wavelength < 64.0 / 4) {
      want.push_back(inv);
      EXPECT_EQ(got.inverse[i], base.inverse[i]) << i;  // untouched, to the bit
      ++kept;
    } else if (wavelength > 64.0 / 1) {
      want.push_back(inv / 8);
      EXPECT_EQ(got.inverse[i], base.inverse[i] / 8.0f) << i;
      ++divided;
    } else {
      const double smooth = (64.0 / wavelength - 1) / (4 - 1);
      want.push_back((1 - smooth) * inv / 8 + smooth * inv);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
  expect_close(got.inverse, want);
  EXPECT_EQ(got.attention_factor, 1.0f);
}

TEST(RotaryFrequencies, YarnRampsFromExtrapolatedToInterpolatedWithItsAttentionFactor) {
  const std::int64_t dim = 32;
  const double base = 10000.0, factor = 4;
  const model::RotaryFrequencies got =
      model::rotary_frequencies(yarn(factor, 256), base, dim, 1024);
  // transformers' correction range: dimensions with beta_fast = 32 and
  // beta_slow = 1 rotations in the original 256 positions, floored/ceiled.
  const auto correction = [&](double rotations) {
    return dim * std::log(256 / (rotations * 2 * kPi)) / (2 * std::log(base));
  };
  const double low = std::max(std::floor(correction(32)), 0.0);
  const double high = std::min(std::ceil(correction(1)), double(dim - 1));
  ASSERT_LT(low, high);
  std::vector<double> want;
  for (std::size_t i = 0; i < 16; ++i) {
    const double ramp = std::min(std::max((double(i) - low) / (high - low), 0.0), 1.0);
    const double inv = plain(base, dim, i);
    want.push_back(inv / factor * ramp + inv * (1 - ramp));
  }
  expect_close(got.inverse, want);
  EXPECT_EQ(got.inverse[0], 1.0f);  // position pairs below the ramp keep their frequency
  EXPECT_FLOAT_EQ(got.attention_factor, static_cast<float>(0.1 * std::log(factor) + 1));
  // mscale / mscale_all_dim, and an explicit attention factor.
  RopeScaling m = yarn(factor, 256);
  m.mscale = 0.707;
  m.mscale_all_dim = 1.5;
  EXPECT_FLOAT_EQ(
      model::rotary_frequencies(m, base, dim, 1024).attention_factor,
      static_cast<float>((0.1 * 0.707 * std::log(4) + 1) / (0.1 * 1.5 * std::log(4) + 1)));
  m.attention_factor = 1.25;
  EXPECT_EQ(model::rotary_frequencies(m, base, dim, 1024).attention_factor, 1.25f);
}

TEST(RotaryFrequencies, LongropeHasAShortAndALongSetChosenPastTheOriginalContext) {
  RopeScaling r;
  r.type = RopeType::longrope;
  r.original_max_position_embeddings = 128;
  r.short_factor = {1, 1.5, 2, 3};
  r.long_factor = {1, 2, 4, 8};
  const model::RotaryFrequencies got = model::rotary_frequencies(r, 10000.0, 8, 4096);
  EXPECT_EQ(got.sets, 2);
  EXPECT_EQ(got.long_from, 128);
  ASSERT_EQ(got.inverse.size(), 8u);
  for (std::size_t i = 0; i < 4; ++i) {
    const float frequency = std::pow(10000.0f, static_cast<float>(2 * i) / 8.0f);
    EXPECT_EQ(got.inverse[i], 1.0f / (static_cast<float>(r.short_factor[i]) * frequency));
    EXPECT_EQ(got.inverse[4 + i], 1.0f / (static_cast<float>(r.long_factor[i]) * frequency));
  }
  // No factor given: max_position_embeddings / original = 32.
  EXPECT_FLOAT_EQ(got.attention_factor,
                  static_cast<float>(std::sqrt(1 + std::log(32.0) / std::log(128.0))));
  EXPECT_EQ(model::rotary_sets(r), 2);
}

TEST(RotaryFrequencies, DynamicIsPlainWithinTheModelsPositions) {
  RopeScaling r;
  r.type = RopeType::dynamic;
  r.factor = 2;
  const model::RotaryFrequencies got = model::rotary_frequencies(r, 10000.0, 16, 2048);
  EXPECT_EQ(got.inverse, model::rotary_frequencies({}, 10000.0, 16, 2048).inverse);
}

std::string config_error(const std::string& text) {
  return test_support::error_message([&] { io::parse_hf_config(text, "c.json"); });
}

const char* const kLlama32 = R"({"model_type": "llama", "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "max_position_embeddings": 131072, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";

TEST(HfConfigRope, ReadsEachTypeInEitherTransformersForm) {
  const model::ModelConfig c = io::parse_hf_config(kLlama32, "config.json");
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling, llama3(32, 1, 4, 8192));
  // transformers 5: rope_parameters, the base inside.
  const model::ModelConfig v5 = io::parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
          "max_position_embeddings": 131072,
          "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
              "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 8192}})",
      "config.json");
  EXPECT_EQ(v5.rope_scaling, c.rope_scaling);
  EXPECT_EQ(v5.rope_theta, 500000.0);
  // Qwen2.5's YaRN (transformers 4's "type"); the original context given.
  const model::ModelConfig q = io::parse_hf_config(
      R"({"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
          "max_position_embeddings": 131072, "rope_theta": 1000000.0,
          "rope_scaling": {"type": "yarn", "factor": 4.0,
                           "original_max_position_embeddings": 32768}})",
      "config.json");
  EXPECT_EQ(q.rope_scaling, yarn(4, 32768));
  // Without it, the original context is max_position_embeddings (transformers'
  // standardize_rope_params).
  EXPECT_EQ(io::parse_hf_config(
                R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                    "max_position_embeddings": 2048,
                    "rope_scaling": {"rope_type": "yarn", "factor": 8.0}})",
                "config.json")
                .rope_scaling,
            yarn(8, 2048));
  // Both forms: rope_scaling wins, with the flat base (transformers 5.25).
  const model::ModelConfig both = io::parse_hf_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
          "rope_theta": 500000.0, "rope_scaling": {"type": "linear", "factor": 2.0},
          "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}})",
      "config.json");
  EXPECT_EQ(both.rope_scaling.type, RopeType::linear);
  EXPECT_EQ(both.rope_theta, 500000.0);
  EXPECT_NE(model::describe(c, "; ").find("llama3 scaling (factor 32"), std::string::npos)
      << model::describe(c, "; ");
}

TEST(HfConfigRope, RefusesWhatWouldChangeTheAnglesUnseen) {
  const auto with = [](const std::string& rope) {
    return config_error(
        R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "head_dim": 16,
            "rope_scaling": )" +
        rope + "}");
  };
  EXPECT_NE(with(R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "beta_fast": 3})")
                .find("rope_scaling.beta_fast is set, but rope_type 'llama3' has no such"),
            std::string::npos);
  EXPECT_NE(with(R"({"rope_type": "llama3", "factor": 8.0})")
                .find("low_freq_factor is missing: give a positive number"),
            std::string::npos);
  EXPECT_NE(with(R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 2.0,
                     "high_freq_factor": 2.0})")
                .find("divides by their difference"),
            std::string::npos);
  EXPECT_NE(with(R"({"rope_type": "linear"})").find("factor is missing: give a positive number"),
            std::string::npos);
  EXPECT_NE(
      with(R"({"rope_type": "proportional", "factor": 2.0})").find("rope_type 'proportional'"),
      std::string::npos);
  EXPECT_NE(with(R"({"rope_type": "default", "partial_rotary_factor": 0.5})")
                .find("partial_rotary_factor 1"),
            std::string::npos);
  EXPECT_NE(with(R"({"rope_type": "longrope", "short_factor": [1, 1, 1, 1, 1, 1, 1, 1],
                     "long_factor": [1, 2, 3]})")
                .find("long_factor holds 3 numbers, expected head_dim / 2 = 8"),
            std::string::npos);
  EXPECT_NE(with(R"({"rope_type": "yarn", "factor": 4.0, "truncate": 1})")
                .find("truncate must be true or false"),
            std::string::npos);
  EXPECT_NE(with(R"({"rope_type": "yarn", "factor": 4.0, "mrope_section": [2, 2]})")
                .find("rope_scaling.mrope_section is set"),
            std::string::npos);
  // Gemma 3's text models have plain rotary embeddings only.
  EXPECT_NE(config_error(R"({"model_type": "gemma3_text", "rope_parameters": {
                "full_attention": {"rope_type": "linear", "factor": 8.0}}})")
                .find("distzo scales no rotary embedding of Gemma 3"),
            std::string::npos);
}

RopeScaling every_yarn_key() {
  RopeScaling r = yarn(4, 32768);
  r.attention_factor = 1.125;
  r.beta_fast = 16;
  r.beta_slow = 2;
  r.mscale = 0.707;
  r.mscale_all_dim = 0.5;
  r.truncate = false;
  return r;
}

TEST(HfConfigRope, RoundTripsThroughConfigJsonAndTheModelFile) {
  RopeScaling longrope;
  longrope.type = RopeType::longrope;
  longrope.original_max_position_embeddings = 4096;
  longrope.short_factor = {1, 1.0625, 1.1, 1.3, 1.7, 2.9, 5.1, 9.4};
  longrope.long_factor = {1, 1.2, 1.9, 3.3, 7.1, 13.0, 27.5, 31.9};
  RopeScaling dynamic;
  dynamic.type = RopeType::dynamic;
  dynamic.factor = 2;
  model::ModelConfig c = io::parse_hf_config(kLlama32, "config.json");
  const std::string path = "/tmp/distzo_test_rope_" + std::to_string(getpid()) + ".h5";
  for (const RopeScaling& r :
       {llama3(8, 1, 4, 8192), every_yarn_key(), longrope, dynamic, RopeScaling{}}) {
    SCOPED_TRACE(io::rope_scaling_json(r));
    c.rope_scaling = r;
    EXPECT_EQ(io::parse_rope_scaling(io::rope_scaling_json(r), "attribute"), r);
    EXPECT_EQ(io::parse_hf_config(io::hf_config_json(c), "back.json"), c);
    {
      io::Hdf5File file(path, io::Hdf5File::Mode::create);
      file.write_string_attribute("distzo_format", "model");
      io::write_model_config(file, c, "");
    }
    const io::Hdf5File file(path, io::Hdf5File::Mode::read);
    EXPECT_EQ(file.has_attribute("rope_scaling"), r.scaled());  // plain: as before
    const model::ModelConfig back = io::read_model_config(file);
    EXPECT_EQ(back, c) << model::describe(back, "; ");
  }
  std::remove(path.c_str());
}

}  // namespace
