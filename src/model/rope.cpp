#include "model/rope.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"

namespace distzo::model {

namespace {

constexpr RopeType kRopeTypes[] = {RopeType::plain,  RopeType::linear, RopeType::dynamic,
                                   RopeType::llama3, RopeType::yarn,   RopeType::longrope};
constexpr double kPi = 3.14159265358979323846;

/// transformers' default frequencies: 1 / base^(2i / dim) in float32, the
/// exponent a float32 quotient (arange(0, dim, 2).float() / dim).
std::vector<float> plain_inverse(double base, std::int64_t dim) {
  std::vector<float> inverse(static_cast<std::size_t>(dim / 2));
  const float b = static_cast<float>(base), d = static_cast<float>(dim);
  for (std::size_t i = 0; i < inverse.size(); ++i)
    inverse[i] = 1.0f / std::pow(b, static_cast<float>(2 * i) / d);
  return inverse;
}

/// YaRN's mscale (its paper's eq. 21): 0.1 * mscale * ln(scale) + 1, 1 when scale <= 1.
double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

/// llama3: long wavelengths divided by factor, short ones kept, a smooth
/// blend between (transformers' _compute_llama3_parameters, op by op in
/// float32; a Python scalar meets a float32 tensor as a float32).
std::vector<float> llama3_inverse(const RopeScaling& r, double base, std::int64_t dim) {
  std::vector<float> inverse = plain_inverse(base, dim);
  const auto old_context = static_cast<double>(r.original_max_position_embeddings);
  const float low_wavelength = static_cast<float>(old_context / r.low_freq_factor);
  const float high_wavelength = static_cast<float>(old_context / r.high_freq_factor);
  const float factor = static_cast<float>(r.factor), two_pi = static_cast<float>(2 * kPi);
  const float low = static_cast<float>(r.low_freq_factor);
  const float span = static_cast<float>(r.high_freq_factor - r.low_freq_factor);
  for (float& f : inverse) {
    const float wavelength = 1.0f / f * two_pi;  // 2π / inv_freq is reciprocal(inv_freq) * 2π
    const float kept = wavelength > low_wavelength ? f / factor : f;
    const float smooth = (1.0f / wavelength * static_cast<float>(old_context) - low) / span;
    const float smoothed = (1.0f - smooth) * kept / factor + smooth * kept;
    const bool medium = !(wavelength < high_wavelength) && !(wavelength > low_wavelength);
    f = medium ? smoothed : kept;
  }
  return inverse;
}

/// YaRN (Peng et al., 2023): interpolated frequencies 1 / (factor b^(2i/d))
/// and extrapolated ones 1 / b^(2i/d), ramped between the dimensions whose
/// wavelengths fit beta_fast and beta_slow rotations into the original context.
std::vector<float> yarn_inverse(const RopeScaling& r, double base, std::int64_t dim,
                                double factor) {
  const double beta_fast = r.beta_fast != 0 ? r.beta_fast : 32;
  const double beta_slow = r.beta_slow != 0 ? r.beta_slow : 1;
  const auto d = static_cast<double>(dim);
  const auto correction_dim = [&](double rotations) {
    return d *
           std::log(static_cast<double>(r.original_max_position_embeddings) /
                    (rotations * 2 * kPi)) /
           (2 * std::log(base));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, d - 1);
  if (low == high) high += 0.001;  // transformers: prevents a zero-width ramp
  const float b = static_cast<float>(base), fd = static_cast<float>(dim);
  const float f = static_cast<float>(factor), lo = static_cast<float>(low);
  const float width = static_cast<float>(high - low);
  std::vector<float> inverse(static_cast<std::size_t>(dim / 2));
  for (std::size_t i = 0; i < inverse.size(); ++i) {
    const float frequency = std::pow(b, static_cast<float>(2 * i) / fd);
    const float extrapolated = 1.0f / frequency, interpolated = 1.0f / (f * frequency);
    const float ramp = std::min(std::max((static_cast<float>(i) - lo) / width, 0.0f), 1.0f);
    const float extrapolation = 1.0f - ramp;
    inverse[i] = interpolated * (1.0f - extrapolation) + extrapolated * extrapolation;
  }
  return inverse;
}

std::string number_list_problem(const std::vector<double>& values, std::int64_t expected) {
  if (static_cast<std::int64_t>(values.size()) != expected)
    return "holds " + std::to_string(values.size()) +
           " numbers, expected head_dim / 2 = " + std::to_string(expected);
  for (const double v : values)
    if (!(std::isfinite(v) && v > 0))
      return "holds " + std::to_string(v) + ", not a positive number";
  return "";
}

}  // namespace

const char* rope_type_name(RopeType type) {
  switch (type) {
    case RopeType::plain:
      return "default";
    case RopeType::linear:
      return "linear";
    case RopeType::dynamic:
      return "dynamic";
    case RopeType::llama3:
      return "llama3";
    case RopeType::yarn:
      return "yarn";
    case RopeType::longrope:
      return "longrope";
  }
  return "?";
}

bool rope_type_from_name(const std::string& name, RopeType& type) {
  for (const RopeType candidate : kRopeTypes)
    if (name == rope_type_name(candidate)) {
      type = candidate;
      return true;
    }
  return false;
}

bool RopeScaling::operator==(const RopeScaling& o) const {
  return type == o.type && factor == o.factor &&
         original_max_position_embeddings == o.original_max_position_embeddings &&
         low_freq_factor == o.low_freq_factor && high_freq_factor == o.high_freq_factor &&
         attention_factor == o.attention_factor && beta_fast == o.beta_fast &&
         beta_slow == o.beta_slow && mscale == o.mscale && mscale_all_dim == o.mscale_all_dim &&
         truncate == o.truncate && short_factor == o.short_factor && long_factor == o.long_factor;
}

void RopeScaling::validate(std::int64_t head_dim, const std::string& what) const {
  const std::string of = what + " (rope_type " + rope_type_name(type) + "): ";
  const auto positive = [&](const char* key, double value) {
    DISTZO_INPUT_REQUIRE(value != 0, of << key << " is missing: give a positive number");
    DISTZO_INPUT_REQUIRE(std::isfinite(value) && value > 0,
                         of << key << " must be a positive number, got " << value);
  };
  if (type == RopeType::plain) return;
  if (type != RopeType::longrope || factor != 0) positive("factor", factor);
  if (type == RopeType::dynamic)
    DISTZO_INPUT_REQUIRE(head_dim > 2, of << "head_dim " << head_dim
                                          << " is too small: dynamic scaling raises the base "
                                             "to dim / (dim - 2)");
  if (type == RopeType::linear || type == RopeType::dynamic) return;
  DISTZO_INPUT_REQUIRE(original_max_position_embeddings > 0,
                       of << "original_max_position_embeddings must be a positive integer, got "
                          << original_max_position_embeddings);
  if (type == RopeType::llama3) {
    positive("low_freq_factor", low_freq_factor);
    positive("high_freq_factor", high_freq_factor);
    DISTZO_INPUT_REQUIRE(high_freq_factor != low_freq_factor,
                         of << "high_freq_factor and low_freq_factor are both " << low_freq_factor
                            << ": the blend between them divides by their difference");
    return;
  }
  DISTZO_INPUT_REQUIRE(
      std::isfinite(attention_factor) && attention_factor >= 0,
      of << "attention_factor must be a positive number, got " << attention_factor);
  if (type == RopeType::yarn) {
    for (const auto& [key, value] : {std::pair<const char*, double>{"beta_fast", beta_fast},
                                     {"beta_slow", beta_slow},
                                     {"mscale", mscale},
                                     {"mscale_all_dim", mscale_all_dim}})
      DISTZO_INPUT_REQUIRE(std::isfinite(value), of << key << " must be a number, got " << value);
    return;
  }
  for (const auto& [key, list] :
       {std::pair<const char*, const std::vector<double>*>{"short_factor", &short_factor},
        {"long_factor", &long_factor}}) {
    const std::string problem = number_list_problem(*list, head_dim / 2);
    DISTZO_INPUT_REQUIRE(problem.empty(), of << key << " " << problem);
  }
}

std::string RopeScaling::describe() const {
  if (type == RopeType::plain) return rope_type_name(type);
  std::vector<std::string> parts;
  const auto part = [&](const std::string& name, double value) {
    std::ostringstream os;
    os << name << " " << value;
    parts.push_back(os.str());
  };
  if (factor != 0) part("factor", factor);
  if (type == RopeType::llama3) {
    part("low_freq_factor", low_freq_factor);
    part("high_freq_factor", high_freq_factor);
  }
  if (type == RopeType::yarn) {
    part("beta_fast", beta_fast != 0 ? beta_fast : 32);
    part("beta_slow", beta_slow != 0 ? beta_slow : 1);
    if (mscale != 0 && mscale_all_dim != 0) {
      part("mscale", mscale);
      part("mscale_all_dim", mscale_all_dim);
    }
  }
  if (type == RopeType::longrope) parts.emplace_back("short and long factors");
  if (attention_factor != 0) part("attention_factor", attention_factor);
  if (original_max_position_embeddings != 0)
    part("original context", static_cast<double>(original_max_position_embeddings));
  std::string text = std::string(rope_type_name(type)) + " scaling (";
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + parts[i];
  return text + ")";
}

RotaryFrequencies rotary_frequencies(const RopeScaling& r, double base, std::int64_t head_dim,
                                     std::int64_t max_position_embeddings) {
  RotaryFrequencies out;
  const std::int64_t dim = head_dim;
  const auto max_positions = static_cast<double>(max_position_embeddings);
  const auto original = static_cast<double>(r.original_max_position_embeddings);
  switch (r.type) {
    case RopeType::plain:
      out.inverse = plain_inverse(base, dim);
      break;
    case RopeType::linear: {
      out.inverse = plain_inverse(base, dim);
      for (float& f : out.inverse) f /= static_cast<float>(r.factor);
      break;
    }
    case RopeType::dynamic: {
      // transformers' initial frequencies (seq_len = max_position_embeddings),
      // which it keeps for every sequence no longer than that.
      const double d = static_cast<double>(dim);
      const double scaled_base =
          base * std::pow(r.factor * max_positions / max_positions - (r.factor - 1), d / (d - 2));
      out.inverse = plain_inverse(scaled_base, dim);
      break;
    }
    case RopeType::llama3:
      out.inverse = llama3_inverse(r, base, dim);
      break;
    case RopeType::yarn: {
      const double factor = r.factor != 0 ? r.factor : max_positions / original;
      out.inverse = yarn_inverse(r, base, dim, factor);
      double attention = r.attention_factor;
      if (attention == 0)
        attention = r.mscale != 0 && r.mscale_all_dim != 0
                        ? yarn_mscale(factor, r.mscale) / yarn_mscale(factor, r.mscale_all_dim)
                        : yarn_mscale(factor, 1);
      out.attention_factor = static_cast<float>(attention);
      break;
    }
    case RopeType::longrope: {
      const double factor = r.factor != 0 ? r.factor : max_positions / original;
      double attention = r.attention_factor;
      if (attention == 0)
        attention = factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(original));
      out.attention_factor = static_cast<float>(attention);
      out.sets = 2;
      out.long_from = r.original_max_position_embeddings;
      const float b = static_cast<float>(base), fd = static_cast<float>(dim);
      for (const std::vector<double>* factors : {&r.short_factor, &r.long_factor})
        for (std::size_t i = 0; i < factors->size(); ++i)
          out.inverse.push_back(1.0f / (static_cast<float>((*factors)[i]) *
                                        std::pow(b, static_cast<float>(2 * i) / fd)));
      break;
    }
  }
  return out;
}

}  // namespace distzo::model
