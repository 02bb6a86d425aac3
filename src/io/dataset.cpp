#include "io/dataset.hpp"

#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <utility>

#include "core/digest.hpp"
#include "core/error.hpp"
#include "core/philox.hpp"
#include "io/hdf5_file.hpp"

namespace distzo::io {

const char* to_string(Task task) {
  switch (task) {
    case Task::causal_lm:
      return "causal_lm";
    case Task::classification:
      return "classification";
  }
  return "unknown";
}

Task parse_task(const std::string& name) {
  if (name == "causal_lm") return Task::causal_lm;
  if (name == "classification") return Task::classification;
  DISTZO_FAIL("unknown task '" << name << "'; allowed: causal_lm, classification");
}

namespace {

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << (shape.size() == 1 ? ",)" : ")");
  return os.str();
}

}  // namespace

// ---------------------------------------------------------------- file IO

namespace {

/// Shape of an integer dataset; errors name the file, the dataset and what
/// was found, so float or boolean arrays written by mistake are explained.
std::vector<std::int64_t> integer_dataset_shape(const Hdf5File& file, const std::string& name,
                                                std::size_t rank) {
  DISTZO_INPUT_REQUIRE(file.has_dataset(name), file.path() << ": missing dataset '" << name << "'");
  Hdf5Handle dset(H5Dopen2(file.id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  DISTZO_INPUT_REQUIRE(dset.get() >= 0, file.path() << ": cannot open dataset '" << name << "'");
  Hdf5Handle type(H5Dget_type(dset.get()), H5Tclose);
  DISTZO_INPUT_REQUIRE(type.get() >= 0,
                       file.path() << ": cannot read the type of dataset '" << name << "'");
  const H5T_class_t cls = H5Tget_class(type.get());
  DISTZO_INPUT_REQUIRE(cls != H5T_ENUM, file.path()
                                            << ": dataset '" << name
                                            << "' is an enum (h5py writes numpy bool that way); "
                                               "store it as an integer type, e.g. "
                                               "mask.astype('int32')");
  DISTZO_INPUT_REQUIRE(cls == H5T_INTEGER, file.path()
                                               << ": dataset '" << name
                                               << "' must hold integers (int32 preferred), got "
                                               << file.dataset_info(name).dtype);
  const std::vector<std::int64_t> shape = file.dataset_info(name).shape;
  DISTZO_INPUT_REQUIRE(shape.size() == rank, file.path()
                                                 << ": dataset '" << name << "' has shape "
                                                 << shape_string(shape) << ", expected " << rank
                                                 << " dimension" << (rank > 1 ? "s" : ""));
  return shape;
}

void require_shape(const Hdf5File& file, const std::string& name,
                   const std::vector<std::int64_t>& shape,
                   const std::vector<std::int64_t>& expected, const char* why) {
  DISTZO_INPUT_REQUIRE(shape == expected, file.path()
                                              << ": dataset '" << name << "' has shape "
                                              << shape_string(shape) << ", expected "
                                              << shape_string(expected) << " (" << why << ")");
}

}  // namespace

Dataset load_dataset(const std::string& path, std::int64_t vocab_size) {
  Hdf5File file(path, Hdf5File::Mode::read);
  file.verify_attributes();
  DISTZO_INPUT_REQUIRE(
      file.has_attribute("distzo_format") && file.has_attribute("format_version"),
      path << " is not a distzo dataset file (no 'distzo_format' / 'format_version' "
              "attributes); the format is described in docs/datasets.md");
  const std::string kind = file.read_string_attribute("distzo_format");
  DISTZO_INPUT_REQUIRE(kind == "dataset",
                       path << ": distzo_format is '" << kind
                            << "', expected 'dataset' (is this a model or checkpoint?)");
  const std::int64_t version = file.read_int_attribute("format_version");
  DISTZO_INPUT_REQUIRE(version == kDatasetFormatVersion,
                       path << ": dataset format_version " << version
                            << " is not supported (this distzo reads " << kDatasetFormatVersion
                            << ")");

  Dataset d;
  const std::string task = file.read_string_attribute("task");
  DISTZO_INPUT_REQUIRE(
      task == "causal_lm" || task == "classification",
      path << ": attribute 'task' is '" << task << "'; allowed: causal_lm, classification");
  d.task = parse_task(task);
  d.pad_token_id = file.read_int_attribute("pad_token_id");
  if (file.has_attribute("description")) d.description = file.read_string_attribute("description");

  const bool lm = d.task == Task::causal_lm;
  const std::set<std::string> allowed =
      lm ? std::set<std::string>{"input_ids", "lengths", "target_mask"}
         : std::set<std::string>{"input_ids", "lengths", "candidates", "labels"};
  for (const auto& info : file.list_datasets()) {
    if (allowed.count(info.name) != 0) continue;
    std::ostringstream names;
    for (const auto& a : allowed) names << (names.tellp() > 0 ? ", " : "") << a;
    DISTZO_FAIL(path << ": unexpected dataset '" << info.name << "' for task " << to_string(d.task)
                     << " (allowed: " << names.str() << ")");
  }

  const auto ids_shape = integer_dataset_shape(file, "input_ids", 2);
  d.num_examples = ids_shape[0];
  d.seq_len = ids_shape[1];
  DISTZO_INPUT_REQUIRE(d.num_examples >= 1 && d.seq_len >= 1,
                       path << ": dataset 'input_ids' has shape " << shape_string(ids_shape)
                            << "; it needs at least one example of at least one token");
  const std::int64_t n = d.num_examples;
  require_shape(file, "lengths", integer_dataset_shape(file, "lengths", 1), {n},
                "one length per row of input_ids");
  d.input_ids = file.read_ints("input_ids");
  d.lengths = file.read_ints("lengths");
  if (lm) {
    require_shape(file, "target_mask", integer_dataset_shape(file, "target_mask", 2),
                  {n, d.seq_len}, "the shape of input_ids");
    d.target_mask = file.read_ints("target_mask");
    for (auto& m : d.target_mask) m = m != 0 ? 1 : 0;
  } else {
    const auto cand_shape = integer_dataset_shape(file, "candidates", 1);
    require_shape(file, "labels", integer_dataset_shape(file, "labels", 1), {n},
                  "one label per row of input_ids");
    (void)cand_shape;
    d.candidates = file.read_ints("candidates");
    d.labels = file.read_ints("labels");
  }
  validate_dataset(d, vocab_size, path);
  return d;
}

void write_dataset(const std::string& path, const Dataset& d) {
  // Token ids are int32 on disk; without a model, only non-negativity is checked.
  validate_dataset(d, std::int64_t{1} << 31, path);
  const std::int64_t n = d.num_examples;
  const std::int64_t T = d.seq_len;
  write_atomically(path, [&](Hdf5File& f) {
    f.write_string_attribute("distzo_format", "dataset");
    f.write_int_attribute("format_version", kDatasetFormatVersion);
    f.write_string_attribute("task", to_string(d.task));
    f.write_int_attribute("pad_token_id", d.pad_token_id);
    if (!d.description.empty()) f.write_string_attribute("description", d.description);
    f.write_ints("input_ids", {n, T}, d.input_ids.data());
    f.write_ints("lengths", {n}, d.lengths.data());
    if (d.task == Task::causal_lm) {
      f.write_ints("target_mask", {n, T}, d.target_mask.data());
    } else {
      f.write_ints("candidates", {d.num_candidates()}, d.candidates.data());
      f.write_ints("labels", {n}, d.labels.data());
    }
  });
}

// ---------------------------------------------------------------- data order

DataOrder::DataOrder(std::int64_t num_examples, std::uint64_t shuffle_seed)
    : num_examples_(num_examples), shuffle_seed_(shuffle_seed) {
  DISTZO_REQUIRE(num_examples >= 1, "DataOrder: the dataset has no examples");
}

std::vector<std::int64_t> DataOrder::permutation(std::int64_t epoch) const {
  DISTZO_REQUIRE(epoch >= 0, "DataOrder: epoch must be non-negative, got " << epoch);
  const auto e = static_cast<std::uint64_t>(epoch);
  // Epoch key: one Philox call on (epoch, tag) under the seed, as the
  // perturbation derives its stream keys, with a tag of its own.
  const PhiloxKey seed_key{
      {static_cast<std::uint32_t>(shuffle_seed_), static_cast<std::uint32_t>(shuffle_seed_ >> 32)}};
  const PhiloxBlock key_ctr{
      {static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(e >> 32), 0u, kDataOrderKeyTag}};
  const PhiloxBlock k = philox4x32_10(key_ctr, seed_key);
  const PhiloxKey epoch_key{{k.v[0], k.v[1]}};

  std::vector<std::int64_t> perm(static_cast<std::size_t>(num_examples_));
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  // Fisher-Yates from the back; swap i draws j uniformly in [0, i] from the
  // 64-bit word w1:w0 of Philox(counter = (i, 0, tag)). The modulo bias is at
  // most (i+1) / 2^64, far below anything measurable.
  for (std::int64_t i = num_examples_ - 1; i >= 1; --i) {
    const auto u = static_cast<std::uint64_t>(i);
    const PhiloxBlock ctr{{static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(u >> 32), 0u,
                           kDataOrderSwapTag}};
    const PhiloxBlock w = philox4x32_10(ctr, epoch_key);
    const std::uint64_t r = (static_cast<std::uint64_t>(w.v[1]) << 32) | w.v[0];
    const auto j = static_cast<std::size_t>(r % (u + 1));
    std::swap(perm[static_cast<std::size_t>(i)], perm[j]);
  }
  return perm;
}

const std::vector<std::int64_t>& DataOrder::cached_permutation(std::int64_t epoch) {
  for (auto& c : cache_)
    if (c.epoch == epoch) return c.perm;
  Cached& slot = cache_[next_slot_];
  next_slot_ = 1 - next_slot_;
  slot.perm = permutation(epoch);
  slot.epoch = epoch;
  return slot.perm;
}

std::vector<std::int64_t> DataOrder::micro_batch(std::int64_t step, int data_rank, int data_size,
                                                 int micro_batch) {
  DISTZO_REQUIRE(step >= 0, "DataOrder: step must be non-negative, got " << step);
  DISTZO_REQUIRE(data_size >= 1 && data_rank >= 0 && data_rank < data_size,
                 "DataOrder: data-parallel rank " << data_rank << " of " << data_size
                                                  << " is not a valid replica");
  DISTZO_REQUIRE(micro_batch >= 1,
                 "DataOrder: micro_batch must be at least 1, got " << micro_batch);
  const std::int64_t global = static_cast<std::int64_t>(micro_batch) * data_size;
  DISTZO_REQUIRE(step <= (std::numeric_limits<std::int64_t>::max() - global) / global,
                 "DataOrder: step " << step << " with a global batch of " << global
                                    << " overflows a 64-bit position");
  const std::int64_t first = step * global + static_cast<std::int64_t>(data_rank) * micro_batch;
  std::vector<std::int64_t> out(static_cast<std::size_t>(micro_batch));
  for (int k = 0; k < micro_batch; ++k) {
    const std::int64_t position = first + k;
    const auto& perm = cached_permutation(position / num_examples_);
    out[static_cast<std::size_t>(k)] = perm[static_cast<std::size_t>(position % num_examples_)];
  }
  return out;
}

std::int64_t DataOrder::epoch_of_step(std::int64_t step, std::int64_t global_batch) const {
  DISTZO_REQUIRE(step >= 0 && global_batch >= 1,
                 "DataOrder::epoch_of_step: step " << step << ", global batch " << global_batch);
  return step * global_batch / num_examples_;
}

std::string dataset_digest(const Dataset& data) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  const auto mix = [&](const void* bytes, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  };
  const std::int64_t header[4] = {static_cast<std::int64_t>(data.task), data.num_examples,
                                  data.seq_len, data.pad_token_id};
  mix(header, sizeof(header));
  for (const auto* v :
       {&data.input_ids, &data.lengths, &data.target_mask, &data.candidates, &data.labels}) {
    const std::uint64_t n = v->size();
    mix(&n, sizeof(n));
    mix(v->data(), v->size() * sizeof(std::int32_t));
  }
  return hex16(h);
}

}  // namespace distzo::io
