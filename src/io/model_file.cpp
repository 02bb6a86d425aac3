#include "io/model_file.hpp"

#include "core/digest.hpp"
#include "core/error.hpp"
#include "io/hf_config.hpp"

#include <algorithm>

#include <cmath>
#include <set>

namespace distzo::io {

namespace {
using model::Architecture;
using model::ModelConfig;
}  // namespace

model::ModelConfig read_model_config(const Hdf5File& file) {
  DISTZO_INPUT_REQUIRE(file.has_attribute("distzo_format") && file.has_attribute("format_version"),
                       file.path() << " is not a distzo model file (no 'distzo_format' / "
                                      "'format_version' attributes); convert Hugging Face "
                                      "checkpoints with tools/hf_to_h5.py (GGUF files with "
                                      "tools/gguf_to_h5.py)");
  const std::string kind = file.read_string_attribute("distzo_format");
  DISTZO_INPUT_REQUIRE(kind == "model" || kind == "checkpoint",
                       file.path() << " is a distzo " << kind
                                   << " file, not a model or checkpoint (distzo_format = \"" << kind
                                   << "\")");
  const std::int64_t version = file.read_int_attribute("format_version");
  DISTZO_INPUT_REQUIRE(version == kModelFormatVersion,
                       file.path() << ": format_version " << version
                                   << " is not supported (this distzo reads " << kModelFormatVersion
                                   << ")");
  const std::string arch = file.read_string_attribute("architecture");
  ModelConfig c;
  if (arch == "opt")
    c.architecture = Architecture::opt;
  else if (arch == "llama")
    c.architecture = Architecture::llama;
  else
    DISTZO_FAIL(file.path() << ": architecture '" << arch
                            << "' is not supported (supported: opt, llama)");
  const ConfigFields& fields = config_fields(c.architecture);
  for (const auto& [key, member] : fields.ints) c.*member = file.read_int_attribute(key);
  for (const auto& [key, member] : fields.bools) c.*member = file.read_int_attribute(key) != 0;
  for (const auto& [key, member] : fields.reals) c.*member = file.read_double_attribute(key);
  c.activation_function = file.read_string_attribute(fields.activation_key);
  if (c.architecture == Architecture::opt) model::complete_opt(c);
  try {
    c.validate();
  } catch (const Error& e) {
    DISTZO_FAIL(file.path() << ": " << e.what());
  }
  return c;
}

void write_model_config(Hdf5File& file, const model::ModelConfig& c,
                        const std::string& hf_config_json) {
  file.write_int_attribute("format_version", kModelFormatVersion);
  file.write_string_attribute("architecture", model::architecture_name(c.architecture));
  const ConfigFields& fields = config_fields(c.architecture);
  for (const auto& [key, member] : fields.ints) file.write_int_attribute(key, c.*member);
  for (const auto& [key, member] : fields.bools) file.write_int_attribute(key, c.*member ? 1 : 0);
  for (const auto& [key, member] : fields.reals) file.write_double_attribute(key, c.*member);
  file.write_string_attribute(fields.activation_key, c.activation_function);
  file.write_string_attribute("hf_config_json", hf_config_json);
}

ModelReader::ModelReader(const std::string& path) : file_(path, Hdf5File::Mode::read) {
  info_.config = read_model_config(file_);
  info_.kind = file_.read_string_attribute("distzo_format");
  if (file_.has_attribute("hf_config_json"))
    info_.hf_config_json = file_.read_string_attribute("hf_config_json");
  if (file_.has_attribute("digest_version"))
    info_.digest_version = file_.read_int_attribute("digest_version");
  info_.registry = model::ParameterRegistry::for_model(info_.config);

  std::set<std::string> expected;
  for (const auto& p : info_.registry.parameters()) expected.insert(p.name);
  for (const auto& d : file_.list_datasets())
    DISTZO_INPUT_REQUIRE(
        expected.count(d.name) != 0,
        path << ": unexpected tensor '" << d.name
             << "' for this OPT config (an untied lm_head or a non-canonical name? "
                "tools/hf_to_h5.py normalises Hugging Face checkpoints)");
  for (const auto& p : info_.registry.parameters()) {
    DISTZO_INPUT_REQUIRE(file_.has_dataset(p.name), path << ": missing tensor '" << p.name
                                                         << "', shape "
                                                         << model::format_shape(p.shape));
    const DatasetInfo d = file_.dataset_info(p.name);
    DISTZO_INPUT_REQUIRE(d.shape == p.shape, path << ": tensor " << p.name << ": got "
                                                  << model::format_shape(d.shape) << ", expected "
                                                  << model::format_shape(p.shape));
    DISTZO_INPUT_REQUIRE(d.dtype == "float32", path << ": tensor " << p.name << " is " << d.dtype
                                                    << ", expected float32");
  }
}

namespace {

/// NaN or Inf in θ poisons every loss; say where instead ("loss nan").
void require_finite(const std::string& path, const std::string& tensor, const real* data,
                    std::size_t count) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < count; ++i)
    if (!std::isfinite(data[i]) && bad++ == 0) first = i;
  DISTZO_INPUT_REQUIRE(bad == 0, path << ": tensor " << tensor << " holds " << bad
                                      << " non-finite value" << (bad == 1 ? "" : "s")
                                      << " (NaN or Inf; the first at element " << first
                                      << " of the part read)");
}

}  // namespace

void ModelReader::read(std::uint32_t id, real* dst) const {
  const model::ParameterInfo& p = info_.registry[id];
  const std::vector<float> data = file_.read_floats(p.name);
  DISTZO_REQUIRE(static_cast<std::int64_t>(data.size()) == p.numel(),
                 path() << ": tensor " << p.name << " holds " << data.size() << " elements, expected "
                        << p.numel());
  require_finite(path(), p.name, data.data(), data.size());
  std::copy(data.begin(), data.end(), dst);
}

void ModelReader::read_range(std::uint32_t id, std::uint64_t first, std::size_t count,
                             real* dst) const {
  file_.read_float_range(info_.registry[id].name, first, count, dst);
  require_finite(path(), info_.registry[id].name, dst, count);
}

std::string ModelReader::digest() const {
  // A float32 tensor's checksum is its element sum S, computed by the same
  // kernel the runtime uses for θ in host memory: once per tensor, with the
  // checksum check.
  ParameterDigest digest;
  for (const auto& p : info_.registry.parameters()) {
    std::uint64_t element_sum = 0;
    file_.read_floats(p.name, &element_sum);
    digest.add_tensor(p.name, p.shape, element_sum);
  }
  return digest.hex();
}

namespace {

void write_model_attributes(Hdf5File& file, const ModelInfo& info) {
  file.write_string_attribute("distzo_format", info.kind.empty() ? "model" : info.kind);
  write_model_config(file, info.config, info.hf_config_json);
  file.write_int_attribute("digest_version", kDigestVersion);
}

}  // namespace

void write_model_tensors(Hdf5File& file, const ModelInfo& info, const TensorSource& tensors) {
  write_model_attributes(file, info);
  tensors([&](std::uint32_t id, const real* data) {
    const model::ParameterInfo& p = info.registry[id];
    file.write_floats(p.name, p.shape, data);
  });
}

void write_model_slices(Hdf5File& file, const ModelInfo& info, const SliceSource& slices) {
  write_model_attributes(file, info);
  const auto& parameters = info.registry.parameters();
  for (const auto& p : parameters) file.create_floats(p.name, p.shape);
  // One collective write per tensor, in id order, on every rank: a rank
  // without a piece of a tensor writes nothing in that tensor's write.
  std::uint32_t next = 0;
  const auto nothing_until = [&](std::uint32_t id) {
    for (; next < id; ++next) file.write_float_range(parameters[next].name, 0, 0, nullptr);
  };
  slices([&](std::uint32_t id, std::uint64_t first, std::size_t count, const real* data) {
    DISTZO_REQUIRE(id >= next && id < parameters.size(),
                   "write_model_slices: pieces must come in increasing tensor order, one per "
                   "tensor; got tensor " << id << " after " << next);
    nothing_until(id);
    file.write_float_range(parameters[id].name, first, count, data);
    next = id + 1;
  });
  nothing_until(static_cast<std::uint32_t>(parameters.size()));
}

}  // namespace distzo::io
