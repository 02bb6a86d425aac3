#pragma once
// Rotary position embeddings as transformers computes their frequencies from
// a config (modeling_rope_utils.py, transformers 5.25): the rope types, the
// parameters each reads, and the inverse frequencies and attention factor
// they give. Computed once per model on the host, in float32 where
// transformers computes in float32 (its tensors) and in double where it
// computes in Python floats, so the tables match Hugging Face's to the bit
// up to the libm's pow; kernels::rotary_tables turns them into each batch's
// cos/sin tables.

#include <cstdint>
#include <string>
#include <vector>

namespace distzo::model {

/// transformers' rope_type. `plain` is its "default" (no scaling).
enum class RopeType { plain, linear, dynamic, llama3, yarn, longrope };

/// "default", "linear", "dynamic", "llama3", "yarn", "longrope".
const char* rope_type_name(RopeType type);
/// The type named `name` (HF rope_type); false if distzo has none of that name.
bool rope_type_from_name(const std::string& name, RopeType& type);

/// One rope_parameters entry's scaling, with Hugging Face's key names. A
/// value left at its default here is one the config does not give (HF's
/// None), and transformers' fallback applies.
struct RopeScaling {
  RopeType type = RopeType::plain;
  /// linear, dynamic, llama3, yarn: required. longrope: 0 = not given, then
  /// max_position_embeddings / original_max_position_embeddings.
  double factor = 0;
  /// llama3, yarn, longrope: the context the model was pretrained on.
  std::int64_t original_max_position_embeddings = 0;
  double low_freq_factor = 0, high_freq_factor = 0;  // llama3: required
  /// yarn, longrope: the factor of cos and sin; 0 = derived from factor.
  double attention_factor = 0;
  double beta_fast = 0, beta_slow = 0;    // yarn: 0 = 32 and 1
  double mscale = 0, mscale_all_dim = 0;  // yarn: 0 = not given
  bool truncate = true;                   // yarn: floor/ceil the correction range
  /// longrope: head_dim / 2 factors each, for sequences up to
  /// original_max_position_embeddings tokens (short) and longer ones (long).
  std::vector<double> short_factor, long_factor;

  bool scaled() const { return type != RopeType::plain; }
  bool operator==(const RopeScaling& o) const;
  bool operator!=(const RopeScaling& o) const { return !(*this == o); }

  /// Throws distzo::Error naming the first missing or bad parameter; `what`
  /// says where it came from ("llama config: rope_scaling").
  void validate(std::int64_t head_dim, const std::string& what) const;
  /// "llama3 (factor 8, low/high frequency factors 1/4, original context 8192)":
  /// for `distzo inspect` and `plan`.
  std::string describe() const;
};

/// The inverse frequencies a layer turns q and k with, and the factor of
/// its cos and sin tables.
struct RotaryFrequencies {
  /// (sets, head_dim / 2), row-major: one set; LongRoPE two, short then long.
  std::vector<float> inverse;
  int sets = 1;  // rotary_sets
  /// LongRoPE: a sequence (batch row) of more than this many tokens uses
  /// the long set. transformers picks one set per call by the batch's
  /// longest row; distzo picks per row, so an example's loss never depends
  /// on the examples it is batched with (or on the data-parallel layout).
  std::int64_t long_from = 0;
  float attention_factor = 1.0f;  // yarn, longrope: cos and sin times this
};

/// The sets of inverse frequencies `scaling` has: 2 for LongRoPE, else 1.
inline int rotary_sets(const RopeScaling& scaling) {
  return scaling.type == RopeType::longrope ? 2 : 1;
}

/// The frequencies of rotary base `base` (rope_theta) with `scaling`, for
/// heads of `head_dim` channels, as transformers' rope init function of the
/// type computes them. `dynamic` gives its frequencies for sequences of up
/// to max_position_embeddings tokens, the only ones distzo runs (longer
/// ones are refused for every rope type): transformers rescales beyond
/// them, by the longest sequence it has seen so far.
RotaryFrequencies rotary_frequencies(const RopeScaling& scaling, double base, std::int64_t head_dim,
                                     std::int64_t max_position_embeddings);

}  // namespace distzo::model
