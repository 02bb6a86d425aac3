#include "io/model_file.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

#include "core/digest.hpp"
#include "core/error.hpp"
#include "io/hf_config.hpp"
#include "io/json.hpp"

namespace distzo::io {

namespace {
using model::Architecture;
using model::ModelConfig;

/// A scaled rotary embedding's rope_parameters entry, as JSON text (no
/// attribute: plain RoPE, as in every file written before it existed).
constexpr const char* kRopeScalingAttribute = "rope_scaling";

/// Qwen2 and Qwen3 keep `sliding_window` and `max_window_layers` only when
/// use_sliding_window was true (absent: full attention, as in every file
/// written before them).
bool has_optional_window(Architecture a) {
  return a == Architecture::qwen2 || a == Architecture::qwen3;
}
}  // namespace

std::vector<TokenizerFile> tokenizer_files(const std::string& json, const std::string& source) {
  const auto refuse = [&](const std::string& why) {
    DISTZO_INPUT_FAIL(source << ": hf_tokenizer_files is not a JSON object of file name -> text ("
                             << why << ")");
  };
  JsonValue root;
  try {
    root = parse_json(json);
  } catch (const Error& e) {
    refuse(e.what());
  }
  if (!root.is_object()) refuse("it is " + root.describe());
  std::vector<TokenizerFile> files;
  for (const auto& [name, text] : root.members()) {
    // The way back writes each under its name (decoded: "\u002e" is a '.'):
    // a plain file name only.
    if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos)
      DISTZO_INPUT_FAIL(source << ": hf_tokenizer_files names '" << name
                               << "', which is not a plain file name");
    if (!text.is_string()) refuse("the text of '" + name + "' is " + text.describe());
    files.push_back({name, text.written_bytes()});
  }
  return files;
}

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
  DISTZO_INPUT_REQUIRE(
      model::architecture_from_name(arch, c.architecture),
      file.path() << ": architecture '" << arch
                  << "' is not supported (supported: " << model::architecture_names() << ")");
  const ConfigFields& fields = config_fields(c.architecture);
  for (const auto& [key, member] : fields.ints) c.*member = file.read_int_attribute(key);
  for (const auto& [key, member] : fields.bools) c.*member = file.read_int_attribute(key) != 0;
  for (const auto& [key, member] : fields.reals) c.*member = file.read_double_attribute(key);
  c.activation_function = file.read_string_attribute(fields.activation_key);
  if (has_optional_window(c.architecture) && file.has_attribute("sliding_window")) {
    c.sliding_window = file.read_int_attribute("sliding_window");
    c.max_window_layers = file.read_int_attribute("max_window_layers");
  }
  if (file.has_attribute(kRopeScalingAttribute))  // absent: plain RoPE
    c.rope_scaling = parse_rope_scaling(file.read_string_attribute(kRopeScalingAttribute),
                                        file.path() + ": attribute " + kRopeScalingAttribute);
  if (c.architecture == Architecture::opt)
    model::complete_opt(c);
  else
    c.word_embed_proj_dim = c.hidden_size;  // as the config.json readers set it
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
  if (has_optional_window(c.architecture) && c.sliding_window > 0) {
    file.write_int_attribute("sliding_window", c.sliding_window);
    file.write_int_attribute("max_window_layers", c.max_window_layers);
  }
  if (c.rope_scaling.scaled())
    file.write_string_attribute(kRopeScalingAttribute, rope_scaling_json(c.rope_scaling));
  file.write_string_attribute("hf_config_json", hf_config_json);
}

ModelReader::ModelReader(const std::string& path) : file_(path, Hdf5File::Mode::read) {
  file_.verify_attributes();  // a flipped rope_theta would give a wrong model, silently
  info_.config = read_model_config(file_);
  info_.kind = file_.read_string_attribute("distzo_format");
  if (file_.has_attribute("hf_config_json"))
    info_.hf_config_json = file_.read_string_attribute("hf_config_json");
  if (file_.has_attribute("hf_tokenizer_files")) {
    info_.hf_tokenizer_files = file_.read_string_attribute("hf_tokenizer_files");
    tokenizer_files(info_.hf_tokenizer_files, path);  // refused here, not when written back
  }
  if (file_.has_attribute("digest_version"))
    info_.digest_version = file_.read_int_attribute("digest_version");
  // Every layer has tensors of its own in the file: a layer count beyond the
  // file's tensors is damage, refused before the registry is built for it (a
  // flipped num_hidden_layers of 2^20 took 6 GB and 30 s to end in "missing
  // tensor").
  const std::vector<DatasetInfo> datasets = file_.list_datasets();
  DISTZO_INPUT_REQUIRE(info_.config.num_hidden_layers <= static_cast<std::int64_t>(datasets.size()),
                       path << ": num_hidden_layers is " << info_.config.num_hidden_layers
                            << ", but the file holds " << datasets.size()
                            << " tensors (each layer has its own): the attribute is damaged or "
                               "the file incomplete");
  info_.registry = model::ParameterRegistry::for_model(info_.config);

  std::set<std::string> expected;
  for (const auto& p : info_.registry.parameters()) expected.insert(p.name);
  for (const auto& d : datasets)
    DISTZO_INPUT_REQUIRE(expected.count(d.name) != 0,
                         path << ": unexpected tensor '" << d.name << "' for this "
                              << model::architecture_name(info_.config.architecture)
                              << " config (an untied lm_head or a non-canonical name? "
                                 "tools/hf_to_h5.py normalises Hugging Face checkpoints)");
  for (const auto& p : info_.registry.parameters()) {
    DISTZO_INPUT_REQUIRE(file_.has_dataset(p.name), path << ": missing tensor '" << p.name
                                                         << "', shape "
                                                         << model::format_shape(p.shape));
    const DatasetInfo d = file_.dataset_info(p.name);
    DISTZO_INPUT_REQUIRE(d.shape == p.shape, path << ": tensor " << p.name << ": got "
                                                  << model::format_shape(d.shape) << ", expected "
                                                  << model::format_shape(p.shape));
    const std::optional<StorageDtype> dtype = tensor_dtype(d);
    DISTZO_INPUT_REQUIRE(dtype.has_value(), path << ": tensor " << p.name << " is " << d.dtype
                                                 << ", expected float32, float16 or bfloat16");
    dtypes_.resize(info_.registry.size());
    dtypes_[p.id] = *dtype;
  }
}

namespace {
/// Elements the file holds in each storage (fp32, bf16, fp16), and tensors.
struct DtypeCounts {
  std::int64_t elements[3] = {0, 0, 0};
  std::int64_t tensors[3] = {0, 0, 0};
};
DtypeCounts count_dtypes(const ModelInfo& info, const std::vector<StorageDtype>& dtypes) {
  DtypeCounts c;
  for (const auto& p : info.registry.parameters()) {
    const auto k = static_cast<std::size_t>(dtypes.at(p.id));
    c.elements[k] += p.numel();
    ++c.tensors[k];
  }
  return c;
}
}  // namespace

StorageDtype ModelReader::theta_dtype() const {
  const DtypeCounts c = count_dtypes(info_, dtypes_);
  // fp32 first: a tie goes to the wider format.
  StorageDtype best = StorageDtype::fp32;
  for (const StorageDtype d : {StorageDtype::bf16, StorageDtype::fp16})
    if (c.elements[static_cast<std::size_t>(d)] > c.elements[static_cast<std::size_t>(best)])
      best = d;
  return best;
}

bool ModelReader::all_in(StorageDtype dtype) const {
  return std::all_of(dtypes_.begin(), dtypes_.end(), [&](StorageDtype d) { return d == dtype; });
}

std::string ModelReader::describe_dtypes() const {
  if (all_in(dtypes_.front())) return std::string(to_string(dtypes_.front())) + " (every tensor)";
  const DtypeCounts c = count_dtypes(info_, dtypes_);
  std::vector<StorageDtype> held;  // most elements first
  for (const StorageDtype d : {StorageDtype::fp32, StorageDtype::bf16, StorageDtype::fp16})
    if (c.tensors[static_cast<std::size_t>(d)] > 0) held.push_back(d);
  std::stable_sort(held.begin(), held.end(), [&](StorageDtype x, StorageDtype y) {
    return c.elements[static_cast<std::size_t>(x)] > c.elements[static_cast<std::size_t>(y)];
  });
  const double total = static_cast<double>(info_.registry.total_elements());
  std::ostringstream os;
  for (const StorageDtype d : held) {
    const auto k = static_cast<std::size_t>(d);
    os << (d == held.front() ? "" : ", ") << to_string(d) << " (" << std::fixed
       << std::setprecision(1) << 100.0 * static_cast<double>(c.elements[k]) / total
       << " % of the elements, " << c.tensors[k] << (c.tensors[k] == 1 ? " tensor)" : " tensors)");
  }
  return os.str();
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
  if (dtype(id) == StorageDtype::fp32) {
    const std::vector<float> data = file_.read_floats(p.name);
    DISTZO_REQUIRE(static_cast<std::int64_t>(data.size()) == p.numel(),
                   path() << ": tensor " << p.name << " holds " << data.size()
                          << " elements, expected " << p.numel());
    std::copy(data.begin(), data.end(), dst);
  } else {
    // Decoded by distzo's own exact decode, not by HDF5's conversion.
    const std::vector<std::uint16_t> words = file_.read_words(p.name, nullptr);
    DISTZO_REQUIRE(static_cast<std::int64_t>(words.size()) == p.numel(),
                   path() << ": tensor " << p.name << " holds " << words.size()
                          << " elements, expected " << p.numel());
    for (std::size_t i = 0; i < words.size(); ++i) dst[i] = storage::load(words[i], dtype(id));
  }
  require_finite(path(), p.name, dst, static_cast<std::size_t>(p.numel()));
}

void ModelReader::read_range(std::uint32_t id, std::uint64_t first, std::size_t count,
                             real* dst) const {
  const std::string& name = info_.registry[id].name;
  if (dtype(id) == StorageDtype::fp32) {
    file_.read_float_range(name, first, count, dst);
  } else {
    std::vector<std::uint16_t> words(count);
    file_.read_word_range(name, first, count, words.data());
    for (std::size_t i = 0; i < count; ++i) dst[i] = storage::load(words[i], dtype(id));
  }
  require_finite(path(), name, dst, count);
}

std::string ModelReader::digest() const { return digest_of_tensors(false); }

std::string ModelReader::verified_digest() const { return digest_of_tensors(true); }

std::string ModelReader::digest_of_tensors(bool check_finite) const {
  // A tensor's checksum is its element sum S (over its stored bits), computed
  // by the same kernel the runtime uses for θ in host memory: once per
  // tensor, with the checksum check.
  ParameterDigest digest;
  std::vector<real> decoded;
  for (const auto& p : info_.registry.parameters()) {
    std::uint64_t element_sum = 0;
    if (dtype(p.id) == StorageDtype::fp32) {
      const std::vector<float> data = file_.read_floats(p.name, &element_sum);
      if (check_finite) require_finite(path(), p.name, data.data(), data.size());
    } else {
      const std::vector<std::uint16_t> words = file_.read_words(p.name, nullptr, &element_sum);
      if (check_finite) {
        decoded.resize(words.size());
        for (std::size_t i = 0; i < words.size(); ++i)
          decoded[i] = storage::load(words[i], dtype(p.id));
        require_finite(path(), p.name, decoded.data(), decoded.size());
      }
    }
    digest.add_tensor(p.name, p.shape, element_sum);
  }
  return digest.hex();
}

namespace {

void write_model_attributes(Hdf5File& file, const ModelInfo& info, StorageDtype dtype) {
  file.write_string_attribute("distzo_format", info.kind.empty() ? "model" : info.kind);
  write_model_config(file, info.config, info.hf_config_json);
  if (!info.hf_tokenizer_files.empty())
    file.write_string_attribute("hf_tokenizer_files", info.hf_tokenizer_files);
  file.write_int_attribute("digest_version", digest_version_of(dtype));
}

}  // namespace

void write_model_tensors(Hdf5File& file, const ModelInfo& info, const TensorSource& tensors,
                         StorageDtype dtype) {
  write_model_attributes(file, info, dtype);
  tensors([&](std::uint32_t id, StoredElements data) {
    const model::ParameterInfo& p = info.registry[id];
    DISTZO_REQUIRE(data.dtype == dtype, "write_model_tensors: tensor "
                                            << p.name << " in " << to_string(data.dtype)
                                            << ", the file's tensors in " << to_string(dtype));
    if (data.dtype == StorageDtype::fp32)
      file.write_floats(p.name, p.shape, data.values());
    else
      file.write_words(p.name, p.shape, data.dtype, data.words());
  });
}

void write_model_slices(Hdf5File& file, const ModelInfo& info, StorageDtype dtype,
                        const SliceSource& slices) {
  write_model_attributes(file, info, dtype);
  const auto& parameters = info.registry.parameters();
  for (const auto& p : parameters) file.create_tensor(p.name, p.shape, dtype);
  // One collective write per tensor, in id order, on every rank: a rank
  // without a piece of a tensor writes nothing in that tensor's write.
  std::uint32_t next = 0;
  const auto nothing_until = [&](std::uint32_t id) {
    for (; next < id; ++next)
      if (dtype == StorageDtype::fp32)
        file.write_float_range(parameters[next].name, 0, 0, nullptr);
      else
        file.write_word_range(parameters[next].name, 0, 0, dtype, nullptr);
  };
  slices([&](std::uint32_t id, std::uint64_t first, std::size_t count, StoredElements data) {
    DISTZO_REQUIRE(id >= next && id < parameters.size(),
                   "write_model_slices: pieces must come in increasing tensor order, one per "
                   "tensor; got tensor "
                       << id << " after " << next);
    DISTZO_REQUIRE(data.dtype == dtype, "write_model_slices: a piece of " << to_string(data.dtype)
                                                                          << " in a file of "
                                                                          << to_string(dtype));
    nothing_until(id);
    if (dtype == StorageDtype::fp32)
      file.write_float_range(parameters[id].name, first, count, data.values());
    else
      file.write_word_range(parameters[id].name, first, count, dtype, data.words());
    next = id + 1;
  });
  nothing_until(static_cast<std::uint32_t>(parameters.size()));
}

}  // namespace distzo::io
